//! qrun: an operator or manager starts a queued job now, past the
//! scheduler's policy (limits, SDSC blocking, priority, reservations, a
//! stopped queue, scheduling off): PBS's "the job is run regardless of
//! scheduling position". Only what would run it wrongly is refused: a job
//! that is held or waits for its dependencies or `-a` time, and nodes that
//! are not free.
//!
//! Nodes: those `-H` names, PBS's forms: nodes or hosts joined by `+`,
//! each in parentheses with resources if one likes (`(n1:ncpus=4)+(n2)`);
//! one entry per node of the job, a host standing for one free node of
//! its own; or a single host for all of them (Torque's `-H host`). `-H -`
//! (PBS: the nodes already assigned) and no `-H` let the server choose:
//! free nodes of the job's queue's node sets (in any period) that have
//! what it needs; for a job whose chunks say where they run (host pins,
//! `place=pack|scatter|excl`, GPUs), the scheduler's own choice among
//! them; else on a mesh or torus where its allocator places the job,
//! else in one flat set if one holds it all (the fullest such), else
//! spread over the flat sets in order.
//!
//! This only chooses; the daemon starts the job on the nodes the way a
//! pass does (`State::start_placed`, then durable, then the launch).

use std::collections::BTreeMap;

use crate::access::{Caller, Role};
use crate::command_error::CommandError;
use crate::error::CoreError;
use crate::job::{Job, JobId, JobState};
use crate::node::{AdminState, Node, Topology};
use crate::reason::Reason;
use crate::scheduler::choose::{self, Candidate, Wants};
use crate::state::State;
use crate::time::Time;
use qmesh_alloc::Part;

/// Where qrun starts a job.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunOn {
    /// Indices into [`State::nodes`].
    pub nodes: Vec<usize>,
    /// How a mesh or torus placed them (empty on flat sets and with -H).
    pub parts: Vec<Part>,
}

impl State {
    /// The nodes qrun would start `id` on now; changes nothing.
    pub fn qrun_nodes(
        &self,
        id: JobId,
        caller: &Caller,
        spec: Option<&str>,
        now: Time,
    ) -> Result<RunOn, CommandError> {
        let full = self.full_id(id);
        let job = self
            .job(id)
            .ok_or_else(|| CoreError::NoSuchJob { id: full.clone() })?;
        if caller.role < Role::Operator {
            return Err(CoreError::PermissionDenied {
                what: format!("running job {full} at once (qrun)"),
                need: "operator".into(),
            }
            .into());
        }
        if job.state != JobState::Queued {
            return Err(CoreError::WrongState {
                id: full,
                action: "run".into(),
                state: job.state,
            }
            .into());
        }
        match self.waits_for(job, now) {
            Some(Reason::Dependency) => {
                return Err(CommandError::NotReady {
                    id: full,
                    why: format!(
                        "waits for the jobs it depends on ({})",
                        crate::depend::format(&job.depend, self.server_name())
                    ),
                });
            }
            Some(_) => {
                return Err(CommandError::NotReady {
                    id: full,
                    why: "may not start before its -a time".into(),
                });
            }
            None => {}
        }
        match spec.map(str::trim) {
            None | Some("-") | Some("") => self.choose_free(job),
            Some(spec) => self.named_nodes(job, spec),
        }
    }

