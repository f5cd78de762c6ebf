//! `scontrol show job`: a job in Slurm 22.05's words, key for key and
//! line for line as the real one prints it (`tests/slurm/fixtures/
//! scontrol-show-job*.txt`): the first line unindented, the others three
//! spaces in, a blank indented line and an empty one after each record;
//! `-o` puts a record's words on one line.
//!
//! Values come from qmesh's Status reply. What qmesh has no notion of
//! (MCS labels, sockets, licenses, a deadline...) is written as Slurm
//! writes it when unset, so that scripts reading `Key=value` words find
//! every key where Slurm puts it.

use std::collections::HashMap;

use qmesh_core::job::slurm::{PathParts, expand_path};
use qmesh_proto::JobInfo;

use crate::squeue;

/// One record: its lines, each a run of `Key=value` words.
pub struct Record(Vec<String>);

impl Record {
    /// Slurm's layout: multi-line, or one line with `-o`.
    pub fn text(&self, one_liner: bool) -> String {
        if one_liner {
            format!("{} \n", self.0.join(" "))
        } else {
            format!("{}\n   \n\n", self.0.join("\n   "))
        }
    }

    /// The `Key=value` words in order (for `--json` and the tests).
    pub fn pairs(&self) -> Vec<(String, String)> {
        self.0
            .iter()
            .flat_map(|line| words(line))
            .map(|w| match w.split_once('=') {
                Some((k, v)) => (k.to_string(), v.to_string()),
                None => (w.to_string(), String::new()),
            })
            .collect()
    }
}

/// A line's words (values here hold no spaces but a path's may).
fn words(line: &str) -> Vec<&str> {
    line.split(' ').filter(|w| !w.is_empty()).collect()
}

/// The local names of the job's owner and group with their ids, as
/// Slurm shows them (`root(0)`); the ids are looked up here.
pub struct Ids {
    pub uid: Option<u32>,
    pub gid: Option<u32>,
}

impl Ids {
    pub fn lookup(job: &JobInfo) -> Ids {
        let user = job.owner.split('@').next().unwrap_or_default();
        Ids {
            uid: nix::unistd::User::from_name(user)
                .ok()
                .flatten()
                .map(|u| u.uid.as_raw()),
            gid: nix::unistd::Group::from_name(&job.group)
                .ok()
                .flatten()
                .map(|g| g.gid.as_raw()),
        }
    }
}

/// Slurm's `[D-]HH:MM:SS` (RunTime, TimeLimit: two-digit hours, unlike
/// squeue's `M:SS`).
pub fn clock(secs: u64) -> String {
    let (d, h, m, s) = (
        secs / 86400,
        secs % 86400 / 3600,
        secs % 3600 / 60,
        secs % 60,
    );
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else {
        format!("{h:02}:{m:02}:{s:02}")
    }
}

/// A time as Slurm writes it, or `Unknown`.
fn at(secs: i64) -> String {
    if secs > 0 {
        squeue::timestamp(secs)
    } else {
        "Unknown".into()
    }
}

/// Megabytes as Slurm writes a memory size: `100M`, `4G`.
fn megabytes(mb: u64) -> String {
    if mb >= 1024 * 1024 && mb % (1024 * 1024) == 0 {
        format!("{}T", mb / (1024 * 1024))
    } else if mb >= 1024 && mb % 1024 == 0 {
        format!("{}G", mb / 1024)
    } else {
        format!("{mb}M")
    }
}

/// Slurm's dependency list: `afterok:12(unfulfilled),afterany:13(...)`
/// from qmesh's `afterok:12.srv:13.srv,...`; `?` (any of), `singleton` and
/// `after:12+5` as Slurm writes them.
pub fn dependency(depend: &str) -> String {
    if depend.is_empty() {
        return "(null)".into();
    }
    let separator = if depend.contains('?') { '?' } else { ',' };
    let mut out = Vec::new();
    for group in depend.split(separator) {
        let mut parts = group.split(':');
        let kind = parts.next().unwrap_or_default();
        let mut named = false;
        for id in parts {
            let (id, delay) = match id.split_once('+') {
                Some((id, minutes)) => (id, format!("+{minutes}")),
                None => (id, String::new()),
            };
            let number = id.split('.').next().unwrap_or(id);
            // An array, `12[]`, is `12_*` to Slurm.
            let slurm = match number.strip_suffix("[]") {
                Some(array) => format!("{array}_*"),
                None => squeue::slurm_id(number),
            };
            out.push(format!("{kind}:{slurm}{delay}(unfulfilled)"));
            named = true;
        }
        if !named {
            out.push(format!("{group}(unfulfilled)"));
        }
    }
    out.join(&separator.to_string())
}

