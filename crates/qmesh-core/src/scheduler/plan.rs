//! One pass over the ordered pending jobs: start what may start, reserve
//! nodes for what must not be delayed, and say why the rest waits.
//!
//! Each node set has an availability [`Profile`]: free nodes now, plus the
//! nodes of running jobs from the end of their wall time on (ANL: users give
//! wall-clock limits so that anyone can tell when a job will start). A job
//! starts now if `n` nodes stay free for its whole wall time in the profiles
//! of its queue's sets, so it cannot delay any reservation already made. A
//! reservation takes the earliest window in one set. Which jobs get one is
//! the backfill mode: EASY the first that cannot start (and any above
//! `block_priority`), conservative all, none only those above
//! `block_priority`, and then (SDSC blocking) nothing else starts at all.
//! Closedowns (shutdown windows) take their sets' nodes from the profiles
//! for their time, so no job starts or is reserved across one. A queue
//! whose jobs end with its periods (see [`crate::periods`]) starts a job
//! only on sets it would not outlast there, and reserves only windows that
//! end in time; a queue outside its periods starts nothing.
//!
//! On a shared set (`jobs_per_node` over 1) the profiles count job slots,
//! not nodes: a job takes one slot on each of its nodes, which must be
//! distinct, so a job starts only where that many nodes have room, on the
//! least busy of them (NCAR: run queue over CPUs, counting the jobs this
//! pass starts). A reservation there is counted in slots, an estimate
//! when the nodes with room are fewer than the job asks.
//!
//! Counting nodes is exact for flat node sets. On a mesh or torus the
//! nodes free at a time may be scattered, so a reservation there is also
//! placed on the set's allocator as it will be then, and jobs started now
//! keep off its nodes (see `reserve_placed`).

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use super::choose::{self, Candidate, Wants};
use super::closedown::{self, Closedown};
use super::order::{Ranked, ranked};
use super::profile::{FOREVER, Profile, Secs};
use super::{Entry, Plan, Reason, Start, Status};
use crate::job::{Job, JobId, JobState};
use crate::node_resources::HostResource;
use crate::periods;
use crate::server::Backfill;
use crate::state::{NodeBits, State};
use crate::time::Time;
use qmesh_alloc::{Allocator, Part, Placement};

/// The planner's working state for one pass.
pub(super) struct Planner<'a> {
    state: &'a State,
    now: Time,
    now_s: Secs,
    mode: Backfill,
    block_priority: f64,
    search_depth: usize,
    profiles: Vec<Profile>,
    /// The nodes free now, and how many per set: the state's, less what
    /// this pass has started.
    free: NodeBits,
    free_in: Vec<usize>,
    up: Vec<usize>,
    /// Per set, the jobs each node runs at once (1: exclusive).
    slots: Vec<usize>,
    /// Jobs this pass started, per node of a shared set and per host:
    /// the room and the run queue the state does not show yet.
    started_on_node: HashMap<usize, u32>,
    started_on_host: HashMap<&'a str, u32>,
    /// GPUs this pass's starts took, per node of a shared set.
    started_gpus_on_node: HashMap<usize, u32>,
    /// Site resources consumed per node (flags `n`, `f`) this pass's
    /// starts took, per node of a shared set and resource.
    started_use_on_node: HashMap<(usize, &'a str), f64>,
    /// Per set, its topology's allocator holding what is taken now; `None`
    /// for a flat set, whose free nodes are simply counted.
    allocators: Vec<Option<Box<dyn Allocator>>>,
    /// Per set with an allocator, when the nodes of its running jobs (and
    /// of this pass's starts) come back: the end and the set's own node
    /// indices. A reservation there is placed on the allocator as it will
    /// be then (see `reserve_placed`).
    releases: Vec<Vec<(Secs, Vec<u32>)>>,
    /// Per set with an allocator, the reservations placed there:
    /// `[start, end)` and their nodes. A job started now keeps off the
    /// nodes of those it would still be running at.
    placed: Vec<Vec<(Secs, Secs, Vec<u32>)>>,
    /// Index in `State::nodes` of each set's first node.
    base: Vec<usize>,
    /// Per queue (in the configuration's name order): what it may do now.
    queues: Vec<QueueNow>,
    user_running: HashMap<&'a str, u32>,
    group_running: HashMap<String, u32>,
    /// Running jobs per queue and server, per user, Unix group and project,
    /// for PBS's limits (`limits.rs`).
    entity_running: crate::limits::RunCounts,
    limits_on: bool,
    /// The server's and queues' bounds on resources consumed per queue
    /// and server (flag `q`) and what running jobs use, this pass's
    /// starts counted; `None` when nothing is bounded.
    consumables: Option<crate::consumable::Consumables>,
    /// Per set, by nodes then wall time, the last reservation's start. A
    /// pass only ever takes nodes from the profiles, so a job of at least
    /// as many nodes and as long a wall time cannot start earlier: its
    /// search begins there. Conservative passes rely on this to stay near
    /// linear (see `reserve`).
    hints: Vec<BTreeMap<i64, BTreeMap<Secs, Secs>>>,
    reserved_any: bool,
    /// Per set, the closedowns that close it: `[from, to)` and their reason.
    /// Their nodes are taken from the profiles for that time (see `close`).
    closed: Vec<Vec<(Secs, Secs, Reason)>>,
    /// SDSC blocking without backfill: nothing more starts this pass.
    blocked: bool,
    considered: usize,
    /// Sub-jobs this pass started, per array (for their throttles).
    array_starts: HashMap<JobId, u32>,
}