    /// The nodes `-H` names, each checked free.
    fn named_nodes(&self, job: &Job, spec: &str) -> Result<RunOn, CommandError> {
        let full = self.full_id(job.id);
        let bad = |why: String| CommandError::BadNodeSpec {
            spec: spec.to_string(),
            why,
        };
        let mut names = Vec::new();
        for entry in spec.split('+') {
            let entry = entry.trim();
            let inner = entry
                .strip_prefix('(')
                .and_then(|e| e.strip_suffix(')'))
                .unwrap_or(entry);
            let name = inner.split(':').next().unwrap_or("").trim();
            if name.is_empty() || name.contains(['(', ')']) {
                return Err(bad(format!("\"{entry}\" names no node")));
            }
            names.push(name);
        }
        let is_host = |name: &str| {
            self.node_by_name(name).is_none() && self.nodes().iter().any(|n| n.host == name)
        };
        let index = |name: &str| self.nodes().iter().position(|n| *n.name == *name);
        let mut chosen: Vec<usize> = Vec::new();
        if names.len() == 1 && job.nodes > 1 && is_host(names[0]) {
            // Torque: every node of the job on that host.
            let host = names[0];
            chosen = self.free_on_host(host, &chosen, job.nodes as usize);
            if chosen.len() < job.nodes as usize {
                return Err(CommandError::NoFreeNodes {
                    id: full,
                    asked: job.nodes,
                    found: format!("host {host} has {} free", chosen.len()),
                });
            }
            return Ok(RunOn {
                nodes: chosen,
                parts: Vec::new(),
            });
        }
        if names.len() != job.nodes as usize {
            return Err(CommandError::NodeCount {
                id: full,
                spec: spec.to_string(),
                asked: job.nodes,
                named: names.len(),
            });
        }
        for name in names {
            if is_host(name) {
                let one = self.free_on_host(name, &chosen, 1);
                if one.is_empty() {
                    return Err(CommandError::NodeNotFree {
                        id: full,
                        node: name.to_string(),
                        why: format!("host {name} has no free node left"),
                    });
                }
                chosen.extend(one);
                continue;
            }
            let i = index(name).ok_or_else(|| CoreError::NoSuchNode {
                node: name.to_string(),
            })?;
            if chosen.contains(&i) {
                return Err(bad(format!("it names node {name} twice")));
            }
            if let Some(why) = self.not_free(&self.nodes()[i]) {
                return Err(CommandError::NodeNotFree {
                    id: full,
                    node: name.to_string(),
                    why,
                });
            }
            chosen.push(i);
        }
        Ok(RunOn {
            nodes: chosen,
            parts: Vec::new(),
        })
    }

    /// Up to `k` free nodes of `host` not in `taken`, in node order.
    fn free_on_host(&self, host: &str, taken: &[usize], k: usize) -> Vec<usize> {
        self.nodes()
            .iter()
            .enumerate()
            .filter(|(i, n)| n.host == host && n.is_free() && !taken.contains(i))
            .map(|(i, _)| i)
            .take(k)
            .collect()
    }

    /// Why a node cannot take a job now, in words; `None` if it can.
    fn not_free(&self, node: &Node) -> Option<String> {
        if node.is_free() {
            return None;
        }
        Some(if !node.up {
            format!(
                "it is down (the agent of host {} is not connected)",
                node.host
            )
        } else if node.admin == Some(AdminState::Offline) {
            "it is offline (pbsnodes -r puts it back)".to_string()
        } else if node.admin == Some(AdminState::Draining) {
            "it is draining (pbsnodes -r puts it back)".to_string()
        } else if node.overloaded {
            format!("the load of host {} is over the limit", node.host)
        } else {
            let jobs: Vec<String> = node.jobs.iter().map(|j| self.full_id(j)).collect();
            format!("it runs job {}", jobs.join(", "))
        })
    }

