//! The scheduler task: the single owner of the scheduler's state.
//!
//! Every request and report arrives here as an [`Event`], one at a time, so
//! the state needs no lock. A change is written to the store at once and
//! acknowledged when the store's writer says it is durable; a job's launch
//! order goes to its agent only once its start is durable, and an agent may
//! forget a finished job only once its end is durable.
//!
//! Passes are not run per event: an event marks the state dirty, and a pass
//! runs when the events have drained or `pass_interval` has passed since the
//! last one, so a burst of submissions shares one pass.

mod admin;
mod agents;
mod attach;
mod batch;
mod dispatch;
mod joblog;
mod jobs;
mod period_end;
mod plan;
mod qalter;
mod qdel;
mod qmove;
mod qorder;
mod qrerun;
mod qrun;
mod read_only;
mod server_status;
mod signal;
mod trace;
mod turn_store;
mod usage;

use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use qmesh_core::job::Job;
use qmesh_core::scheduler::Scheduler;
use qmesh_core::{Caller, JobId, State, Time};
use qmesh_proto::v1;
use qmesh_store::Store;
use tokio::sync::mpsc;
use tracing::{debug, error, info, info_span, warn};

use crate::dispatch::{Dispatch, DispatchEvent};
use crate::event::{AfterDurable, AgentOutbox, Event, Reply};
use crate::identity::Peer;
use plan::LastPlan;

/// What the task needs to know besides the state.
#[derive(Clone, Debug)]
pub struct TaskSettings {
    pub heartbeat_secs: u32,
    /// How long a host's agent may be away before its jobs are lost.
    pub lost_after: Duration,
    pub pass_interval: Duration,
    /// The uid the daemon runs as: a manager, like root.
    pub daemon_uid: u32,
    /// Agents must present this key, when set.
    pub cluster_key: Option<String>,
    /// Where jobs start, and the mailer for their mail.
    pub jobs: qmesh_config::JobSettings,
    /// What the configuration file seeds a new store with: `print server`
    /// writes what recreates the configuration on a daemon started from it.
    pub file_config: qmesh_core::Config,
    /// The store's directory, named when it cannot write.
    pub store_dir: std::path::PathBuf,
}

/// A connected agent.
struct AgentLink {
    session: u64,
    outbox: AgentOutbox,
    last_seen: Instant,
}

impl AgentLink {
    /// Queues a message for the agent without waiting: the task never
    /// waits for one agent. An agent that has left its buffer full
    /// ([`crate::event::AGENT_OUTBOX`] messages unread) is stuck: its
    /// session is ended (the stream closes once what it holds is read)
    /// and this message is not sent. The agent reconnects, and its hello
    /// reconciles what it missed; launches not sent wait for it.
    fn deliver(&mut self, host: &str, kind: v1::daemon_message::Kind) -> bool {
        use tokio::sync::mpsc::error::TrySendError;
        match self
            .outbox
            .try_send(Ok(v1::DaemonMessage { kind: Some(kind) }))
        {
            Ok(()) => true,
            Err(TrySendError::Closed(_)) => false,
            Err(TrySendError::Full(_)) => {
                warn!(
                    host,
                    session = self.session,
                    unread = self.outbox.max_capacity(),
                    "the agent does not read its messages; ending its session (it reconnects and reconciles)"
                );
                self.outbox = tokio::sync::mpsc::channel(1).0;
                false
            }
        }
    }
}