impl<'a> Planner<'a> {
    pub fn new(state: &'a State, now: Time, mode: Backfill) -> Planner<'a> {
        let attrs = &state.config().server;
        let now_s = now.timestamp();
        let sets = state.node_sets();
        let occupancy = state.occupancy();
        let up = state.up_per_set().to_vec();
        // Per set, when the nodes of running jobs come free: one entry per
        // job and set.
        let mut releases: Vec<Vec<(Secs, i64)>> = vec![Vec::new(); sets.len()];
        for (&id, held) in &occupancy.held {
            if held.up_in.is_empty() {
                continue;
            }
            let end = state
                .job(id)
                .map_or(now_s + 1, |job| expected_end(job, now_s, attrs.kill_delay));
            for &(set, count) in &held.up_in {
                releases[set].push((end, count as i64));
            }
        }
        let (allocators, base) = allocators_of(state);
        let mut shaped_releases: Vec<Vec<(Secs, Vec<u32>)>> = vec![Vec::new(); sets.len()];
        if allocators.iter().any(Option::is_some) {
            let nodes = state.nodes();
            for (&id, held) in &occupancy.held {
                let end = state
                    .job(id)
                    .map_or(now_s + 1, |job| expected_end(job, now_s, attrs.kill_delay));
                for &(set, _) in held.up_in.iter().filter(|(s, _)| allocators[*s].is_some()) {
                    let local: Vec<u32> = held
                        .nodes
                        .iter()
                        .filter(|&&i| nodes[i].set == set && nodes[i].usable())
                        .map(|&i| (i - base[set]) as u32)
                        .collect();
                    shaped_releases[set].push((end, local));
                }
            }
        }
        let profiles: Vec<Profile> = occupancy
            .free_in
            .iter()
            .zip(releases.iter_mut())
            .map(|(&free, ends)| Profile::with_releases(now_s, free as i64, ends))
            .collect();

        let config = state.config();
        let queues = config
            .queues
            .values()
            .map(|q| QueueNow::of(state, q, now, sets.len()))
            .collect();
        let limits_on = config.has_run_limits();
        let mut planner = Planner {
            state,
            now,
            now_s,
            mode,
            block_priority: attrs.block_priority,
            search_depth: attrs.search_depth as usize,
            profiles,
            free: occupancy.free.clone(),
            free_in: occupancy.free_in.clone(),
            up,
            slots: sets.iter().map(|s| s.attrs.slots() as usize).collect(),
            started_on_node: HashMap::new(),
            started_on_host: HashMap::new(),
            started_gpus_on_node: HashMap::new(),
            started_use_on_node: HashMap::new(),
            allocators,
            releases: shaped_releases,
            placed: vec![Vec::new(); sets.len()],
            base,
            queues,
            user_running: HashMap::new(),
            group_running: HashMap::new(),
            entity_running: crate::limits::RunCounts::default(),
            limits_on,
            consumables: crate::consumable::Consumables::of(state.config(), state.active_jobs()),
            hints: vec![BTreeMap::new(); sets.len()],
            reserved_any: false,
            closed: vec![Vec::new(); sets.len()],
            blocked: false,
            considered: 0,
            array_starts: HashMap::new(),
        };
        if planner.limits_on {
            for job in state.active_jobs() {
                planner.count_running(job);
            }
        }
        planner.close(&closedown::collect(state, now));
        planner
    }

    /// Takes every node of each closedown's sets for its time, so that no
    /// job starts or is reserved across it. Call before planning any job:
    /// the reservation hints assume nodes are only ever taken.
    pub fn close(&mut self, closedowns: &[Closedown]) {
        let sets = self.state.node_sets();
        for c in closedowns.iter().filter(|c| !c.is_over(self.now)) {
            let from = c.start.timestamp();
            let to = c.end.map_or(FOREVER, |end| end.timestamp());
            for (s, set) in sets.iter().enumerate() {
                if c.covers(&set.name) {
                    // No set has more free slots than its nodes up have.
                    self.profiles[s].add(from, to, -((self.up[s] * self.slots[s]) as i64));
                    self.closed[s].push((from, to, c.reason));
                }
            }
        }
    }

    /// The reason of the earliest closedown of `sets` that a job running
    /// from now until `end` would cross.
    fn crossing(&self, sets: &[usize], end: Secs) -> Option<Reason> {
        sets.iter()
            .flat_map(|&s| &self.closed[s])
            .filter(|&&(from, to, _)| from < end && self.now_s < to)
            .min_by_key(|&&(from, _, _)| from)
            .map(|&(_, _, reason)| reason)
    }

    /// Plans every pending job (`Stop::Never`), or up to one (spwhen), or,
    /// with `Stop::NothingStarts`, until nothing more could start this
    /// pass: no node is free, or SDSC blocking holds the rest back.
    pub fn run(mut self, stop: Stop) -> Plan {
        let order = ranked(self.state, self.now);
        let mut plan = Plan {
            now: Some(self.now),
            ..Plan::default()
        };
        if stop == Stop::Never {
            plan.queue.reserve(self.state.pending_count());
        }
        for ranked in order {
            if stop == Stop::NothingStarts
                && (self.blocked || self.free_in.iter().all(|&free| free == 0))
            {
                break;
            }
            // An array is planned sub-job after sub-job, each as the next
            // job in line, until one cannot start: its sub-jobs are alike,
            // so one that waits stands for the rest. (One call site: the
            // planner's hot path stays inlined.)
            let mut left: Option<u32> = None;
            let entry = loop {
                let entry = self.plan_job(&ranked, &mut plan.starts);
                if !ranked.view.array || entry.status != Status::Startable {
                    break entry;
                }
                let n = *left.get_or_insert_with(|| self.unstarted(ranked.view.id));
                if n <= 1 {
                    break entry;
                }
                left = Some(n - 1);
            };
            let last = stop == Stop::At(entry.job);
            plan.queue.push(entry);
            if last {
                break;
            }
        }
        if stop != Stop::NothingStarts {
            plan.steps = self.profiles.iter_mut().map(Profile::steps).collect();
        }
        plan
    }

    fn plan_job(&mut self, ranked: &Ranked, starts: &mut Vec<Start>) -> Entry {
        let view = &ranked.view;
        let entry = |status, reason, expected_start| Entry {
            job: view.id,
            status,
            reason,
            expected_start,
            priority: ranked.priority,
        };
        // The record itself only when a rule needs more than the view.
        let state = self.state;
        let job = || state.job(view.id);
        if !view.queued {
            let status = job().map_or(Status::Held, Status::of_pending);
            return entry(status, Some(Reason::Held), None);
        }
        if view.conditional
            && let Some(reason) = job().and_then(|job| state.waits_for(job, self.now))
        {
            return entry(Status::Held, Some(reason), None);
        }
        let queue = self.queues[ranked.queue].clone();
        if !queue.started {
            return entry(Status::Waiting, Some(Reason::QueueStopped), None);
        }
        if !queue.open {
            return entry(Status::Waiting, Some(Reason::OutsidePeriod), None);
        }
        let sets = queue.sets;
        if view.has_account && job().is_some_and(|job| state.allocation_short(job)) {
            return entry(Status::Waiting, Some(Reason::Allocation), None);
        }
        // A job that needs more of a node than some sets have uses the others.
        let fitting: Vec<usize>;
        let sets = match job().filter(|_| view.has_needs) {
            Some(job) => {
                let needs = job.needs();
                fitting = sets
                    .iter()
                    .copied()
                    .filter(|&s| state.effective_attrs(s).satisfies(&needs))
                    .collect();
                &fitting[..]
            }
            None => &sets[..],
        };
        let n = view.nodes as usize;
        let reachable: usize = sets.iter().map(|&s| self.up[s]).sum();
        if reachable < n {
            return entry(Status::Waiting, Some(Reason::NodesDown), None);
        }
        if self.search_depth > 0 && self.considered >= self.search_depth {
            return entry(Status::Waiting, Some(Reason::Priority), None);
        }
        self.considered += 1;
        if view.array
            && let Some(a) = self.state.array_of(view.id)
            && !a.throttle_room(self.array_starts.get(&a_id(view.id)).copied().unwrap_or(0))
        {
            return entry(Status::Waiting, Some(Reason::ArrayLimit), None);
        }
        if self.limits_on
            && let Some(reason) = job().and_then(|job| self.over_run_limit(job))
        {
            return entry(Status::Waiting, Some(reason), None);
        }
        // Licences and the like: checked each pass, never reserved.
        if let Some(consumables) = &self.consumables
            && job().is_some_and(|job| consumables.shortfall(job).is_some())
        {
            return entry(Status::Waiting, Some(Reason::Consumable), None);
        }
        if self.blocked {
            return entry(Status::Waiting, Some(Reason::Blocked), None);
        }

        let wall = view.walltime.max(1) as Secs;
        let end = self.now_s.saturating_add(wall);
        let free_now: usize = sets.iter().map(|&s| self.free_in[s]).sum();
        let above_block = self.block_priority > 0.0 && ranked.priority > self.block_priority;
        let reserve = match self.mode {
            Backfill::Conservative => true,
            Backfill::Easy => !self.reserved_any || above_block,
            Backfill::None => above_block,
        };
        // In a queue whose jobs end with its periods, only the sets the job
        // would not outlast there (worked out only if they are tried).
        let within: Vec<usize>;
        let (usable, cut_off) = match &queue.cuts {
            Some(cuts) if free_now >= n || reserve => {
                within = sets.iter().copied().filter(|&s| cuts[s] >= end).collect();
                (&within[..], within.len() < sets.len())
            }
            _ => (sets, false),
        };
        let mut unplaceable = false;
        let wants = job().filter(|_| view.constrained).and_then(Wants::of);
        let wants = wants.as_ref();
        if free_now >= n {
            match self.start_now(usable, n, end, reserve, wants) {
                Now::Started(nodes, parts) => {
                    if self.limits_on
                        && let Some(job) = job()
                    {
                        self.count_running(job);
                    }
                    if let Some(consumables) = &mut self.consumables
                        && let Some(job) = job()
                    {
                        consumables.add(job);
                    }
                    starts.push(Start {
                        job: view.id,
                        nodes,
                        parts,
                    });
                    if view.array {
                        *self.array_starts.entry(a_id(view.id)).or_default() += 1;
                    }
                    return entry(Status::Startable, None, Some(self.now));
                }
                Now::NoPlacement => unplaceable = true,
                Now::NoRoom => {}
            }
        }

        // Nodes enough are free, but the job would run into a closedown.
        let closed = if free_now >= n {
            self.crossing(sets, end)
                .or(cut_off.then_some(Reason::PeriodEnd))
        } else {
            None
        };
        if reserve {
            let start = self.reserve(usable, n as u32, wall, unplaceable, queue.cuts.as_deref());
            // A job its period leaves no window for holds no nodes: under
            // EASY the next job gets the reservation.
            if start.is_some() || queue.cuts.is_none() {
                self.reserved_any = true;
                if self.mode == Backfill::None {
                    self.blocked = true;
                }
            }
            if start.is_none() && queue.cuts.is_some() {
                return entry(Status::Waiting, Some(Reason::PeriodEnd), None);
            }
            let reason = if unplaceable {
                Reason::Placement
            } else {
                closed.unwrap_or(Reason::Resources)
            };
            return entry(Status::Blocked, Some(reason), start);
        }
        let status = if free_now > 0 {
            Status::CannotBackfill
        } else {
            Status::Waiting
        };
        let reason = if unplaceable {
            Reason::Placement
        } else if let Some(reason) = closed {
            reason
        } else if n <= free_now {
            Reason::Reservation
        } else {
            Reason::Resources
        };
        entry(status, Some(reason), None)
    }

    /// Takes `n` nodes now if they stay free until `end` in the profiles.
    /// A set with a topology must place the job as a whole (its allocator
    /// gives a concrete placement or nothing); flat sets are tried by
    /// SDSC's rule: the exclusive set with the fewest free nodes that holds
    /// the whole job (keeping big holes for big jobs), else the shared set
    /// whose least busy nodes are least busy (NCAR), else spread over the
    /// flat sets in order.
    ///
    /// A job that is `promised` (it gets a reservation if it cannot start)
    /// is placed on any free nodes its set's topology could give it, not
    /// only on those the allocator's bookkeeping holds as one piece
    /// ([`Allocator::allocate_promised`]): that is where the reservation
    /// an earlier pass gave it lies.
    fn start_now(
        &mut self,
        sets: &[usize],
        n: usize,
        end: Secs,
        promised: bool,
        wants: Option<&Wants<'a>>,
    ) -> Now {
        let now = self.now_s;
        let mut unplaceable = false;
        // A placement exists, but only on nodes a reservation needs.
        let mut in_the_way = false;
        // Ties go to the set first in the queue's (or node group's) order.
        let mut shaped: Vec<(usize, usize)> = sets
            .iter()
            .copied()
            .enumerate()
            .filter(|&(_, s)| self.allocators[s].is_some() && self.free_in[s] > 0)
            .collect();
        shaped.sort_by_key(|&(order, s)| (self.free_in[s], order));
        // A job that names hosts or wants them packed or scattered may
        // use a topology's allocator only where any node serves it alike.
        // Where it names nodes, it gets those nodes whatever their shape
        // (with the flat sets, below): a user who names nodes knows them.
        let mut pinned_shaped: Vec<usize> = Vec::new();
        if let Some(wants) = wants {
            let pins = wants.pins.iter().any(Option::is_some);
            shaped.retain(|&(_, s)| {
                let alike = self.indifferent(s, wants);
                if !alike && pins {
                    pinned_shaped.push(s);
                }
                alike
            });
        }
        for (_, s) in shaped {
            let Some(size) = self.allocators[s]
                .as_ref()
                .and_then(|a| a.size_for(n as u32))
            else {
                continue;
            };
            let size = size as usize;
            if self.free_in[s] < size || self.profiles[s].min_over(now, end) < size as i64 {
                continue;
            }
            let placement = match self.allocate_clear_of_reservations(s, n as u32, end, promised) {
                Placed::Yes(placement) => placement,
                Placed::InTheWay => {
                    in_the_way = true;
                    continue;
                }
                Placed::No => {
                    unplaceable = true;
                    continue;
                }
            };
            self.releases[s].push((end, placement.nodes.clone()));
            let base = self.base[s];
            let mut nodes: Vec<usize> =
                placement.nodes.iter().map(|&i| base + i as usize).collect();
            nodes.sort_unstable();
            for &i in &nodes {
                if self.free.get(i) {
                    self.free.set(i, false);
                    self.free_in[s] -= 1;
                }
            }
            self.profiles[s].add(now, end, -(nodes.len() as i64));
            return Now::Started(nodes, placement.parts);
        }

        // In the queue's (or node group's) order.
        let caps: Vec<(usize, usize)> = sets
            .iter()
            .filter(|&&s| {
                (self.allocators[s].is_none() || pinned_shaped.contains(&s)) && self.free_in[s] > 0
            })
            .map(|&s| {
                let window = self.profiles[s].min_over(now, end).max(0) as usize;
                let mut cap = window.min(self.free_in[s]);
                if self.slots[s] > 1 {
                    // One slot per node: as many nodes as have room
                    // (`with_room`, which would borrow all of `self`
                    // while the profiles are borrowed here).
                    let from = self.base[s];
                    let to = from + self.state.node_sets()[s].nodes.len();
                    cap = cap.min(self.free.ones(from, to).count());
                }
                (s, cap)
            })
            .collect();
        if caps.iter().map(|(_, c)| c).sum::<usize>() < n {
            return if unplaceable && !in_the_way {
                Now::NoPlacement
            } else {
                Now::NoRoom
            };
        }
        if let Some(wants) = wants {
            return self.start_chosen(&caps, end, wants);
        }
        let whole = || caps.iter().enumerate().filter(|(_, (_, cap))| *cap >= n);
        let exclusive = whole()
            .filter(|(_, (s, _))| self.slots[*s] == 1)
            .min_by_key(|(order, (s, _))| (self.free_in[*s], *order));
        let shared = || {
            whole()
                .filter(|(_, (s, _))| self.slots[*s] > 1)
                .map(|(order, c)| {
                    // How busy the busiest of the n nodes it would take is.
                    let busiest = self
                        .least_busy(c.0)
                        .get(n - 1)
                        .map_or(f64::INFINITY, |&(busy, _, _)| busy);
                    (busiest, order, c)
                })
                .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
                .map(|(_, order, c)| (order, c))
        };
        let take: Vec<(usize, usize)> = match exclusive.or_else(shared).map(|(_, c)| c) {
            Some(&(s, _)) => vec![(s, n)],
            None => {
                let mut left = n;
                caps.iter()
                    .filter_map(|&(s, cap)| {
                        let k = cap.min(left);
                        left -= k;
                        (k > 0).then_some((s, k))
                    })
                    .collect()
            }
        };
        let mut nodes = Vec::with_capacity(n);
        for (s, k) in take {
            let from = self.base[s];
            let to = from + self.state.node_sets()[s].nodes.len();
            if self.slots[s] > 1 {
                let picked = self.take_least_busy(s, k);
                nodes.extend(picked);
            } else {
                nodes.extend(self.free.take_first(from, to, k));
            }
            self.free_in[s] -= k;
            self.profiles[s].add(now, end, -(k as i64));
        }
        Now::Started(nodes, Vec::new())
    }

    /// Whether set `s`'s allocator may place a job that `wants` more than
    /// nodes: every node of the set serves it alike.
    fn indifferent(&self, s: usize, wants: &Wants) -> bool {
        let set = &self.state.node_sets()[s];
        let host = set.nodes.first().map(|n| n.host.as_str());
        let one_host = host.filter(|h| set.nodes.iter().all(|n| n.host == *h));
        // Its first node is one of the set's: all must have what it
        // uses up there (the set is homogeneous, and not shared).
        let first = self.effective_has(s, &wants.first_node);
        first
            && wants.indifferent_on(one_host, |pin| {
                set.nodes.iter().all(|n| pin.admits(&n.name, &n.host))
            })
    }

    /// Whether the nodes of set `s` have the resources (each node its
    /// node set's `resources_available`).
    fn effective_has(&self, s: usize, resources: &[&HostResource]) -> bool {
        let have = &self.state.effective_attrs(s).resources;
        resources
            .iter()
            .all(|r| r.served_by(have.get(&r.name).map(String::as_str)))
    }

    /// Starts a job that `wants` particular nodes on flat sets, within
    /// `caps` (per set, the nodes its profile lets a job take until
    /// `end`): the nodes [`choose`] finds among the free ones, in chunk
    /// order. Shared sets offer their least busy nodes first; a node a
    /// job is to have alone must run none, and a GPU job's node must have
    /// its GPUs free.
    fn start_chosen(&mut self, caps: &[(usize, usize)], end: Secs, wants: &Wants<'a>) -> Now {
        let nodes = self.state.nodes();
        let mut pool: Vec<Candidate> = Vec::new();
        for &(s, cap) in caps {
            if cap == 0 {
                continue;
            }
            let order: Vec<usize> = if self.slots[s] > 1 {
                self.least_busy(s).into_iter().map(|(_, _, i)| i).collect()
            } else {
                self.with_room(s).collect()
            };
            for i in order {
                let node = &nodes[i];
                if self.slots[s] > 1 {
                    let started = self.started_on_node.get(&i).copied().unwrap_or(0);
                    let others = node.jobs.len() + started as usize;
                    if !wants.fits_shared(others, self.gpus_free(i)) {
                        continue;
                    }
                    if !self.room_for(i, &wants.per_node) {
                        continue;
                    }
                }
                let first_ok = wants.first_node.is_empty()
                    || (self.effective_has(s, &wants.first_node)
                        && (self.slots[s] == 1 || self.room_for(i, &wants.first_node)));
                pool.push(Candidate {
                    index: i,
                    name: &node.name,
                    host: &node.host,
                    set: s,
                    first_ok,
                });
            }
        }
        let Some(chosen) = choose::choose(wants, &pool, caps) else {
            return Now::NoPlacement;
        };
        let now = self.now_s;
        let mut shaped: BTreeMap<usize, Vec<u32>> = BTreeMap::new();
        for (k, &i) in chosen.iter().enumerate() {
            let node = &nodes[i];
            let s = node.set;
            if self.allocators[s].is_some() {
                shaped.entry(s).or_default().push((i - self.base[s]) as u32);
            }
            if self.slots[s] > 1 {
                let firsts = if k == 0 { &wants.first_node[..] } else { &[] };
                for r in wants.per_node.iter().chain(firsts) {
                    *self
                        .started_use_on_node
                        .entry((i, r.name.as_str()))
                        .or_default() += r.amount();
                }
            }
            let take = if self.slots[s] > 1 {
                let started = self.started_on_node.entry(i).or_default();
                let room = node.room().saturating_sub(*started);
                let take = if wants.sole { room.max(1) } else { 1 };
                *started += take;
                if *started >= node.room() {
                    self.free.set(i, false);
                }
                *self.started_on_host.entry(node.host.as_str()).or_default() += 1;
                *self.started_gpus_on_node.entry(i).or_default() += wants.gpus;
                take as usize
            } else {
                self.free.set(i, false);
                1
            };
            self.free_in[s] = self.free_in[s].saturating_sub(take);
            self.profiles[s].add(now, end, -(take as i64));
        }
        // Named nodes of a mesh or torus: its allocator holds them too.
        for (s, local) in shaped {
            if let Some(allocator) = self.allocators[s].as_mut() {
                occupy(allocator.as_mut(), &local);
            }
            self.releases[s].push((end, local));
        }
        Now::Started(chosen, Vec::new())
    }

    /// The GPUs of shared node `i` no job holds (this pass's starts
    /// counted).
    fn gpus_free(&self, i: usize) -> u32 {
        let started = self.started_gpus_on_node.get(&i).copied().unwrap_or(0);
        self.state.gpus_free(i).saturating_sub(started)
    }

    /// Whether shared node `i` has free what a job uses up of each of
    /// `resources` there: its set's `resources_available` less what the
    /// jobs on it use (a job's first node also what it uses there alone,
    /// flag `f`) and what this pass's starts took.
    fn room_for(&self, i: usize, resources: &[&HostResource]) -> bool {
        resources.iter().all(|r| {
            let started = self
                .started_use_on_node
                .get(&(i, r.name.as_str()))
                .copied()
                .unwrap_or(0.0);
            self.state.has_left(i, r, started)
        })
    }

    /// The nodes of set `s` with room for a job now (this pass's starts
    /// counted).
    fn with_room(&self, s: usize) -> impl Iterator<Item = usize> + '_ {
        let from = self.base[s];
        self.free
            .ones(from, from + self.state.node_sets()[s].nodes.len())
    }

