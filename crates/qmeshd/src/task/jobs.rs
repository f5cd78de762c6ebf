//! The daemon's half of qsub, qstat, qdel, qhold, qrls and qstat -Q.

use qmesh_core::joblog::{EventClass, RecordType};
use qmesh_core::state::Deleted;
use qmesh_core::{Caller, CoreError, JobId, JobState};
use qmesh_proto::v1;

use crate::convert;
use qmesh_store::Store;
use tracing::info;

use super::SchedulerTask;
use crate::answer::{JobOutcome, JobSnapshot, QueueList, QueueNow};
use crate::dispatch::Now;
use crate::error::TaskError;
use crate::event::{JobAction, Reply, SharedListing, StatusQuery};
use crate::identity::Peer;

impl SchedulerTask {
    /// qsub: validated, stored, queued; answered once durable.
    pub(super) fn submit(
        &mut self,
        peer: &Peer,
        mut submission: qmesh_core::Submission,
        payload: qmesh_core::job::JobPayload,
        reply: Reply<String>,
        now: Now,
    ) {
        let caller = self.caller(peer);
        // The same submission again (its answer was lost, or a failover
        // came between): the job it made, once that is durable.
        if let Some(job) = submission
            .submission_id
            .as_deref()
            .and_then(|sid| self.state.job_by_submission(sid))
            .filter(|job| job.owner.uid == caller.uid)
        {
            let full = job.full_id(self.state.server_name());
            info!(job = %full, "a submission sent again is answered with the job it made");
            let done = format!("job {full} was queued");
            self.answer_when_durable(full, done, reply);
            return;
        }
        if let Err(why) = qmesh_core::submit::sizes::check(&submission, &payload) {
            let _ = reply.send(Err(TaskError::Invalid(why)));
            return;
        }
        // From another host, the host is the one its agent vouches for
        // (PBS_O_HOST, the ACLs), not the one qsub names.
        if let Some(host) = &peer.host {
            submission.submit_host = host.clone();
        }
        if let Some(list) = &submission.group_list {
            let host = self.state.server_name().to_string();
            let wanted = qmesh_core::job::options::group_for(list, &host).unwrap_or_default();
            match crate::identity::member_group(&caller.user, caller.gid, wanted) {
                Ok(group) => submission.egroup = Some(group),
                Err(message) => {
                    let _ = reply.send(Err(TaskError::Denied(message)));
                    return;
                }
            }
        }
        let asks_mail = submission
            .mail_points
            .as_deref()
            .is_some_and(|m| !m.trim().is_empty() && m.trim() != "n");
        if asks_mail && self.settings.jobs.sendmail.is_none() {
            submission.notes.push(
                "mail (-m) is not sent: this server has no sendmail configured ([jobs] sendmail)"
                    .into(),
            );
        }
        let job = match self.state.prepare(submission, &caller, now.wall) {
            Ok(job) => job,
            Err(e) => {
                let _ = reply.send(Err(e.into()));
                return;
            }
        };
        let full = job.full_id(self.state.server_name());
        if let Err(e) = self.durability.store().put_new_job(&job, &payload) {
            let _ = reply.send(Err(TaskError::not_stored(&e, &format!("job {full}"))));
            return;
        }
        info!(job = %full, user = %job.owner.user, queue = %job.queue, nodes = job.nodes, "queued");
        if let Some(at) = job.start_after {
            self.pacing.wake_at(at);
        }
        let id = job.id;
        self.state.admit(job);
        self.logs.queued(&self.state, id, &caller.user, now.wall);
        // Jobs it named in before* now wait for it: stored in the same
        // group commit as the job.
        for target in self.state.link_before(id) {
            if let Some(job) = self.state.job(target) {
                self.durability.persist(job);
            }
        }
        let done = format!("job {full} was queued");
        self.answer_when_durable(full, done, reply);
    }