pub struct SchedulerTask {
    state: State,
    /// The store, written a turn at a time (`turn_store.rs`).
    store: Arc<turn_store::TurnStore>,
    scheduler: Scheduler,
    settings: TaskSettings,
    /// The last pass's plan: why each pending job waits, when it starts.
    plan: LastPlan,
    /// Launches, joins, stale runs, jobs given up, hosts away
    /// (`crate::dispatch`).
    dispatch: Dispatch,
    /// Callers waiting for a job to finish.
    waiters: HashMap<JobId, Vec<Reply<crate::answer::JobSnapshot>>>,
    agents: HashMap<String, AgentLink>,
    sessions: HashMap<u64, String>,
    durable_tx: mpsc::UnboundedSender<Vec<AfterDurable>>,
    dirty: bool,
    passes: u64,
    last_pass: Instant,
    /// How long the last pass took: passes are spaced at least twice that
    /// apart, so a huge queue cannot starve request handling.
    last_pass_cost: Duration,
    last_purge: Instant,
    /// The earliest `qsub -a` time still ahead: a pass is due when it comes.
    next_begin: Option<Time>,
    /// When the queues' `reorder_times` were last looked at.
    last_reorder_check: Time,
    /// Running jobs warned that their period ends.
    warned: HashMap<JobId, period_end::Warned>,
    /// PBS's accounting log and server events (`crate::joblog`).
    joblog: crate::joblog::JobLog,
    /// Jobs whose history goes once they have ended (qdel -x).
    purge_on_end: HashSet<JobId>,
    /// qsub -I attaches waiting for their job to start.
    parked: HashMap<JobId, Vec<attach::Parked>>,
    /// The last PBS_TASKNUM given out per running job (the script is 1).
    task_numbers: HashMap<JobId, u32>,
    /// Accounting records of this turn, written once it is durable
    /// (`joblog.rs`).
    pending_records: std::cell::RefCell<Vec<joblog::PendingRecord>>,
    /// Why the store cannot write, once it could not (`read_only.rs`).
    read_only: Option<String>,
    /// Launches and acknowledgements whose changes are not durable.
    held_back: Vec<AfterDurable>,
    /// When a read-only daemon last tried its store again.
    last_recovery: Option<Instant>,
    /// The next accounting record's number in the store's outbox.
    next_record_seq: std::cell::Cell<u64>,
    /// The outbox is known written up to here (the store was told).
    confirmed_records: u64,
    /// The Prometheus metrics, when the daemon serves them.
    metrics: Option<Arc<crate::metrics::Metrics>>,
    /// Where the hosts that may relay commands are published.
    gate: Option<tokio::sync::watch::Sender<Arc<crate::identity::HostGate>>>,
}

impl SchedulerTask {
    pub fn new(
        state: State,
        store: Arc<dyn Store>,
        settings: TaskSettings,
        durable_tx: mpsc::UnboundedSender<Vec<AfterDurable>>,
    ) -> SchedulerTask {
        let lost_after = settings.lost_after;
        SchedulerTask {
            state,
            store: Arc::new(turn_store::TurnStore::new(store)),
            scheduler: Scheduler,
            settings,
            plan: LastPlan::default(),
            dispatch: Dispatch::new(lost_after),
            waiters: HashMap::new(),
            agents: HashMap::new(),
            sessions: HashMap::new(),
            durable_tx,
            dirty: true,
            passes: 0,
            last_pass: Instant::now(),
            last_pass_cost: Duration::ZERO,
            last_purge: Instant::now(),
            next_begin: None,
            last_reorder_check: Utc::now(),
            warned: HashMap::new(),
            joblog: crate::joblog::JobLog::disabled(),
            purge_on_end: HashSet::new(),
            gate: None,
            pending_records: Default::default(),
            read_only: None,
            held_back: Vec::new(),
            last_recovery: None,
            next_record_seq: std::cell::Cell::new(1),
            confirmed_records: 0,
            metrics: None,
            parked: HashMap::new(),
            task_numbers: HashMap::new(),
        }
        .with_begin_times()
    }

    /// Publishes which hosts may relay commands to `gate` now and after
    /// every qmgr change (the services check relayed requests against it).
    pub fn with_host_gate(
        mut self,
        gate: tokio::sync::watch::Sender<Arc<crate::identity::HostGate>>,
    ) -> SchedulerTask {
        self.gate = Some(gate);
        self.publish_host_gate();
        self
    }

    fn publish_host_gate(&self) {
        let Some(gate) = &self.gate else { return };
        let compute_hosts = self
            .state
            .nodes()
            .iter()
            .map(|n| n.host.to_string())
            .collect();
        gate.send_replace(Arc::new(crate::identity::HostGate {
            server: self.state.config().server.clone(),
            compute_hosts,
        }));
    }

    /// Keeps `metrics` up to date (see `crate::metrics`).
    pub fn with_metrics(mut self, metrics: Arc<crate::metrics::Metrics>) -> SchedulerTask {
        self.metrics = Some(metrics);
        self
    }