/// What the job asked per node and in all: nodes, CPUs, tasks, CPUs per
/// task, memory per node in MB.
struct Sizes {
    nodes: u32,
    cpus: u32,
    tasks: u32,
    cpus_per_task: u32,
    mem_mb: u64,
}

fn sizes(job: &JobInfo, started: bool) -> Sizes {
    let nodes = if started && !job.exec_nodes.is_empty() {
        job.exec_nodes.len() as u32
    } else {
        job.nodes.max(1)
    };
    let per_node_cpus = job.ncpus.unwrap_or(1).max(1);
    let per_node_tasks = chunk_value(&job.resource_list, "mpiprocs")
        .filter(|&t| t > 0)
        .unwrap_or(1);
    let cpus_per_task = if chunk_value(&job.resource_list, "mpiprocs").is_some() {
        (per_node_cpus / per_node_tasks).max(1)
    } else {
        per_node_cpus
    };
    Sizes {
        nodes,
        cpus: per_node_cpus * nodes,
        tasks: per_node_tasks * nodes,
        cpus_per_task,
        mem_mb: job.mem.map_or(0, |b| b.div_ceil(1024 * 1024)),
    }
}

/// A number in the job's select chunk (`1:ncpus=4:mpiprocs=2`).
fn chunk_value(list: &HashMap<String, String>, name: &str) -> Option<u32> {
    let select = list.get("select")?;
    select
        .split(':')
        .find_map(|p| p.strip_prefix(&format!("{name}=")))
        .and_then(|v| v.parse().ok())
}

/// The nodes `-w` named: the `vnode=` of each chunk of the select.
fn required_nodes(list: &HashMap<String, String>) -> Vec<String> {
    let Some(select) = list.get("select") else {
        return Vec::new();
    };
    select
        .split('+')
        .flat_map(|chunk| chunk.split(':'))
        .filter_map(|p| p.strip_prefix("vnode="))
        .map(String::from)
        .collect()
}

/// A list of nodes in Slurm's compressed form, `(null)` if none.
fn node_list(nodes: Vec<String>) -> String {
    if nodes.is_empty() {
        "(null)".into()
    } else {
        qmesh_core::job::slurm::compressed(&nodes)
    }
}

/// A path without PBS's `host:` before it.
fn local_path(path: &str) -> &str {
    match path.split_once(':') {
        Some((host, rest)) if !host.contains('/') && rest.starts_with('/') => rest,
        _ => path,
    }
}

