//! Route (pipe) queues: where a job sent to one lands.
//!
//! EPCC's users submitted to the DAY or NIGHT pipe queue and NQS sent each
//! job on by its PEs and time to the batch queue made for it; a job naming
//! neither fell through to COMPILE, and one no queue could take went to a
//! holding queue that never runs, so the operators could see it and tell
//! its owner. PBS calls the same thing a route queue.
//!
//! Routing happens when the job is submitted or moved, so a job never waits
//! in a route queue. The rule: a job that names neither nodes nor wall time
//! goes to `default_destination`, if that takes it; otherwise to the first
//! of `route_destinations`, in order, that is enabled and whose limits take
//! the job as it would be there (the same defaults and limits a direct
//! submission meets, see [`crate::submit`]); a destination that is itself
//! a route queue takes a job within its own limits and routes it on; a job
//! none takes goes to `holding_queue` with the reason in its comment, or
//! is refused with every destination's limits.

use crate::error::CoreError;
use crate::job::Job;
use crate::queue::Queue;
use crate::server::Config;
use crate::time::format_hms;

/// What a job asks for, as routing reads it: `None` where it named nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ask {
    pub nodes: Option<u32>,
    /// Seconds.
    pub walltime: Option<u64>,
}

impl Ask {
    /// A job already in a queue: its nodes and wall time are settled.
    pub fn of(job: &Job) -> Ask {
        Ask {
            nodes: Some(job.nodes),
            walltime: Some(job.walltime),
        }
    }

    fn names_nothing(self) -> bool {
        self.nodes.is_none() && self.walltime.is_none()
    }

    /// The route queue's defaults for what the job did not name.
    fn with_defaults_of(self, queue: &Queue) -> Ask {
        Ask {
            nodes: self.nodes.or(queue.default_nodes),
            walltime: self.walltime.or(queue.default_walltime),
        }
    }
}

/// Where routing put a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Routed {
    /// The execution queue it lands in.
    pub queue: String,
    /// What it asks for, with the route queues' defaults filled in; the
    /// landing queue's own defaults apply to what is still `None`.
    pub ask: Ask,
    /// Set when it landed in a holding queue: why, for its comment.
    pub held: Option<String>,
}

/// Routes a job sent to the route queue `queue`. `capacity` gives the
/// nodes a queue's node sets hold (a job larger than that could never run
/// there, so that queue does not take it).
pub fn route(
    config: &Config,
    queue: &str,
    ask: Ask,
    capacity: &dyn Fn(&str) -> u32,
) -> Result<Routed, CoreError> {
    let pipe = config.queue(queue).ok_or_else(|| CoreError::NoSuchQueue {
        queue: queue.to_string(),
    })?;
    let router = Router { config, capacity };
    let folded = ask.with_defaults_of(pipe);
    router.within_own_limits(pipe, folded)?;
    let mut path = vec![pipe.name.clone()];
    match router.step(pipe, ask, &mut path)? {
        Some(routed) => Ok(routed),
        None => Err(CoreError::NoRoute {
            queue: pipe.name.clone(),
            asked: describe_ask(folded),
            destinations: router.limits(pipe),
        }),
    }
}

struct Router<'a> {
    config: &'a Config,
    capacity: &'a dyn Fn(&str) -> u32,
}

