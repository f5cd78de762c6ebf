//! Conversions between the core domain and the wire. The daemon validates on
//! receive (a wire message becomes a domain value or a clear error) and
//! converts on send; nothing else in the daemon touches message fields.
//! Only the daemon converts: `qmesh-proto` knows nothing of the core, so
//! the agent and the commands' wire types do not bring the core with them.

mod resv;

pub use resv::{resv_info, resv_request};

use qmesh_core::account::AccountReport;
use qmesh_core::job::{ExitCause, Job, JobExit, JobPayload, JobState};
use qmesh_core::joblog::{LineKind, LogLine};
use qmesh_core::queue::Queue;
use qmesh_core::scheduler::{Reason, SetFree, Status, WhatPair};
use qmesh_core::state::StateCounts;
use qmesh_core::{Submission, Time};

use qmesh_proto::v1;

/// Unix seconds, 0 for "not set".
pub fn unix(t: Option<Time>) -> i64 {
    t.map_or(0, |t| t.timestamp())
}

fn from_unix(secs: i64) -> Option<Time> {
    if secs == 0 {
        None
    } else {
        chrono::DateTime::from_timestamp(secs, 0)
    }
}

fn non_empty(s: String) -> Option<String> {
    if s.is_empty() { None } else { Some(s) }
}

/// A submission and the payload it carries.
pub fn submission(req: v1::SubmitRequest) -> (Submission, JobPayload) {
    let payload = JobPayload {
        script: req.script,
        env: req.env.into_iter().map(|e| (e.name, e.value)).collect(),
    };
    let submission = Submission {
        name: non_empty(req.name),
        script_name: req.script_name,
        queue: non_empty(req.queue),
        resources: req
            .resources
            .into_iter()
            .map(|r| (r.name, r.value))
            .collect(),
        stdout_path: non_empty(req.stdout_path),
        stderr_path: non_empty(req.stderr_path),
        join_output: req.join_output,
        hold: req.hold,
        account: non_empty(req.account),
        workdir: req.workdir,
        submit_host: req.submit_host,
        submission_id: (!req.submission_id.is_empty()).then_some(req.submission_id),
        rerunnable: req.rerunnable,
        depend: req.depend,
        start_after: from_unix(req.start_after),
        join_to_error: req.join_to_error,
        priority: req.priority,
        project: non_empty(req.project),
        shell: non_empty(req.shell),
        mail_points: non_empty(req.mail_points),
        mail_users: non_empty(req.mail_users),
        keep_files: non_empty(req.keep_files),
        checkpoint: non_empty(req.checkpoint),
        umask: non_empty(req.umask),
        group_list: non_empty(req.group_list),
        start_dir: non_empty(req.start_dir),
        user_list: non_empty(req.user_list),
        egroup: None,
        notes: Vec::new(),
        array: match req.array_option.as_str() {
            _ if req.array.trim().is_empty() => None,
            "t" => Some((qmesh_core::array::ArrayStyle::Torque, req.array)),
            _ => Some((qmesh_core::array::ArrayStyle::PbsPro, req.array)),
        },
        interactive: req.interactive,
        sandbox_private: req.sandbox_private,
        slurm: req.slurm.map(|s| qmesh_core::job::slurm::SlurmJob {
            ntasks: s.ntasks,
            cpus_per_task: s.cpus_per_task,
            ntasks_per_node: s.ntasks_per_node,
            mem_per_node_mb: s.mem_per_node_mb,
            mem_per_cpu_mb: s.mem_per_cpu_mb,
        }),
    };
    (submission, payload)
}

pub fn job_state(state: JobState) -> v1::JobState {
    match state {
        JobState::Queued => v1::JobState::Queued,
        JobState::Held => v1::JobState::Held,
        JobState::Waiting => v1::JobState::Waiting,
        JobState::Transit => v1::JobState::Transit,
        JobState::Running => v1::JobState::Running,
        JobState::Suspended => v1::JobState::Suspended,
        JobState::Exiting => v1::JobState::Exiting,
        JobState::Begun => v1::JobState::Begun,
        JobState::Finished => v1::JobState::Finished,
    }
}