    /// The nodes of shared set `s` with room, least busy first: by run
    /// queue over CPUs (NCAR), then fewest jobs, then in set order. Each
    /// with its busyness and its jobs.
    fn least_busy(&self, s: usize) -> Vec<(f64, u32, usize)> {
        let nodes = self.state.nodes();
        let mut ranked: Vec<(f64, u32, usize)> = self
            .with_room(s)
            .map(|i| {
                let (queue, cpus) = self.state.run_queue(i);
                let here = self
                    .started_on_host
                    .get(nodes[i].host.as_str())
                    .copied()
                    .unwrap_or(0);
                let jobs =
                    nodes[i].jobs.len() as u32 + self.started_on_node.get(&i).copied().unwrap_or(0);
                ((queue + f64::from(here)) / f64::from(cpus), jobs, i)
            })
            .collect();
        ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        ranked
    }

    /// Takes a slot on each of the `k` least busy nodes of shared set
    /// `s`; a node left without room is no longer free this pass.
    fn take_least_busy(&mut self, s: usize, k: usize) -> Vec<usize> {
        let nodes = self.state.nodes();
        let mut picked: Vec<usize> = self
            .least_busy(s)
            .into_iter()
            .take(k)
            .map(|(_, _, i)| i)
            .collect();
        for &i in &picked {
            let node = &nodes[i];
            let started = self.started_on_node.entry(i).or_default();
            *started += 1;
            if *started >= node.room() {
                self.free.set(i, false);
            }
            *self.started_on_host.entry(node.host.as_str()).or_default() += 1;
        }
        picked.sort_unstable();
        picked
    }

