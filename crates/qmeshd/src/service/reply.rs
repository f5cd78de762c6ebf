//! The task's answers in the daemon's terms, turned into the wire's
//! replies (the conversions of core types are `qmesh_proto::convert`'s).

use qmesh_proto::v1;

use qmesh_proto::convert;

use crate::answer::{JobOutcome, JobSnapshot, QueueList, Trace, UsageReport};

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

/// spwait's answer: the finished job as qstat -f shows it.
pub fn job(snapshot: &JobSnapshot) -> v1::JobInfo {
    convert::job_info(&snapshot.job, &snapshot.server, None, snapshot.at)
}

/// qstat -Q.
pub fn queues(list: QueueList) -> v1::QueueStatusReply {
    v1::QueueStatusReply {
        queues: list
            .queues
            .iter()
            .map(|(queue, counts, capacity)| convert::queue_info(queue, *counts, *capacity))
            .collect(),
        server: list.server,
        server_time: list.at.timestamp(),
    }
}

/// spusage.
pub fn usage(report: UsageReport) -> v1::UsageReply {
    v1::UsageReply {
        accounts: report
            .accounts
            .into_iter()
            .map(convert::account_usage)
            .collect(),
        server: report.server,
        server_time: report.at.timestamp(),
    }
}

/// tracejob.
pub fn trace(trace: Trace) -> v1::TraceReply {
    v1::TraceReply {
        job_id: trace.job_id,
        lines: trace.lines.into_iter().map(convert::trace_line).collect(),
        days: trace.days,
    }
}
