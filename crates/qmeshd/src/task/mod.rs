//! The scheduler task: the single owner of the scheduler's state.
//!
//! Every request and report arrives here as an [`Event`], one at a time, so
//! the state needs no lock. The loop ([`SchedulerTask::run`]) reads the
//! clock once per event and hands both to [`SchedulerTask::handle`]; below
//! it nothing reads the clock, touches a socket or awaits anything, so the
//! handlers are tested in memory (`tests.rs`), as dispatch is.
//!
//! The task is a few named parts around the state, each with one job:
//! - [`Durability`] (`durability.rs`): the store, written a turn at a
//!   time; what waits for a change to be durable; read-only mode when the
//!   store cannot write (`read_only.rs`).
//! - [`JobLogs`] (`joblog.rs`): PBS's accounting log and server events,
//!   and the store's outbox of records on their way there.
//! - [`AgentLinks`] (`links.rs`): each host's session, the attaches
//!   parked until their job starts, the task numbers given out.
//! - [`Pacing`] (`pacing.rs`): when passes run, and the other things done
//!   on time (start-after times, history expiry, reorders).
//! - [`Dispatch`] (`crate::dispatch`): where each launch, join and end
//!   stands between the daemon and the hosts; `dispatch.rs` carries out
//!   its orders.
//! - [`LastPlan`] (`plan.rs`): the last pass's plan, served to qstat and
//!   the sp commands.
//! - [`Published`] (`publish.rs`): the metrics and the host gate.
//!
//! The requests are handled one file per command (Pueue's layout: the
//! service's half is in `crate::service`). A change is written to the
//! store at once and acknowledged when the store's writer says it is
//! durable; a job's launch order goes to its agent only once its start is
//! durable, and an agent may forget a finished job only once its end is
//! durable. Errors are [`TaskError`]s (`crate::error`), made gRPC
//! statuses by the services.

mod accounting;
mod admin;
mod agents;
mod attach;
mod batch;
mod dispatch;
mod durability;
mod ends;
mod joblog;
mod jobs;
mod links;
mod pacing;
mod pass;
mod pause;
mod period_end;
mod plan;
mod preempt;
mod publish;
mod qalter;
mod qdel;
mod qmove;
mod qmsg;
mod qorder;
mod qrerun;
mod qrun;
mod read_only;
mod reservations;
mod runjob;
mod server_status;
mod signal;
#[cfg(test)]
mod tests;
mod tick;
mod trace;
mod turn_store;
mod usage;

use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use qmesh_core::scheduler::Scheduler;
use qmesh_core::{Caller, JobId, State};
use qmesh_store::Store;
use tokio::sync::mpsc;
use tracing::{error, info, warn};

use crate::dispatch::{Dispatch, Now};
use crate::error::TaskError;
use crate::event::{AfterDurable, Event, Reply};
use crate::identity::Peer;
use durability::Durability;
use joblog::JobLogs;
use links::AgentLinks;
use pacing::Pacing;
use plan::LastPlan;
use publish::Published;

/// What the task needs to know besides the state.
#[derive(Clone, Debug)]
pub struct TaskSettings {
    pub heartbeat_secs: u32,
    /// How long a host's agent may be away before its jobs are lost.
    pub lost_after: Duration,
    pub pass_interval: Duration,
    /// The uid the daemon runs as: a manager, like root.
    pub daemon_uid: u32,
    /// Where jobs start, and the mailer for their mail.
    pub jobs: qmesh_config::JobSettings,
    /// What the configuration file seeds a new store with: `print server`
    /// writes what recreates the configuration on a daemon started from it.
    pub file_config: qmesh_core::Config,
    /// The store, as named when it cannot write: "in DIR", or "(etcd at
    /// ... under ...)".
    pub store_name: String,
    /// The leader's term, told to agents in their Welcome (0: no election,
    /// the sled store).
    pub term: i64,
}

/// The time of an event, both clocks read at once: the task's loop reads
/// it once per event, tick and pass, and hands it down.
pub fn read_clock() -> Now {
    Now {
        wall: Utc::now(),
        mono: Instant::now(),
    }
}

pub struct SchedulerTask {
    state: State,
    scheduler: Scheduler,
    settings: TaskSettings,
    durability: Durability,
    logs: JobLogs,
    links: AgentLinks,
    pacing: Pacing,
    dispatch: Dispatch,
    plan: LastPlan,
    published: Published,
    /// Callers waiting for a job to finish (spwait).
    waiters: HashMap<JobId, Vec<Reply<crate::answer::JobSnapshot>>>,
    /// Running jobs warned that their period ends.
    warned: HashMap<JobId, period_end::Warned>,
    /// Each reservation's occurrence and state as last seen (`reservations`).
    resv_seen: reservations::Seen,
    /// Jobs whose history goes once they have ended (qdel -x).
    purge_on_end: HashSet<JobId>,
    /// Where runjob hooks run, when the daemon has site hooks.
    runjob: Option<runjob::Runjob>,
}

