//! The daemon's half of pbs_rsub, pbs_rstat, pbs_ralter and pbs_rdel, and
//! reservations on time: a pass when an occurrence begins (its queue's
//! jobs may start), its jobs ended when it ends, and, after the last one,
//! the reservation gone with its queue's jobs, as PBS does.
//!
//! The core confirms or refuses (`qmesh_core::rsub`); the new configuration
//! is stored before it is put in place, and the answer goes once it is
//! durable, as qmgr's.

use std::collections::HashMap;

use qmesh_core::joblog::EventClass;
use qmesh_core::reservation::{self, ResvState};
use qmesh_core::rsub::{self, ResvRequest};
use qmesh_core::{Config, JobId, JobState};
use qmesh_store::Store;
use tracing::{info, warn};

use super::SchedulerTask;
use crate::answer::{JobOutcome, ResvShown};
use crate::dispatch::Now;
use crate::error::TaskError;
use crate::event::{JobAction, Reply};
use crate::identity::Peer;

/// What the task last saw of each reservation: its occurrence's position
/// and state, so that a change (an occurrence begins or ends) is acted on
/// once.
pub(super) type Seen = HashMap<u64, (usize, ResvState)>;

impl SchedulerTask {
    /// pbs_rsub (`id` none) or pbs_ralter.
    pub(super) fn reserve(
        &mut self,
        peer: &Peer,
        id: Option<String>,
        request: &ResvRequest,
        reply: Reply<ResvShown>,
        now: Now,
    ) {
        let caller = self.caller(peer);
        let host = peer
            .host
            .clone()
            .unwrap_or_else(|| self.state.server_name().to_string());
        let mut asap_job = None;
        let made = match &id {
            None if request.qmove_job.is_some() => {
                rsub::submit_asap(&self.state, &caller, &host, request, now.wall).map(
                    |(config, r, job)| {
                        asap_job = Some(job);
                        (config, r)
                    },
                )
            }
            None => rsub::submit(&self.state, &caller, &host, request, now.wall),
            Some(text) => reservation::parse_id(text)
                .and_then(|id| rsub::alter(&self.state, &caller, id, request, now.wall)),
        };
        let (config, r) = match made {
            Ok(made) => made,
            Err(e) => {
                info!(user = %caller.user, error = %e, "reservation refused");
                let _ = reply.send(Err(e.into()));
                return;
            }
        };
        if let Err(e) = self.put_config(config) {
            let _ = reply.send(Err(e));
            return;
        }
        // ASAP: the job moves into the reservation's queue.
        if let Some(job) = asap_job {
            match self.state.move_job(job, &r.queue_name(), &caller, now.wall) {
                Ok(moved) => self.durability.persist(moved),
                Err(e) => {
                    warn!(job = %job, error = %e, "could not move the job into its ASAP reservation")
                }
            }
        }
        let verb = if id.is_some() { "altered" } else { "confirmed" };
        info!(
            resv = %r.queue_name(),
            user = %caller.user,
            nodes = r.nodes,
            occurrences = r.occurrences.len(),
            node_set = %r.node_set,
            "reservation {verb}"
        );
        let shown = self.shown(r, now);
        self.answer_when_durable(shown, format!("the reservation was {verb}"), reply);
    }

    /// pbs_rstat: the reservations named, or all.
    pub(super) fn reservations(
        &self,
        ids: &[String],
        now: Now,
    ) -> Result<Vec<ResvShown>, TaskError> {
        let config = self.state.config();
        if ids.is_empty() {
            return Ok(config
                .reservations
                .values()
                .map(|r| self.shown(r.clone(), now))
                .collect());
        }
        ids.iter()
            .map(|text| {
                let id = reservation::parse_id(text)?;
                config
                    .reservations
                    .get(&id)
                    .map(|r| self.shown(r.clone(), now))
                    .ok_or_else(|| reservation::ResvError::Unknown(text.clone()).into())
            })
            .collect()
    }

    /// pbs_rdel: each reservation named, with its queue's jobs.
    pub(super) fn unreserve(
        &mut self,
        peer: &Peer,
        ids: Vec<String>,
        reply: Reply<Vec<JobOutcome>>,
        now: Now,
    ) {
        let caller = self.caller(peer);
        let mut results = Vec::with_capacity(ids.len());
        for text in ids {
            let outcome = reservation::parse_id(&text)
                .map_err(TaskError::from)
                .and_then(|id| {
                    let (config, r) = rsub::delete(&self.state, &caller, id)?;
                    self.put_config(config)?;
                    info!(resv = %r.queue_name(), user = %caller.user, "reservation deleted");
                    self.delete_queue_jobs(&r.queue_name(), now);
                    Ok(())
                });
            results.push(JobOutcome::new(text, &outcome));
        }
        self.answer_when_durable(results, "the reservations were deleted".to_string(), reply);
    }

