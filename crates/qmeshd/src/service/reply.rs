//! The task's answers in the daemon's terms, turned into the wire's
//! replies (the conversions of core types are `crate::convert`'s).

use qmesh_proto::v1;

use crate::convert;

use crate::answer::{JobOutcome, JobSnapshot, QueueList, ServerReport, Trace, UsageReport, When};

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
            .map(|(queue, counts, capacity, now)| v1::QueueInfo {
                open_now: now.open,
                sets_now: now.sets.clone(),
                ..convert::queue_info(queue, *counts, *capacity)
            })
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

/// qstat -B.
pub fn server_status(report: ServerReport) -> v1::ServerStatusReply {
    let attrs = report.attrs;
    let counts = report.counts;
    v1::ServerStatusReply {
        server: report.server,
        server_time: report.at.timestamp(),
        server_state: if attrs.scheduling { "Active" } else { "Idle" }.to_string(),
        server_host: host_name(),
        scheduling: attrs.scheduling,
        total_jobs: counts.total(),
        transit: counts.transit,
        queued: counts.queued,
        held: counts.held,
        waiting: counts.waiting,
        running: counts.running,
        exiting: counts.exiting,
        finished: report.finished,
        default_queue: report.default_queue,
        scheduler_iteration: attrs.scheduler_iteration,
        job_history_duration: attrs.job_history_duration,
        default_walltime: attrs.default_walltime,
        nodes_assigned: report.nodes_assigned,
        nodes_total: report.nodes_total,
        managers: attrs.managers,
        operators: attrs.operators,
        max_user_run: attrs.max_user_run,
        max_group_run: attrs.max_group_run,
        max_user_queued: attrs.max_user_queued,
        max_group_queued: attrs.max_group_queued,
        version: format!("qmesh-{}", env!("CARGO_PKG_VERSION")),
        resources_available: attrs.resources_available.into_iter().collect(),
        resources_assigned: report.resources_assigned.into_iter().collect(),
    }
}

/// This host's name, as PBS's `server_host`; empty if it cannot be read.
fn host_name() -> String {
    nix::unistd::gethostname()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// spwhen: the job's line as spq shows it (a pending job's with the
/// expected start found), and the start, reason and explanation.
pub fn when(when: When) -> v1::WhenReply {
    let entry = match when.place {
        Some((status, reason, priority)) => convert::plan_entry(
            &when.job,
            &when.server,
            Some(status),
            reason,
            when.start,
            priority,
        ),
        None => convert::plan_entry(&when.job, &when.server, None, None, None, 0.0),
    };
    v1::WhenReply {
        job: Some(entry),
        expected_start: convert::unix(when.start),
        predicted_start: convert::unix(when.predicted_start),
        reason: when
            .reason
            .map(|r| r.as_str().to_string())
            .unwrap_or_default(),
        explanation: when.explanation,
        server_time: when.at.timestamp(),
    }
}