impl SchedulerTask {
    /// The task over a loaded `state`, as of `now`: jobs whose dependency
    /// can no longer be met are deleted, arrays whose last sub-job ended
    /// before a crash are finished, and the first start-after time is
    /// found. `after` is where "now durable" comes back
    /// ([`SchedulerTask::run`]'s second receiver).
    pub fn new(
        state: State,
        store: Arc<dyn Store>,
        settings: TaskSettings,
        after: mpsc::UnboundedSender<Vec<AfterDurable>>,
        now: Now,
    ) -> SchedulerTask {
        let mut task = SchedulerTask {
            state,
            scheduler: Scheduler,
            durability: Durability::new(store, after, settings.store_name.clone()),
            logs: JobLogs::new(crate::joblog::JobLog::disabled(), 1),
            links: AgentLinks::default(),
            pacing: Pacing::new(settings.pass_interval, now),
            dispatch: Dispatch::new(settings.lost_after),
            plan: LastPlan::default(),
            published: Published::default(),
            waiters: HashMap::new(),
            warned: HashMap::new(),
            resv_seen: HashMap::new(),
            purge_on_end: HashSet::new(),
            runjob: None,
            settings,
        };
        task.settle_loaded(now);
        task
    }

    /// Publishes which hosts may relay commands to `gate` now and after
    /// every qmgr change (the services check relayed requests against it).
    pub fn with_host_gate(
        mut self,
        gate: tokio::sync::watch::Sender<Arc<crate::identity::HostGate>>,
    ) -> SchedulerTask {
        self.published.set_host_gate(gate);
        self.published.host_gate(&self.state);
        self
    }

    /// Publishes the configuration's site hooks to `publisher` now and
    /// after every qmgr change (the services run them); `hooks` runs the
    /// runjob hooks, whose verdicts come back through `events`.
    pub fn with_site_hooks(
        mut self,
        publisher: crate::site_hooks::Publisher,
        hooks: crate::site_hooks::SiteHooks,
        events: &mpsc::Sender<Event>,
    ) -> SchedulerTask {
        self.published.set_site_hooks(publisher);
        self.published.site_hooks(&self.state);
        self.runjob = Some(runjob::Runjob {
            hooks,
            events: events.downgrade(),
        });
        self
    }

    /// Keeps `metrics` up to date (see `crate::metrics`).
    /// Counts the turns that may change a listing, for the services'
    /// shared listings (`crate::listings`).
    pub fn with_listing_generation(
        mut self,
        generation: Arc<crate::listings::Generation>,
    ) -> SchedulerTask {
        self.published.set_listing_generation(generation);
        // A task taking over (a new leader) shows another state.
        self.published.changed();
        self
    }

    pub fn with_metrics(mut self, metrics: Arc<crate::metrics::Metrics>) -> SchedulerTask {
        self.published.set_metrics(metrics);
        self
    }

    /// Writes PBS's job logs with `log`, numbering accounting records from
    /// `next_record` on (above every record the store still keeps); a task
    /// without one writes none.
    pub fn with_job_log(mut self, log: crate::joblog::JobLog, next_record: u64) -> SchedulerTask {
        self.logs = JobLogs::new(log, next_record);
        self
    }

    /// Settles the loaded jobs: deletes those whose dependency can no
    /// longer be met, finishes arrays whose end a crash kept from the
    /// store, finds the earliest start-after time.
    fn settle_loaded(&mut self, now: Now) {
        let resolved = self.state.resolve_all_dependents(now.wall);
        for id in resolved.deleted.into_iter().chain(resolved.trimmed) {
            if let Some(job) = self.state.job(id) {
                info!(job = %id, comment = %job.comment, "dependency can never be met");
                self.durability.persist(job);
            }
        }
        self.settle_arrays(now);
        self.set_next_begin(now);
    }

    /// The earliest start-after time of a pending job, after `now`.
    fn set_next_begin(&mut self, now: Now) {
        let times = self
            .state
            .pending_jobs()
            .filter(|j| j.start_after.is_some() || !j.depend.is_empty())
            .filter_map(|j| self.state.ready_time(j));
        self.pacing.set_next_begin(times, now.wall);
    }