    /// Free nodes of the job's queue's sets, as the module comment says.
    fn choose_free(&self, job: &Job) -> Result<RunOn, CommandError> {
        let full = self.full_id(job.id);
        let n = job.nodes as usize;
        let needs = job.needs();
        let sets: Vec<usize> = self
            .config()
            .queue(&job.queue)
            .map(|q| self.sets_ever(q))
            .unwrap_or_default()
            .into_iter()
            .filter(|&s| self.effective_attrs(s).satisfies(&needs))
            .collect();
        // Free nodes per set, in node order.
        let mut free: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (i, node) in self.nodes().iter().enumerate() {
            if sets.contains(&node.set) && node.is_free() {
                free.entry(node.set).or_default().push(i);
            }
        }
        if let Some(wants) = Wants::of(job) {
            return self.choose_wanted(job, &wants, &sets, &free);
        }
        let base = |s: usize| {
            self.nodes()
                .iter()
                .position(|node| node.set == s)
                .unwrap_or(0)
        };
        for &s in &sets {
            let set = &self.node_sets()[s];
            if set.topology == Topology::Flat {
                continue;
            }
            let Ok(Some(mut allocator)) = set.topology.allocator() else {
                continue;
            };
            let from = base(s);
            for (i, node) in self.nodes().iter().enumerate().filter(|(_, n)| n.set == s) {
                if !node.is_free() {
                    let _ = allocator.occupy(&[(i - from) as u32]);
                }
            }
            if let Some(placement) = allocator.allocate(job.nodes) {
                let mut nodes: Vec<usize> =
                    placement.nodes.iter().map(|&i| from + i as usize).collect();
                nodes.sort_unstable();
                return Ok(RunOn {
                    nodes,
                    parts: placement.parts,
                });
            }
        }
        let flat: Vec<usize> = sets
            .iter()
            .copied()
            .filter(|&s| self.node_sets()[s].topology == Topology::Flat)
            .collect();
        let whole = flat
            .iter()
            .filter(|s| free.get(s).is_some_and(|f| f.len() >= n))
            .min_by_key(|s| free[s].len());
        let nodes: Vec<usize> = match whole {
            Some(s) => free[s][..n].to_vec(),
            None => flat
                .iter()
                .flat_map(|s| free.get(s).into_iter().flatten().copied())
                .take(n)
                .collect(),
        };
        if nodes.len() < n {
            let count: usize = free.values().map(Vec::len).sum();
            let found = if sets.is_empty() {
                format!("no node set of queue {} has what it needs", job.queue)
            } else {
                format!(
                    "only {count} node(s) of queue {}'s node sets are free{}",
                    job.queue,
                    if flat.len() < sets.len() {
                        " (or none in the shape its mesh or torus needs)"
                    } else {
                        ""
                    }
                )
            };
            return Err(CommandError::NoFreeNodes {
                id: full,
                asked: job.nodes,
                found,
            });
        }
        Ok(RunOn {
            nodes,
            parts: Vec::new(),
        })
    }
}

impl State {
    /// For a job whose chunks say where they run (host pins, place=pack
    /// or scatter, excl, GPUs): the scheduler's own choice among the
    /// free nodes ([`crate::scheduler::choose`]), in chunk order. A node
    /// of a shared set the job is to have alone must run nothing, and a
    /// GPU job's must have its GPUs free.
    fn choose_wanted(
        &self,
        job: &Job,
        wants: &Wants,
        sets: &[usize],
        free: &BTreeMap<usize, Vec<usize>>,
    ) -> Result<RunOn, CommandError> {
        let nodes = self.nodes();
        let mut pool = Vec::new();
        let mut caps = Vec::new();
        for &s in sets {
            let mut cap = 0;
            for &i in free.get(&s).into_iter().flatten() {
                let node = &nodes[i];
                if node.slots > 1
                    && (!wants.fits_shared(node.jobs.len(), self.gpus_free(i))
                        || !wants.per_node.iter().all(|r| self.has_left(i, r, 0.0)))
                {
                    continue;
                }
                let have = &self.effective_attrs(s).resources;
                let first_ok = wants.first_node.iter().all(|r| {
                    r.served_by(have.get(&r.name).map(String::as_str))
                        && (node.slots == 1 || self.has_left(i, r, 0.0))
                });
                pool.push(Candidate {
                    index: i,
                    name: &node.name,
                    host: &node.host,
                    set: s,
                    first_ok,
                });
                cap += 1;
            }
            caps.push((s, cap));
        }
        match choose::choose(wants, &pool, &caps) {
            Some(nodes) => Ok(RunOn {
                nodes,
                parts: Vec::new(),
            }),
            None => Err(CommandError::NoFreeNodes {
                id: self.full_id(job.id),
                asked: job.nodes,
                found: format!(
                    "the {} free node(s) of queue {}'s node sets do not give it where its chunks \
                     must run (host, place=pack or scatter, excl, GPUs, resources used up per node)",
                    pool.len(),
                    job.queue
                ),
            }),
        }
    }
}

#[cfg(test)]
mod tests;
