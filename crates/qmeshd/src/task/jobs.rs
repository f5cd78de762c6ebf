//! The daemon's half of qsub, qstat, qdel, qhold, qrls and qstat -Q.

use chrono::Utc;
use qmesh_core::joblog::EventClass;
use qmesh_core::state::Deleted;
use qmesh_core::{Caller, CoreError, JobId, JobState};
use qmesh_proto::{convert, v1};
use tonic::Status;
use tracing::{info, warn};

use super::{Launch, SchedulerTask, persist};
use crate::event::{JobAction, Reply};
use crate::identity::Peer;
use crate::status;

impl SchedulerTask {
    /// qsub: validated, stored, queued; answered once durable.
    pub(super) fn submit(
        &mut self,
        peer: &Peer,
        request: v1::SubmitRequest,
        reply: Reply<v1::SubmitReply>,
    ) {
        let caller = self.caller(peer);
        let (mut submission, payload) = convert::submission(request);
        if let Some(list) = &submission.group_list {
            let host = self.state.server_name().to_string();
            let wanted = qmesh_core::job::options::group_for(list, &host).unwrap_or_default();
            match crate::identity::member_group(&caller.user, caller.gid, wanted) {
                Ok(group) => submission.egroup = Some(group),
                Err(message) => {
                    let _ = reply.send(Err(Status::permission_denied(message)));
                    return;
                }
            }
        }
        let job = match self.state.prepare(submission, &caller, Utc::now()) {
            Ok(job) => job,
            Err(e) => {
                let _ = reply.send(Err(status::from_core(&e)));
                return;
            }
        };
        let full = self.state.full_id(job.id);
        if let Err(e) = self.store.put_new_job(&job, &payload) {
            let _ = reply.send(Err(status::from_store(&e, &format!("job {full}"))));
            return;
        }
        info!(job = %full, user = %job.owner.user, queue = %job.queue, nodes = job.nodes, "queued");
        if let Some(at) = job.start_after {
            self.wake_at(at);
        }
        let id = self.state.admit(job).id;
        self.log_queued(id, &caller.user);
        self.dirty = true;
        self.store.on_durable(Box::new(move |result| {
            let answer = match result {
                Ok(()) => Ok(v1::SubmitReply { job_id: full }),
                Err(e) => Err(Status::unavailable(format!(
                    "job {full} was queued but the store could not confirm it is on disk: {e}"
                ))),
            };
            let _ = reply.send(answer);
        }));
    }

    /// qstat: jobs by id, or all of them with the filters.
    pub(super) fn status(&self, request: &v1::StatusRequest) -> Result<v1::StatusReply, Status> {
        let now = Utc::now();
        let server = self.state.server_name();
        let info = |job: &qmesh_core::Job| {
            if !job.state.is_pending() {
                return convert::job_info(job, server, None, now);
            }
            let r = self.pending_reason(job);
            let why = self.explain(job, r, now);
            let mut info = convert::job_info(job, server, Some((r.as_str(), &why)), now);
            let (start, priority) = self.expected_start(job);
            info.expected_start = convert::unix(start);
            info.priority = priority;
            info
        };
        let mut jobs = Vec::new();
        if request.job_ids.is_empty() {
            for job in self.state.jobs() {
                if job.state == JobState::Finished && !request.include_finished {
                    continue;
                }
                if !request.user.is_empty() && job.owner.user != request.user {
                    continue;
                }
                jobs.push(info(job));
            }
        } else {
            for text in &request.job_ids {
                let id = self
                    .state
                    .parse_id(text)
                    .map_err(|e| status::from_core(&e))?;
                let job = self.state.job(id).ok_or_else(|| {
                    status::from_core(&CoreError::NoSuchJob {
                        id: self.state.full_id(id),
                    })
                })?;
                if job.state == JobState::Finished && !request.include_finished {
                    return Err(Status::failed_precondition(format!(
                        "job {} has finished; use qstat -x to see finished jobs",
                        self.state.full_id(id)
                    )));
                }
                jobs.push(info(job));
            }
        }
        Ok(v1::StatusReply {
            jobs,
            server: server.to_string(),
            server_time: now.timestamp(),
        })
    }