impl Router<'_> {
    /// Where `pipe` sends a job that asked for `ask`; `None` when no
    /// destination takes it and `pipe` has no holding queue. `path` holds
    /// the route queues passed through, for the loop guard.
    fn step(
        &self,
        pipe: &Queue,
        ask: Ask,
        path: &mut Vec<String>,
    ) -> Result<Option<Routed>, CoreError> {
        let folded = ask.with_defaults_of(pipe);
        if ask.names_nothing()
            && let Some(default) = &pipe.default_destination
            && let Some(routed) = self.try_destination(default, folded, path)?
        {
            return Ok(Some(routed));
        }
        for dest in &pipe.route_destinations {
            if let Some(routed) = self.try_destination(dest, folded, path)? {
                return Ok(Some(routed));
            }
        }
        let Some(hold) = pipe
            .holding_queue
            .as_deref()
            .and_then(|name| self.config.queue(name))
        else {
            return Ok(None);
        };
        let why = self.why_none(pipe, hold, folded);
        Ok(Some(Routed {
            queue: hold.name.clone(),
            ask: folded,
            held: Some(format!(
                "routed to {} by pipe queue {}: {why}",
                hold.name, pipe.name
            )),
        }))
    }

    /// The destination `name`, if it takes the job.
    fn try_destination(
        &self,
        name: &str,
        ask: Ask,
        path: &mut Vec<String>,
    ) -> Result<Option<Routed>, CoreError> {
        let Some(queue) = self.config.queue(name).filter(|q| q.enabled) else {
            return Ok(None);
        };
        if !queue.is_route() {
            let (nodes, walltime) = effective(queue, ask, self.config);
            let reach = (self.capacity)(name);
            return Ok(check_queue_limits(queue, nodes, walltime, reach)
                .is_ok()
                .then(|| Routed {
                    queue: name.to_string(),
                    ask,
                    held: None,
                }));
        }
        if path.iter().any(|p| p == name) {
            let mut chain = path.clone();
            chain.push(name.to_string());
            return Err(CoreError::RouteLoop {
                chain: chain.join(" -> "),
            });
        }
        if self
            .within_own_limits(queue, ask.with_defaults_of(queue))
            .is_err()
        {
            return Ok(None);
        }
        path.push(name.to_string());
        let routed = self.step(queue, ask, path);
        path.pop();
        routed
    }

    /// A route queue's own limits, on what the job named or the queue
    /// gives by default. What is still unknown passes: an unknown node
    /// count is taken as the queue's minimum, an unknown time as none, and
    /// a route queue has no node sets of its own to be too small.
    fn within_own_limits(&self, queue: &Queue, ask: Ask) -> Result<(), CoreError> {
        let nodes = ask.nodes.unwrap_or(queue.min_nodes.unwrap_or(1));
        let walltime = ask.walltime.unwrap_or(0);
        check_queue_limits(queue, nodes, walltime, u32::MAX)
    }

    /// Why no destination of `pipe` takes the job, in the figures it would
    /// have in the holding queue: `no destination takes 256 nodes for
    /// 13:00:00 (largest wall time 12:00:00)`.
    fn why_none(&self, pipe: &Queue, hold: &Queue, ask: Ask) -> String {
        let (nodes, walltime) = effective(hold, ask, self.config);
        let mut why = format!(
            "no destination takes {nodes} nodes for {}",
            format_hms(walltime)
        );
        let dests: Vec<(&Queue, u32)> = pipe
            .route_destinations
            .iter()
            .filter_map(|name| self.config.queue(name))
            .filter(|q| q.enabled && !q.is_route())
            .map(|q| (q, (self.capacity)(&q.name)))
            .collect();
        let takers: Vec<&Queue> = dests
            .iter()
            .filter(|(q, reach)| node_range(q, *reach).contains(&nodes))
            .map(|(q, _)| *q)
            .collect();
        if takers.is_empty() {
            let largest = dests
                .iter()
                .map(|(q, reach)| *node_range(q, *reach).end())
                .max();
            if let Some(largest) = largest.filter(|l| nodes > *l) {
                why.push_str(&format!(" (largest node count {largest})"));
            }
        } else {
            let longest: Option<Vec<u64>> = takers.iter().map(|q| q.max_walltime).collect();
            if let Some(longest) = longest.and_then(|l| l.into_iter().max())
                && walltime > longest
            {
                why.push_str(&format!(" (largest wall time {})", format_hms(longest)));
            }
        }
        why
    }

    /// Every destination's limits, for a refusal.
    fn limits(&self, pipe: &Queue) -> String {
        let mut names: Vec<&String> = pipe.route_destinations.iter().collect();
        if let Some(default) = &pipe.default_destination
            && !names.contains(&default)
        {
            names.push(default);
        }
        if names.is_empty() {
            return "it has no route_destinations".to_string();
        }
        names
            .into_iter()
            .map(|name| match self.config.queue(name) {
                None => format!("{name} does not exist"),
                Some(q) if !q.enabled => format!("{name} is not enabled"),
                Some(q) if q.is_route() => format!("{name} routes on"),
                Some(q) => {
                    let range = node_range(q, (self.capacity)(name));
                    let nodes = if range.is_empty() {
                        "no nodes".to_string()
                    } else if range.start() == range.end() {
                        format!("{} nodes", range.start())
                    } else {
                        format!("{}-{} nodes", range.start(), range.end())
                    };
                    let time = q.max_walltime.map_or("any wall time".to_string(), |w| {
                        format!("up to {}", format_hms(w))
                    });
                    format!("{name} takes {nodes} for {time}")
                }
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// The node counts an execution queue takes, its node sets' size included.
fn node_range(queue: &Queue, reach: u32) -> std::ops::RangeInclusive<u32> {
    let max = queue.max_nodes.map_or(reach, |m| m.min(reach));
    queue.min_nodes.unwrap_or(1)..=max
}

fn describe_ask(ask: Ask) -> String {
    let nodes = ask
        .nodes
        .map_or("the default nodes".to_string(), |n| format!("{n} nodes"));
    let time = ask
        .walltime
        .map_or("the default wall time".to_string(), format_hms);
    format!("{nodes} for {time}")
}

/// The routing note of a pending job that waits in a holding queue, for
/// qstat's comment (which otherwise says why the scheduler passes it by).
pub fn holding_note<'a>(config: &Config, job: &'a Job) -> Option<&'a str> {
    let held_here = config
        .queues
        .values()
        .any(|q| q.is_route() && q.holding_queue.as_deref() == Some(job.queue.as_str()));
    (held_here && job.state.is_pending())
        .then_some(job.comment.as_str())
        .filter(|c| c.starts_with("routed to "))
}

/// Checks the route queues of a configuration (qmgr runs it after every
/// change). An error names the queue and what to change; the warnings are
/// for things that work but are likely not meant.
pub fn check(config: &Config) -> Result<Vec<String>, String> {
    let mut warnings = Vec::new();
    for q in config.queues.values() {
        if !q.is_route() {
            if !q.route_destinations.is_empty()
                || q.default_destination.is_some()
                || q.holding_queue.is_some()
            {
                return Err(format!(
                    "queue \"{}\" is an execution queue: route_destinations, default_destination and holding_queue belong to route queues; set queue {} queue_type = route, or unset them",
                    q.name, q.name
                ));
            }
            continue;
        }
        let named = q
            .route_destinations
            .iter()
            .map(|d| ("route_destinations", d))
            .chain(
                q.default_destination
                    .iter()
                    .map(|d| ("default_destination", d)),
            )
            .chain(q.holding_queue.iter().map(|d| ("holding_queue", d)));
        for (attr, dest) in named {
            if *dest == q.name {
                return Err(format!(
                    "route queue \"{}\" names itself in {attr}; name other queues",
                    q.name
                ));
            }
            if !config.queues.contains_key(dest) {
                return Err(format!(
                    "route queue \"{}\": {attr} names queue \"{dest}\", which does not exist; create it first (qmgr -c \"create queue {dest}\") or name another",
                    q.name
                ));
            }
        }
        if let Some(hold) = q.holding_queue.as_deref().and_then(|h| config.queue(h)) {
            if hold.is_route() {
                return Err(format!(
                    "route queue \"{}\": holding_queue \"{}\" is a route queue, which keeps no jobs; name an execution queue that is not started",
                    q.name, hold.name
                ));
            }
            if hold.started {
                warnings.push(format!(
                    "warning: \"{}\", the holding queue of route queue \"{}\", is started, so the jobs it holds may run; qmgr -c \"set queue {} started = false\" keeps them waiting",
                    hold.name, q.name, hold.name
                ));
            }
        }
    }
    check_loops(config)?;
    Ok(warnings)
}

/// The route queue that names `queue`, and in which attribute: a queue so
/// named is not deleted until the route queue stops naming it.
pub fn named_by<'a>(config: &'a Config, queue: &str) -> Option<(&'a str, &'static str)> {
    config.queues.values().find_map(|q| {
        let attr = if q.route_destinations.iter().any(|d| d == queue) {
            "route_destinations"
        } else if q.default_destination.as_deref() == Some(queue) {
            "default_destination"
        } else if q.holding_queue.as_deref() == Some(queue) {
            "holding_queue"
        } else {
            return None;
        };
        Some((q.name.as_str(), attr))
    })
}