/// The job's record, as Slurm 22.05 prints it. `now` is the server's
/// time; `ids` the owner's and group's numbers.
pub fn record(job: &JobInfo, now: i64, ids: &Ids) -> Record {
    let started = job.stime > 0 && !job.exec_nodes.is_empty();
    let (_, long) = squeue::state(job);
    let pending = long == "PENDING";
    let done = matches!(long, "COMPLETED" | "FAILED" | "CANCELLED");
    let id = squeue::slurm_id(&job.id);
    let number = id.split('_').next().unwrap_or(&id).to_string();
    let s = sizes(job, started);
    let mut lines: Vec<String> = Vec::new();

    // JobId, with the array's fields when it is one.
    let mut first = format!("JobId={number}");
    if job.array || job.array_index.is_some() {
        let task = match job.array_index {
            Some(i) => i.to_string(),
            None => {
                let mut t = job.array_indices_submitted.clone();
                if job.array_throttle > 0 {
                    t.push_str(&format!("%{}", job.array_throttle));
                }
                t
            }
        };
        first.push_str(&format!(" ArrayJobId={number} ArrayTaskId={task}"));
        if job.array_throttle > 0 {
            first.push_str(&format!(" ArrayTaskThrottle={}", job.array_throttle));
        }
    }
    first.push_str(&format!(" JobName={}", job.name));
    lines.push(first);

    let user = job.owner.split('@').next().unwrap_or_default();
    let num = |n: Option<u32>| n.map_or("4294967294".to_string(), |n| n.to_string());
    lines.push(format!(
        "UserId={user}({}) GroupId={}({}) MCS_label=N/A",
        num(ids.uid),
        job.group,
        num(ids.gid)
    ));
    let held = pending && !matches!(job.hold_types.as_str(), "" | "n");
    let priority = if held {
        0
    } else {
        job.priority.max(0.0).round() as u64
    };
    let account = if job.account.is_empty() {
        "(null)"
    } else {
        &job.account
    };
    let qos = job
        .resource_list
        .get("qos")
        .map_or("normal", |q| q.as_str());
    lines.push(format!(
        "Priority={priority} Nice={} Account={account} QOS={qos}",
        -job.job_priority
    ));
    let reason = if pending {
        squeue::reason(job)
    } else {
        "None".into()
    };
    lines.push(format!(
        "JobState={long} Reason={reason} Dependency={}",
        dependency(&job.depend)
    ));
    let restarts = if pending {
        job.run_count
    } else {
        job.run_count.saturating_sub(1)
    };
    let exit = match (job.exit_status, job.exit_signal) {
        (_, Some(sig)) => format!("0:{sig}"),
        (Some(code), None) if (0..=255).contains(&code) => format!("{code}:0"),
        (Some(code), None) if code > 256 => format!("0:{}", code - 256),
        _ => "0:0".into(),
    };
    lines.push(format!(
        "Requeue={} Restarts={restarts} BatchFlag={} Reboot=0 ExitCode={exit}",
        u8::from(job.rerunnable),
        u8::from(!job.interactive)
    ));
    let run_secs = if started {
        let end = if job.end_time > 0 { job.end_time } else { now };
        ((end - job.stime).max(0) as u64).saturating_sub(job.suspended_secs)
    } else {
        0
    };
    let limit = if job.walltime == 0 {
        "UNLIMITED".into()
    } else {
        clock(job.walltime)
    };
    lines.push(format!(
        "RunTime={} TimeLimit={limit} TimeMin=N/A",
        clock(run_secs)
    ));
    let eligible = if held {
        0
    } else {
        job.start_after.max(job.qtime)
    };
    lines.push(format!(
        "SubmitTime={} EligibleTime={}",
        at(job.qtime),
        at(eligible)
    ));
    lines.push(format!("AccrueTime={}", at(eligible)));
    let start = if started || done {
        job.stime
    } else if held {
        0
    } else if job.start_after > now {
        job.start_after
    } else {
        job.expected_start
    };
    let end = if done {
        job.end_time
    } else if start > 0 && job.walltime > 0 {
        start + job.walltime as i64
    } else {
        0
    };
    lines.push(format!(
        "StartTime={} EndTime={} Deadline=N/A",
        at(start),
        at(end)
    ));
    let last_eval = if started { job.stime } else { job.mtime };
    lines.push(format!(
        "SuspendTime=None SecsPreSuspend=0 LastSchedEval={} Scheduler=Main",
        at(last_eval)
    ));
    let host = if job.submit_host.is_empty() {
        "(null)"
    } else {
        &job.submit_host
    };
    lines.push(format!("Partition={} AllocNode:Sid={host}:0", job.queue));
    lines.push(format!(
        "ReqNodeList={} ExcNodeList={}",
        node_list(required_nodes(&job.resource_list)),
        node_list(
            job.resource_list
                .get("excludenodes")
                .map(|l| l.split(':').map(String::from).collect())
                .unwrap_or_default()
        )
    ));
    lines.push(format!("NodeList={}", squeue::nodelist(job)));
    if let Some(first) = job.exec_nodes.first().filter(|_| started) {
        lines.push(format!("BatchHost={first}"));
    }
    lines.push(format!(
        "NumNodes={} NumCPUs={} NumTasks={} CPUs/Task={} ReqB:S:C:T=0:0:*:*",
        s.nodes, s.cpus, s.tasks, s.cpus_per_task
    ));
    let mem = if s.mem_mb > 0 {
        format!(",mem={}", megabytes(s.mem_mb * u64::from(s.nodes)))
    } else {
        String::new()
    };
    lines.push(format!(
        "TRES=cpu={}{mem},node={},billing={}",
        s.cpus, s.nodes, s.cpus
    ));
    lines.push("Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=*".into());
    let min_mem = if s.mem_mb > 0 {
        megabytes(s.mem_mb)
    } else {
        "0".into()
    };
    lines.push(format!(
        "MinCPUsNode={} MinMemoryNode={min_mem} MinTmpDiskNode=0",
        s.cpus_per_task
    ));
    let features = if job.features.is_empty() {
        "(null)".into()
    } else {
        job.features.join("&")
    };
    lines.push(format!("Features={features} DelayBoot=00:00:00"));
    let exclusive = job
        .resource_list
        .get("naccesspolicy")
        .is_some_and(|p| p.contains("single"))
        || job
            .resource_list
            .get("place")
            .is_some_and(|p| p.contains("excl"));
    lines.push(format!(
        "OverSubscribe={} Contiguous=0 Licenses=(null) Network=(null)",
        if exclusive { "NO" } else { "OK" }
    ));
    // qmesh does not keep the script's path: Slurm's word for none.
    lines.push("Command=(null)".into());
    lines.push(format!("WorkDir={}", job.workdir));
    let parts = PathParts {
        job: number.parse().unwrap_or(0),
        array_job: number.parse().unwrap_or(0),
        array_index: job.array_index,
        name: &job.name,
        user,
        first_node: job.exec_nodes.first().map_or("", |n| n.as_str()),
    };
    let path = |p: &str| {
        let p = expand_path(local_path(p), &parts);
        if p.is_empty() || p.starts_with('/') {
            p
        } else {
            format!("{}/{p}", job.workdir)
        }
    };
    let stdout = path(&job.stdout_path);
    let stderr = if job.join_output || job.stderr_path.is_empty() {
        stdout.clone()
    } else {
        path(&job.stderr_path)
    };
    lines.push(format!("StdErr={stderr}"));
    lines.push("StdIn=/dev/null".into());
    lines.push(format!("StdOut={stdout}"));
    lines.push("Power=".into());
    Record(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/slurm/fixtures")
            .join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// Each line's keys, in order.
    fn line_keys(text: &str) -> Vec<Vec<String>> {
        text.lines()
            .map(|l| {
                words(l)
                    .iter()
                    .filter_map(|w| w.split_once('=').map(|(k, _)| k.to_string()))
                    .collect()
            })
            .collect()
    }

    fn finished() -> JobInfo {
        JobInfo {
            id: "5.srv".into(),
            name: "oracle-env".into(),
            owner: "root@h".into(),
            group: "root".into(),
            account: "root".into(),
            queue: "debug".into(),
            state_letter: "F".into(),
            exit_status: Some(0),
            nodes: 1,
            walltime: 300,
            qtime: 1_000,
            stime: 1_006,
            end_time: 1_006,
            exec_nodes: vec!["n1".into()],
            workdir: "/w".into(),
            stdout_path: "/w/%x-%j.out".into(),
            join_output: true,
            rerunnable: true,
            run_count: 1,
            submit_host: "localhost".into(),
            ..JobInfo::default()
        }
    }

    #[test]
    fn a_finished_job_has_the_fixtures_lines_and_keys() {
        let ids = Ids {
            uid: Some(0),
            gid: Some(0),
        };
        let ours = record(&finished(), 2_000, &ids).text(false);
        let theirs = fixture("scontrol-show-job.txt");
        assert_eq!(line_keys(&ours), line_keys(&theirs), "{ours}");
        assert!(ours.ends_with("\n   Power=\n   \n\n"), "{ours:?}");
        assert!(ours.starts_with(
            "JobId=5 JobName=oracle-env\n   UserId=root(0) GroupId=root(0) MCS_label=N/A\n"
        ));
        assert!(ours.contains("\n   StdOut=/w/oracle-env-5.out\n"), "{ours}");
        assert!(ours.contains(" JobState=COMPLETED Reason=None Dependency=(null)\n"));
        assert!(ours.contains("\n   RunTime=00:00:00 TimeLimit=00:05:00 TimeMin=N/A\n"));
        let one = record(&finished(), 2_000, &ids).text(true);
        let theirs = fixture("scontrol-show-job-o.txt");
        assert_eq!(one.lines().count(), 1);
        assert_eq!(line_keys(&one), line_keys(&theirs));
        assert!(one.ends_with(" Power= \n"), "{one:?}");
    }

    #[test]
    fn a_running_job_has_the_running_fixtures_keys() {
        let job = JobInfo {
            state_letter: "R".into(),
            exit_status: None,
            end_time: 0,
            walltime: 0,
            ..finished()
        };
        let ids = Ids {
            uid: None,
            gid: None,
        };
        let ours = record(&job, 1_006 + 3_725, &ids).text(false);
        let theirs = fixture("scontrol-show-job-running.txt");
        assert_eq!(line_keys(&ours), line_keys(&theirs), "{ours}");
        assert!(
            ours.contains("RunTime=01:02:05 TimeLimit=UNLIMITED"),
            "{ours}"
        );
        assert!(ours.contains("EndTime=Unknown"), "{ours}");
    }

    #[test]
    fn a_held_job_has_the_pending_fixtures_lines_and_values() {
        let job = JobInfo {
            name: "twin-done".into(),
            state_letter: "H".into(),
            reason: "Held".into(),
            hold_types: "u".into(),
            exit_status: None,
            stime: 0,
            end_time: 0,
            exec_nodes: Vec::new(),
            run_count: 0,
            ncpus: Some(2),
            resource_list: [("select".to_string(), "1:ncpus=2:mpiprocs=2".to_string())]
                .into_iter()
                .collect(),
            ..finished()
        };
        let ids = Ids {
            uid: Some(0),
            gid: Some(0),
        };
        let ours = record(&job, 2_000, &ids).text(false);
        let theirs = fixture("scontrol-show-job-pending.txt");
        assert_eq!(line_keys(&ours), line_keys(&theirs), "{ours}");
        // Lines whose values do not depend on the run are Slurm's.
        for line in [
            "   Priority=0 Nice=0 Account=root QOS=normal",
            "   JobState=PENDING Reason=JobHeldUser Dependency=(null)",
            "   AccrueTime=Unknown",
            "   StartTime=Unknown EndTime=Unknown Deadline=N/A",
            "   NodeList=",
            "   NumNodes=1 NumCPUs=2 NumTasks=2 CPUs/Task=1 ReqB:S:C:T=0:0:*:*",
            "   MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0",
        ] {
            assert!(
                theirs.lines().any(|l| l == line),
                "the fixture has {line:?}"
            );
            assert!(ours.lines().any(|l| l == line), "{line:?} in:\n{ours}");
        }
    }

    #[test]
    fn a_held_array_shows_its_tasks_and_no_nodes() {
        let job = JobInfo {
            id: "7[].srv".into(),
            name: "arr".into(),
            state_letter: "H".into(),
            reason: "Held".into(),
            hold_types: "u".into(),
            exit_status: None,
            stime: 0,
            end_time: 0,
            exec_nodes: Vec::new(),
            array: true,
            array_indices_submitted: "0-3".into(),
            array_throttle: 2,
            depend: "afterok:5.srv:6.srv".into(),
            ..finished()
        };
        let ids = Ids {
            uid: Some(0),
            gid: Some(0),
        };
        let text = record(&job, 2_000, &ids).text(false);
        assert!(
            text.starts_with(
                "JobId=7 ArrayJobId=7 ArrayTaskId=0-3%2 ArrayTaskThrottle=2 JobName=arr\n"
            ),
            "{text}"
        );
        assert!(text.contains("Priority=0 "), "{text}");
        assert!(
            text.contains("JobState=PENDING Reason=JobHeldUser Dependency=afterok:5(unfulfilled),afterok:6(unfulfilled)\n"),
            "{text}"
        );
        assert!(text.contains(
            "EligibleTime=Unknown\n   AccrueTime=Unknown\n   StartTime=Unknown EndTime=Unknown"
        ));
        assert!(
            text.contains("\n   NodeList=\n   NumNodes=1 "),
            "no BatchHost: {text}"
        );
        assert!(text.contains("StdOut=/w/arr-7.out"), "{text}");
    }

    #[test]
    fn clocks_and_sizes_as_slurm_writes_them() {
        assert_eq!(clock(0), "00:00:00");
        assert_eq!(clock(90061), "1-01:01:01");
        assert_eq!(megabytes(100), "100M");
        assert_eq!(megabytes(4096), "4G");
        assert_eq!(dependency(""), "(null)");
        assert_eq!(
            dependency("afterok:5.srv?after:6.srv+10?aftercorr:7[].srv"),
            "afterok:5(unfulfilled)?after:6+10(unfulfilled)?aftercorr:7_*(unfulfilled)"
        );
        assert_eq!(dependency("singleton"), "singleton(unfulfilled)");
    }
}