/// What qstat shows of a job. `reason` is the last pass's reason for a
/// pending job, with its explanation. A queued job waiting for the jobs it
/// depends on shows as `H`, one waiting for its `-a` time as `W` (PBS).
/// The state qstat shows: a queued job waiting on a dependency is held,
/// one waiting for its start time (-a) waiting; an array some of whose
/// sub-jobs started is begun (PBS `B`).
fn shown_state(job: &Job, reason: Option<&str>) -> JobState {
    match (job.state, reason) {
        (JobState::Queued, Some(r)) if r == Reason::Dependency.as_str() => JobState::Held,
        (JobState::Queued, Some(r)) if r == Reason::BeginTime.as_str() => JobState::Waiting,
        (_, _) if job.state_letter() == 'B' => JobState::Begun,
        (state, _) => state,
    }
}

/// What qstat's plain table and squeue's default one show of a job
/// ([`v1::StatusRequest::brief`]); `reason` as for [`job_info`].
pub fn job_brief(job: &Job, server: &str, reason: Option<&str>, now: Time) -> v1::JobInfo {
    let shown = shown_state(job, reason);
    let array = job.array.as_deref();
    v1::JobInfo {
        id: job.full_id(server),
        name: job.name.clone(),
        owner: job.owner.user.clone(),
        queue: job.queue.clone(),
        state: job_state(shown) as i32,
        state_letter: shown.letter().to_string(),
        nodes: job.nodes,
        walltime: job.walltime,
        qtime: job.qtime.timestamp(),
        stime: unix(job.stime),
        end_time: unix(job.end_time),
        server_time: now.timestamp(),
        resources_used: job.resources_used(now).into_iter().collect(),
        suspended_secs: job.suspension.secs_at(now),
        array: array.is_some(),
        array_index: job.id.array_index(),
        array_id: job.id.array_full(server).unwrap_or_default(),
        // squeue's NODELIST(REASON) and its states.
        exec_nodes: job.exec_nodes.iter().map(|n| n.to_string()).collect(),
        exit_status: job.exit.as_ref().map(JobExit::exit_status),
        exit_signal: job.exit.as_ref().and_then(|e| e.signal),
        reason: reason.map(str::to_string).unwrap_or_default(),
        hold_types: job.holds.types(),
        job_priority: job.priority,
        ..v1::JobInfo::default()
    }
}

