//! Reservations on the wire: pbs_rsub's and pbs_ralter's request into the
//! core's terms, a reservation out as pbs_rstat shows it.

use qmesh_core::reservation::ResvState;
use qmesh_core::rsub::ResvRequest;
use qmesh_proto::v1;
use tonic::Status;

use crate::answer::ResvShown;

/// The most users or groups a reservation names, and the longest text.
const MAX_NAMES: usize = 1000;
const MAX_TEXT: usize = 4096;

/// pbs_rsub's or pbs_ralter's request, checked for size and times.
pub fn resv_request(r: &v1::ReservationRequest) -> Result<ResvRequest, Status> {
    let time = |secs: i64, what: &str| -> Result<Option<qmesh_core::Time>, Status> {
        if secs == 0 {
            return Ok(None);
        }
        chrono::DateTime::from_timestamp(secs, 0)
            .map(Some)
            .ok_or_else(|| Status::invalid_argument(format!("{what} {secs} is not a time")))
    };
    if r.users.len() > MAX_NAMES || r.groups.len() > MAX_NAMES {
        return Err(Status::invalid_argument(format!(
            "a reservation names at most {MAX_NAMES} users and {MAX_NAMES} groups"
        )));
    }
    if [
        &r.resources,
        &r.rrule,
        &r.name,
        &r.time_zone,
        &r.node_set,
        &r.qmove_job,
    ]
    .iter()
    .any(|t| t.len() > MAX_TEXT)
    {
        return Err(Status::invalid_argument(format!(
            "a reservation's -l, -r, -N and zone are at most {MAX_TEXT} bytes each"
        )));
    }
    let text = |t: &String| Some(t.clone()).filter(|t| !t.is_empty());
    Ok(ResvRequest {
        name: if r.name_given || !r.name.is_empty() {
            Some(r.name.clone())
        } else {
            None
        },
        users: r.users.clone(),
        groups: r.groups.clone(),
        nodes: r.nodes,
        resources: r.resources.clone(),
        start: time(r.start, "start")?,
        end: time(r.end, "end")?,
        duration: Some(r.duration).filter(|&d| d > 0),
        rrule: text(&r.rrule),
        time_zone: text(&r.time_zone),
        node_set: text(&r.node_set),
        qmove_job: text(&r.qmove_job),
    })
}

/// A reservation as pbs_rstat shows it, at the time of the answer.
pub fn resv_info(shown: &ResvShown) -> v1::ReservationInfo {
    let r = &shown.resv;
    let now = shown.at;
    let state = r.state_at(now);
    let current = r.current(now).or(r.occurrences.last());
    let occurrences = r
        .occurrences
        .iter()
        .filter(|o| now < o.end)
        .map(|o| v1::ReservationOccurrence {
            start: o.start.timestamp(),
            end: o.end.timestamp(),
            nodes: o.nodes.clone(),
        })
        .collect();
    v1::ReservationInfo {
        id: format!("{}.{}", r.queue_name(), shown.server),
        name: r.name.clone().unwrap_or_default(),
        owner: format!("{}@{}", r.owner, r.owner_host),
        state: state.pbs_name().into(),
        queue: r.queue_name(),
        start: current.map_or(0, |o| o.start.timestamp()),
        end: current.map_or(0, |o| o.end.timestamp()),
        duration: r.duration,
        resources: r.resources.clone(),
        nodes: r.nodes,
        users: r.users.clone(),
        groups: r.groups.clone(),
        rrule: r.rrule.clone().unwrap_or_default(),
        time_zone: r.time_zone.clone().unwrap_or_default(),
        count: r.occurrences.len() as u32,
        index: if state == ResvState::Finished {
            r.occurrences.len() as u32
        } else {
            r.index_at(now) as u32
        },
        resv_nodes: current.map(|o| o.nodes.clone()).unwrap_or_default(),
        node_set: r.node_set.clone(),
        ctime: r.ctime.timestamp(),
        mtime: r.mtime.timestamp(),
        occurrences,
        server: shown.server.clone(),
        server_zone: shown.zone.clone(),
        jobs: shown.jobs,
    }
}