    /// qstat: the jobs named by id, then those of the queues named (or all
    /// jobs when neither is named) that pass the filters. A named job that
    /// cannot be listed fails the request, or with `report_refused` is
    /// named in the reply's `refused`.
    pub(super) fn status(
        &self,
        peer: &Peer,
        request: &StatusQuery,
        now: Now,
    ) -> Result<v1::StatusReply, TaskError> {
        let caller = self.caller(peer);
        let now = now.wall;
        let server = self.state.server_name();
        let info = |job: &qmesh_core::Job| {
            if request.brief {
                let reason = job
                    .state
                    .is_pending()
                    .then(|| self.pending_reason(job, now));
                return convert::job_brief(job, server, reason.map(|r| r.as_str()), now);
            }
            if !job.state.is_pending() {
                return convert::job_info(job, server, None, now);
            }
            let r = self.pending_reason(job, now);
            let why = self.explain(job, r, now);
            let mut info = convert::job_info(job, server, Some((r.as_str(), &why)), now);
            let (start, priority) = self.expected_start(job, now);
            info.expected_start = convert::unix(start);
            info.priority = priority;
            info
        };
        let mut reply = v1::StatusReply {
            server: server.to_string(),
            server_time: now.timestamp(),
            ..Default::default()
        };
        let mut refuse = |refusal: v1::StatusRefusal| {
            if request.report_refused {
                reply.refused.push(refusal);
                Ok(())
            } else {
                Err(refusal_status(&refusal))
            }
        };
        let mut named = Vec::new();
        for text in &request.job_ids {
            // A sub-job left to start has no record: its array's, under its id.
            if let Some(view) = self
                .state
                .parse_id(text)
                .ok()
                .and_then(|id| self.state.unstarted_view(id))
            {
                if self.may_see(&caller, &view) {
                    let mut shown = info(&view);
                    if request.with_script {
                        shown.script = self.script_for(&caller, &view)?;
                    }
                    named.push(shown);
                }
                continue;
            }
            match self.named_job(text, request.include_finished) {
                Ok(job) if !self.may_see(&caller, job) => {
                    return Err(TaskError::Denied(format!(
                        "Unauthorized Request: job {} belongs to {}, and the server shows users \
                         only their own jobs (query_other_jobs = False)",
                        self.state.full_id(job.id),
                        job.owner.user
                    )));
                }
                Ok(job) => {
                    let mut shown = info(job);
                    if request.with_script {
                        shown.script = self.script_for(&caller, job)?;
                    }
                    named.push(shown);
                    if request.expand_arrays {
                        named.extend(self.sub_job_infos(job, request.include_finished, &info));
                    }
                }
                Err(refusal) => refuse(refusal)?,
            }
        }
        let mut queues = Vec::new();
        for name in &request.queues {
            if self.state.config().queue(name).is_some() {
                queues.push(name.as_str());
            } else {
                refuse(v1::StatusRefusal {
                    name: name.clone(),
                    reason: v1::StatusRefusalReason::UnknownQueue as i32,
                    message: CoreError::NoSuchQueue {
                        queue: name.clone(),
                    }
                    .to_string(),
                })?;
            }
        }
        reply.jobs = named;
        let users: Vec<&str> = request.users.iter().map(String::as_str).collect();
        // Sub-jobs come after their array, with -t only.
        let listed = |job: &&qmesh_core::Job| {
            job.id.array_parent().is_none()
                && (job.array.is_some() || !request.arrays_only)
                && (job.state != JobState::Finished || request.include_finished)
                && (users.is_empty() || users.contains(&job.owner.user.as_str()))
                && self.may_see(&caller, job)
        };
        let wanted = |info: &v1::JobInfo| {
            request.states.is_empty() || request.states.contains(info.state_letter.as_str())
        };
        let expand = |job: &qmesh_core::Job| {
            let mut infos = vec![info(job)];
            if request.expand_arrays {
                infos.extend(self.sub_job_infos(job, request.include_finished, &info));
            }
            infos
        };
        if request.job_ids.is_empty() && request.queues.is_empty() {
            let jobs = self.state.jobs().filter(listed).flat_map(expand);
            reply.jobs.extend(jobs.filter(wanted));
        }
        for queue in queues {
            let jobs = self.state.jobs().filter(|j| j.queue == queue);
            let jobs = jobs.filter(listed).flat_map(expand);
            reply.jobs.extend(jobs.filter(wanted));
        }
        Ok(reply)
    }