pub fn job_info(job: &Job, server: &str, reason: Option<(&str, &str)>, now: Time) -> v1::JobInfo {
    let mut comment = match (job.state.is_pending(), reason) {
        // Held by the server with its own word on why (a runjob hook's
        // refusal): that word says more than "held".
        (true, Some((r, _)))
            if r == Reason::Held.as_str() && job.comment.starts_with("Not Running: ") =>
        {
            job.comment.clone()
        }
        (true, Some((_, why))) => format!("Not Running: {why}"),
        _ => job.comment.clone(),
    };
    if !job.options.notes.is_empty() {
        if !comment.is_empty() {
            comment.push_str("; ");
        }
        comment.push_str(&job.options.notes.join("; "));
    }
    let opts = &job.options;
    let shown = shown_state(job, reason.map(|(r, _)| r));
    let array = job.array.as_deref();
    v1::JobInfo {
        id: job.full_id(server),
        name: job.name.clone(),
        owner: job.owner.user.clone(),
        group: job.owner.group.clone(),
        account: job.account.clone().unwrap_or_default(),
        queue: job.queue.clone(),
        state: job_state(shown) as i32,
        state_letter: shown.letter().to_string(),
        nodes: job.nodes,
        walltime: job.walltime,
        qtime: job.qtime.timestamp(),
        stime: unix(job.stime),
        end_time: unix(job.end_time),
        exec_nodes: job.exec_nodes.iter().map(|n| n.to_string()).collect(),
        exit_status: job.exit.as_ref().map(JobExit::exit_status),
        exit_signal: job.exit.as_ref().and_then(|e| e.signal),
        comment,
        reason: reason.map(|(r, _)| r.to_string()).unwrap_or_default(),
        workdir: job.workdir.clone(),
        stdout_path: job.stdout_path.clone(),
        stderr_path: job.stderr_path.clone(),
        join_output: job.join_output,
        rerunnable: job.rerunnable,
        run_count: job.run_count,
        hold_types: job.holds.types(),
        submit_host: job.submit_host.clone(),
        mtime: job.mtime.timestamp(),
        server_time: now.timestamp(),
        mem: job.mem,
        ncpus: job.ncpus,
        features: job.features.clone(),
        depend: qmesh_core::job::shown::format_depend(job, server),
        start_after: unix(job.start_after),
        placement: job.placement.iter().map(ToString::to_string).collect(),
        resource_list: job.shown_resource_list().into_iter().collect(),
        job_priority: job.priority,
        project: job.project.clone().unwrap_or_default(),
        shell_path: opts.shell.clone(),
        mail_points: opts.mail_points.clone().unwrap_or_default(),
        mail_users: opts.mail_users.clone(),
        keep_files: opts.keep_files.clone().unwrap_or_default(),
        checkpoint: opts.checkpoint.clone().unwrap_or_default(),
        umask: opts.umask,
        group_list: opts.group_list.clone().unwrap_or_default(),
        start_dir: opts.start_dir.clone().unwrap_or_default(),
        sandbox_private: opts.sandbox_private,
        join_path: job.join_path().to_string(),
        resources_used: job.resources_used(now).into_iter().collect(),
        suspended_secs: job.suspension.secs_at(now),
        session_id: job
            .session_id
            .filter(|_| job.state.is_active())
            .unwrap_or(0),
        exec_host: job.exec_host(),
        exec_vnode: job.exec_vnode(),
        gpus: job.gpus.unwrap_or(0),
        notes: opts.notes.clone(),
        array: array.is_some(),
        array_indices_submitted: array.map(|a| a.spec.indices_text()).unwrap_or_default(),
        array_throttle: array.and_then(|a| a.spec.throttle).unwrap_or(0),
        array_state_count: array.map(|a| a.state_count()).unwrap_or_default(),
        array_index: job.id.array_index(),
        array_id: job.id.array_full(server).unwrap_or_default(),
        interactive: opts.interactive,
        ..Default::default()
    }
}

pub fn queue_info(q: &Queue, counts: StateCounts, capacity: u32) -> v1::QueueInfo {
    v1::QueueInfo {
        name: q.name.clone(),
        queue_type: q.queue_type.as_str().to_string(),
        priority: q.priority,
        enabled: q.enabled,
        started: q.started,
        max_nodes: q.max_nodes,
        min_nodes: q.min_nodes,
        max_walltime: q.max_walltime,
        default_nodes: q.default_nodes,
        default_walltime: q.default_walltime,
        node_sets: q.node_sets.clone(),
        total: counts.total(),
        queued: counts.queued,
        running: counts.running,
        held: counts.held,
        waiting: counts.waiting,
        transit: counts.transit,
        exiting: counts.exiting,
        capacity_nodes: capacity,
        route_destinations: q.route_destinations.clone(),
        default_destination: q.default_destination.clone().unwrap_or_default(),
        holding_queue: q.holding_queue.clone().unwrap_or_default(),
        max_running: q.limits.max_running,
        max_user_run: q.limits.max_user_run,
        max_group_run: q.limits.max_group_run,
        max_queuable: q.limits.max_queuable,
        max_user_queuable: q.limits.max_user_queuable,
        max_run: q.limits.max_run.to_string(),
        max_queued: q.limits.max_queued.to_string(),
        acl_user_enable: q.acl.user_enable,
        acl_users: q.acl.users.clone(),
        acl_group_enable: q.acl.group_enable,
        acl_groups: q.acl.groups.clone(),
        acl_host_enable: q.acl.host_enable,
        acl_hosts: q.acl.hosts.clone(),
        resources_max: pairs(&q.resources_max),
        resources_min: pairs(&q.resources_min),
        resources_default: pairs(&q.resources_default),
        comment: q.comment.clone().unwrap_or_default(),
        // The calendar's view, which needs the state: `service::reply`.
        open_now: false,
        sets_now: Vec::new(),
    }
}