    /// qdel, qhold, qrls: each id on its own; answered once durable.
    pub(super) fn act(
        &mut self,
        peer: &Peer,
        action: JobAction,
        ids: Vec<String>,
        reply: Reply<v1::JobsReply>,
    ) {
        let caller = self.caller(peer);
        let mut results = Vec::with_capacity(ids.len());
        for text in ids {
            let outcome = self
                .state
                .parse_id(&text)
                .map_err(|e| e.to_string())
                .and_then(|id| match action {
                    JobAction::DeleteRunning => self.not_running(id).map_or(Ok(id), Err),
                    _ => Ok(id),
                })
                .and_then(|id| self.act_on(action, id, &caller).map_err(|e| e.to_string()));
            if let Err(e) = &outcome {
                info!(job = %text, user = %caller.user, action = action.verb(), error = %e, "refused");
            }
            results.push(v1::JobResult {
                job_id: text,
                ok: outcome.is_ok(),
                error: outcome.err().unwrap_or_default(),
            });
        }
        self.dirty = true;
        self.store.on_durable(Box::new(move |result| {
            let answer = result.map(|()| v1::JobsReply { results }).map_err(|e| {
                Status::unavailable(format!(
                    "the change was made but the store could not confirm it is on disk: {e}"
                ))
            });
            let _ = reply.send(answer);
        }));
    }

    pub(super) fn act_on(
        &mut self,
        action: JobAction,
        id: JobId,
        caller: &Caller,
    ) -> Result<(), CoreError> {
        let now = Utc::now();
        match action {
            JobAction::Hold => {
                let job = self.state.hold(id, caller, now)?;
                persist(self.store.as_ref(), job);
                let text = format!(
                    "Holds u set at request of {}@{}",
                    caller.user,
                    self.state.server_name()
                );
                self.log_event(id, EventClass::Job, text);
            }
            JobAction::Release => {
                let job = self.state.release(id, caller, now)?;
                persist(self.store.as_ref(), job);
                let text = format!(
                    "Holds released at request of {}@{}",
                    caller.user,
                    self.state.server_name()
                );
                self.log_event(id, EventClass::Job, text);
            }
            JobAction::Delete | JobAction::DeleteRunning => {
                let (outcome, job) = self.state.delete(id, caller, now)?;
                persist(self.store.as_ref(), job);
                info!(job = %id, user = %caller.user, "deleted");
                self.log_deleted(id, &caller.user);
                self.job_done(id);
                if outcome == Deleted::Removed {
                    self.end_dependents(id, now);
                }
                if let Deleted::Kill { host } = outcome {
                    self.end_active(id, &host, &format!("deleted by {}", caller.user));
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
    pub(super) fn end_active(&mut self, id: JobId, host: &str, reason: &str) {
        match self.launches.get(&id) {
            // launch() sees it exiting and ends it without a launch.
            Some(Launch::AwaitingDurable) => {}
            Some(Launch::Ready) => {
                self.finish_unlaunched(id, &format!("{reason} before it was launched"));
            }
            _ => self.kill(host, id, reason),
        }
    }

    /// Tells an agent to kill a job; if it is away, the kill is sent again
    /// when it reconnects (the job stays exiting until its end is reported).
    pub(super) fn kill(&mut self, host: &str, id: JobId, reason: &str) {
        let sent = self.send(
            host,
            v1::daemon_message::Kind::Kill(v1::KillJob {
                job: id.0,
                reason: reason.to_string(),
            }),
        );
        if !sent {
            warn!(job = %id, host, "agent not connected; the kill is sent when it reconnects");
        }
    }

    /// spwait: answers now if the job has finished, else when it does.
    pub(super) fn wait(&mut self, text: &str, reply: Reply<v1::JobInfo>) {
        let id = match self.state.parse_id(text) {
            Ok(id) => id,
            Err(e) => {
                let _ = reply.send(Err(status::from_core(&e)));
                return;
            }
        };
        let Some(job) = self.state.job(id) else {
            let _ = reply.send(Err(status::from_core(&CoreError::NoSuchJob {
                id: self.state.full_id(id),
            })));
            return;
        };
        if job.state == JobState::Finished {
            let info = convert::job_info(job, self.state.server_name(), None, Utc::now());
            let _ = reply.send(Ok(info));
        } else {
            self.waiters.entry(id).or_default().push(reply);
        }
    }

    /// qstat -Q.
    pub(super) fn queues(
        &self,
        request: &v1::QueueStatusRequest,
    ) -> Result<v1::QueueStatusReply, Status> {
        let config = self.state.config();
        let names: Vec<&str> = if request.names.is_empty() {
            config.queues.keys().map(String::as_str).collect()
        } else {
            request.names.iter().map(String::as_str).collect()
        };
        let mut queues = Vec::with_capacity(names.len());
        for name in names {
            let queue = config.queue(name).ok_or_else(|| {
                status::from_core(&CoreError::NoSuchQueue {
                    queue: name.to_string(),
                })
            })?;
            queues.push(convert::queue_info(
                queue,
                self.state.counts(name),
                self.state.capacity(name),
            ));
        }
        Ok(v1::QueueStatusReply {
            queues,
            server: self.state.server_name().to_string(),
            server_time: Utc::now().timestamp(),
        })
    }
}