    /// qstat's listing for every caller asking `request`: `None` when it
    /// would depend on who asks (only their own jobs, or scripts).
    pub(super) fn shared_status(
        &self,
        peer: &Peer,
        request: &StatusQuery,
        now: Now,
    ) -> Result<Option<SharedListing>, TaskError> {
        if !self.state.config().server.query_other_jobs || request.with_script {
            return Ok(None);
        }
        let reply = self.status(peer, request, now)?;
        Ok(Some(SharedListing {
            reply,
            generation: self.published.listing_generation(),
        }))
    }

    /// qstat -t: an array's sub-jobs in index order, those left to start
    /// shown as their array's record under their own ids.
    fn sub_job_infos(
        &self,
        array: &qmesh_core::Job,
        include_finished: bool,
        info: &dyn Fn(&qmesh_core::Job) -> v1::JobInfo,
    ) -> Vec<v1::JobInfo> {
        if array.array.is_none() {
            return Vec::new();
        }
        let mut out = Vec::new();
        for (index, record) in self.state.sub_jobs(array.id) {
            match record {
                Some(job) if job.state != JobState::Finished || include_finished => {
                    out.push(info(job));
                }
                Some(_) => {}
                None => {
                    if let Some(view) = self.state.unstarted_view(array.id.sub_job(index)) {
                        out.push(info(&view));
                    }
                }
            }
        }
        out
    }

    /// The job `text` names, or why qstat cannot list it.
    fn named_job(
        &self,
        text: &str,
        include_finished: bool,
    ) -> Result<&qmesh_core::Job, v1::StatusRefusal> {
        let refusal =
            |name: String, reason: v1::StatusRefusalReason, e: &CoreError| v1::StatusRefusal {
                name,
                reason: reason as i32,
                message: e.to_string(),
            };
        let id = self.state.parse_id(text).map_err(|e| match &e {
            CoreError::NoSuchJob { id } => {
                refusal(id.clone(), v1::StatusRefusalReason::UnknownJob, &e)
            }
            _ => refusal(text.to_string(), v1::StatusRefusalReason::BadId, &e),
        })?;
        let full = self.state.full_id(id);
        let Some(job) = self.state.job(id) else {
            let e = CoreError::NoSuchJob { id: full.clone() };
            return Err(refusal(full, v1::StatusRefusalReason::UnknownJob, &e));
        };
        if job.state == JobState::Finished && !include_finished {
            return Err(v1::StatusRefusal {
                message: format!("job {full} has finished; use qstat -x to see finished jobs"),
                name: full,
                reason: v1::StatusRefusalReason::Finished as i32,
            });
        }
        Ok(job)
    }

    /// Whether qstat shows `job` to `caller`: always its owner, operators
    /// and managers; others only while query_other_jobs is true (PBS).
    /// printjob's script of `job` (a sub-job's is its array's): for its
    /// owner, an operator or a manager, whatever query_other_jobs says.
    fn script_for(
        &self,
        caller: &qmesh_core::Caller,
        job: &qmesh_core::Job,
    ) -> Result<Vec<u8>, TaskError> {
        let full = self.state.full_id(job.id);
        if caller.role < qmesh_core::Role::Operator && job.owner.uid != caller.uid {
            return Err(TaskError::Denied(format!(
                "Unauthorized Request: the script of job {full} is shown only to {} and to operators",
                job.owner.user
            )));
        }
        let id = job.id.array_parent().unwrap_or(job.id);
        match self.durability.store().payload(id) {
            Ok(Some(payload)) => Ok(payload.script),
            // A finished job's script may be purged with it.
            Ok(None) => Ok(Vec::new()),
            Err(e) => Err(TaskError::Unavailable(format!(
                "the script of job {full} could not be read from the store: {e}"
            ))),
        }
    }

