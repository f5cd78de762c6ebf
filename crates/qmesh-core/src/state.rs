//! The scheduler's whole world: configuration, the machine (nodes, what is
//! up and free: `state/machine.rs`), the job book (jobs and their indexes:
//! `state/book.rs`), and the rules by which a job moves between states.
//!
//! Every change goes through a method of the state (here and in `state/`;
//! the commands above it reach the fields only through those), so the
//! invariants hold in one place: a job is in `pending` (under its queue) exactly when its state is pending, in
//! `active` exactly when it is running or exiting, and a node names a job
//! exactly when that job is active and lists the node. The methods return
//! the changed job so the caller (the daemon, the simulator) can persist it.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashMap as HashMap;

use crate::access::Caller;
use crate::account::Usage;
use crate::error::CoreError;
use crate::job::{ExitCause, Holds, Job, JobExit, JobId, JobState};
use crate::node::{Node, NodeName, NodeNeeds, NodeSet};
use crate::predict::RunHistory;
use crate::queue::Queue;
use crate::server::Config;
use crate::submit::{Asked, Reach, Submission};
use crate::time::Time;
pub use account::Accounting;

mod account;
mod admit;
mod alter;
mod arrays;
mod book;
mod depend;
mod hosts;
mod lent;
pub mod limits;
mod machine;
mod node_resources;
mod node_sets;
mod occupancy;
mod placeable;
mod reserved;
mod runs;

pub use arrays::Targets;
pub use book::PendingView;
use book::{JobBook, add_pending, pending_key, refresh_pending, remove_pending, requeue};
pub use depend::Resolved;
pub use hosts::{HostFacts, overloaded};
use machine::Machine;
use runs::ran;

pub(crate) use occupancy::{NodeBits, Occupancy};
pub use reserved::ReservedSpan;

#[derive(Clone, Debug)]
pub struct State {
    server_name: String,
    config: Config,
    /// The jobs and the indexes over them (`book.rs`).
    book: JobBook,
    /// The nodes and what holds them (`machine.rs`).
    machine: Machine,
    /// The reservations' occurrences by node index (`reserved.rs`).
    reserved: Vec<reserved::ReservedSpan>,
    /// Each user's last runs, which new jobs' run times are predicted
    /// from (`predict.rs`).
    runs: RunHistory,
    /// Which configuration this is: a new number (unique in the process)
    /// each time one is set, so a plan kept across passes can tell it
    /// was made under this one (`scheduler::plan::kept`).
    config_generation: u64,
}

/// The next configuration's [`State::config_generation`].
static CONFIG_GENERATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn next_config_generation() -> u64 {
    CONFIG_GENERATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// What `delete` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Deleted {
    /// It had not started: it is now finished, as deleted.
    Removed,
    /// It runs: it is now exiting, and the agent of `host` must kill it.
    Kill { host: String },
}

/// What `finish` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finished {
    Finished,
    /// It was lost and may be rerun: it is queued again.
    Requeued,
}

/// Jobs of one queue by state, for `qstat -Q` and `qmgr list queue`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StateCounts {
    pub queued: u32,
    pub held: u32,
    pub waiting: u32,
    pub transit: u32,
    pub running: u32,
    pub exiting: u32,
}

impl StateCounts {
    pub fn total(&self) -> u32 {
        self.queued + self.held + self.waiting + self.transit + self.running + self.exiting
    }
}

impl State {
    /// A state with no jobs, over the node sets of the daemon's file
    /// (`node_sets`) followed by those of `config` (made with qmgr, in
    /// name order). Node names must be unique across sets, and a mesh or
    /// torus must have exactly as many nodes as its shape.
    pub fn new(
        server_name: impl Into<String>,
        config: Config,
        node_sets: Vec<NodeSet>,
    ) -> Result<State, CoreError> {
        let file_sets = node_sets.len();
        let mut node_sets = node_sets;
        node_sets.extend(config.node_sets.values().cloned());
        let (nodes, node_index) = node_sets::index_nodes(&node_sets, |_| false)?;
        let occupancy = Occupancy::of(&nodes, node_sets.len());
        let mut accounting = Accounting::default();
        accounting.configure(&config);
        accounting.tally.counting_entities = config.has_job_count_limits();
        let mut state = State {
            server_name: server_name.into(),
            config,
            book: JobBook::new(accounting),
            machine: Machine {
                up_per_set: vec![0; node_sets.len()],
                host_facts: HashMap::default(),
                effective: node_sets.iter().map(|set| set.attrs.clone()).collect(),
                started_since_load: HashMap::default(),
                largest_job: node_sets::largest_jobs(&node_sets),
                occupancy,
                file_sets,
                reported_in: vec![0; node_sets.len()],
                node_sets,
                host_nodes: machine::host_nodes(&nodes),
                nodes,
                node_index,
                up_hosts: BTreeSet::new(),
            },
            reserved: Vec::new(),
            runs: RunHistory::default(),
            config_generation: next_config_generation(),
        };
        state.index_reservations();
        state.apply_node_marks();
        Ok(state)
    }

    /// Puts back jobs loaded from the store. Active jobs take their nodes
    /// again; what cannot be matched is reported, not dropped.
    pub fn restore(&mut self, jobs: impl IntoIterator<Item = Job>, next_id: u64) -> Vec<String> {
        let mut warnings = Vec::new();
        let mut arrays = Vec::new();
        for job in jobs {
            let id = job.id;
            self.book.next_id = self.book.next_id.max(id.seq() + 1);
            if let Some(sid) = &job.submission_id {
                self.book.by_submission.insert(sid.clone(), id);
            }
            if job.array.is_some() {
                // Back in its queue once its sub-jobs are counted.
                arrays.push(id);
            } else if job.state.is_pending() {
                add_pending(&mut self.book.pending, &job);
                self.note_dependencies(&job);
                self.book.accounting.tally.enter_pending(&job);
            } else if job.state.is_active() {
                self.book.active.insert(id);
                self.book.accounting.tally.enter_active(&job);
                // A job suspended by preemption has lent its nodes.
                let held = if job.suspension.lent_to.is_some() {
                    self.book.lent.insert(id);
                    &[][..]
                } else {
                    &job.exec_nodes[..]
                };
                for name in held {
                    match self.machine.node_index.get(&**name) {
                        Some(&idx) => {
                            // A running job keeps its node, even past the
                            // node's slots (jobs_per_node lowered in the
                            // file, or a store that says two jobs hold an
                            // exclusive node): the node takes no new job
                            // until enough of them end.
                            let node = &mut self.machine.nodes[idx];
                            if node.jobs.contains(id) {
                                continue;
                            }
                            node.jobs.push(id);
                            if job.wants_sole_nodes() && node.slots > 1 {
                                node.sole = Some(id);
                            }
                            if node.jobs.len() as u32 > node.slots {
                                let held: Vec<String> =
                                    node.jobs.iter().map(|j| j.to_string()).collect();
                                warnings.push(format!(
                                    "node {name} runs jobs {} but takes {} at once (its node \
                                     set's jobs_per_node); it takes no new job until enough \
                                     of them end",
                                    held.join(", "),
                                    node.slots
                                ));
                            }
                        }
                        None => warnings.push(format!(
                            "job {id} runs on node {name}, which is no longer configured"
                        )),
                    }
                }
            }
            self.book.jobs.insert(id, job);
        }
        self.restore_arrays(arrays);
        self.learn_runs_kept();
        self.book.next_id = self.book.next_id.max(next_id);
        self.machine.occupancy = Occupancy::of(&self.machine.nodes, self.machine.node_sets.len());
        warnings
    }

