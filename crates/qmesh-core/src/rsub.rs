//! pbs_rsub, pbs_ralter and pbs_rdel on the configuration: who may
//! reserve, what a request means, and the reservation confirmed (its nodes
//! found by `scheduler::reservations`) or refused with the reason. Each
//! works on a copy of the configuration that the daemon stores and puts in
//! place whole, as qmgr's scripts do.

use crate::access::Caller;
use crate::ids::Role;
use crate::reservation::{Reservation, ResvError, ResvState, occurrence_spans};
use crate::scheduler::reservations::{nodes_free_over, place_reservation};
use crate::server::Config;
use crate::state::State;
use crate::time::Time;

/// What pbs_rsub or pbs_ralter asks; `None` or empty: not given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResvRequest {
    pub name: Option<String>,
    pub users: Vec<String>,
    pub groups: Vec<String>,
    /// Nodes (`-lP N`, `nodes=N`, the chunks of `select=`); 0: not given.
    pub nodes: u32,
    /// The `-l` text as written.
    pub resources: String,
    pub start: Option<Time>,
    pub end: Option<Time>,
    pub duration: Option<u64>,
    pub rrule: Option<String>,
    /// The zone the rule is read in; the calendar's when not given.
    pub time_zone: Option<String>,
    /// Only this node set (`-l nodeset=NAME`).
    pub node_set: Option<String>,
    /// An ASAP reservation for this queued job (`-W qmove=JOBID`).
    pub qmove_job: Option<String>,
}

/// A start given this far in the past is taken as now (a script's `-R`
/// of the current minute).
const PAST_SLACK_SECS: i64 = 300;

/// pbs_rsub: the configuration with the new reservation and its queue, and
/// the reservation.
pub fn submit(
    state: &State,
    caller: &Caller,
    host: &str,
    req: &ResvRequest,
    now: Time,
) -> Result<(Config, Reservation), ResvError> {
    may_reserve(state.config(), caller)?;
    let start = match req.start {
        Some(t) if t < now - chrono::Duration::seconds(PAST_SLACK_SECS) => {
            return Err(ResvError::Invalid(format!(
                "the start ({}) is in the past; give a later -R",
                crate::reservation::rfc3339(t)
            )));
        }
        Some(t) => t.max(now),
        None => now,
    };
    let duration = duration_of(start, req.end, req.duration)?;
    if req.nodes == 0 {
        return Err(ResvError::Invalid(
            "say how many nodes to reserve: -lP N, -l nodes=N or -l select=N:...".into(),
        ));
    }
    let zone_name = req
        .time_zone
        .clone()
        .unwrap_or_else(|| state.config().calendar.time_zone.clone());
    let zone: chrono_tz::Tz = zone_name.parse().map_err(|_| {
        ResvError::Invalid(format!(
            "time zone \"{zone_name}\" is not an IANA zone name (PBS_TZID); e.g. Europe/London"
        ))
    })?;
    let spans = occurrence_spans(start, duration, req.rrule.as_deref(), zone)?;
    let (node_set, occurrences) =
        place_reservation(state, &spans, req.nodes, req.node_set.as_deref(), None, now)?;
    let req = ResvRequest {
        time_zone: Some(zone_name),
        ..req.clone()
    };
    Ok(made(
        state,
        caller,
        host,
        &req,
        start,
        node_set,
        occurrences,
        now,
    ))
}

/// The most instants an ASAP reservation tries before it is refused.
const ASAP_TRIES: usize = 2000;