    /// Takes events, durable changes, ticks and passes until the events
    /// end or a shutdown comes; each gets the time, read once.
    pub async fn run(
        mut self,
        mut events: mpsc::Receiver<Event>,
        mut durable: mpsc::UnboundedReceiver<Vec<AfterDurable>>,
    ) {
        let mut ticker = tokio::time::interval(Duration::from_secs(1));
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            let pass_at = self.pacing.pass_due_at();
            let pass_due = async {
                match pass_at {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            };
            // The listings' generation moves on before anything that may
            // change what they show, so no answer given after it can be
            // followed by an older listing (`crate::listings`).
            tokio::select! {
                event = events.recv() => {
                    let Some(first) = event else {
                        self.shutdown();
                        return;
                    };
                    // What has queued up meanwhile too, 256 at most.
                    let flow = batch::drain(first, &mut events, 256, |event| match event {
                        Event::Shutdown(done) => {
                            self.shutdown();
                            let _ = done.send(());
                            ControlFlow::Break(())
                        }
                        event => {
                            if !event.only_reads() {
                                self.published.changed();
                            }
                            self.handle(event, read_clock());
                            ControlFlow::Continue(())
                        }
                    });
                    if flow.is_break() {
                        return;
                    }
                }
                Some(after) = durable.recv() => {
                    self.published.changed();
                    self.after_durable(after, read_clock());
                }
                _ = ticker.tick() => {
                    self.published.changed();
                    self.tick(read_clock());
                }
                _ = pass_due => {
                    self.published.changed();
                    self.schedule(read_clock());
                }
            }
            self.end_turn();
        }
    }

    /// Handles one event at `now`: the request answered (at once, or once
    /// its change is durable), the report taken in.
    fn handle(&mut self, event: Event, now: Now) {
        let Some(event) = self.refuse_if_read_only(event) else {
            return;
        };
        match event {
            Event::Submit {
                peer,
                submission,
                payload,
                reply,
            } => self.submit(&peer, *submission, payload, reply, now),
            Event::Status { peer, query, reply } => {
                let _ = reply.send(self.status(&peer, &query, now));
            }
            Event::SharedStatus { peer, query, reply } => {
                let _ = reply.send(self.shared_status(&peer, &query, now));
            }
            Event::Act {
                peer,
                action,
                ids,
                reply,
            } => self.act(&peer, action, ids, reply, now),
            Event::Signal {
                peer,
                signal,
                ids,
                reply,
            } => self.signal(&peer, &signal, ids, reply, now),
            Event::Message {
                peer,
                text,
                to_output,
                to_error,
                ids,
                reply,
            } => {
                let _ = reply.send(self.message(&peer, &text, (to_output, to_error), ids, now));
            }
            Event::Wait { job_id, reply } => self.wait(&job_id, reply, now),
            Event::Move {
                peer,
                destination,
                ids,
                reply,
            } => self.move_jobs(&peer, &destination, ids, reply, now),
            Event::Queues { names, reply } => {
                let _ = reply.send(self.queues(&names, now));
            }
            Event::ServerStatus { reply } => {
                let _ = reply.send(Ok(self.server_status(now)));
            }
            Event::Plan { peer, reply } => {
                let caller = self.caller(&peer);
                let _ = reply.send(Ok(self.plan_reply(&caller, now)));
            }
            Event::When {
                peer,
                job_id,
                reply,
            } => {
                let caller = self.caller(&peer);
                let _ = reply.send(self.when(&caller, &job_id, now));
            }
            Event::Nodes { names, host, reply } => {
                let _ = reply.send(self.nodes(&names, &host, now));
            }
            Event::Qmgr {
                peer,
                script,
                source,
                check_only,
                reply,
            } => {
                self.qmgr(&peer, (&script, &source, check_only), reply, now);
                self.published.host_gate(&self.state);
                self.published.site_hooks(&self.state);
            }
            Event::Usage { peer, all, reply } => {
                let _ = reply.send(self.usage(&peer, all, now));
            }
            Event::AgentHello {
                session,
                hello,
                outbox,
                reply,
            } => self.agent_hello(session, hello, outbox, reply, now),
            Event::AgentSaid { session, message } => self.agent_said(session, message, now),
            Event::AgentGone { session } => self.agent_gone(session, now),
            Event::Shutdown(_) => {}
            Event::RunjobVerdict { job, refused } => self.runjob_verdict(job, refused, now),
            Event::LeadUncertain { why } => {
                self.durability.not_durable(Vec::new(), why);
                for host in self.links.drop_all() {
                    self.dispatch_at(crate::dispatch::DispatchEvent::AgentGone { host }, now);
                }
            }
            Event::Delete {
                peer,
                ids,
                force,
                purge_history,
                reply,
            } => self.delete(&peer, ids, (force, purge_history), reply, now),
            Event::Rerun {
                peer,
                ids,
                how,
                reply,
            } => self.rerun(&peer, ids, how, reply, now),
            Event::Order {
                peer,
                first,
                second,
                reply,
            } => self.order(&peer, (&first, &second), reply, now),
            Event::Run {
                peer,
                ids,
                nodes,
                reply,
            } => self.run_now(&peer, ids, nodes.as_deref(), reply, now),
            Event::Trace {
                peer,
                job_id,
                days,
                reply,
            } => self.trace(&peer, &job_id, days, reply, now),
            Event::Accounting {
                peer,
                request,
                reply,
            } => self.accounting(&peer, request, reply, now),
            Event::Alter {
                peer,
                ids,
                alteration,
                reply,
            } => self.alter(&peer, ids, &alteration, reply, now),
            Event::Reserve {
                peer,
                id,
                request,
                reply,
            } => self.reserve(&peer, id, &request, reply, now),
            Event::Reservations { ids, reply } => {
                let _ = reply.send(self.reservations(&ids, now));
            }
            Event::Unreserve { peer, ids, reply } => self.unreserve(&peer, ids, reply, now),
            Event::RefreshMetrics(done) => {
                let agents = self.links.connected();
                self.published
                    .refresh_metrics(&self.state, agents, now.wall);
                let _ = done.send(());
            }
            Event::OpenTask {
                peer,
                open,
                token,
                reply,
            } => self.open_task(&peer, open, token, reply),
        }
        self.settle_arrays(now);
    }