    pub fn server_name(&self) -> &str {
        &self.server_name
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Takes a new configuration. If its node sets (those made with qmgr)
    /// changed, the nodes are rebuilt at once: running jobs keep their
    /// nodes, nodes keep being up or down, and new nodes on a host whose
    /// agent is connected are up. What could not be kept is returned as
    /// warnings (qmgr refuses the changes that would cause them).
    pub fn set_config(&mut self, mut config: Config) -> Vec<String> {
        let mut warnings = Vec::new();
        let sets_changed = config.node_sets != self.config.node_sets;
        let marks_changed = config.node_marks != self.config.node_marks;
        if sets_changed {
            let (sets, dropped) = crate::server::merge_sets(self.file_sets(), &mut config);
            warnings = dropped;
            warnings.extend(self.replace_node_sets(sets));
        }
        self.book.accounting.configure(&config);
        let counting = config.has_job_count_limits();
        let jobs = &self.book.jobs;
        let pending = jobs.values().filter(|j| j.state.is_pending());
        let active = jobs.values().filter(|j| j.state.is_active());
        self.book
            .accounting
            .tally
            .count_entities(counting, pending, active);
        let factor_changed = config.server.max_load_factor != self.config.server.max_load_factor;
        let resv_changed = sets_changed || config.reservations != self.config.reservations;
        self.config = config;
        self.config_generation = next_config_generation();
        if resv_changed {
            self.index_reservations();
        }
        if sets_changed || marks_changed {
            self.apply_node_marks();
        }
        if factor_changed || sets_changed {
            self.judge_loads();
        }
        warnings
    }

    /// Usage charged and what queued and running jobs ask for.
    pub fn accounting(&self) -> &Accounting {
        &self.book.accounting
    }

    /// Puts back the usage loaded from the store.
    pub fn restore_usage(&mut self, usage: Usage) {
        self.book.accounting.restore(usage);
    }

    pub fn node_sets(&self) -> &[NodeSet] {
        &self.machine.node_sets
    }

    pub fn nodes(&self) -> &[Node] {
        &self.machine.nodes
    }

    pub fn node_by_name(&self, name: &str) -> Option<&Node> {
        self.machine
            .node_index
            .get(name)
            .map(|&i| &self.machine.nodes[i])
    }

    pub fn job(&self, id: JobId) -> Option<&Job> {
        self.book.jobs.get(&id)
    }

    /// All jobs, history included, in id order.
    pub fn jobs(&self) -> impl Iterator<Item = &Job> {
        let mut all: Vec<&Job> = self.book.jobs.values().collect();
        all.sort_unstable_by_key(|job| job.id);
        all.into_iter()
    }

    /// Jobs not yet started, in id order.
    pub fn pending_jobs(&self) -> impl Iterator<Item = &Job> {
        self.book
            .pending
            .values()
            .flat_map(|queue| queue.keys())
            .filter_map(|(_, _, id)| self.book.jobs.get(id))
    }

    /// Pending jobs of one queue, in rank order: submission order unless
    /// the queue was reordered ([`State::reorder_queue`]).
    pub fn pending_in(&self, queue: &str) -> impl Iterator<Item = &Job> {
        self.book
            .pending
            .get(queue)
            .into_iter()
            .flat_map(|queue| queue.keys())
            .filter_map(|(_, _, id)| self.book.jobs.get(id))
    }

    /// What the scheduler reads of a queue's pending jobs, in rank order.
    pub fn pending_views(&self, queue: &str) -> impl Iterator<Item = &PendingView> {
        // A queue with none has no map: an empty one stands in, so the
        // iterator is the map's own (a pass reads every view through it).
        static NONE: BTreeMap<book::PendingKey, PendingView> = BTreeMap::new();
        self.book.pending.get(queue).unwrap_or(&NONE).values()
    }

    /// The queues with pending jobs, by name, each with what the
    /// scheduler reads of its jobs in rank order (a queue with none is
    /// not listed: a pass over a configuration of many queues looks at
    /// the few that have jobs).
    pub fn pending_queues(
        &self,
    ) -> impl Iterator<Item = (&str, impl Iterator<Item = &PendingView>)> {
        self.book
            .pending
            .iter()
            .map(|(queue, views)| (queue.as_str(), views.values()))
    }

    /// How many jobs wait, in all queues.
    pub fn pending_count(&self) -> usize {
        self.book.pending.values().map(BTreeMap::len).sum()
    }

    /// Running and exiting jobs, in id order.
    pub fn active_jobs(&self) -> impl Iterator<Item = &Job> {
        self.book
            .active
            .iter()
            .filter_map(|id| self.book.jobs.get(id))
    }

    /// The id the next submission will get.
    pub fn next_id(&self) -> JobId {
        JobId(self.book.next_id)
    }

    pub fn full_id(&self, id: JobId) -> String {
        match self.book.jobs.get(&id) {
            Some(job) => job.full_id(&self.server_name),
            None => id.full(&self.server_name),
        }
    }

    /// Reads a job id as a user typed it.
    /// `12[]` names an array, `12[3]` one of its sub-jobs; a range
    /// (`12[5-9]`) names several, which only the commands that take
    /// ranges read (see [`State::targets`]).
    pub fn parse_id(&self, text: &str) -> Result<JobId, CoreError> {
        match crate::array::Named::parse(text, &self.server_name)? {
            crate::array::Named::One(id) => Ok(id),
            range @ crate::array::Named::Range { .. } => Err(CoreError::BadOption {
                message: format!(
                    "{range} names a range of sub-jobs; this command takes one job, \
                     an array (SEQ[]) or one sub-job (SEQ[INDEX])"
                ),
            }),
        }
    }

    /// Nodes the queue's jobs may ever use: the size of its node sets.
    pub fn capacity(&self, queue: &str) -> u32 {
        self.reach(queue, &NodeNeeds::default()).nodes
    }

    /// The node sets (indices) the queue's jobs may use in some period.
    pub fn sets_ever(&self, queue: &Queue) -> Vec<usize> {
        match queue
            .node_group
            .as_ref()
            .and_then(|g| self.config.node_groups.get(g))
        {
            Some(group) => group
                .every_set()
                .filter_map(|name| self.set_index(name))
                .collect(),
            None => (0..self.machine.node_sets.len())
                .filter(|&i| queue.uses_set(&self.machine.node_sets[i].name))
                .collect(),
        }
    }

    /// The node sets (indices, in selection order) the queue's jobs may
    /// use while the periods `active` names are on.
    pub fn sets_now(&self, queue: &Queue, active: impl Fn(&str) -> bool) -> Vec<usize> {
        match queue
            .node_group
            .as_ref()
            .and_then(|g| self.config.node_groups.get(g))
        {
            Some(group) => group
                .sets_in(active)
                .iter()
                .filter_map(|name| self.set_index(name))
                .collect(),
            // The queue's own list, in its order; none: every set.
            None if !queue.node_sets.is_empty() => queue
                .node_sets
                .iter()
                .filter_map(|name| self.set_index(name))
                .collect(),
            None => (0..self.machine.node_sets.len()).collect(),
        }
    }

    /// Whether a calendar period is on at `now` (an unknown one is off;
    /// qmgr refuses to name one).
    pub fn period_active(&self, period: &str, now: Time) -> bool {
        self.config.calendar.is_active(period, now).unwrap_or(false)
    }

    pub fn set_index(&self, name: &str) -> Option<usize> {
        self.machine.node_sets.iter().position(|s| s.name == name)
    }

    /// How many nodes of the queue's sets (in any period) serve `needs`,
    /// and which sets those are.
    pub fn reach(&self, queue: &str, needs: &NodeNeeds) -> Reach {
        Reach {
            nodes: self.reach_nodes(queue, needs),
            sets: self.reach_described(queue, needs),
        }
    }

    /// How many nodes of the queue's sets (in any period) serve `needs`:
    /// [`State::reach`] without the words, which only a refusal needs.
    pub fn reach_nodes(&self, queue: &str, needs: &NodeNeeds) -> u32 {
        let Some(q) = self.config.queue(queue) else {
            return 0;
        };
        // A job may spread over flat sets, but a mesh or torus places it
        // whole inside one: the reach is the larger of the two.
        let (mut flat, mut shaped) = (0u32, 0u32);
        for i in self.sets_ever(q) {
            if !self.machine.effective[i].satisfies(needs) {
                continue;
            }
            let largest = self.machine.largest_job.get(i).copied().unwrap_or(0);
            if self.machine.node_sets[i].topology == crate::node::Topology::Flat {
                flat += largest;
            } else {
                shaped = shaped.max(largest);
            }
        }
        flat.max(shaped)
    }

    /// The queue's sets (in any period) as a refusal names them: each
    /// one's nodes, what they have, and whether they serve `needs`.
    fn reach_described(&self, queue: &str, needs: &NodeNeeds) -> String {
        let Some(q) = self.config.queue(queue) else {
            return String::new();
        };
        let described: Vec<String> = self
            .sets_ever(q)
            .into_iter()
            .map(|i| {
                let set = &self.machine.node_sets[i];
                let attrs = &self.machine.effective[i];
                let largest = self.machine.largest_job.get(i).copied().unwrap_or(0);
                let shape = if largest < set.nodes.len() as u32 {
                    format!(" (jobs of up to {largest} nodes)")
                } else {
                    String::new()
                };
                format!(
                    "{}: {} nodes{shape}, {}{}",
                    set.name,
                    set.nodes.len(),
                    attrs.describe(),
                    if attrs.satisfies(needs) {
                        ""
                    } else {
                        ", not enough"
                    }
                )
            })
            .collect();
        if described.is_empty() {
            "no node sets".into()
        } else {
            described.join("; ")
        }
    }

    pub fn counts(&self, queue: &str) -> StateCounts {
        let mut counts = StateCounts::default();
        for job in self.pending_in(queue).chain(self.active_jobs()) {
            if job.queue != queue {
                continue;
            }
            match job.state {
                JobState::Queued => counts.queued += 1,
                JobState::Held => counts.held += 1,
                JobState::Waiting => counts.waiting += 1,
                JobState::Transit => counts.transit += 1,
                // PBS counts a suspended job as running in state_count.
                JobState::Running | JobState::Suspended => counts.running += 1,
                JobState::Exiting => counts.exiting += 1,
                JobState::Begun | JobState::Finished => {}
            }
        }
        counts
    }

    /// Host whose agent runs the job: that of its first node.
    pub fn job_host(&self, job: &Job) -> Option<&str> {
        let first = job.exec_nodes.first()?;
        self.node_by_name(first).map(|n| n.host.as_str())
    }

    /// Works out the job a submission describes, under the next id, without
    /// changing anything: the caller stores it, then [`State::admit`]s it.
    pub fn prepare(
        &self,
        submission: Submission,
        caller: &Caller,
        now: Time,
    ) -> Result<Job, CoreError> {
        self.prepare_asked(submission, None, caller, now)
    }

    /// [`State::prepare`], the job asking `asked` (nodes and a wall time
    /// as numbers) before the submission's own resources.
    pub fn prepare_asked(
        &self,
        submission: Submission,
        asked: Option<Asked>,
        caller: &Caller,
        now: Time,
    ) -> Result<Job, CoreError> {
        let id = JobId(self.book.next_id);
        let depend = self.dependencies_for(&submission.depend, now)?;
        let before = self.before_targets(&submission.depend)?;
        let mut submission = submission;
        if let Some(queue) = submission.queue.take() {
            submission.queue = Some(self.local_queue(&queue)?);
        }
        let mut job = submission.into_job_asked(
            asked,
            id,
            caller,
            &self.config,
            |q, needs| self.reach_nodes(q, needs),
            |q, needs| self.reach_described(q, needs),
            now,
        )?;
        job.depend = depend.after;
        job.depend_on = depend.on;
        job.depend_how = depend.how;
        job.before = before;
        self.check_placeable(&job)?;
        self.check_first_node(&job)?;
        self.check_accounts(&mut job)?;
        job.predicted_run = self.runs.predict(&job.owner.user, job.nodes, job.walltime);
        Ok(job)
    }

    /// `QUEUE` or `QUEUE@SERVER` (PBS's destination): the queue, if the
    /// server is this one (short or full name, as job ids).
    fn local_queue(&self, destination: &str) -> Result<String, CoreError> {
        let Some((queue, server)) = destination.split_once('@') else {
            return Ok(destination.to_string());
        };
        let ours = JobId::parse(&format!("0.{server}"), &self.server_name).is_ok();
        if !ours {
            return Err(CoreError::BadOption {
                message: format!(
                    "-q {destination}: server {server} is not this one ({}); qmesh does not send jobs to other servers",
                    self.server_name
                ),
            });
        }
        Ok(if queue.is_empty() {
            self.config.default_queue().unwrap_or_default().to_string()
        } else {
            queue.to_string()
        })
    }

    /// Queues a job made by [`State::prepare`].
    pub fn admit(&mut self, job: Job) -> &Job {
        let id = job.id;
        self.book.next_id = self.book.next_id.max(id.seq() + 1);
        if let Some(sid) = &job.submission_id {
            self.book.by_submission.insert(sid.clone(), id);
        }
        if job.state.is_pending() {
            add_pending(&mut self.book.pending, &job);
            self.note_dependencies(&job);
            self.book.accounting.tally.enter_pending(&job);
        }
        self.book.jobs.entry(id).or_insert(job)
    }

    /// Prepares and admits in one step (the simulator and tests).
    pub fn submit(
        &mut self,
        submission: Submission,
        caller: &Caller,
        now: Time,
    ) -> Result<&Job, CoreError> {
        self.submit_asked(submission, None, caller, now)
    }

    /// [`State::submit`], the job asking `asked` before the submission's
    /// own resources (see [`State::prepare_asked`]).
    pub fn submit_asked(
        &mut self,
        submission: Submission,
        asked: Option<Asked>,
        caller: &Caller,
        now: Time,
    ) -> Result<&Job, CoreError> {
        let job = self.prepare_asked(submission, asked, caller, now)?;
        let id = job.id;
        let before = !job.before.is_empty();
        self.admit(job);
        if before {
            self.link_before(id);
        }
        self.book.jobs.get(&id).ok_or_else(|| self.no_such(id))
    }

    /// Starts a pending job on the given nodes (indices into [`State::nodes`]).
    pub fn start(&mut self, id: JobId, nodes: &[usize], now: Time) -> Result<&Job, CoreError> {
        self.start_placed(id, nodes, &[], now)
    }

    /// Starts a job on nodes its topology placed (`parts`: mesh blocks, a
    /// subtorus), which may be more than it asked for when the topology
    /// rounds requests up.
    pub fn start_placed(
        &mut self,
        id: JobId,
        nodes: &[usize],
        parts: &[qmesh_alloc::Part],
        now: Time,
    ) -> Result<&Job, CoreError> {
        let job = self.book.jobs.get(&id).ok_or_else(|| self.no_such(id))?;
        if job.state != JobState::Queued {
            return Err(self.wrong_state(job, "start"));
        }
        // An array starts its next sub-job.
        let id = if job.array.is_some() {
            self.materialize_next(id, now)?
        } else {
            id
        };
        if let Some(&busy) = nodes
            .iter()
            .find(|&&i| self.machine.nodes.get(i).is_none_or(|n| !n.is_free()))
        {
            let name = self
                .machine
                .nodes
                .get(busy)
                .map_or_else(|| format!("#{busy}"), |n| n.name.to_string());
            return Err(CoreError::NoSuchNode { node: name });
        }
        let names: Vec<NodeName> = nodes
            .iter()
            .map(|&i| self.machine.nodes[i].name.clone())
            .collect();
        let job = self.book.jobs.get(&id).ok_or_else(|| self.no_such(id))?;
        remove_pending(&mut self.book.pending, job);
        let sole = job.wants_sole_nodes();
        self.machine
            .occupancy
            .take(&mut self.machine.nodes, id, nodes, sole);
        self.book.accounting.tally.leave_pending(job);
        self.book.accounting.tally.enter_active(job);
        self.book.active.insert(id);
        self.machine.note_started_on(nodes);
        let job = self
            .book
            .jobs
            .get_mut(&id)
            .ok_or_else(|| CoreError::NoSuchJob { id: id.to_string() })?;
        job.state = JobState::Running;
        job.stime = Some(now);
        job.mtime = now;
        job.end_time = None;
        job.exit = None;
        job.exec_nodes = names;
        job.placement = parts.to_vec();
        job.run_count += 1;
        job.session_id = None;
        job.used_so_far = None;
        job.comment = if nodes.len() as u32 > job.nodes {
            format!(
                "job started on {} node(s): {} asked for, rounded up by the node set's topology",
                nodes.len(),
                job.nodes
            )
        } else {
            format!("job started on {} node(s)", nodes.len())
        };
        self.sub_job_changed(id, JobState::Queued, now);
        self.book.jobs.get(&id).ok_or_else(|| self.no_such(id))
    }

    /// Records the end of an active job and frees its nodes. A lost job
    /// that may be rerun is queued again instead.
    pub fn finish(
        &mut self,
        id: JobId,
        exit: JobExit,
        end: Time,
    ) -> Result<(Finished, &Job), CoreError> {
        let before = self.book.jobs.get(&id).map(|j| j.state);
        let how = self.finish_job(id, exit, end)?.0;
        if let Some(before) = before {
            self.sub_job_changed(id, before, end);
        }
        let job = self.book.jobs.get(&id).ok_or_else(|| self.no_such(id))?;
        Ok((how, job))
    }

    fn finish_job(
        &mut self,
        id: JobId,
        exit: JobExit,
        end: Time,
    ) -> Result<(Finished, &Job), CoreError> {
        let job = self.book.jobs.get(&id).ok_or_else(|| self.no_such(id))?;
        if !job.state.is_active() {
            return Err(self.wrong_state(job, "finish"));
        }
        self.book.accounting.tally.leave_active(job);
        self.machine.release_nodes(id);
        self.book.active.remove(&id);
        self.book.lent.remove(&id);
        let job = self
            .book
            .jobs
            .get_mut(&id)
            .ok_or_else(|| CoreError::NoSuchJob { id: id.to_string() })?;
        job.mtime = end;
        job.suspension.end(end);
        if let Some(stop) = job.period_stop.take() {
            if stop.requeue {
                // The run so far is used: charged, as ANL charged wall-clock.
                let half_life = self.config.server.fairshare_half_life;
                self.book.accounting.charge_run(job, end, half_life);
                let comment = if stop.hold {
                    job.holds.user = true;
                    format!(
                        "requeued and held at {}; it runs again when released (qrls, scontrol release)",
                        stop.what
                    )
                } else {
                    format!(
                        "requeued at {}; it runs again when its queue can run it",
                        stop.what
                    )
                };
                requeue(
                    job,
                    comment,
                    &mut self.book.pending,
                    &mut self.book.accounting,
                );
                return Ok((Finished::Requeued, job));
            }
            job.comment = format!("killed at {}", stop.what);
            job.state = JobState::Finished;
            job.end_time = Some(end);
            job.exit = Some(exit);
            let half_life = self.config.server.fairshare_half_life;
            self.book.accounting.charge(job, half_life);
            return Ok((Finished::Finished, job));
        }
        if exit.cause == ExitCause::Lost && job.rerunnable && job.state.is_running() {
            let comment = format!("requeued: {}", exit.describe(job.walltime));
            requeue(
                job,
                comment,
                &mut self.book.pending,
                &mut self.book.accounting,
            );
            return Ok((Finished::Requeued, job));
        }
        // Deleted while it ran (qdel, scancel): it was deleted, whether
        // its processes ended by the kill or on their own before the kill
        // reached them (a task ended first, its script returned).
        let mut exit = exit;
        if job.state == JobState::Exiting && exit.cause == ExitCause::Exited {
            exit.cause = ExitCause::Deleted;
        }
        job.comment = exit.describe(job.walltime);
        job.state = JobState::Finished;
        job.end_time = Some(end);
        job.exit = Some(exit);
        if let Some(run) = ran(job) {
            self.runs.record(&job.owner.user, run);
        }
        let half_life = self.config.server.fairshare_half_life;
        self.book.accounting.charge(job, half_life);
        Ok((Finished::Finished, job))
    }

    /// qdel: a pending job ends at once; a running one is marked exiting
    /// and its agent must kill it.
    pub fn delete(
        &mut self,
        id: JobId,
        caller: &Caller,
        now: Time,
    ) -> Result<(Deleted, &Job), CoreError> {
        let job = self.checked(id, caller, "delete")?;
        if let Some(a) = &job.array {
            // An array: the sub-jobs left to start go; the caller deletes
            // those that have records (`live_sub_jobs`).
            if job.state == JobState::Finished {
                return Err(self.wrong_state(job, "delete"));
            }
            let all = a.tally.unstarted.clone();
            self.delete_unstarted(id, &all, caller, now)?;
            if let Some(job) = self.book.jobs.get_mut(&id) {
                job.comment = format!("job array deleted by {}", caller.user);
            }
            let job = self.book.jobs.get(&id).ok_or_else(|| self.no_such(id))?;
            return Ok((Deleted::Removed, job));
        }
        let before = job.state;
        let outcome = self.delete_job(id, caller, now)?.0;
        self.sub_job_changed(id, before, now);
        let job = self.book.jobs.get(&id).ok_or_else(|| self.no_such(id))?;
        Ok((outcome, job))
    }

    fn delete_job(
        &mut self,
        id: JobId,
        caller: &Caller,
        now: Time,
    ) -> Result<(Deleted, &Job), CoreError> {
        let job = self.checked(id, caller, "delete")?;
        let outcome = match job.state {
            s if s.is_pending() => Deleted::Removed,
            s if s.is_active() => Deleted::Kill {
                host: self.job_host(job).unwrap_or_default().to_string(),
            },
            _ => return Err(self.wrong_state(job, "delete")),
        };
        let job = self
            .book
            .jobs
            .get_mut(&id)
            .ok_or_else(|| CoreError::NoSuchJob { id: id.to_string() })?;
        job.mtime = now;
        match outcome {
            Deleted::Removed => {
                remove_pending(&mut self.book.pending, job);
                self.book.accounting.tally.leave_pending(job);
                job.state = JobState::Finished;
                job.end_time = Some(now);
                job.exit = Some(JobExit {
                    code: None,
                    signal: None,
                    cause: ExitCause::Deleted,
                    message: String::new(),
                    cput: None,
                    max_rss: None,
                    vmem: None,
                });
                job.comment = format!("job deleted by {} before it started", caller.user);
            }
            Deleted::Kill { .. } => {
                job.state = JobState::Exiting;
                job.comment = format!("job deleted by {}; killing it", caller.user);
            }
        }
        Ok((outcome, job))
    }

    /// Ends a running job at its queue's period end (`period_end` kill or
    /// requeue): it is marked exiting, and when its agent reports it gone
    /// it is finished or queued again. Returns the host whose agent must
    /// kill it. `what` says what ended it (`the end of period "DAY"`).
    pub fn stop_for_period(
        &mut self,
        id: JobId,
        what: &str,
        requeue: bool,
        now: Time,
    ) -> Result<(String, &Job), CoreError> {
        let job = self.book.jobs.get(&id).ok_or_else(|| self.no_such(id))?;
        if !job.state.is_running() {
            return Err(self.wrong_state(job, "end at its period's end"));
        }
        let host = self.job_host(job).unwrap_or_default().to_string();
        let job = self
            .book
            .jobs
            .get_mut(&id)
            .ok_or_else(|| CoreError::NoSuchJob { id: id.to_string() })?;
        job.mtime = now;
        job.state = JobState::Exiting;
        let doing = if requeue {
            "being requeued"
        } else {
            "being killed"
        };
        job.comment = format!("{doing} at {what}");
        job.period_stop = Some(crate::job::PeriodStop {
            what: what.to_string(),
            requeue,
            preempted_by: None,
            hold: false,
        });
        Ok((host, job))
    }

    /// A job marked to be requeued ([`State::stop_for_period`]) gets a
    /// user hold when it is queued again (`scontrol requeuehold`).
    pub(crate) fn hold_when_requeued(&mut self, id: JobId) {
        if let Some(stop) = self
            .book
            .jobs
            .get_mut(&id)
            .and_then(|j| j.period_stop.as_mut())
        {
            stop.hold = true;
        }
    }

    /// A running job's process group, as its agent reported it (PBS
    /// `session_id`). Not a change that needs storing: a restarted daemon
    /// shows none until the job's next start.
    pub fn set_session(&mut self, id: JobId, pid: i32) {
        if let Some(job) = self.book.jobs.get_mut(&id).filter(|j| j.state.is_active()) {
            job.session_id = Some(pid);
        }
    }

    /// Says `text` in a job's comment (the daemon's own notes on it).
    pub fn set_comment(&mut self, id: JobId, text: &str) {
        if let Some(job) = self.book.jobs.get_mut(&id) {
            job.comment = text.to_string();
        }
    }

    /// What a running job has used so far, as its agent measured it.
    pub fn set_used_so_far(&mut self, id: JobId, used: crate::job::UsedSoFar) {
        if let Some(job) = self.book.jobs.get_mut(&id).filter(|j| j.state.is_running()) {
            job.used_so_far = Some(used);
        }
    }

    /// qhold: puts a user hold on a job that has not started.
    pub fn hold(&mut self, id: JobId, caller: &Caller, now: Time) -> Result<&Job, CoreError> {
        let user = Holds {
            user: true,
            ..Holds::default()
        };
        self.hold_types(id, caller, user, now)
    }

    /// qhold -h: puts the `holds` named on a job that has not started (an
    /// operator hold needs an operator, a system hold a manager).
    pub fn hold_types(
        &mut self,
        id: JobId,
        caller: &Caller,
        holds: Holds,
        now: Time,
    ) -> Result<&Job, CoreError> {
        let job = self.checked(id, caller, "hold")?;
        if !job.state.is_pending() {
            return Err(self.wrong_state(job, "hold"));
        }
        let what = || {
            format!(
                "setting a {} hold on job {}",
                holds.types(),
                self.full_id(id)
            )
        };
        may_change(caller, holds, what)?;
        let job = self
            .book
            .jobs
            .get_mut(&id)
            .ok_or_else(|| CoreError::NoSuchJob { id: id.to_string() })?;
        job.holds.user |= holds.user;
        job.holds.operator |= holds.operator;
        job.holds.system |= holds.system;
        job.state = job.pending_state();
        job.mtime = now;
        job.comment = format!("job held by {}", caller.user);
        refresh_pending(&mut self.book.pending, job);
        Ok(job)
    }

    /// qrls: removes the holds the caller may remove (a user their user
    /// hold; operators and managers every hold).
    pub fn release(&mut self, id: JobId, caller: &Caller, now: Time) -> Result<&Job, CoreError> {
        let job = self.checked(id, caller, "release")?;
        if !job.state.is_pending() || !job.holds.any() {
            return Err(CoreError::WrongState {
                id: self.full_id(id),
                action: "release".into(),
                state: job.state,
            });
        }
        let privileged = caller.role >= crate::access::Role::Operator;
        if !privileged && !job.holds.user {
            return Err(CoreError::PermissionDenied {
                what: format!(
                    "releasing job {} from its {} hold",
                    self.full_id(id),
                    job.holds.types()
                ),
                need: "operator".into(),
            });
        }
        let job = self
            .book
            .jobs
            .get_mut(&id)
            .ok_or_else(|| CoreError::NoSuchJob { id: id.to_string() })?;
        job.holds.user = false;
        if privileged {
            job.holds.operator = false;
            job.holds.system = false;
        }
        job.state = job.pending_state();
        job.mtime = now;
        job.comment = format!("job released by {}", caller.user);
        refresh_pending(&mut self.book.pending, job);
        Ok(job)
    }

    /// qrls -h: removes the `holds` named, each by who may (the owner
    /// its user hold, an operator an operator hold, a manager a system
    /// hold); a job without any of them is refused.
    pub fn release_types(
        &mut self,
        id: JobId,
        caller: &Caller,
        holds: Holds,
        now: Time,
    ) -> Result<&Job, CoreError> {
        let job = self.checked(id, caller, "release")?;
        if !job.state.is_pending() || !job.holds.common(holds).any() {
            return Err(CoreError::WrongState {
                id: self.full_id(id),
                action: format!("release from a {} hold", holds.types()),
                state: job.state,
            });
        }
        let what = || {
            format!(
                "releasing job {} from its {} hold",
                self.full_id(id),
                holds.types()
            )
        };
        may_change(caller, holds, what)?;
        let job = self
            .book
            .jobs
            .get_mut(&id)
            .ok_or_else(|| CoreError::NoSuchJob { id: id.to_string() })?;
        job.holds.user &= !holds.user;
        job.holds.operator &= !holds.operator;
        job.holds.system &= !holds.system;
        job.state = job.pending_state();
        job.mtime = now;
        job.comment = if job.holds.any() {
            format!(
                "job released from its {} hold by {}; still held ({})",
                holds.types(),
                caller.user,
                job.holds.types()
            )
        } else {
            format!("job released by {}", caller.user)
        };
        refresh_pending(&mut self.book.pending, job);
        Ok(job)
    }

    /// Puts a pending job in another queue (qmove, after [`State::move_job`]
    /// has checked the move), in submission order there; `comment` says why.
    pub(crate) fn relocate(
        &mut self,
        id: JobId,
        queue: &str,
        comment: String,
        now: Time,
    ) -> Result<&Job, CoreError> {
        let job = self.book.jobs.get(&id).ok_or_else(|| self.no_such(id))?;
        if !job.state.is_pending() {
            return Err(self.wrong_state(job, "move"));
        }
        remove_pending(&mut self.book.pending, job);
        // The per-queue counters follow the job to its new queue.
        self.book.accounting.tally.leave_pending(job);
        let job = self
            .book
            .jobs
            .get_mut(&id)
            .ok_or_else(|| CoreError::NoSuchJob { id: id.to_string() })?;
        job.queue = queue.to_string();
        self.book.accounting.tally.enter_pending(job);
        job.rank = None;
        job.mtime = now;
        job.comment = comment;
        add_pending(&mut self.book.pending, job);
        Ok(job)
    }

    /// Marks the nodes of a host up or down (its agent came or went).
    /// Returns the names of the host's nodes.
    pub fn set_host_up(&mut self, host: &str, up: bool) -> Vec<String> {
        if up {
            self.machine.up_hosts.insert(host.to_string());
        } else {
            self.machine.up_hosts.remove(host);
        }
        self.machine.change_host(host, |node| node.up = up);
        self.nodes_of_host(host)
            .map(|n| n.name.to_string())
            .collect()
    }

    /// The nodes of `host`, in node order (found through an index: a
    /// host's own, not a walk of every node).
    pub fn nodes_of_host(&self, host: &str) -> impl Iterator<Item = &Node> + '_ {
        self.machine
            .host_nodes
            .get(host)
            .into_iter()
            .flatten()
            .map(|&i| &self.machine.nodes[i])
    }

