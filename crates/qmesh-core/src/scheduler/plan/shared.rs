//! Nodes picked one by one on flat sets: a shared set's least busy nodes
//! (NCAR: run queue over CPUs, counting the jobs this pass starts), and
//! the nodes a job names or wants packed or scattered ([`choose`]). Where
//! a set counts slots, what this pass started on each node and host is
//! kept here, since the state does not show it yet.

use std::collections::{BTreeMap, HashMap};

use super::Planner;
use super::place::Now;
use super::set_plan::{Release, occupy};
use crate::node_resources::HostResource;
use crate::scheduler::choose::{self, Candidate, Wants};
use crate::scheduler::profile::Secs;

/// What this pass's starts took on the nodes of shared sets: the room and
/// the run queue the state does not show yet.
#[derive(Clone, Default)]
pub(super) struct Started<'a> {
    /// Jobs started, per node.
    on_node: HashMap<usize, u32>,
    /// Jobs started, per host.
    on_host: HashMap<&'a str, u32>,
    /// GPUs taken, per node.
    gpus_on_node: HashMap<usize, u32>,
    /// Site resources consumed per node (flags `n`, `f`), per node and
    /// resource.
    use_on_node: HashMap<(usize, &'a str), f64>,
}

impl<'a> Planner<'a> {
    /// Starts a job that `wants` particular nodes on flat sets, within
    /// `caps` (per set, the nodes its profile lets a job take until
    /// `end`): the nodes [`choose`] finds among the free ones, in chunk
    /// order. Shared sets offer their least busy nodes first; a node a
    /// job is to have alone must run none, and a GPU job's node must have
    /// its GPUs free.
    pub(super) fn start_chosen(
        &mut self,
        caps: &[(usize, usize)],
        end: Secs,
        wants: &Wants<'a>,
    ) -> Now {
        let nodes = self.state.nodes();
        let mut pool: Vec<Candidate> = Vec::new();
        for &(s, cap) in caps {
            if cap == 0 {
                continue;
            }
            let shared = self.sets[s].shared();
            let order: Vec<usize> = if shared {
                self.least_busy(s).into_iter().map(|(_, _, i)| i).collect()
            } else {
                self.with_room(s).collect()
            };
            for i in order {
                let node = &nodes[i];
                if shared {
                    let started = self.started.on_node.get(&i).copied().unwrap_or(0);
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
                        && (!shared || self.room_for(i, &wants.first_node)));
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
            let set = &self.sets[s];
            if set.shaped() {
                shaped
                    .entry(s)
                    .or_default()
                    .push((i - set.nodes.start) as u32);
            }
            let take = if set.shared() {
                let firsts = if k == 0 { &wants.first_node[..] } else { &[] };
                for r in wants.per_node.iter().chain(firsts) {
                    *self
                        .started
                        .use_on_node
                        .entry((i, r.name.as_str()))
                        .or_default() += r.amount();
                }
                let started = self.started.on_node.entry(i).or_default();
                let room = node.room().saturating_sub(*started);
                let take = if wants.sole { room.max(1) } else { 1 };
                *started += take;
                if *started >= node.room() {
                    self.free.set(i, false);
                }
                *self.started.on_host.entry(node.host.as_str()).or_default() += 1;
                *self.started.gpus_on_node.entry(i).or_default() += wants.gpus;
                take as usize
            } else {
                self.free.set(i, false);
                1
            };
            self.sets[s].take(now, end, take);
        }
        // Named nodes of a mesh or torus: its allocator holds them too.
        for (s, local) in shaped {
            let set = &mut self.sets[s];
            if let Some(allocator) = set.allocator.as_mut() {
                occupy(allocator.as_mut(), &local);
            }
            set.releases.push(Release { end, nodes: local });
        }
        Now::Started(chosen, Vec::new())
    }

    /// The GPUs of shared node `i` no job holds (this pass's starts
    /// counted).
    fn gpus_free(&self, i: usize) -> u32 {
        let started = self.started.gpus_on_node.get(&i).copied().unwrap_or(0);
        self.state.gpus_free(i).saturating_sub(started)
    }

    /// Whether shared node `i` has free what a job uses up of each of
    /// `resources` there: its set's `resources_available` less what the
    /// jobs on it use (a job's first node also what it uses there alone,
    /// flag `f`) and what this pass's starts took.
    fn room_for(&self, i: usize, resources: &[&HostResource]) -> bool {
        resources.iter().all(|r| {
            let started = self
                .started
                .use_on_node
                .get(&(i, r.name.as_str()))
                .copied()
                .unwrap_or(0.0);
            self.state.has_left(i, r, started)
        })
    }

    /// The nodes of set `s` with room for a job now (this pass's starts
    /// counted).
    fn with_room(&self, s: usize) -> impl Iterator<Item = usize> + '_ {
        let range = &self.sets[s].nodes;
        self.free.ones(range.start, range.end)
    }

    /// The nodes of shared set `s` with room, least busy first: by run
    /// queue over CPUs (NCAR), then fewest jobs, then in set order. Each
    /// with its busyness and its jobs.
    pub(super) fn least_busy(&self, s: usize) -> Vec<(f64, u32, usize)> {
        let nodes = self.state.nodes();
        let mut ranked: Vec<(f64, u32, usize)> = self
            .with_room(s)
            .map(|i| {
                let (queue, cpus) = self.state.run_queue(i);
                let here = self
                    .started
                    .on_host
                    .get(nodes[i].host.as_str())
                    .copied()
                    .unwrap_or(0);
                let jobs =
                    nodes[i].jobs.len() as u32 + self.started.on_node.get(&i).copied().unwrap_or(0);
                ((queue + f64::from(here)) / f64::from(cpus), jobs, i)
            })
            .collect();
        ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        ranked
    }

    /// Takes a slot on each of the `k` least busy nodes of shared set
    /// `s`; a node left without room is no longer free this pass.
    pub(super) fn take_least_busy(&mut self, s: usize, k: usize) -> Vec<usize> {
        let nodes = self.state.nodes();
        let mut picked: Vec<usize> = self
            .least_busy(s)
            .into_iter()
            .take(k)
            .map(|(_, _, i)| i)
            .collect();
        for &i in &picked {
            let node = &nodes[i];
            let started = self.started.on_node.entry(i).or_default();
            *started += 1;
            if *started >= node.room() {
                self.free.set(i, false);
            }
            *self.started.on_host.entry(node.host.as_str()).or_default() += 1;
        }
        picked.sort_unstable();
        picked
    }
}