    /// Ends the turn: its changes and accounting records go to the store
    /// as one write.
    fn end_turn(&mut self) {
        let watch = self.durability.failure_watch();
        self.logs.end_turn(self.durability.store(), watch);
    }

    /// The job `text` names, if it exists; else the refusal to answer.
    fn existing_job(&self, text: &str) -> Result<JobId, TaskError> {
        let id = self.state.parse_id(text)?;
        if self.state.job(id).is_none() {
            return Err(qmesh_core::CoreError::NoSuchJob {
                id: self.state.full_id(id),
            }
            .into());
        }
        Ok(id)
    }

    /// The server itself acting (a hook's refusal, a reservation's end):
    /// a manager named `Server`, as PBS's logs name it.
    fn server_caller(&self) -> Caller {
        Caller {
            uid: self.settings.daemon_uid,
            gid: 0,
            user: "Server".into(),
            group: String::new(),
            role: qmesh_core::Role::Manager,
        }
    }

    fn caller(&self, peer: &Peer) -> Caller {
        if let Some(host) = &peer.host {
            return Caller::identify_remote(
                peer.uid,
                peer.gid,
                &peer.user,
                &peer.group,
                host,
                &self.state.config().server,
            );
        }
        Caller::identify(
            peer.uid,
            peer.gid,
            &peer.user,
            &peer.group,
            &self.state.config().server,
            self.settings.daemon_uid,
        )
    }

    /// Answers `reply` with `answer` once this turn's changes are on disk
    /// (the group commit), and marks the state changed; `done` says what
    /// was done, for the error when the store cannot confirm it.
    fn answer_when_durable<T: Send + 'static>(&mut self, answer: T, done: String, reply: Reply<T>) {
        self.pacing.mark_dirty();
        self.durability.answer_when_durable(answer, done, reply);
    }

    /// Carries out what waited for the store.
    fn after_durable(&mut self, after: Vec<AfterDurable>, now: Now) {
        for item in after {
            match item {
                AfterDurable::NotDurable { items, why } => self.durability.not_durable(items, why),
                AfterDurable::Resynced => self.resynced(now),
                AfterDurable::Launch(id) => self.launch_or_judge(id, now),
                AfterDurable::Ack { host, job } => {
                    self.links.ack(&host, job);
                }
            }
        }
    }

    /// The last turn, then the store made durable and the job logs
    /// written out.
    fn shutdown(&mut self) {
        self.end_turn();
        info!("making the store durable before exit");
        let store = self.durability.store();
        if let Err(e) = store.sync() {
            error!(error = %e, "the last flush failed");
        }
        // What the log now has leaves the store: a clean start finds
        // nothing kept.
        if let Some(written) = self.logs.close() {
            store.end_turn(vec![written], None);
            if let Err(e) = store.sync() {
                error!(error = %e, "could not tell the store the accounting log is written");
            }
        }
    }
}

/// Reports that warrant a warning at start: a loaded state with problems.
pub fn log_restore_warnings(warnings: &[String]) {
    for w in warnings {
        warn!("{w}");
    }
}