/// A route queue may send jobs to another, but never round to itself.
fn check_loops(config: &Config) -> Result<(), String> {
    fn visit<'a>(
        config: &'a Config,
        queue: &'a Queue,
        path: &mut Vec<&'a str>,
        done: &mut Vec<&'a str>,
    ) -> Result<(), String> {
        if done.contains(&queue.name.as_str()) {
            return Ok(());
        }
        if let Some(at) = path.iter().position(|p| *p == queue.name) {
            let mut chain: Vec<&str> = path[at..].to_vec();
            chain.push(&queue.name);
            return Err(CoreError::RouteLoop {
                chain: chain.join(" -> "),
            }
            .to_string());
        }
        path.push(&queue.name);
        let next = queue
            .route_destinations
            .iter()
            .chain(queue.default_destination.iter())
            .filter_map(|name| config.queue(name))
            .filter(|q| q.is_route());
        for dest in next {
            visit(config, dest, path, done)?;
        }
        path.pop();
        done.push(&queue.name);
        Ok(())
    }
    let mut done = Vec::new();
    for queue in config.queues.values().filter(|q| q.is_route()) {
        visit(config, queue, &mut Vec::new(), &mut done)?;
    }
    Ok(())
}

/// Queue names in an order a qmgr script can create them in: execution
/// queues first, then each route queue after the route queues it names.
pub fn print_order(config: &Config) -> Vec<&Queue> {
    let mut out: Vec<&Queue> = config.queues.values().filter(|q| !q.is_route()).collect();
    let mut left: Vec<&Queue> = config.queues.values().filter(|q| q.is_route()).collect();
    while !left.is_empty() {
        let ready = left.iter().position(|q| {
            q.route_destinations
                .iter()
                .chain(q.default_destination.iter())
                .all(|d| !left.iter().any(|l| l.name == *d))
        });
        // A loop (which qmgr refuses) would leave none ready: name order.
        out.push(left.remove(ready.unwrap_or(0)));
    }
    out
}

