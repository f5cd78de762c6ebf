//! Where a reservation's nodes lie: confirmation (`pbs_rsub`, `pbs_ralter`)
//! finds, for every occurrence, nodes of one node set that nothing else
//! holds then: no running job still on them at the occurrence's start (by
//! its wall time), no other reservation's occurrence, no shutdown window.
//! Queued jobs do not count: a reservation comes before them, and the
//! planner keeps them off its nodes from then on (`plan`), so what is
//! confirmed here stays free.
//!
//! On a mesh or torus the nodes are a placement of the set's allocator,
//! the shape a job of that size would get, not any N nodes; on a flat set
//! the first free ones. Shared sets (`jobs_per_node` over 1) take no
//! reservation.

use super::plan::expected_end;
use crate::reservation::{Occurrence, Reservation, ResvError};
use crate::shutdown::format_local;
use crate::state::State;
use crate::time::Time;

/// Finds nodes for `n` nodes over each of `spans` in one node set (in the
/// state's order; only `only_set` if given). `except` is a reservation
/// being changed, whose own nodes do not count as taken.
pub fn place_reservation(
    state: &State,
    spans: &[(Time, Time)],
    n: u32,
    only_set: Option<&str>,
    except: Option<u64>,
    now: Time,
) -> Result<(String, Vec<Occurrence>), ResvError> {
    let config = state.config();
    let zone = config.calendar.zone().unwrap_or(chrono_tz::UTC);
    if n == 0 {
        return Err(ResvError::Invalid(
            "a reservation holds at least one node".into(),
        ));
    }
    if let Some(name) = only_set
        && !state.node_sets().iter().any(|s| s.name == name)
    {
        return Err(ResvError::Invalid(format!(
            "node set \"{name}\" does not exist; see qmgr -c \"list node_set\""
        )));
    }
    // The first span and set that fell short, with how many were free.
    let mut shortest: Option<(usize, String, Time, Time)> = None;
    let mut any_big_enough = false;
    let mut base = 0;
    for set in state.node_sets() {
        let first = base;
        base += set.nodes.len();
        if only_set.is_some_and(|name| name != set.name)
            || set.attrs.slots() > 1
            || set.nodes.len() < n as usize
        {
            continue;
        }
        let allocator = set.topology.allocator().ok().flatten();
        if allocator.as_ref().is_some_and(|a| {
            a.size_for(n)
                .is_none_or(|size| size as usize > set.nodes.len())
        }) {
            continue;
        }
        any_big_enough = true;
        let mut occurrences = Vec::with_capacity(spans.len());
        for &(from, to) in spans {
            let taken = taken_in(
                state,
                first,
                set.nodes.len(),
                &set.name,
                from,
                to,
                except,
                now,
            );
            let found = match &allocator {
                Some(a) => {
                    let mut then = a.boxed_clone();
                    for (i, _) in taken.iter().enumerate().filter(|(_, t)| **t) {
                        let _ = then.occupy(&[i as u32]);
                    }
                    then.allocate(n)
                        .map(|p| p.nodes.iter().map(|&i| i as usize).collect())
                }
                None => {
                    // Nodes up first: a node down now may not be back.
                    let mut free: Vec<usize> =
                        (0..set.nodes.len()).filter(|&i| !taken[i]).collect();
                    free.sort_by_key(|&i| !state.nodes()[first + i].up);
                    let mut chosen: Vec<usize> = free.into_iter().take(n as usize).collect();
                    chosen.sort_unstable();
                    (chosen.len() == n as usize).then_some(chosen)
                }
            };
            match found {
                Some(local) => occurrences.push(Occurrence {
                    start: from,
                    end: to,
                    nodes: local
                        .iter()
                        .map(|&i| set.nodes[i].name.to_string())
                        .collect(),
                }),
                None => {
                    let free = taken.iter().filter(|t| !**t).count();
                    if shortest.as_ref().is_none_or(|s| free > s.0) {
                        shortest = Some((free, set.name.clone(), from, to));
                    }
                    break;
                }
            }
        }
        if occurrences.len() == spans.len() {
            return Ok((set.name.clone(), occurrences));
        }
    }
    if !any_big_enough {
        let largest = state
            .node_sets()
            .iter()
            .filter(|s| s.attrs.slots() <= 1 && only_set.is_none_or(|name| name == s.name))
            .map(|s| (s.nodes.len(), s.name.as_str()))
            .max();
        return Err(ResvError::Denied(match largest {
            Some((size, name)) => format!(
                "no node set can hold {n} nodes (the largest that takes reservations, \"{name}\", has {size}); ask for fewer"
            ),
            None => "no node set takes reservations (shared sets do not)".into(),
        }));
    }
    let (free, set, from, to) = shortest.unwrap_or_default();
    Err(ResvError::Denied(format!(
        "{n} nodes are not free together from {} to {} (node set \"{set}\" has {free} free then, around running jobs, other reservations and shutdown windows); see pbs_rstat and spfree, or choose another time",
        format_local(from, &zone),
        format_local(to, &zone),
    )))
}