    /// Reserves the earliest window of `n` nodes for `wall` seconds in one
    /// of the sets; returns its start. On a set with a topology the window
    /// is placed (`reserve_placed`). On a flat set it is counted, and a job
    /// that could not be placed now elsewhere is not reserved before the
    /// free nodes next change (`later`).
    ///
    /// With `cuts` (per set, when the queue's jobs there are ended), only a
    /// window that ends by its set's cut is taken.
    fn reserve(
        &mut self,
        sets: &[usize],
        n: u32,
        wall: Secs,
        later: bool,
        cuts: Option<&[Secs]>,
    ) -> Option<Time> {
        let now = self.now_s;
        // (start, set, size, the placed nodes on a set with a topology)
        let mut best: Option<(Secs, usize, i64, Option<Vec<u32>>)> = None;
        for &s in sets {
            // A topology may round the request up (a torus: a power of two).
            let size = match &self.allocators[s] {
                Some(a) => match a.size_for(n) {
                    Some(size) => i64::from(size),
                    None => continue,
                },
                None => i64::from(n),
            };
            if (self.up[s] as i64) < size {
                continue;
            }
            let cut = cuts.map(|cuts| cuts[s]);
            let mut from = self.hint(s, size, wall).max(now);
            // Placing costs a copy of the allocator per instant tried; past
            // the first reservations of a set (conservative backfilling
            // with a long queue) they are counted, as estimates.
            let placed = self.allocators[s].is_some() && self.placed[s].len() < PLACED_PER_SET;
            let found = if placed {
                self.reserve_placed(s, n, size, wall, from, cut)
                    .map(|(t, nodes)| (t, Some(nodes)))
            } else {
                if later {
                    match self.profiles[s].next_after(now) {
                        Some(next) => from = from.max(next),
                        None => continue,
                    }
                }
                self.profiles[s]
                    .earliest(from, wall, size)
                    .filter(|&t| cut.is_none_or(|cut| t.saturating_add(wall) <= cut))
                    .map(|t| (t, None))
            };
            if let Some((t, nodes)) = found
                && best.as_ref().is_none_or(|b| (t, s) < (b.0, b.1))
            {
                best = Some((t, s, size, nodes));
            }
        }
        let (start, s, n, nodes) = best?;
        let end = start.saturating_add(wall);
        self.profiles[s].add(start, end, -n);
        // Not a lower bound for others when it was counted and pushed past
        // `now`.
        if nodes.is_some() || !later {
            self.hints[s].entry(n).or_default().insert(wall, start);
        }
        if let Some(nodes) = nodes {
            self.placed[s].push((start, end, nodes));
        }
        chrono::DateTime::from_timestamp(start, 0)
    }