    /// The gauges of the state as it is now, for a scrape.
    fn refresh_metrics(&self) {
        let Some(m) = &self.metrics else { return };
        use crate::metrics::{JobLabels, NodeLabels};
        m.jobs.clear();
        for job in self.state.jobs() {
            m.jobs
                .get_or_create(&JobLabels {
                    state: job.state.to_string().replace(' ', "_"),
                    queue: job.queue.to_string(),
                })
                .inc();
        }
        m.nodes.clear();
        let sets = self.state.node_sets();
        let mut busy = 0usize;
        for node in self.state.nodes() {
            if node.job().is_some() {
                busy += 1;
            }
            let set = sets
                .get(node.set)
                .map(|s| s.name.to_string())
                .unwrap_or_default();
            m.nodes
                .get_or_create(&NodeLabels {
                    state: node.state_name().to_string(),
                    node_set: set,
                })
                .inc();
        }
        let all = self.state.nodes().len();
        m.utilization.set(if all == 0 {
            0.0
        } else {
            busy as f64 / all as f64
        });
        m.agents_connected.set(self.agents.len() as i64);
        let now = Utc::now();
        let oldest = self
            .state
            .pending_jobs()
            .map(|j| (now - j.qtime).num_milliseconds())
            .max()
            .unwrap_or(0)
            .max(0);
        m.oldest_queued_wait.set(oldest as f64 / 1000.0);
    }

    /// Writes PBS's job logs with `log` (a task without one writes none).
    pub fn with_job_log(mut self, log: crate::joblog::JobLog) -> SchedulerTask {
        self.joblog = log;
        self
    }

    /// Numbers accounting records from `next` on (above every record the
    /// store still keeps).
    pub fn with_record_seq(self, next: u64) -> SchedulerTask {
        self.next_record_seq.set(next.max(1));
        self
    }

    /// Settles the loaded jobs: deletes those whose dependency can no
    /// longer be met, finds the earliest start-after time.
    fn with_begin_times(mut self) -> SchedulerTask {
        let now = Utc::now();
        for id in self.state.resolve_all_dependents(now) {
            if let Some(job) = self.state.job(id) {
                info!(job = %id, comment = %job.comment, "dependency can never be met");
                persist(self.store.as_ref(), job);
            }
        }
        // Arrays whose last sub-job ended before the crash stored its end.
        self.settle_arrays(now);
        self.next_begin = self.next_begin_after(now);
        self
    }

    fn next_begin_after(&self, now: Time) -> Option<Time> {
        self.state
            .pending_jobs()
            .filter_map(|j| j.start_after)
            .filter(|t| *t > now)
            .min()
    }

    /// A job may start at `at` (qsub -a): make sure a pass comes then.
    pub(super) fn wake_at(&mut self, at: Time) {
        self.next_begin = Some(self.next_begin.map_or(at, |t| t.min(at)));
    }