    /// Each second: an occurrence that began wakes a pass; one that ended
    /// ends its queue's running jobs; a reservation whose last occurrence
    /// ended goes, with its queue's jobs. The queues of reservations gone
    /// go once their last job has.
    pub(super) fn enforce_reservations(&mut self, now: Now) {
        let config = self.state.config();
        if config.reservations.is_empty() && self.resv_seen.is_empty() {
            return;
        }
        let mut ended_occurrence = Vec::new();
        let mut finished = Vec::new();
        let mut changed = false;
        for r in config.reservations.values() {
            let at = (r.index_at(now.wall), r.state_at(now.wall));
            let before = self.resv_seen.insert(r.id, at);
            if before == Some(at) {
                continue;
            }
            changed = true;
            // An occurrence ended (or had, while the daemon was down):
            // whatever of its queue still runs is ended.
            if at.1 != ResvState::Running {
                ended_occurrence.push(r.queue_name());
            }
            if at.1 == ResvState::Finished {
                finished.push(r.id);
            }
        }
        self.resv_seen
            .retain(|id, _| self.state.config().reservations.contains_key(id));
        if changed {
            self.pacing.mark_dirty();
        }
        for queue in ended_occurrence {
            self.end_occurrence_jobs(&queue, now);
        }
        if !finished.is_empty() {
            let mut config = self.state.config().clone();
            for &id in &finished {
                let queue = format!("R{id}");
                let empty = self.state.counts(&queue).total() == 0;
                config.remove_reservation(id, empty);
            }
            match self.put_config(config) {
                Ok(()) => {
                    for id in finished {
                        info!(resv = %format!("R{id}"), "reservation finished");
                        self.delete_queue_jobs(&format!("R{id}"), now);
                    }
                }
                Err(e) => warn!(error = %e, "could not remove finished reservations; trying again"),
            }
        }
        let orphans: Vec<String> = self
            .state
            .config()
            .orphan_queues()
            .into_iter()
            .filter(|q| self.state.counts(q).total() == 0)
            .collect();
        if !orphans.is_empty() {
            let mut config = self.state.config().clone();
            for q in &orphans {
                config.queues.remove(q);
            }
            if let Err(e) = self.put_config(config) {
                warn!(error = %e, "could not remove the queues of reservations gone");
            }
        }
    }

    /// The running jobs of a reservation's queue when its occurrence ends:
    /// ended as a period's end ends them (their wall time was to fit).
    fn end_occurrence_jobs(&mut self, queue: &str, now: Now) {
        let running: Vec<JobId> = self
            .state
            .active_jobs()
            .filter(|j| j.queue == queue && j.state.is_running())
            .map(|j| j.id)
            .collect();
        let what = format!("the end of reservation {queue}");
        for id in running {
            match self.state.stop_for_period(id, &what, false, now.wall) {
                Ok((host, job)) => {
                    info!(job = %id, resv = queue, "ending a job at its reservation's end");
                    self.durability.persist(job);
                    let reason = job.comment.clone();
                    self.logs
                        .event(&self.state, (id, EventClass::Job), reason.clone(), now.wall);
                    self.end_active(id, &host, &reason, now);
                    self.pacing.mark_dirty();
                }
                Err(e) => {
                    warn!(job = %id, error = %e, "could not end a job at its reservation's end")
                }
            }
        }
    }

    /// Deletes every job of a reservation's queue, as the server.
    fn delete_queue_jobs(&mut self, queue: &str, now: Now) {
        let jobs: Vec<JobId> = self
            .state
            .pending_in(queue)
            .chain(self.state.active_jobs())
            .filter(|j| j.queue == queue && j.state != JobState::Exiting)
            .map(|j| j.id)
            .collect();
        let server = self.server_caller();
        for id in jobs {
            if let Err(e) = self.act_on(JobAction::Delete, id, &server, now) {
                warn!(job = %id, error = %e, "could not delete a job of a reservation gone");
            }
        }
    }

    /// Stores `config` and puts it in place.
    fn put_config(&mut self, config: Config) -> Result<(), TaskError> {
        if let Err(e) = self.durability.store().put_config(&config) {
            return Err(TaskError::not_stored(&e, "the reservation"));
        }
        for warning in self.state.set_config(config) {
            warn!("{warning}");
        }
        self.published.host_gate(&self.state);
        self.pacing.mark_dirty();
        Ok(())
    }

    fn shown(&self, resv: qmesh_core::reservation::Reservation, now: Now) -> ResvShown {
        let jobs = self.state.counts(&resv.queue_name()).total();
        ResvShown {
            jobs,
            resv,
            server: self.state.server_name().to_string(),
            zone: self.state.config().calendar.time_zone.clone(),
            at: now.wall,
        }
    }
}