    /// The earliest window of set `s` (which has a topology) where `n`
    /// nodes can be placed for `wall` seconds, ending by `cut`: its start
    /// and nodes. Counting is not enough there: the nodes free at a time
    /// may be scattered. So at each instant the profile allows, the set's
    /// allocator is taken as it will be then (the jobs that end by then
    /// gone, the reservations of the window in place) and asked for a
    /// placement; jobs started now keep off its nodes if they would still
    /// run then (`allocate_clear_of_reservations`), so it is not delayed.
    ///
    /// The placement is the one a promised job gets
    /// ([`Allocator::allocate_promised`]), so it depends only on which
    /// nodes are free then. The allocator the next pass rebuilds may be
    /// cut otherwise, but it finds these nodes free as long as the jobs
    /// started meanwhile keep off them: the promise holds.
    fn reserve_placed(
        &mut self,
        s: usize,
        n: u32,
        size: i64,
        wall: Secs,
        from: Secs,
        cut: Option<Secs>,
    ) -> Option<(Secs, Vec<u32>)> {
        // The set's allocator as time goes on: running jobs give their
        // nodes back in the order they end.
        let mut future = self.allocators[s].as_ref()?.boxed_clone();
        let mut ending: Vec<&(Secs, Vec<u32>)> = self.releases[s].iter().collect();
        ending.sort_by_key(|(end, _)| *end);
        let mut ended = 0;
        let first = self.base[s];
        let free_now: Vec<u32> = self
            .free
            .ones(first, first + self.state.node_sets()[s].nodes.len())
            .map(|i| (i - first) as u32)
            .collect();
        let mut t = from;
        loop {
            t = self.profiles[s].earliest(t, wall, size)?;
            let end = t.saturating_add(wall);
            if cut.is_some_and(|cut| end > cut) {
                return None;
            }
            while let Some((_, nodes)) = ending.get(ended).filter(|(end, _)| *end <= t) {
                future.release(nodes);
                ended += 1;
            }
            // The reservations of the window hold their nodes.
            let mut then = future.boxed_clone();
            for (_, _, nodes) in self.placed[s]
                .iter()
                .filter(|(from, to, _)| *from < end && t < *to)
            {
                occupy(then.as_mut(), nodes);
            }
            // Where it can, on nodes busy now: those free now stay free
            // for jobs to start on (backfilling, or later passes).
            if t > self.now_s && !free_now.is_empty() {
                let mut busy_first = then.boxed_clone();
                occupy(busy_first.as_mut(), &free_now);
                if let Some(placement) = busy_first.allocate_promised(n) {
                    return Some((t, placement.nodes));
                }
            }
            if let Some(placement) = then.allocate_promised(n) {
                return Some((t, placement.nodes));
            }
            t = self.profiles[s].next_after(t)?;
        }
    }