/// pbs_rsub -W qmove=JOBID: a reservation of the job's nodes and wall time
/// at the earliest instant they are free together (now, or when a running
/// job, a reservation's occurrence or a shutdown window ends), for the
/// job's owner; the daemon then moves the job into its queue. Returns the
/// job too.
pub fn submit_asap(
    state: &State,
    caller: &Caller,
    host: &str,
    req: &ResvRequest,
    now: Time,
) -> Result<(Config, Reservation, crate::job::JobId), ResvError> {
    may_reserve(state.config(), caller)?;
    let text = req.qmove_job.as_deref().unwrap_or_default();
    let id = state
        .parse_id(text)
        .map_err(|e| ResvError::Invalid(format!("-W qmove={text}: {e}")))?;
    let job = state
        .job(id)
        .ok_or_else(|| ResvError::Unknown(format!("job {text}")))?;
    if !caller.may_act_on(job) {
        return Err(ResvError::NotAllowed(format!(
            "job {} belongs to {}; only its owner, an operator or a manager may reserve for it",
            state.full_id(id),
            job.owner.user
        )));
    }
    if !job.state.is_pending() || job.array.is_some() {
        return Err(ResvError::Invalid(format!(
            "job {} is not a queued job; an ASAP reservation is for a job waiting in a queue",
            state.full_id(id)
        )));
    }
    let config = state.config();
    let kill_delay = config.server.kill_delay;
    let wall = chrono::Duration::seconds(job.walltime.max(1) as i64);
    let mut instants: Vec<Time> = state
        .active_jobs()
        .filter_map(|j| {
            let end = crate::scheduler::plan::expected_end(j, now.timestamp(), kill_delay);
            chrono::DateTime::from_timestamp(end, 0)
        })
        .chain(
            config
                .reservations
                .values()
                .flat_map(|r| r.occurrences.iter().map(|o| o.end)),
        )
        .chain(config.shutdowns.values().map(|w| w.end))
        .filter(|&t| t > now)
        .collect();
    instants.push(now);
    instants.sort();
    instants.dedup();
    let mut last = None;
    for &t in instants.iter().take(ASAP_TRIES) {
        match place_reservation(
            state,
            &[(t, t + wall)],
            job.nodes,
            req.node_set.as_deref(),
            None,
            now,
        ) {
            Ok((node_set, occurrences)) => {
                let asap = ResvRequest {
                    users: if req.users.is_empty() {
                        vec![format!("{}@{}", job.owner.user, job.submit_host)]
                    } else {
                        req.users.clone()
                    },
                    nodes: job.nodes,
                    resources: format!("nodes={}", job.nodes),
                    start: Some(t),
                    duration: Some(job.walltime.max(1)),
                    ..req.clone()
                };
                let (config, r) = made(state, caller, host, &asap, t, node_set, occurrences, now);
                return Ok((config, r, id));
            }
            Err(e @ ResvError::Denied(_)) => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| ResvError::Denied("no instant was found".into())))
}

/// The configuration with the confirmed reservation `req` asks for (its
/// nodes found) and its queue.
#[allow(clippy::too_many_arguments)]
fn made(
    state: &State,
    caller: &Caller,
    host: &str,
    req: &ResvRequest,
    start: Time,
    node_set: String,
    occurrences: Vec<crate::reservation::Occurrence>,
    now: Time,
) -> (Config, Reservation) {
    let mut config = state.config().clone();
    let id = config.take_reservation_id();
    let users = if req.users.is_empty() {
        vec![format!("{}@{host}", caller.user)]
    } else {
        req.users.clone()
    };
    let zone = req
        .time_zone
        .clone()
        .unwrap_or_else(|| state.config().calendar.time_zone.clone());
    let r = Reservation {
        id,
        name: req.name.clone().filter(|n| !n.is_empty()),
        owner: caller.user.clone(),
        owner_host: host.to_string(),
        users,
        groups: req.groups.clone(),
        nodes: req.nodes,
        resources: req.resources.clone(),
        start,
        duration: occurrences
            .first()
            .map_or(0, |o| (o.end - o.start).num_seconds() as u64),
        rrule: req.rrule.clone().filter(|r| !r.trim().is_empty()),
        time_zone: req.rrule.as_ref().map(|_| zone),
        node_set,
        occurrences,
        ctime: now,
        mtime: now,
    };
    config.put_reservation(r.clone());
    (config, r)
}