    /// Nodes up in the node sets a queue may use (in any period).
    pub fn up_for_queue(&self, queue: &Queue) -> usize {
        self.sets_ever(queue)
            .iter()
            .map(|&i| self.machine.up_per_set[i])
            .sum()
    }

    /// The distinct hosts of a job's nodes, in node order: the first is
    /// the host that launches it, the others join it.
    pub fn job_hosts(&self, job: &Job) -> Vec<String> {
        let mut hosts: Vec<String> = Vec::new();
        // A job across thousands of hosts: each host looked up once.
        let mut seen: rustc_hash::FxHashSet<&str> = rustc_hash::FxHashSet::default();
        for name in &job.exec_nodes {
            if let Some(node) = self.node_by_name(name)
                && seen.insert(node.host.as_str())
            {
                hosts.push(node.host.clone());
            }
        }
        hosts
    }

    /// Active jobs holding nodes on `host` that another host launched.
    pub fn jobs_joining_host(&self, host: &str) -> Vec<JobId> {
        let mut ids: Vec<JobId> = self
            .nodes_of_host(host)
            .flat_map(|n| n.jobs.iter())
            .filter(|&id| {
                self.book
                    .jobs
                    .get(&id)
                    .is_some_and(|job| self.job_host(job) != Some(host))
            })
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// Active jobs whose agent is this host.
    pub fn jobs_on_host(&self, host: &str) -> Vec<JobId> {
        // The jobs on the host's nodes whose first node is there, and the
        // jobs lent their nodes (they hold none): the host's nodes, not
        // every active job.
        let mut ids: Vec<JobId> =
            self.nodes_of_host(host)
                .flat_map(|n| n.jobs.iter())
                .chain(self.book.lent.iter().copied())
                .filter(|&id| {
                    self.book.jobs.get(&id).is_some_and(|job| {
                        job.state.is_active() && self.job_host(job) == Some(host)
                    })
                })
                .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// Drops finished jobs older than the history duration; returns them.
    pub fn purge_history(&mut self, now: Time) -> Vec<JobId> {
        let keep = chrono::Duration::seconds(
            i64::try_from(self.config.server.job_history_duration).unwrap_or(i64::MAX / 2),
        );
        let old: Vec<JobId> = self
            .book
            .jobs
            .values()
            .filter(|j| j.state == JobState::Finished)
            .filter(|j| j.end_time.unwrap_or(j.mtime) + keep <= now)
            .filter(|j| !self.array_still_needs(j.id))
            .map(|j| j.id)
            .collect();
        if old.is_empty() {
            return old;
        }
        // Dropped where they lie: taken out one by one, each (large)
        // record was first copied out of the map (a replay drops
        // thousands at a time).
        let mut sorted = old.clone();
        sorted.sort_unstable();
        let by_submission = &mut self.book.by_submission;
        self.book.jobs.retain(|id, job| {
            if sorted.binary_search(id).is_err() {
                return true;
            }
            if let Some(sid) = &job.submission_id {
                by_submission.remove(sid);
            }
            false
        });
        old
    }

    /// Takes a job out of the book, and out of the submissions' index.
    fn drop_record(&mut self, id: JobId) {
        if let Some(job) = self.book.jobs.remove(&id)
            && let Some(sid) = job.submission_id
        {
            self.book.by_submission.remove(&sid);
        }
    }

    /// The job a client's submission id made, while it is kept.
    pub fn job_by_submission(&self, submission_id: &str) -> Option<&Job> {
        let id = self.book.by_submission.get(submission_id)?;
        self.book.jobs.get(id)
    }

    /// Drops one finished job (qdel -x); false if it is not finished.
    pub fn remove_finished(&mut self, id: JobId) -> bool {
        let finished = self
            .book
            .jobs
            .get(&id)
            .is_some_and(|j| j.state == JobState::Finished)
            && !self.array_still_needs(id);
        if finished {
            self.drop_record(id);
        }
        finished
    }

    /// A finished sub-job of an array that has not finished: its record
    /// says it ran, and without it a restart would start it again.
    fn array_still_needs(&self, id: JobId) -> bool {
        id.array_parent()
            .and_then(|a| self.book.jobs.get(&a))
            .is_some_and(|a| a.state != JobState::Finished)
    }

    /// What the pass reads of the nodes: which are free, who holds which.
    pub(crate) fn occupancy(&self) -> &Occupancy {
        &self.machine.occupancy
    }

    /// Nodes up, per node set.
    /// Changes each time the configuration is set (see the field).
    pub(crate) fn config_generation(&self) -> u64 {
        self.config_generation
    }

    pub(crate) fn up_per_set(&self) -> &[usize] {
        &self.machine.up_per_set
    }

    /// The job, if it exists and the caller may act on it.
    pub(crate) fn checked(
        &self,
        id: JobId,
        caller: &Caller,
        action: &str,
    ) -> Result<&Job, CoreError> {
        let job = self.book.jobs.get(&id).ok_or_else(|| self.no_such(id))?;
        if !caller.may_act_on(job) {
            return Err(CoreError::NotYourJob {
                id: self.full_id(id),
                owner: job.owner.user.clone(),
                action: action.into(),
            });
        }
        Ok(job)
    }

    fn no_such(&self, id: JobId) -> CoreError {
        CoreError::NoSuchJob {
            id: self.full_id(id),
        }
    }

    /// A job to change in place, for changes no index depends on
    /// (between running and suspended: both are active, on the same
    /// nodes; `suspend.rs`).
    pub(crate) fn job_in_place(&mut self, id: JobId) -> Option<&mut Job> {
        self.book.jobs.get_mut(&id)
    }

    pub(crate) fn wrong_state(&self, job: &Job, action: &str) -> CoreError {
        CoreError::WrongState {
            id: self.full_id(job.id),
            action: action.into(),
            state: job.state,
        }
    }

    /// Pending job `target` gains dependency `dep` (another job named it
    /// in `before*`), and waits for one fewer such job (`on:N`). False if
    /// it is not pending.
    pub(crate) fn add_dependency(&mut self, target: JobId, dep: crate::depend::Dependency) -> bool {
        let Some(job) = self
            .book
            .jobs
            .get_mut(&target)
            .filter(|j| j.state.is_pending())
        else {
            return false;
        };
        if !job.depend.contains(&dep) {
            job.depend.push(dep);
        }
        job.depend_on = job.depend_on.saturating_sub(1);
        refresh_pending(&mut self.book.pending, job);
        self.book
            .dependents
            .entry(dep.job)
            .or_default()
            .push(target);
        true
    }

    /// [`State::note_dependencies`] for a job already in the map.
    fn note_dependencies_of(&mut self, id: JobId) {
        if let Some(depend) = self.book.jobs.get(&id).map(|j| j.depend.clone()) {
            self.note_dependencies_on(id, &depend);
        }
    }

    /// Remembers whom a pending job waits for, so the end of each named
    /// job finds it without a scan.
    fn note_dependencies(&mut self, job: &Job) {
        self.note_dependencies_on(job.id, &job.depend);
    }

    fn note_dependencies_on(&mut self, id: JobId, depend: &[crate::depend::Dependency]) {
        for dep in depend {
            // One that has ended already is never taken again.
            let ended = self
                .book
                .jobs
                .get(&dep.job)
                .is_some_and(|p| p.state == JobState::Finished);
            if !ended {
                self.book.dependents.entry(dep.job).or_default().push(id);
            }
        }
    }

    /// Whether some pending job waits on `id` (its start may let an
    /// `after:` dependent start).
    pub fn has_dependents(&self, id: JobId) -> bool {
        self.book.dependents.get(&id).is_some_and(|d| !d.is_empty())
    }

    /// The jobs that named `id` in `-W depend`, forgotten here: called once
    /// `id` has ended.
    pub(crate) fn take_dependents(&mut self, id: JobId) -> Vec<JobId> {
        self.book.dependents.remove(&id).unwrap_or_default()
    }

    /// Ends a job that never started (deleted by the server, not a user):
    /// it leaves its queue and is finished with `exit` and `comment`.
    pub(crate) fn end_unstarted(
        &mut self,
        id: JobId,
        exit: JobExit,
        comment: String,
        now: Time,
    ) -> Result<&Job, CoreError> {
        let job = self.book.jobs.get(&id).ok_or_else(|| self.no_such(id))?;
        if !job.state.is_pending() {
            return Err(self.wrong_state(job, "end"));
        }
        if let Some(a) = &job.array {
            // An array whose dependency can never be met: none of its
            // sub-jobs will start.
            let all = a.tally.unstarted.clone();
            self.remove_unstarted(id, &all);
            self.settle_array(id, now);
            if let Some(job) = self.book.jobs.get_mut(&id) {
                job.comment = comment;
            }
            return self.book.jobs.get(&id).ok_or_else(|| self.no_such(id));
        }
        let before = job.state;
        self.end_unstarted_job(id, exit, comment, now)?;
        self.sub_job_changed(id, before, now);
        self.book.jobs.get(&id).ok_or_else(|| self.no_such(id))
    }

    fn end_unstarted_job(
        &mut self,
        id: JobId,
        exit: JobExit,
        comment: String,
        now: Time,
    ) -> Result<&Job, CoreError> {
        let job = self.book.jobs.get(&id).ok_or_else(|| self.no_such(id))?;
        remove_pending(&mut self.book.pending, job);
        self.book.accounting.tally.leave_pending(job);
        let job = self
            .book
            .jobs
            .get_mut(&id)
            .ok_or_else(|| CoreError::NoSuchJob { id: id.to_string() })?;
        job.state = JobState::Finished;
        job.mtime = now;
        job.end_time = Some(now);
        job.exit = Some(exit);
        job.comment = comment;
        Ok(job)
    }

    /// Gives pending jobs of one queue new ranks (`None`: its id); returns
    /// the jobs whose place changed. Jobs not pending in `queue` are skipped.
    pub(crate) fn rerank(
        &mut self,
        queue: &str,
        ranks: &[(JobId, Option<u64>)],
        now: Time,
    ) -> Vec<JobId> {
        let mut changed = Vec::new();
        for &(id, rank) in ranks {
            let Some(job) = self.book.jobs.get_mut(&id) else {
                continue;
            };
            if !job.state.is_pending() || job.queue != queue {
                continue;
            }
            let before = pending_key(job);
            job.rank = rank;
            let after = pending_key(job);
            if before == after {
                continue;
            }
            job.mtime = now;
            if let Some(set) = self.book.pending.get_mut(queue) {
                set.remove(&before);
                set.insert(after, PendingView::of(job));
            }
            changed.push(id);
        }
        changed
    }

    /// Checks the invariants named in the module comment; for tests and
    /// debug builds.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.check_arrays()?;
        for job in self.book.jobs.values() {
            let view = self
                .book
                .pending
                .get(&job.queue)
                .and_then(|set| set.get(&pending_key(job)));
            if job.state.is_pending() != view.is_some() {
                return Err(format!("job {} ({}) vs pending set", job.id, job.state));
            }
            if view.is_some_and(|v| *v != PendingView::of(job)) {
                return Err(format!("job {}: its pending view is stale", job.id));
            }
            if job.state.is_active() != self.book.active.contains(&job.id) {
                return Err(format!("job {} ({}) vs active set", job.id, job.state));
            }
            let lent = job.state.is_active() && job.suspension.lent_to.is_some();
            if lent != self.book.lent.contains(&job.id) {
                return Err(format!("job {} ({}) vs lent set", job.id, job.state));
            }
        }
        if self.machine.occupancy
            != Occupancy::of(&self.machine.nodes, self.machine.node_sets.len())
        {
            return Err("the free nodes or a job's held nodes are off".into());
        }
        let recounted = crate::account::Tally::recount(
            self.pending_jobs(),
            self.active_jobs(),
            self.book.accounting.tally.counting_entities,
        );
        if recounted != self.book.accounting.tally {
            return Err("the per-user and per-group job counters are off".into());
        }
        for (set, up) in self.machine.up_per_set.iter().enumerate() {
            let counted = self
                .machine
                .nodes
                .iter()
                .filter(|n| n.set == set && n.usable())
                .count();
            if counted != *up {
                return Err(format!(
                    "node set {set}: {up} usable counted, {counted} usable"
                ));
            }
        }
        for node in &self.machine.nodes {
            for id in node.jobs.iter() {
                let ok = self
                    .book
                    .jobs
                    .get(&id)
                    .is_some_and(|j| j.state.is_active() && j.exec_nodes.contains(&node.name));
                if !ok {
                    return Err(format!(
                        "node {} names job {id} that does not hold it",
                        node.name
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Whether `caller` may set or release `holds` (PBS: the owner a user
/// hold, an operator an operator hold, a manager a system hold); `what`
/// names what is refused.
fn may_change(
    caller: &Caller,
    holds: Holds,
    what: impl FnOnce() -> String,
) -> Result<(), CoreError> {
    if caller.role >= holds.role_needed() {
        return Ok(());
    }
    Err(CoreError::PermissionDenied {
        what: what(),
        need: holds.role_needed().as_str().into(),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::access::Role;
    use crate::node::{NodeDef, Topology};
    use chrono::TimeZone;

    pub fn t(secs: i64) -> Time {
        chrono::Utc.timestamp_opt(1_700_000_000 + secs, 0).unwrap()
    }

    pub fn caller(uid: u32, role: Role) -> Caller {
        Caller {
            uid,
            gid: uid,
            user: format!("u{uid}"),
            group: format!("g{uid}"),
            role,
        }
    }

    /// One flat set of `n` nodes on host `h`, one open queue `batch`.
    pub fn state(n: usize) -> State {
        let mut config = Config::default();
        config.queues.insert("batch".into(), Queue::open("batch"));
        let set = NodeSet {
            name: "local".into(),
            topology: Topology::Flat,
            nodes: (0..n)
                .map(|i| NodeDef {
                    name: format!("n{i}"),
                    host: "h".into(),
                })
                .collect(),
            attrs: Default::default(),
        };
        let mut state = State::new("srv", config, vec![set]).unwrap();
        state.set_host_up("h", true);
        state
    }

    pub fn submit(state: &mut State, uid: u32, nodes: u32) -> JobId {
        let sub = Submission {
            script_name: "job.sh".into(),
            workdir: "/tmp".into(),
            resources: vec![("nodes".into(), nodes.to_string())],
            ..Submission::default()
        };
        state
            .submit(sub, &caller(uid, Role::User), t(0))
            .unwrap()
            .id
    }

    pub fn exited(code: i32) -> JobExit {
        JobExit {
            code: Some(code),
            signal: None,
            cause: ExitCause::Exited,
            message: String::new(),
            cput: None,
            max_rss: None,
            vmem: None,
        }
    }

    #[test]
    fn a_job_runs_and_finishes() {
        let mut s = state(4);
        let id = submit(&mut s, 1000, 2);
        assert_eq!(s.job(id).unwrap().state, JobState::Queued);
        s.start(id, &[0, 1], t(1)).unwrap();
        assert_eq!(s.job(id).unwrap().exec_nodes, ["n0".into(), "n1".into()]);
        let other = submit(&mut s, 1000, 1);
        assert!(s.start(other, &[1], t(1)).is_err(), "n1 is busy");
        s.check_invariants().unwrap();
        let (how, job) = s.finish(id, exited(3), t(5)).unwrap();
        assert_eq!(how, Finished::Finished);
        assert_eq!(job.exit.as_ref().unwrap().exit_status(), 3);
        assert_eq!(job.elapsed(t(100)), Some(4));
        assert!(s.nodes().iter().all(|n| n.jobs.is_empty()));
        s.check_invariants().unwrap();
    }

    #[test]
    fn a_lost_rerunnable_job_is_queued_again() {
        let mut s = state(2);
        let id = submit(&mut s, 1000, 1);
        s.start(id, &[0], t(1)).unwrap();
        let lost = JobExit {
            code: None,
            signal: None,
            cause: ExitCause::Lost,
            message: String::new(),
            cput: None,
            max_rss: None,
            vmem: None,
        };
        let (how, job) = s.finish(id, lost, t(2)).unwrap();
        assert_eq!(how, Finished::Requeued);
        assert_eq!(job.state, JobState::Queued);
        assert_eq!(job.run_count, 1);
        s.check_invariants().unwrap();
    }

    #[test]
    fn delete_hold_release_follow_ownership() {
        let mut s = state(2);
        let id = submit(&mut s, 1000, 1);
        let other = caller(1001, Role::User);
        assert!(matches!(
            s.delete(id, &other, t(1)),
            Err(CoreError::NotYourJob { .. })
        ));
        assert!(matches!(
            s.hold(id, &other, t(1)),
            Err(CoreError::NotYourJob { .. })
        ));
        let owner = caller(1000, Role::User);
        assert_eq!(s.hold(id, &owner, t(1)).unwrap().state, JobState::Held);
        assert_eq!(s.release(id, &owner, t(2)).unwrap().state, JobState::Queued);
        assert!(s.release(id, &owner, t(2)).is_err(), "nothing to release");
        // PBS's hold lists: an operator hold needs an operator, a system
        // hold a manager, to set and to release; the others stay.
        let op = caller(5, Role::Operator);
        let manager = caller(6, Role::Manager);
        let holds = |list: &str| crate::job::Holds::parse_list(list).unwrap();
        assert!(matches!(
            s.hold_types(id, &owner, holds("o"), t(2)),
            Err(CoreError::PermissionDenied { .. })
        ));
        s.hold_types(id, &op, holds("uo"), t(2)).unwrap();
        assert!(s.hold_types(id, &op, holds("s"), t(2)).is_err());
        s.hold_types(id, &manager, holds("s"), t(2)).unwrap();
        assert_eq!(s.job(id).unwrap().holds.types(), "uos");
        assert!(matches!(
            s.release_types(id, &owner, holds("o"), t(3)),
            Err(CoreError::PermissionDenied { .. })
        ));
        let job = s.release_types(id, &owner, holds("u"), t(3)).unwrap();
        assert_eq!(
            (job.holds.types().as_str(), job.state),
            ("os", JobState::Held)
        );
        assert!(job.comment.contains("still held (os)"), "{}", job.comment);
        assert!(
            s.release_types(id, &owner, holds("u"), t(3)).is_err(),
            "no user hold left"
        );
        s.release_types(id, &op, holds("o"), t(3)).unwrap();
        let job = s.release_types(id, &manager, holds("s"), t(3)).unwrap();
        assert_eq!(job.state, JobState::Queued);
        assert!(crate::job::Holds::parse_list("un").is_err());
        assert!(crate::job::Holds::parse_list("").is_err());
        assert!(crate::job::Holds::parse_list("x").is_err());
        let (how, job) = s.delete(id, &owner, t(3)).unwrap();
        assert_eq!(how, Deleted::Removed);
        assert_eq!(job.state, JobState::Finished);
        s.check_invariants().unwrap();
    }

    #[test]
    fn deleting_a_running_job_asks_its_host_to_kill_it() {
        let mut s = state(2);
        let id = submit(&mut s, 1000, 1);
        s.start(id, &[1], t(1)).unwrap();
        let op = caller(5, Role::Operator);
        let (how, job) = s.delete(id, &op, t(2)).unwrap();
        assert_eq!(how, Deleted::Kill { host: "h".into() });
        assert_eq!(job.state, JobState::Exiting);
        assert!(s.hold(id, &op, t(2)).is_err(), "cannot hold a running job");
        // It ended on its own before the kill reached it: still deleted.
        let (_, job) = s.finish(id, exited(143), t(3)).unwrap();
        let exit = job.exit.as_ref().unwrap();
        assert_eq!(exit.cause, ExitCause::Deleted);
        assert_eq!(exit.code, Some(143));
        s.check_invariants().unwrap();
    }

    #[test]
    fn restore_takes_back_nodes_and_ids() {
        let mut s = state(4);
        let a = submit(&mut s, 1000, 2);
        s.start(a, &[2, 3], t(1)).unwrap();
        let b = submit(&mut s, 1000, 1);
        let jobs: Vec<Job> = s.jobs().cloned().collect();
        let mut fresh = state(4);
        let warnings = fresh.restore(jobs, 0);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(fresh.next_id(), JobId(b.0 + 1));
        assert_eq!(fresh.nodes()[2].job(), Some(a));
        assert_eq!(fresh.pending_jobs().count(), 1);
        fresh.check_invariants().unwrap();
    }

    #[test]
    fn history_is_purged_after_its_duration() {
        let mut s = state(1);
        let id = submit(&mut s, 1000, 1);
        s.delete(id, &caller(1000, Role::User), t(10)).unwrap();
        let keep = s.config().server.job_history_duration as i64;
        assert!(s.purge_history(t(10 + keep - 1)).is_empty());
        assert_eq!(s.purge_history(t(10 + keep)), vec![id]);
        assert!(s.job(id).is_none());
    }

    #[test]
    fn node_sets_are_checked() {
        let mesh = NodeSet {
            name: "m".into(),
            topology: Topology::Mesh2d {
                width: 2,
                height: 2,
                contiguous: false,
            },
            nodes: vec![NodeDef {
                name: "a".into(),
                host: "h".into(),
            }],
            attrs: Default::default(),
        };
        let err = State::new("s", Config::default(), vec![mesh]).unwrap_err();
        assert!(err.to_string().contains("lists 1 nodes"), "{err}");
    }

    #[test]
    fn offline_nodes_take_no_job_and_draining_ones_keep_theirs() {
        use crate::node::{AdminState, NodeMark};
        use crate::scheduler::Scheduler;
        let mut s = state(3);
        let running = submit(&mut s, 1000, 1);
        s.start(running, &[2], t(1)).unwrap();
        let mut config = s.config().clone();
        let mark = |state| NodeMark {
            state,
            comment: "repair".into(),
        };
        config
            .node_marks
            .insert("n0".into(), mark(AdminState::Offline));
        config
            .node_marks
            .insert("n2".into(), mark(AdminState::Draining));
        s.set_config(config);
        s.check_invariants().unwrap();
        assert_eq!(s.nodes()[0].state_name(), "offline");
        assert_eq!(s.nodes()[2].state_name(), "draining");
        // Two single-node jobs: only n1 is usable.
        let a = submit(&mut s, 1000, 1);
        let b = submit(&mut s, 1000, 1);
        let starts = Scheduler.pass(&s, t(2)).starts;
        assert_eq!(starts.len(), 1, "{starts:?}");
        assert_eq!((starts[0].job, starts[0].nodes.clone()), (a, vec![1]));
        s.start(a, &[1], t(2)).unwrap();
        // The draining node's job ends: the node is drained, not free.
        s.finish(running, exited(0), t(3)).unwrap();
        assert_eq!(s.nodes()[2].state_name(), "drained");
        assert!(Scheduler.pass(&s, t(4)).starts.is_empty());
        // A job as large as the set still waits for the nodes to return.
        let big = submit(&mut s, 1000, 3);
        assert!(Scheduler.pass(&s, t(4)).starts.is_empty());
        // Back in service: b runs on n0 or n2.
        let mut config = s.config().clone();
        config.node_marks.clear();
        s.set_config(config);
        s.check_invariants().unwrap();
        let starts = Scheduler.pass(&s, t(5)).starts;
        assert_eq!(starts.len(), 1);
        assert_eq!(starts[0].job, b);
        let _ = big;
    }

    #[test]
    fn a_host_over_its_load_limit_takes_no_new_job() {
        use crate::scheduler::Scheduler;
        let mut s = state(2);
        let mut config = s.config().clone();
        config.server.max_load_factor = 4.0;
        s.set_config(config);
        let id = submit(&mut s, 1000, 1);
        // 2 CPUs, load 8: four times the CPUs, the seed's limit.
        assert!(s.set_host_load("h", 8.0, 2));
        s.check_invariants().unwrap();
        assert_eq!(s.nodes()[0].state_name(), "busy");
        assert!(Scheduler.pass(&s, t(1)).starts.is_empty());
        // Just under the limit: it runs.
        assert!(s.set_host_load("h", 7.9, 2));
        assert_eq!(Scheduler.pass(&s, t(2)).starts[0].job, id);
        // The limit is the server's: 0 turns it off.
        s.set_host_load("h", 100.0, 2);
        let mut config = s.config().clone();
        config.server.max_load_factor = 0.0;
        s.set_config(config);
        s.check_invariants().unwrap();
        assert_eq!(Scheduler.pass(&s, t(3)).starts[0].job, id);
    }
}