    /// Places `n` nodes now on set `s` for a job that runs until `end`,
    /// off the nodes of every reservation placed there that begins before
    /// it ends; as a `promised` job if it is one (see `start_now`).
    fn allocate_clear_of_reservations(
        &mut self,
        s: usize,
        n: u32,
        end: Secs,
        promised: bool,
    ) -> Placed {
        let now = self.now_s;
        let Some(allocator) = self.allocators[s].as_mut() else {
            return Placed::No;
        };
        let place = |a: &mut dyn Allocator| {
            if promised {
                a.allocate_promised(n)
            } else {
                a.allocate(n)
            }
        };
        let in_the_way: Vec<&Vec<u32>> = self.placed[s]
            .iter()
            .filter(|(from, to, _)| *from < end && now < *to)
            .map(|(_, _, nodes)| nodes)
            .collect();
        if in_the_way.is_empty() {
            return place(allocator.as_mut()).map_or(Placed::No, Placed::Yes);
        }
        let mut clear = allocator.boxed_clone();
        for nodes in in_the_way {
            occupy(clear.as_mut(), nodes);
        }
        match place(clear.as_mut()) {
            Some(placement) if allocator.occupy(&placement.nodes).is_ok() => Placed::Yes(placement),
            Some(_) => Placed::No,
            None if place(allocator.boxed_clone().as_mut()).is_some() => Placed::InTheWay,
            None => Placed::No,
        }
    }