/// pbs_ralter: a changed start, end, duration, name or users. A running
/// reservation keeps its start and nodes; its end may move if they stay
/// free. A standing reservation's rule is not changed.
pub fn alter(
    state: &State,
    caller: &Caller,
    id: u64,
    req: &ResvRequest,
    now: Time,
) -> Result<(Config, Reservation), ResvError> {
    let old = own(state.config(), caller, id)?.clone();
    let mut r = old.clone();
    if let Some(name) = &req.name {
        r.name = Some(name.clone()).filter(|n| !n.is_empty());
    }
    if !req.users.is_empty() {
        r.users = req.users.clone();
    }
    if !req.groups.is_empty() {
        r.groups = req.groups.clone();
    }
    let times = req.start.is_some() || req.end.is_some() || req.duration.is_some();
    if req.nodes != 0 && req.nodes != r.nodes {
        return Err(ResvError::NotAllowed(format!(
            "reservation R{id} keeps its {} nodes; delete it and make a new one for another size",
            r.nodes
        )));
    }
    if times {
        let running = old.state_at(now) == ResvState::Running;
        if running
            && req
                .start
                .is_some_and(|s| Some(s) != old.current(now).map(|o| o.start))
        {
            return Err(ResvError::NotAllowed(format!(
                "reservation R{id} is running: its start cannot move, only its end"
            )));
        }
        let current = old.current(now).cloned();
        let start = match (running, &current) {
            (true, Some(o)) => o.start,
            _ => req.start.unwrap_or(r.start),
        };
        let duration = match (req.end, req.duration) {
            (None, None) => r.duration,
            (end, d) => duration_of(start, end, d)?,
        };
        if !running && start < now - chrono::Duration::seconds(PAST_SLACK_SECS) {
            return Err(ResvError::Invalid(
                "the new start is in the past; give a later -R".into(),
            ));
        }
        let zone: chrono_tz::Tz = r
            .time_zone
            .as_deref()
            .unwrap_or(&state.config().calendar.time_zone)
            .parse()
            .unwrap_or(chrono_tz::UTC);
        let mut spans = occurrence_spans(start, duration, r.rrule.as_deref(), zone)?;
        // Occurrences already over stay as they were.
        let past: Vec<_> = old
            .occurrences
            .iter()
            .filter(|o| o.end <= now)
            .cloned()
            .collect();
        spans.retain(|s| s.1 > now);
        // A running occurrence keeps its nodes (its jobs are on them): the
        // new end stands only if they are free until then.
        let mut kept = Vec::new();
        if running && let Some(o) = &current {
            let end = spans.first().map_or(o.end, |s| s.1);
            if end > o.end && !nodes_free_over(state, &old.node_set, &o.nodes, o.end, end, id, now)
            {
                return Err(ResvError::Denied(format!(
                    "reservation R{id}'s nodes are not all free until the new end; see pbs_rstat and spfree"
                )));
            }
            kept.push(crate::reservation::Occurrence {
                start: o.start,
                end,
                nodes: o.nodes.clone(),
            });
            spans.remove(0);
        }
        let (set, occurrences) = if spans.is_empty() {
            (old.node_set.clone(), Vec::new())
        } else {
            place_reservation(state, &spans, r.nodes, Some(&old.node_set), Some(id), now)?
        };
        r.node_set = set;
        r.start = start;
        r.duration = duration;
        r.occurrences = past.into_iter().chain(kept).chain(occurrences).collect();
    }
    r.mtime = now;
    let mut config = state.config().clone();
    config.put_reservation(r.clone());
    Ok((config, r))
}

/// pbs_rdel: the configuration without reservation `id` and its queue
/// (kept closed while jobs are in it: the daemon deletes them).
pub fn delete(state: &State, caller: &Caller, id: u64) -> Result<(Config, Reservation), ResvError> {
    let queue = own(state.config(), caller, id)?.queue_name();
    let empty = state.counts(&queue).total() == 0;
    let mut config = state.config().clone();
    let r = config
        .remove_reservation(id, empty)
        .ok_or_else(|| ResvError::Unknown(format!("R{id}")))?;
    Ok((config, r))
}

/// Reservation `id`, if the caller owns it or is an operator or manager.
fn own<'c>(config: &'c Config, caller: &Caller, id: u64) -> Result<&'c Reservation, ResvError> {
    let r = config
        .reservations
        .get(&id)
        .ok_or_else(|| ResvError::Unknown(format!("R{id}")))?;
    if r.owner != caller.user && caller.role == Role::User {
        return Err(ResvError::NotAllowed(format!(
            "reservation R{id} belongs to {}; only its owner, an operator or a manager may change it",
            r.owner
        )));
    }
    Ok(r)
}

/// The server's `resv_enable` and its access lists.
fn may_reserve(config: &Config, caller: &Caller) -> Result<(), ResvError> {
    let s = &config.server;
    if !s.resv_enable {
        return Err(ResvError::NotAllowed(
            "reservations are turned off on this server (resv_enable = False); ask the administrator"
                .into(),
        ));
    }
    if caller.role != Role::User {
        return Ok(());
    }
    let by_user = s.acl_resv_user_enable
        && !s
            .acl_resv_users
            .iter()
            .any(|u| u == "*" || u.split('@').next() == Some(caller.user.as_str()));
    let by_group = s.acl_resv_group_enable && !s.acl_resv_groups.contains(&caller.group);
    if by_user || by_group {
        return Err(ResvError::NotAllowed(format!(
            "user {} may not make reservations here (acl_resv_users/acl_resv_groups); ask the administrator",
            caller.user
        )));
    }
    Ok(())
}

/// Seconds from `start` to `end`, or `duration`.
fn duration_of(start: Time, end: Option<Time>, duration: Option<u64>) -> Result<u64, ResvError> {
    match (end, duration) {
        (Some(end), _) if end <= start => Err(ResvError::Invalid(format!(
            "the end ({}) is not after the start ({}); give a later -E",
            crate::reservation::rfc3339(end),
            crate::reservation::rfc3339(start)
        ))),
        (Some(end), _) => Ok((end - start).num_seconds() as u64),
        (None, Some(d)) if d > 0 => Ok(d),
        _ => Err(ResvError::Invalid(
            "say how long: -E END or -D DURATION ([[hh:]mm:]ss)".into(),
        )),
    }
}