/// A resource map on the wire (whatever map type prost makes).
fn pairs<M: FromIterator<(String, String)>>(map: &std::collections::BTreeMap<String, String>) -> M {
    map.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// The wire form of a job's place in the plan.
pub fn plan_status(status: Status) -> v1::PlanStatus {
    match status {
        Status::Startable => v1::PlanStatus::Startable,
        Status::Blocked => v1::PlanStatus::Blocked,
        Status::CannotBackfill => v1::PlanStatus::CannotBackfill,
        Status::Waiting => v1::PlanStatus::Waiting,
        Status::Held => v1::PlanStatus::Held,
        Status::Paused => v1::PlanStatus::Paused,
    }
}

/// A job's line in spq. A running job gets its start and the end its wall
/// time allows; a pending one its status, reason and expected start.
pub fn plan_entry(
    job: &Job,
    server: &str,
    status: Option<Status>,
    reason: Option<Reason>,
    expected_start: Option<Time>,
    priority: f64,
) -> v1::PlanEntry {
    let (status, status_text) = match status {
        Some(s) => (plan_status(s), s.as_str()),
        None => (v1::PlanStatus::Running, "Running"),
    };
    let walltime = i64::try_from(job.walltime).unwrap_or(i64::MAX);
    v1::PlanEntry {
        job_id: job.full_id(server),
        array: job
            .array
            .as_ref()
            .map(|a| a.left_text())
            .unwrap_or_default(),
        name: job.name.clone(),
        owner: job.owner.user.clone(),
        account: job.account.clone().unwrap_or_default(),
        queue: job.queue.clone(),
        nodes: job.nodes,
        walltime: job.walltime,
        status: status as i32,
        status_text: status_text.to_string(),
        reason: reason.map(|r| r.as_str().to_string()).unwrap_or_default(),
        reason_text: reason.map(|r| r.explain().to_string()).unwrap_or_default(),
        expected_start: unix(expected_start),
        start: unix(job.stime),
        expected_end: job
            .stime
            .map_or(0, |t| t.timestamp().saturating_add(walltime)),
        priority,
    }
}

/// One node set's free nodes, with its up and total counts.
pub fn set_free(free: &SetFree, up: u32, total: u32) -> v1::SetFree {
    v1::SetFree {
        node_set: free.set.clone(),
        free: free.free,
        until: unix(free.until),
        up,
        total,
    }
}

pub fn what_pair(pair: &WhatPair) -> v1::WhatPair {
    v1::WhatPair {
        nodes: pair.nodes,
        seconds: pair.secs,
    }
}

/// How the agent says a job ended, in domain terms, with its end time.
pub fn job_exit(f: &v1::JobFinished) -> (JobExit, Option<Time>) {
    let cause = match v1::FinishCause::try_from(f.cause).unwrap_or(v1::FinishCause::Exited) {
        v1::FinishCause::Unspecified | v1::FinishCause::Exited => ExitCause::Exited,
        v1::FinishCause::Walltime => ExitCause::Walltime,
        v1::FinishCause::Killed => ExitCause::Deleted,
        v1::FinishCause::LaunchFailed => ExitCause::LaunchFailed,
        v1::FinishCause::Lost => ExitCause::Lost,
        v1::FinishCause::Memory => ExitCause::Memory,
        v1::FinishCause::CpuTime => ExitCause::CpuTime,
    };
    let exit = JobExit {
        code: f.exit_code,
        signal: f.signal,
        cause,
        message: f.message.clone(),
        cput: f.cput,
        max_rss: f.max_rss,
        vmem: f.vmem,
    };
    (exit, from_unix(f.end_time))
}

/// The launch order for a job that has been given its nodes. A job sbatch
/// submitted gets its output paths' patterns filled in and Slurm's
/// variables after its own (`qmesh_core::job::slurm`).
pub fn launch(job: &Job, payload: JobPayload, server: &str, kill_grace: u64) -> v1::LaunchJob {
    let mut order = pbs_launch(job, payload, server, kill_grace);
    if job.slurm().is_some() {
        let parts = job.path_parts();
        let expand = |p: &str| qmesh_core::job::slurm::expand_path(p, &parts);
        order.stdout_path = expand(&order.stdout_path);
        order.stderr_path = expand(&order.stderr_path);
        order.env.extend(
            job.slurm_env(server)
                .into_iter()
                .map(|(name, value)| v1::EnvVar { name, value }),
        );
    }
    order
}

fn pbs_launch(job: &Job, payload: JobPayload, server: &str, kill_grace: u64) -> v1::LaunchJob {
    v1::LaunchJob {
        job: job.id.0,
        job_id: job.id.full(server),
        name: job.name.clone(),
        script: payload.script,
        user: job.owner.user.clone(),
        uid: job.owner.uid,
        gid: job.owner.gid,
        group: job.owner.group.clone(),
        workdir: job.workdir.clone(),
        stdout_path: job.stdout_path.clone(),
        stderr_path: job.stderr_path.clone(),
        join_output: job.join_output,
        env: payload
            .env
            .into_iter()
            .map(|(name, value)| v1::EnvVar { name, value })
            .collect(),
        nodes: job.exec_nodes.iter().map(|n| n.to_string()).collect(),
        walltime: job.walltime,
        kill_grace,
        queue: job.queue.clone(),
        account: job.account.clone().unwrap_or_default(),
        submit_host: job.submit_host.clone(),
        local_nodes: Vec::new(),
        shares: job
            .node_shares()
            .into_iter()
            .map(|s| v1::NodeShare {
                procs: s.procs,
                cpus: s.cpus,
                threads: s.threads,
                gpus: s.gpus,
                mem: s.mem,
                shared: false,
            })
            .collect(),
        shell: qmesh_core::job::options::shell_for(&job.options.shell, "")
            .unwrap_or_default()
            .to_string(),
        umask: job.options.umask,
        start_dir: job.options.start_dir.clone().unwrap_or_default(),
        sandbox_private: job.options.sandbox_private,
        join_to_error: job.options.join_to_error,
        limits: Some(process_limits(job)),
        project: job.project.clone().unwrap_or_default(),
        submit_queue: job
            .submit_queue
            .clone()
            .unwrap_or_else(|| job.queue.clone()),
        array_index: job.id.array_index(),
        array_id: job.id.array_full(server).unwrap_or_default(),
        array_torque: false,
        interactive: job.options.interactive,
    }
}

/// The per-process limits a job's resources ask for (`pcput`, `pvmem`,
/// `file`, `nice`); values that do not parse were refused at submit.
fn process_limits(job: &Job) -> v1::ProcessLimits {
    let list = &job.resource_list;
    let size = |name: &str| {
        list.get(name)
            .and_then(|v| qmesh_core::resources::parse_size(v).ok())
    };
    v1::ProcessLimits {
        cpu_secs: list
            .get("pcput")
            .and_then(|v| qmesh_core::time::parse_duration(v).ok()),
        address_space: size("pvmem"),
        file_size: size("file"),
        nice: list.get("nice").and_then(|v| v.trim().parse().ok()),
        job_cpu_secs: list
            .get("cput")
            .and_then(|v| qmesh_core::time::parse_duration(v).ok()),
    }
}

/// qalter's request, for the core (`qmesh_core::qalter`).
pub fn alteration(req: &v1::AlterRequest) -> qmesh_core::qalter::Alteration {
    qmesh_core::qalter::Alteration {
        start_after: req
            .start_after
            .and_then(|secs| chrono::DateTime::from_timestamp(secs, 0)),
        account: req.account.clone(),
        checkpoint: req.checkpoint.clone(),
        stdout_path: req.stdout_path.clone(),
        stderr_path: req.stderr_path.clone(),
        workdir: req.workdir.clone(),
        hold_list: req.hold_list.clone(),
        join: req.join.clone(),
        keep_files: req.keep_files.clone(),
        resources: req
            .resources
            .iter()
            .map(|r| (r.name.clone(), r.value.clone()))
            .collect(),
        mail_points: req.mail_points.clone(),
        mail_users: req.mail_users.clone(),
        name: req.name.clone(),
        priority: req.priority,
        project: req.project.clone(),
        rerunnable: req.rerunnable,
        shell: req.shell.clone(),
        umask: req.umask.clone(),
        run_count: req.run_count,
    }
}

/// spusage: one account's report.
pub fn account_usage(r: AccountReport) -> v1::AccountUsage {
    v1::AccountUsage {
        account: r.name,
        allocation: r.allocation.map(|a| a as f64),
        used: r.used,
        committed: r.committed,
        remaining: r.remaining,
        shares: r.shares,
        decayed_usage: r.decayed,
        users: r.users,
    }
}

/// tracejob: a line of the job logs (`A`: an accounting record, `S`: a
/// server event).
pub fn trace_line(line: LogLine) -> v1::TraceLine {
    let (source, record_type, event_class) = match line.kind {
        LineKind::Record(kind) => ("A", kind.code().to_string(), 0),
        LineKind::Event(code) => ("S", String::new(), code),
    };
    v1::TraceLine {
        date: line.date,
        source: source.to_string(),
        record_type,
        event_class,
        message: line.message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qmesh_core::{Caller, Config, JobId, Queue, Role};

    fn queued_job() -> Job {
        let mut config = Config::default();
        config.queues.insert("batch".into(), Queue::open("batch"));
        let sub = Submission {
            script_name: "job.sh".into(),
            workdir: "/tmp".into(),
            queue: Some("batch".into()),
            ..Submission::default()
        };
        let caller = Caller {
            uid: 1,
            gid: 1,
            user: "u".into(),
            group: "g".into(),
            role: Role::User,
        };
        let now = chrono::DateTime::from_timestamp(1_000, 0).unwrap();
        let mut job = sub
            .into_job(
                JobId(7),
                &caller,
                &config,
                |_, _| qmesh_core::submit::Reach {
                    nodes: 4,
                    sets: String::new(),
                },
                now,
            )
            .unwrap();
        job.depend = qmesh_core::depend::parse("afterok:3,afterany:4", "srv").unwrap();
        job.start_after = chrono::DateTime::from_timestamp(5_000, 0);
        job
    }

    #[test]
    fn waiting_on_dependencies_shows_h_and_on_the_start_time_w() {
        let job = queued_job();
        let now = chrono::DateTime::from_timestamp(2_000, 0).unwrap();
        let why = |r: Reason| Some((r.as_str(), r.explain()));
        let info = job_info(&job, "srv", why(Reason::Dependency), now);
        assert_eq!(info.state_letter, "H");
        assert_eq!(info.depend, "afterok:3.srv,afterany:4.srv");
        assert_eq!(info.start_after, 5_000);
        let info = job_info(&job, "srv", why(Reason::BeginTime), now);
        assert_eq!(info.state_letter, "W");
        assert_eq!(info.state, v1::JobState::Waiting as i32);
        let info = job_info(&job, "srv", why(Reason::Resources), now);
        assert_eq!(info.state_letter, "Q");
    }

    #[test]
    fn the_brief_listing_shows_what_the_full_one_does_of_the_plain_table() {
        let job = queued_job();
        let now = chrono::DateTime::from_timestamp(2_000, 0).unwrap();
        for r in [Reason::Dependency, Reason::BeginTime, Reason::Resources] {
            let full = job_info(&job, "srv", Some((r.as_str(), r.explain())), now);
            let brief = job_brief(&job, "srv", Some(r.as_str()), now);
            let table = |i: &v1::JobInfo| {
                (
                    i.id.clone(),
                    i.name.clone(),
                    i.owner.clone(),
                    i.queue.clone(),
                    i.state,
                    i.state_letter.clone(),
                    (i.walltime, i.qtime, i.stime, i.end_time, i.server_time),
                    i.resources_used.clone(),
                    (i.array, i.array_index, i.array_id.clone()),
                    // squeue's default table.
                    (i.reason.clone(), i.hold_types.clone(), i.exec_nodes.clone()),
                    (i.exit_status, i.exit_signal, i.nodes, i.job_priority),
                )
            };
            assert_eq!(table(&brief), table(&full), "{r:?}");
            assert!(brief.comment.is_empty() && brief.resource_list.is_empty());
        }
    }

    #[test]
    fn submissions_carry_depend_and_start_after() {
        let req = v1::SubmitRequest {
            depend: "afterok:3".into(),
            start_after: 5_000,
            ..Default::default()
        };
        let (sub, _) = submission(req);
        assert_eq!(sub.depend, "afterok:3");
        assert_eq!(sub.start_after.map(|t| t.timestamp()), Some(5_000));
    }
}