    /// The latest start of a reservation made in set `s` for a job no
    /// larger and no longer: the earliest this one could start.
    fn hint(&self, s: usize, n: i64, wall: Secs) -> Secs {
        self.hints[s]
            .range(..=n)
            .filter_map(|(_, by_wall)| by_wall.range(..=wall).next_back().map(|(_, &t)| t))
            .max()
            .unwrap_or(Secs::MIN)
    }

    /// Sub-jobs of an array left to start (0 for any other job).
    fn unstarted(&self, id: JobId) -> u32 {
        self.state
            .job(id)
            .and_then(|j| j.array.as_ref())
            .map_or(0, |a| a.unstarted())
    }

    fn count_running(&mut self, job: &'a Job) {
        *self
            .user_running
            .entry(job.owner.user.as_str())
            .or_default() += 1;
        if let Some((group, _)) = self.state.config().run_limits(job).group {
            *self.group_running.entry(group).or_default() += 1;
        }
        self.entity_running.add(job);
    }

    fn over_run_limit(&self, job: &Job) -> Option<Reason> {
        let config = self.state.config();
        if let Some(reason) = crate::state::limits::run_reason(config, &self.entity_running, job) {
            return Some(reason);
        }
        let limits = config.run_limits(job);
        if let Some(max) = limits.user {
            let running = self.user_running.get(job.owner.user.as_str()).copied();
            if running.unwrap_or(0) >= max {
                return Some(Reason::UserLimit);
            }
        }
        if let Some((group, max)) = limits.group
            && self.group_running.get(&group).copied().unwrap_or(0) >= max
        {
            return Some(Reason::GroupLimit);
        }
        None
    }
}