/// The nodes and wall time a job gets in `queue`: what it asked for, else
/// the queue's defaults, else the server's.
pub(crate) fn effective(queue: &Queue, ask: Ask, config: &Config) -> (u32, u64) {
    let nodes = ask.nodes.or(queue.default_nodes).unwrap_or(1);
    let walltime = ask
        .walltime
        .or(queue.default_walltime)
        .or(queue.max_walltime)
        .unwrap_or(config.server.default_walltime);
    (nodes, walltime)
}

/// Whether `queue` takes a job of `nodes` × `walltime`; `reach` is the
/// number of nodes its node sets hold. The error gives the figures.
pub(crate) fn check_queue_limits(
    queue: &Queue,
    nodes: u32,
    walltime: u64,
    reach: u32,
) -> Result<(), CoreError> {
    let name = || queue.name.clone();
    if let Some(max) = queue.max_nodes.filter(|max| nodes > *max) {
        return Err(CoreError::TooManyNodes {
            queue: name(),
            requested: nodes,
            max,
        });
    }
    if let Some(min) = queue.min_nodes.filter(|min| nodes < *min) {
        return Err(CoreError::TooFewNodes {
            queue: name(),
            requested: nodes,
            min,
        });
    }
    if let Some(max) = queue.max_walltime.filter(|max| walltime > *max) {
        return Err(CoreError::WalltimeTooLong {
            queue: name(),
            requested: format_hms(walltime),
            max: format_hms(max),
        });
    }
    if nodes > reach {
        return Err(CoreError::ExceedsCapacity {
            queue: name(),
            requested: nodes,
            capacity: reach,
        });
    }
    Ok(())
}

#[cfg(test)]
#[path = "route/tests.rs"]
mod tests;

#[cfg(test)]
#[path = "route/qmgr_tests.rs"]
mod qmgr_tests;
