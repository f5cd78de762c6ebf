//! The task's answers in the daemon's terms, turned into the wire's
//! replies (the conversions of core types are `qmesh_proto::convert`'s).

use qmesh_proto::v1;

use crate::event::JobOutcome;

/// A reply about several jobs: each id as written, and its refusal.
pub fn jobs(outcomes: Vec<JobOutcome>) -> v1::JobsReply {
    let results = outcomes
        .into_iter()
        .map(|o| v1::JobResult {
            job_id: o.job_id,
            ok: o.refused.is_none(),
            error: o.refused.unwrap_or_default(),
        })
        .collect();
    v1::JobsReply { results }
}