/// The array a job belongs to: itself, or its sub-job's.
fn a_id(id: JobId) -> JobId {
    id.array_parent().unwrap_or(id)
}

/// When an active job's nodes come free: at the end of its wall time (an
/// exiting job within the kill delay), and never before the next second.
fn expected_end(job: &Job, now: Secs, kill_delay: u64) -> Secs {
    let end = match (job.state, job.stime) {
        (JobState::Exiting, _) => now.saturating_add(kill_delay as Secs),
        (_, Some(stime)) => stime.timestamp().saturating_add(job.walltime as Secs),
        (_, None) => now.saturating_add(job.walltime as Secs),
    };
    end.max(now + 1)
}

/// A queue as the pass sees it.
#[derive(Clone)]
struct QueueNow {
    started: bool,
    /// One of its periods is on (or it names none).
    open: bool,
    /// The sets it draws on now, in selection order.
    sets: Rc<[usize]>,
    /// Indexed by set: when its jobs there are ended ([`FOREVER`]: not);
    /// `None` when no set has a cut.
    cuts: Option<Rc<[Secs]>>,
}

impl QueueNow {
    fn of(state: &State, queue: &crate::queue::Queue, now: Time, n_sets: usize) -> QueueNow {
        if !queue.follows_calendar() {
            return QueueNow {
                started: queue.started,
                open: true,
                sets: state.sets_now(queue, |_| false).into(),
                cuts: None,
            };
        }
        let window = periods::window(state, queue, now);
        let cuts = window.cuts.iter().any(Option::is_some).then(|| {
            let mut by_set = vec![FOREVER; n_sets];
            for (&s, cut) in window.sets.iter().zip(&window.cuts) {
                if let Some(cut) = cut {
                    by_set[s] = cut.at.timestamp();
                }
            }
            by_set.into()
        });
        QueueNow {
            started: queue.started,
            open: window.open,
            sets: window.sets.into(),
            cuts,
        }
    }
}

/// How far [`Planner::run`] plans.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stop {
    /// Every pending job.
    Never,
    /// Up to this job (spwhen).
    At(JobId),
    /// Until no other job could start (the starts, for the simulator).
    NothingStarts,
}

/// Reservations placed per set with a topology in one pass; the rest are
/// counted (see `reserve`).
const PLACED_PER_SET: usize = 32;

/// What a set with a topology answered for a job to start now.
enum Placed {
    Yes(Placement),
    /// It could be placed, but only on nodes a reservation needs.
    InTheWay,
    No,
}

/// Takes `nodes` on `allocator`: together if it can (as they were placed),
/// else those still free one by one.
fn occupy(allocator: &mut dyn Allocator, nodes: &[u32]) {
    if allocator.occupy(nodes).is_err() {
        for &node in nodes {
            let _ = allocator.occupy(&[node]);
        }
    }
}

/// What `start_now` found.
enum Now {
    Started(Vec<usize>, Vec<Part>),
    /// Not enough nodes free for long enough.
    NoRoom,
    /// Enough nodes free, but no topology could place the job.
    NoPlacement,
}

/// Each set's allocator, holding the nodes of running jobs and the nodes
/// down; and the index of each set's first node.
fn allocators_of(state: &State) -> (Vec<Option<Box<dyn Allocator>>>, Vec<usize>) {
    let sets = state.node_sets();
    let mut base = Vec::with_capacity(sets.len());
    let mut next = 0;
    for set in sets {
        base.push(next);
        next += set.nodes.len();
    }
    let mut allocators: Vec<Option<Box<dyn Allocator>>> = sets
        .iter()
        .map(|set| set.topology.allocator().ok().flatten())
        .collect();
    if allocators.iter().all(Option::is_none) {
        return (allocators, base);
    }
    // Taken nodes per set, grouped by job (a job's nodes are occupied
    // together, the way they were placed).
    let mut taken: Vec<BTreeMap<Option<JobId>, Vec<u32>>> = vec![BTreeMap::new(); sets.len()];
    for (idx, node) in state.nodes().iter().enumerate() {
        if allocators[node.set].is_none() || node.is_free() {
            continue;
        }
        let owner = if node.usable() { node.job() } else { None };
        taken[node.set]
            .entry(owner)
            .or_default()
            .push((idx - base[node.set]) as u32);
    }
    for (s, groups) in taken.into_iter().enumerate() {
        let Some(allocator) = allocators[s].as_mut() else {
            continue;
        };
        for (owner, nodes) in groups {
            if owner.is_none() || allocator.occupy(&nodes).is_err() {
                // Down nodes, or a job placed before this allocator knew
                // the set: take them one by one.
                for node in nodes {
                    let _ = allocator.occupy(&[node]);
                }
            }
        }
    }
    (allocators, base)
}