    pub(super) fn may_see(&self, caller: &qmesh_core::Caller, job: &qmesh_core::Job) -> bool {
        self.state.config().server.query_other_jobs
            || caller.role >= qmesh_core::Role::Operator
            || job.owner.uid == caller.uid
    }

    /// qdel, qhold, qrls: each id on its own; answered once durable.
    pub(super) fn act(
        &mut self,
        peer: &Peer,
        action: JobAction,
        ids: Vec<String>,
        reply: Reply<Vec<JobOutcome>>,
        now: Now,
    ) {
        let caller = self.caller(peer);
        let mut results = Vec::with_capacity(ids.len());
        for text in ids {
            let outcome = self.act_named(action, &text, &caller, now);
            if let Err(e) = &outcome {
                info!(job = %text, user = %caller.user, action = action.verb(), error = %e, "refused");
            }
            results.push(JobOutcome::new(text, &outcome));
        }
        self.answer_when_durable(results, "the change was made".to_string(), reply);
    }

    /// One id of qdel, qhold, qrls or sprelease: a job, an array, a
    /// sub-job or a range of them (`12[5-9]`), each acted on; the first
    /// refusal is the answer.
    fn act_named(
        &mut self,
        action: JobAction,
        text: &str,
        caller: &Caller,
        now: Now,
    ) -> Result<(), String> {
        let targets = self.state.targets(text).map_err(|e| e.to_string())?;
        let mut first_error = None;
        let mut ids = targets.jobs;
        if let Some((array, positions)) = targets.unstarted {
            match action {
                JobAction::Delete => {
                    self.delete_unstarted(array, &positions, caller, now)
                        .map_err(|e| e.to_string())?;
                }
                JobAction::DeleteRunning => {
                    first_error = Some(format!(
                        "{text}: sub-jobs that have not started are queued, not running; \
                         qdel removes them"
                    ));
                }
                JobAction::Hold(_) | JobAction::Release(_) => {
                    // Held or released alone: each gets its own record.
                    for id in self.state.sub_ids(array, &positions) {
                        self.state
                            .sub_job_record(id, now.wall)
                            .map_err(|e| e.to_string())?;
                        ids.push(id);
                    }
                }
            }
        }
        for id in ids {
            let outcome = match action {
                JobAction::DeleteRunning => self.not_running(id).map_or(Ok(id), Err),
                _ => Ok(id),
            }
            .and_then(|id| {
                self.act_on(action, id, caller, now)
                    .map_err(|e| e.to_string())
            });
            if let Err(e) = outcome {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// The jobs with records an id names, for the commands that act on
    /// running jobs or one record at a time (qsig, qrerun, qalter). With
    /// `members`, an array stands for its sub-jobs that have not finished;
    /// with `materialize`, sub-jobs left to start get records (to be
    /// altered alone), else they are left out.
    pub(super) fn expand_targets(
        &mut self,
        text: &str,
        (members, materialize): (bool, bool),
        now: Now,
    ) -> Result<Vec<JobId>, CoreError> {
        let targets = self.state.targets(text)?;
        let several = targets.jobs.len() > 1 || targets.unstarted.is_some();
        let running = |state: &qmesh_core::State, id: &JobId| {
            state.job(*id).is_some_and(|j| j.state.is_active())
        };
        let mut ids = Vec::new();
        for id in targets.jobs {
            let is_array = self.state.job(id).is_some_and(|j| j.array.is_some());
            if members && is_array {
                let subs = self.state.live_sub_jobs(id);
                ids.extend(subs.into_iter().filter(|s| running(&self.state, s)));
            } else if members && several {
                // Of a range, those running.
                if running(&self.state, &id) {
                    ids.push(id);
                }
            } else {
                ids.push(id);
            }
        }
        if let Some((array, positions)) = targets.unstarted.filter(|_| materialize) {
            for id in self.state.sub_ids(array, &positions) {
                self.state.sub_job_record(id, now.wall)?;
                ids.push(id);
            }
        }
        if ids.is_empty() {
            return Err(CoreError::BadOption {
                message: format!("{text}: none of its sub-jobs is running"),
            });
        }
        Ok(ids)
    }

    /// qdel of sub-jobs that have not started: the array's record says so.
    pub(super) fn delete_unstarted(
        &mut self,
        array: JobId,
        positions: &qmesh_core::array::Positions,
        caller: &Caller,
        now: Now,
    ) -> Result<(), CoreError> {
        let count = self
            .state
            .delete_unstarted(array, positions, caller, now.wall)?;
        if let Some(job) = self.state.job(array) {
            self.durability.persist(job);
            info!(job = %array, user = %caller.user, count, "sub-jobs deleted before they started");
        }
        let text = format!(
            "{count} sub-job(s) deleted at request of {}@{}",
            caller.user,
            self.state.server_name()
        );
        self.logs
            .event(&self.state, (array, EventClass::Job), text, now.wall);
        self.pacing.mark_dirty();
        Ok(())
    }

    pub(super) fn act_on(
        &mut self,
        action: JobAction,
        id: JobId,
        caller: &Caller,
        now: Now,
    ) -> Result<(), CoreError> {
        // An array: its sub-jobs with records of their own follow it (held,
        // released, deleted); those already being killed are left to end.
        let members: Vec<JobId> = self
            .state
            .live_sub_jobs(id)
            .into_iter()
            .filter(|sub| {
                self.state.job(*sub).is_some_and(|j| match action {
                    JobAction::Hold(_) => j.state == JobState::Queued,
                    JobAction::Release(_) => j.state == JobState::Held,
                    JobAction::Delete | JobAction::DeleteRunning => j.state != JobState::Exiting,
                })
            })
            .collect();
        let had_members = !members.is_empty();
        for sub in members {
            self.act_on(action, sub, caller, now)?;
        }
        let begun = self
            .state
            .job(id)
            .is_some_and(|j| j.state == JobState::Begun);
        if had_members && begun && matches!(action, JobAction::Hold(_) | JobAction::Release(_)) {
            // Nothing of the array itself is left to hold or release.
            return Ok(());
        }
        match action {
            JobAction::Hold(holds) => {
                let job = self.state.hold_types(id, caller, holds, now.wall)?;
                self.durability.persist(job);
                let text = format!(
                    "Holds {} set at request of {}@{}",
                    holds.types(),
                    caller.user,
                    self.state.server_name()
                );
                self.logs.hold_changed(
                    &self.state,
                    (id, RecordType::Held),
                    (&caller.user, &holds.types()),
                    text,
                    now.wall,
                );
            }
            JobAction::Release(holds) => {
                let job = match holds {
                    Some(holds) => self.state.release_types(id, caller, holds, now.wall)?,
                    None => self.state.release(id, caller, now.wall)?,
                };
                self.durability.persist(job);
                let text = match holds {
                    Some(holds) => format!(
                        "Holds {} released at request of {}@{}",
                        holds.types(),
                        caller.user,
                        self.state.server_name()
                    ),
                    None => format!(
                        "Holds released at request of {}@{}",
                        caller.user,
                        self.state.server_name()
                    ),
                };
                let released = holds.map_or_else(|| "u".to_string(), |h| h.types());
                self.logs.hold_changed(
                    &self.state,
                    (id, RecordType::Released),
                    (&caller.user, &released),
                    text,
                    now.wall,
                );
            }
            JobAction::Delete | JobAction::DeleteRunning => {
                let (outcome, job) = self.state.delete(id, caller, now.wall)?;
                self.durability.persist(job);
                info!(job = %id, user = %caller.user, "deleted");
                self.logs.deleted(&self.state, id, &caller.user, now.wall);
                self.job_done(id, now);
                if outcome == Deleted::Removed {
                    self.end_dependents(id, now.wall, now);
                }
                if let Deleted::Kill { host } = outcome {
                    self.end_active(id, &host, &format!("deleted by {}", caller.user), now);
                }
            }
        }
        Ok(())
    }

    /// sprelease's refusal of a job that is not running (it ends only
    /// running jobs; qdel is for the others).
    fn not_running(&self, id: JobId) -> Option<String> {
        let job = self.state.job(id)?;
        if job.state.is_pending() {
            let full = self.state.full_id(id);
            Some(format!(
                "job {full} is {}, not running; qdel removes a queued job",
                job.state
            ))
        } else {
            None
        }
    }

    /// Ends a job the state has just marked exiting: kills it, or if its
    /// launch has not gone out, ends it without one.
    pub(super) fn end_active(&mut self, id: JobId, host: &str, reason: &str, now: Now) {
        let event = crate::dispatch::DispatchEvent::EndWanted {
            job: id,
            host: host.to_string(),
            reason: reason.to_string(),
        };
        self.dispatch_at(event, now);
    }

    /// spwait: answers now if the job has finished, else when it does.
    pub(super) fn wait(&mut self, text: &str, reply: Reply<JobSnapshot>, now: Now) {
        let id = match self.existing_job(text) {
            Ok(id) => id,
            Err(refused) => {
                let _ = reply.send(Err(refused));
                return;
            }
        };
        let Some(job) = self.state.job(id) else {
            return;
        };
        if job.state == JobState::Finished {
            let _ = reply.send(Ok(self.snapshot(job, now)));
        } else {
            self.waiters.entry(id).or_default().push(reply);
        }
    }

    /// qstat -Q.
    pub(super) fn queues(&self, names: &[String], now: Now) -> Result<QueueList, TaskError> {
        let config = self.state.config();
        let names: Vec<&str> = if names.is_empty() {
            config.queues.keys().map(String::as_str).collect()
        } else {
            names.iter().map(String::as_str).collect()
        };
        let mut queues = Vec::with_capacity(names.len());
        for name in names {
            let queue = config.queue(name).ok_or_else(|| CoreError::NoSuchQueue {
                queue: name.to_string(),
            })?;
            // sinfo's partition: the calendar's periods on now.
            let active = |period: &str| self.state.period_active(period, now.wall);
            let sets = self
                .state
                .sets_now(queue, active)
                .iter()
                .filter_map(|&i| self.state.node_sets().get(i))
                .map(|set| set.name.clone())
                .collect();
            queues.push((
                queue.clone(),
                self.state.counts(name),
                self.state.capacity(name),
                QueueNow {
                    open: queue.open_in(active),
                    sets,
                },
            ));
        }
        Ok(QueueList {
            queues,
            server: self.state.server_name().to_string(),
            at: now.wall,
        })
    }
}

/// The error a refusal becomes when the caller did not ask for refusals.
fn refusal_status(refusal: &v1::StatusRefusal) -> TaskError {
    let message = refusal.message.clone();
    match refusal.reason() {
        v1::StatusRefusalReason::UnknownJob | v1::StatusRefusalReason::UnknownQueue => {
            TaskError::NotFound(message)
        }
        v1::StatusRefusalReason::BadId => TaskError::Invalid(message),
        v1::StatusRefusalReason::Finished | v1::StatusRefusalReason::Unspecified => {
            TaskError::NotNow(message)
        }
    }
}