    pub async fn run(
        mut self,
        mut events: mpsc::Receiver<Event>,
        mut durable: mpsc::UnboundedReceiver<Vec<AfterDurable>>,
    ) {
        let mut ticker = tokio::time::interval(Duration::from_secs(1));
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            let pass_at = self.dirty.then(|| {
                tokio::time::Instant::from_std(self.last_pass + self.settings.pass_interval)
            });
            let pass_due = async {
                match pass_at {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
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
                            self.handle(event);
                            ControlFlow::Continue(())
                        }
                    });
                    if flow.is_break() {
                        return;
                    }
                }
                Some(after) = durable.recv() => self.after_durable(after),
                _ = ticker.tick() => self.tick(),
                _ = pass_due => self.schedule(),
            }
            self.end_turn();
        }
    }

    fn handle(&mut self, event: Event) {
        let Some(event) = self.refuse_if_read_only(event) else {
            return;
        };
        match event {
            Event::Submit {
                peer,
                submission,
                payload,
                reply,
            } => self.submit(&peer, *submission, payload, reply),
            Event::Status { peer, query, reply } => {
                let _ = reply.send(self.status(&peer, &query));
            }
            Event::Act {
                peer,
                action,
                ids,
                reply,
            } => self.act(&peer, action, ids, reply),
            Event::Signal {
                peer,
                signal,
                ids,
                reply,
            } => {
                let _ = reply.send(self.signal(&peer, &signal, ids));
            }
            Event::Wait { job_id, reply } => self.wait(&job_id, reply),
            Event::Move {
                peer,
                destination,
                ids,
                reply,
            } => self.move_jobs(&peer, &destination, ids, reply),
            Event::Queues { names, reply } => {
                let _ = reply.send(self.queues(&names));
            }
            Event::ServerStatus { reply } => {
                let _ = reply.send(Ok(self.server_status()));
            }
            Event::Plan { peer, reply } => {
                let caller = self.caller(&peer);
                let _ = reply.send(Ok(self.plan_reply(&caller)));
            }
            Event::When {
                peer,
                job_id,
                reply,
            } => {
                let caller = self.caller(&peer);
                let _ = reply.send(self.when(&caller, &job_id));
            }
            Event::Nodes { names, host, reply } => {
                let _ = reply.send(self.nodes(&names, &host));
            }
            Event::Qmgr {
                peer,
                script,
                source,
                check_only,
                reply,
            } => {
                self.qmgr(&peer, (&script, &source, check_only), reply);
                self.publish_host_gate();
            }
            Event::Usage { peer, all, reply } => {
                let _ = reply.send(self.usage(&peer, all));
            }
            Event::AgentHello {
                session,
                hello,
                outbox,
                reply,
            } => self.agent_hello(session, hello, outbox, reply),
            Event::AgentSaid { session, message } => self.agent_said(session, message),
            Event::AgentGone { session } => self.agent_gone(session),
            Event::Shutdown(_) => {}
            Event::Delete {
                peer,
                ids,
                force,
                purge_history,
                reply,
            } => self.delete(&peer, ids, (force, purge_history), reply),
            Event::Rerun {
                peer,
                ids,
                force,
                reply,
            } => self.rerun(&peer, ids, force, reply),
            Event::Order {
                peer,
                first,
                second,
                reply,
            } => self.order(&peer, (&first, &second), reply),
            Event::Run {
                peer,
                ids,
                nodes,
                reply,
            } => self.run_now(&peer, ids, nodes.as_deref(), reply),
            Event::Trace {
                peer,
                job_id,
                days,
                reply,
            } => self.trace(&peer, &job_id, days, reply),
            Event::Alter {
                peer,
                ids,
                alteration,
                reply,
            } => self.alter(&peer, ids, &alteration, reply),
            Event::RefreshMetrics(done) => {
                self.refresh_metrics();
                let _ = done.send(());
            }
            Event::OpenTask {
                peer,
                open,
                token,
                reply,
            } => self.open_task(&peer, open, token, reply),
        }
        self.settle_arrays(Utc::now());
    }

    /// The job `text` names, if it exists; else the refusal to answer.
    fn existing_job(&self, text: &str) -> Result<JobId, tonic::Status> {
        let id = self
            .state
            .parse_id(text)
            .map_err(|e| crate::status::from_core(&e))?;
        if self.state.job(id).is_none() {
            return Err(crate::status::from_core(
                &qmesh_core::error::CoreError::NoSuchJob {
                    id: self.state.full_id(id),
                },
            ));
        }
        Ok(id)
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

    /// One scheduling pass, and its plan applied.
    fn schedule(&mut self) {
        if self.read_only.is_some() {
            // Starts could not be made durable: none until a restart.
            self.dirty = false;
            return;
        }
        self.dirty = false;
        self.last_pass = Instant::now();
        self.passes += 1;
        let now = Utc::now();
        let span = info_span!("pass", n = self.passes);
        let _enter = span.enter();
        let plan = self.scheduler.pass(&self.state, now);
        let starts = plan.starts.len();
        let mut launches = Vec::new();
        for start in &plan.starts {
            match self.start_job(start.job, &start.nodes, &start.parts, now, "Scheduler") {
                Ok(started) => launches.push(AfterDurable::Launch(started)),
                Err(e) => error!(job = %start.job, error = %e, "the plan could not be applied"),
            }
        }
        self.plan = LastPlan::new(plan, now);
        if !launches.is_empty() {
            self.when_durable(launches);
        }
        self.last_pass_cost = self.last_pass.elapsed();
        debug!(ms = self.last_pass_cost.as_secs_f64() * 1e3, "pass done");
        if let Some(metrics) = &self.metrics {
            metrics
                .pass_duration
                .observe(self.last_pass_cost.as_secs_f64());
            metrics.pass_starts.observe(starts as f64);
        }
    }

    /// Starts a job on nodes (a pass's start, or qrun's): the start is
    /// stored, and the caller queues its launch for when it is durable.
    /// `requestor` is who asked, for the job logs ("Scheduler", a user).
    fn start_job(
        &mut self,
        id: JobId,
        nodes: &[usize],
        parts: &[qmesh_core::alloc::Part],
        now: Time,
        requestor: &str,
    ) -> Result<JobId, qmesh_core::CoreError> {
        let job = self.state.start_placed(id, nodes, parts, now)?;
        // An array's start is its next sub-job's.
        let id = job.id;
        info!(job = %job.id, nodes = %job.exec_nodes.join("+"), "starting");
        persist(self.store.as_ref(), job);
        self.dispatch(DispatchEvent::Started { job: id });
        self.log_started(id, requestor);
        if self.state.has_dependents(id) {
            // A job waiting `after:` this one may start now.
            self.dirty = true;
        }
        if let Some(array) = id.array_parent()
            && self.state.has_dependents(array)
        {
            self.dirty = true;
        }
        Ok(id)
    }

    /// Queues `after` for when everything written so far is durable.
    fn when_durable(&self, after: Vec<AfterDurable>) {
        let tx = self.durable_tx.clone();
        self.store.on_durable(Box::new(move |result| {
            let after = match result {
                Ok(()) => after,
                Err(e) => vec![AfterDurable::NotDurable {
                    items: after,
                    why: e.to_string(),
                }],
            };
            let _ = tx.send(after);
        }));
    }

    fn after_durable(&mut self, after: Vec<AfterDurable>) {
        for item in after {
            match item {
                AfterDurable::NotDurable { items, why } => self.not_durable(items, why),
                AfterDurable::Resynced => self.resynced(),
                AfterDurable::Launch(id) => self.dispatch(DispatchEvent::StartDurable { job: id }),
                AfterDurable::Ack { host, job } => {
                    self.send(
                        &host,
                        v1::daemon_message::Kind::Ack(v1::AckFinished { job: job.0 }),
                    );
                }
            }
        }
    }

    /// Sends a message to a host's agent; false if it is not connected
    /// (or no longer keeps up, see [`AgentLink::deliver`]).
    fn send(&mut self, host: &str, kind: v1::daemon_message::Kind) -> bool {
        match self.agents.get_mut(host) {
            Some(link) => link.deliver(host, kind),
            None => false,
        }
    }

    /// Mails the job's users about `event` if it asked for such mail
    /// (`qsub -m`) and the site has a sendmail.
    pub(super) fn mail(&self, id: JobId, event: crate::mail::MailEvent) {
        let Some(sendmail) = self.settings.jobs.sendmail.clone() else {
            return;
        };
        let Some(job) = self.state.job(id) else {
            return;
        };
        if !job.options.mails_at(event.point()) {
            return;
        }
        let full = self.state.full_id(id);
        let from = self.settings.jobs.mail_from.clone();
        let message = crate::mail::compose(job, &full, event, &from, Utc::now());
        crate::mail::send(sendmail, from, crate::mail::recipients(job), message, full);
    }

    /// After `id` ended: deletes the jobs whose dependency on it can never
    /// be met (and theirs), stores them and answers their waiters.
    pub(super) fn end_dependents(&mut self, id: JobId, now: Time) {
        for dependent in self.state.resolve_dependents(id, now) {
            if let Some(job) = self.state.job(dependent) {
                info!(job = %dependent, comment = %job.comment, "dependency can never be met");
                persist(self.store.as_ref(), job);
                self.log_aborted(dependent, &job.comment);
                self.mail(dependent, crate::mail::MailEvent::Abort);
            }
            self.job_done(dependent);
        }
    }

    /// Arrays whose last sub-job has just ended (or been deleted): stored,
    /// logged, and what waits on them resolved.
    pub(super) fn settle_arrays(&mut self, now: Time) {
        for id in self.state.take_ended_arrays() {
            if let Some(job) = self.state.job(id) {
                info!(job = %id, comment = %job.comment, "job array finished");
                persist(self.store.as_ref(), job);
            }
            self.log_event(
                id,
                qmesh_core::joblog::EventClass::Job,
                "job array finished".into(),
            );
            self.job_done(id);
            self.end_dependents(id, now);
            self.dirty = true;
        }
    }

    /// Answers those waiting for a job, if it has finished.
    fn job_done(&mut self, id: JobId) {
        let Some(job) = self.state.job(id) else {
            return;
        };
        if job.state != qmesh_core::JobState::Finished {
            return;
        }
        self.unpark_ended(id);
        let Some(job) = self.state.job(id) else {
            return;
        };
        if let Some(waiting) = self.waiters.remove(&id) {
            let snapshot = self.snapshot(job);
            for reply in waiting {
                let _ = reply.send(Ok(snapshot.clone()));
            }
        }
    }

    fn tick(&mut self) {
        self.try_recover();
        let clock = dispatch::clock();
        let (now, wall) = (clock.mono, clock.wall);
        let limit = Duration::from_secs(3 * u64::from(self.settings.heartbeat_secs));
        let silent: Vec<String> = self
            .agents
            .iter()
            .filter(|(_, link)| now.duration_since(link.last_seen) > limit)
            .map(|(host, _)| host.clone())
            .collect();
        for host in silent {
            warn!(
                host,
                "agent missed three heartbeats; its nodes are down until it reconnects"
            );
            if let Some(link) = self.agents.remove(&host) {
                self.sessions.remove(&link.session);
            }
            self.dispatch_at(DispatchEvent::AgentGone { host }, clock);
            self.dirty = true;
        }
        self.dispatch_at(DispatchEvent::Tick, clock);
        if now.duration_since(self.last_purge) >= Duration::from_secs(60) {
            self.last_purge = now;
            let old = self.state.purge_history(wall);
            if !old.is_empty() {
                info!(jobs = old.len(), "finished jobs left the history");
                if let Err(e) = self.store.remove_jobs(&old) {
                    error!(error = %e, "could not remove finished jobs from the store");
                }
            }
        }
        if self.next_begin.is_some_and(|t| t <= wall) {
            self.dirty = true;
            self.next_begin = self.next_begin_after(wall);
        }
        self.reorder_on_time(wall);
        self.enforce_period_ends(wall);
        let iteration = Duration::from_secs(self.state.config().server.scheduler_iteration);
        if now.duration_since(self.last_pass) >= iteration {
            self.dirty = true;
        }
    }

    fn shutdown(&mut self) {
        self.end_turn();
        info!("making the store durable before exit");
        if let Err(e) = self.store.sync() {
            error!(error = %e, "the last flush failed");
        }
        self.joblog.close(Duration::from_secs(5));
        // What the log now has leaves the store: a clean start finds
        // nothing kept.
        let confirmed = self.joblog.confirmed();
        if confirmed > self.confirmed_records {
            self.store
                .end_turn(vec![qmesh_store::Change::OutboxWritten(confirmed)], None);
            if let Err(e) = self.store.sync() {
                error!(error = %e, "could not tell the store the accounting log is written");
            }
        }
    }
}