/// Whether the nodes `names` of node set `set` are all free over
/// `[from, to)`, reservation `except` left out (pbs_ralter's later end of
/// a running reservation).
#[allow(clippy::too_many_arguments)]
pub fn nodes_free_over(
    state: &State,
    set: &str,
    names: &[String],
    from: Time,
    to: Time,
    except: u64,
    now: Time,
) -> bool {
    let mut first = 0;
    for s in state.node_sets() {
        if s.name == set {
            let taken = taken_in(
                state,
                first,
                s.nodes.len(),
                set,
                from,
                to,
                Some(except),
                now,
            );
            return names.iter().all(|name| {
                s.nodes
                    .iter()
                    .position(|n| &*n.name == name.as_str())
                    .is_some_and(|i| !taken[i])
            });
        }
        first += s.nodes.len();
    }
    false
}

/// Per node of a set (by its index in the set): whether something holds
/// it during `[from, to)`.
#[allow(clippy::too_many_arguments)]
fn taken_in(
    state: &State,
    first: usize,
    len: usize,
    set: &str,
    from: Time,
    to: Time,
    except: Option<u64>,
    now: Time,
) -> Vec<bool> {
    let config = state.config();
    let mut taken = vec![false; len];
    if config
        .shutdowns
        .values()
        .any(|w| w.covers(set) && w.start < to && from < w.end)
    {
        return vec![true; len];
    }
    let nodes = &state.nodes()[first..first + len];
    for (i, node) in nodes.iter().enumerate() {
        if node.admin.is_some() {
            taken[i] = true;
        }
    }
    let now_s = now.timestamp();
    for (id, held) in &state.occupancy().held {
        let Some(job) = state.job(*id) else { continue };
        let end = expected_end(job, now_s, config.server.kill_delay);
        if end <= from.timestamp() {
            continue;
        }
        for &i in held
            .nodes
            .iter()
            .filter(|&&i| (first..first + len).contains(&i))
        {
            taken[i - first] = true;
        }
    }
    for r in config
        .reservations
        .values()
        .filter(|r| Some(r.id) != except)
    {
        if r.node_set != set {
            continue;
        }
        for o in r.occurrences.iter().filter(|o| o.overlaps(from, to)) {
            for name in &o.nodes {
                if let Some(i) = nodes.iter().position(|n| &*n.name == name.as_str()) {
                    taken[i] = true;
                }
            }
        }
    }
    taken
}

/// The reservations' nodes as the pass needs them: each occurrence that
/// has not ended, its span and its nodes (indexed with the configuration,
/// `State::reserved_spans`).
///
/// Only those that begin within a horizon: what a job started now, or
/// reserved after the running jobs end, could still reach (the longest
/// running job's rest and twice the longest wall time waiting). A standing
/// reservation of a thousand occurrences costs a pass its next few.
pub(crate) fn held_spans(state: &State, now: Time) -> Vec<HeldSpan> {
    let spans = state.reserved_spans();
    if spans.is_empty() {
        return Vec::new();
    }
    let now_s = now.timestamp();
    let kill_delay = state.config().server.kill_delay;
    let running = state
        .active_jobs()
        .map(|j| expected_end(j, now_s, kill_delay) - now_s)
        .max()
        .unwrap_or(0);
    let waiting = state
        .pending_jobs()
        .map(|j| j.walltime)
        .max()
        .unwrap_or(0)
        .min(i64::MAX as u64 / 4) as i64;
    let horizon = now_s
        .saturating_add(running)
        .saturating_add(waiting.saturating_mul(2));
    spans
        .iter()
        .filter(|o| now < o.end && o.start.timestamp() < horizon)
        .map(|o| HeldSpan {
            resv: o.resv,
            set: o.set,
            start: o.start.timestamp(),
            end: o.end.timestamp(),
            nodes: o.nodes.clone(),
        })
        .collect()
}

/// One occurrence of a reservation as a pass sees it.
#[derive(Clone, Debug)]
pub(crate) struct HeldSpan {
    pub resv: u64,
    pub set: usize,
    pub start: i64,
    pub end: i64,
    /// Indices in `State::nodes`.
    pub nodes: Vec<usize>,
}

/// The reservation `id`'s occurrence on at `now`, if one is.
pub fn running_occurrence(r: &Reservation, now: Time) -> Option<&Occurrence> {
    r.current(now).filter(|o| o.start <= now)
}