impl SchedulerTask {
    /// Answers `reply` with `answer` once this turn's changes are on disk
    /// (the group commit); `done` says what was done, for the error when
    /// the store cannot confirm it.
    fn answer_when_durable<T: Send + 'static>(&mut self, answer: T, done: String, reply: Reply<T>) {
        self.dirty = true;
        self.store.on_durable(Box::new(move |result| {
            let _ = reply.send(result.map(|()| answer).map_err(|e| {
                tonic::Status::unavailable(format!(
                    "{done} but the store could not confirm it is on disk: {e}"
                ))
            }));
        }));
    }
}

/// Writes a changed job; a failure is logged where it happens.
fn persist(store: &dyn Store, job: &Job) {
    if let Err(e) = store.put_job(job) {
        error!(job = %job.id, error = %e, "could not store the job's change");
    }
}

/// Reports that warrant a warning at start: a loaded state with problems.
pub fn log_restore_warnings(warnings: &[String]) {
    for w in warnings {
        warn!("{w}");
    }
}

#[cfg(test)]
mod link_tests {
    use super::*;

    fn ack(job: u64) -> v1::daemon_message::Kind {
        v1::daemon_message::Kind::Ack(v1::AckFinished { job })
    }

    #[tokio::test]
    async fn an_agent_that_does_not_read_loses_its_session_and_the_task_never_waits() {
        let (outbox, mut outgoing) = tokio::sync::mpsc::channel(2);
        let mut link = AgentLink {
            session: 7,
            outbox,
            last_seen: Instant::now(),
        };
        assert!(link.deliver("h1", ack(1)));
        assert!(link.deliver("h1", ack(2)));
        assert!(!link.deliver("h1", ack(3)), "full: the session ends");
        assert!(!link.deliver("h1", ack(4)), "and stays ended");
        // The agent still reads what was queued, then the stream ends.
        for job in [1, 2] {
            match outgoing.recv().await {
                Some(Ok(v1::DaemonMessage {
                    kind: Some(v1::daemon_message::Kind::Ack(a)),
                })) => assert_eq!(a.job, job),
                other => panic!("expected the ack of job {job}, got {other:?}"),
            }
        }
        assert!(outgoing.recv().await.is_none());
    }
}
