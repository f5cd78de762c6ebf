//! A job's accounting records folded into one entry for sacct: each
//! record says something more of the job (`Q` who and what, `S` where and
//! when it started, `E` how it ended, `D` who deleted it, `R` that it was
//! queued again, `z`/`r` suspended and resumed, `H`/`RL` held and
//! released, `A` aborted by the server), the later over the earlier.
//!
//! Pure: lines in, entries out, the local time of the lines turned into
//! Unix seconds by the caller's function. The job, group and account
//! keys are PBS's (`qmesh_core::joblog`).

use std::collections::BTreeMap;

use chrono::NaiveDateTime;
use qmesh_core::joblog::{LineKind, LogLine, RecordType, record_keys};
use qmesh_proto::v1;

/// Folds the records of `lines` (server events and other lines are
/// skipped), in the order given, into one entry per job id.
pub fn fold(
    lines: impl IntoIterator<Item = LogLine>,
    to_unix: impl Fn(NaiveDateTime) -> i64,
) -> BTreeMap<String, v1::AccountedJob> {
    let mut jobs: BTreeMap<String, v1::AccountedJob> = BTreeMap::new();
    for line in lines {
        let LineKind::Record(kind) = line.kind else {
            continue;
        };
        // An array's own records (`12[]`): sacct shows its tasks.
        if line.id.contains("[]") {
            continue;
        }
        let at = to_unix(line.time);
        let job = jobs
            .entry(line.id.clone())
            .or_insert_with(|| new_entry(&line.id));
        apply(job, kind, &line.message, at);
    }
    jobs
}

/// An entry knowing only its id: `13[4].srv` is sub-job 4 of array 13.
fn new_entry(id: &str) -> v1::AccountedJob {
    let seq = id.split('.').next().unwrap_or(id);
    let (number, index) = match seq.split_once('[') {
        Some((n, rest)) => (n, rest.trim_end_matches(']').parse::<u32>().ok()),
        None => (seq, None),
    };
    v1::AccountedJob {
        id: id.to_string(),
        array_index: index,
        array_job: if index.is_some() {
            number.parse().unwrap_or(0)
        } else {
            0
        },
        state: "Q".into(),
        ..v1::AccountedJob::default()
    }
}

fn apply(job: &mut v1::AccountedJob, kind: RecordType, message: &str, at: i64) {
    let keys = record_keys(message);
    let number = |k: &str| -> Option<i64> {
        keys.iter()
            .find(|(key, _)| key == k)
            .and_then(|(_, v)| v.parse().ok())
    };
    job_keys(job, &keys);
    match kind {
        RecordType::Queued => {
            job.state = "Q".into();
            if job.submit == 0 {
                job.submit = at;
            }
        }
        RecordType::Started => {
            job.state = "R".into();
            job.start = number("start").filter(|s| *s > 0).unwrap_or(at);
            job.end = 0;
            run_keys(job, &keys);
        }
        RecordType::Ended => {
            job.state = "F".into();
            job.start = number("start").unwrap_or(job.start);
            job.end = number("end").unwrap_or(at);
            job.exit_status = number("Exit_status").and_then(|s| i32::try_from(s).ok());
            run_keys(job, &keys);
            used_keys(job, &keys);
        }
        RecordType::Rerun => {
            // The run ended and the job waits again: the run is kept for
            // `sacct -D`, and its next run starts from nothing.
            run_keys(job, &keys);
            job.earlier_runs.push(v1::AccountedRun {
                start: number("start").unwrap_or(job.start),
                end: number("end").unwrap_or(at),
                exit_status: number("Exit_status").and_then(|s| i32::try_from(s).ok()),
                exec_nodes: job.exec_nodes.clone(),
                ncpus: job.ncpus,
            });
            job.requeues += 1;
            job.state = "Q".into();
            job.start = 0;
            job.end = 0;
            job.exec_nodes.clear();
            job.used_walltime = 0;
            job.cput = None;
            job.max_rss = None;
            job.exit_status = None;
        }
        RecordType::Deleted => {
            job.deleted_by = keys
                .iter()
                .find(|(k, _)| k == "requestor")
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            job.exit_cause = "deleted".into();
            // A job deleted before it started ends here; a running one
            // ends when its E record comes.
            if job.start == 0 {
                job.state = "F".into();
                job.end = at;
            }
        }
        RecordType::Aborted => {
            job.state = "F".into();
            job.exit_cause = "aborted".into();
            job.comment = message.to_string();
            if job.end == 0 {
                job.end = at;
            }
        }
        RecordType::Suspended => job.state = "S".into(),
        RecordType::Resumed => job.state = "R".into(),
        RecordType::Held if job.state == "Q" => job.state = "H".into(),
        RecordType::Released if job.state == "H" => job.state = "Q".into(),
        RecordType::Held | RecordType::Released | RecordType::Altered | RecordType::Moved => {}
    }
}

/// The keys of PBS's `acct_job` every job record starts with (and those a
/// qalter's `a` record changes).
fn job_keys(job: &mut v1::AccountedJob, keys: &[(String, String)]) {
    for (key, value) in keys {
        match key.as_str() {
            "user" => job.user = value.clone(),
            "group" => job.group = value.clone(),
            "account" => job.account = value.clone(),
            "jobname" => job.name = value.clone(),
            "queue" => job.queue = value.clone(),
            "ctime" => job.submit = value.parse().unwrap_or(job.submit),
            "etime" => job.eligible = value.parse().unwrap_or(job.eligible),
            _ => {
                if let Some(name) = key.strip_prefix("Resource_List.") {
                    job.resource_list.insert(name.to_string(), value.clone());
                    match name {
                        "walltime" => {
                            job.walltime = qmesh_core::time::parse_duration(value).unwrap_or(0);
                        }
                        "ncpus" if job.exec_nodes.is_empty() => {
                            job.ncpus = value.parse().unwrap_or(job.ncpus);
                        }
                        "nodect" if job.exec_nodes.is_empty() => {
                            job.nodes = value.parse().unwrap_or(job.nodes);
                        }
                        _ => {}
                    }
                }
            }
        }
    }
}

/// Where it ran: PBS's `exec_host` (`n1/0*8+n2/0*8`), one part per node
/// with the CPUs it held there.
fn run_keys(job: &mut v1::AccountedJob, keys: &[(String, String)]) {
    let Some((_, host)) = keys.iter().find(|(k, _)| k == "exec_host") else {
        return;
    };
    let parts: Vec<&str> = host.split('+').filter(|p| !p.is_empty()).collect();
    if parts.is_empty() {
        return;
    }
    job.exec_nodes = parts
        .iter()
        .map(|p| p.split('/').next().unwrap_or(p).to_string())
        .collect();
    job.nodes = job.exec_nodes.len() as u32;
    job.ncpus = parts
        .iter()
        .map(|p| {
            p.split_once('*')
                .and_then(|(_, n)| n.parse::<u32>().ok())
                .unwrap_or(1)
        })
        .sum();
}

/// What its run used: `resources_used.walltime`, `.cput`, `.mem` (kb).
fn used_keys(job: &mut v1::AccountedJob, keys: &[(String, String)]) {
    for (key, value) in keys {
        match key.as_str() {
            "resources_used.walltime" => {
                job.used_walltime = qmesh_core::time::parse_duration(value).unwrap_or(0);
            }
            "resources_used.cput" => {
                job.cput = qmesh_core::time::parse_duration(value).ok();
            }
            "resources_used.mem" => {
                job.max_rss = value
                    .strip_suffix("kb")
                    .and_then(|kb| kb.parse::<u64>().ok())
                    .map(|kb| kb * 1024);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qmesh_core::joblog::{accounting_line, parse_accounting_line};

    fn at(secs: u32) -> NaiveDateTime {
        chrono::NaiveDate::from_ymd_opt(2026, 3, 4)
            .unwrap()
            .and_hms_opt(10, 0, 0)
            .unwrap()
            + chrono::Duration::seconds(secs.into())
    }

    /// Seconds since 10:00 of the test's day.
    fn secs(t: NaiveDateTime) -> i64 {
        (t - at(0)).num_seconds()
    }

    fn lines(records: &[(u32, RecordType, &str, &str)]) -> Vec<LogLine> {
        records
            .iter()
            .filter_map(|(t, kind, id, text)| {
                parse_accounting_line(&accounting_line(at(*t), *kind, id, text))
            })
            .collect()
    }

    const Q: &str = "user=alice group=staff account=\"proj\" jobname=\"my job\" queue=debug \
                     ctime=1 qtime=1 etime=2 Resource_List.ncpus=4 Resource_List.nodect=2 \
                     Resource_List.walltime=00:10:00";

    #[test]
    fn a_job_that_ran_and_ended_with_what_it_used() {
        let e = format!(
            "{Q} start=20 exec_host=n1/0*2+n2/0*2 exec_vnode=(n1:ncpus=2)+(n2:ncpus=2) \
             session=9 end=80 Exit_status=3 resources_used.cput=00:01:40 \
             resources_used.mem=2048kb resources_used.walltime=00:01:00 run_count=1"
        );
        let jobs = fold(
            lines(&[
                (1, RecordType::Queued, "7.srv", Q),
                (
                    20,
                    RecordType::Started,
                    "7.srv",
                    &format!("{Q} start=20 exec_host=n1/0*2+n2/0*2"),
                ),
                (80, RecordType::Ended, "7.srv", &e),
            ]),
            secs,
        );
        let job = &jobs["7.srv"];
        assert_eq!(
            (job.user.as_str(), job.group.as_str(), job.account.as_str()),
            ("alice", "staff", "proj")
        );
        assert_eq!((job.name.as_str(), job.queue.as_str()), ("my job", "debug"));
        assert_eq!(
            (job.submit, job.eligible, job.start, job.end),
            (1, 2, 20, 80)
        );
        assert_eq!(job.state, "F");
        assert_eq!(job.exit_status, Some(3));
        assert_eq!(job.exec_nodes, ["n1", "n2"]);
        assert_eq!((job.ncpus, job.nodes, job.walltime), (4, 2, 600));
        assert_eq!((job.used_walltime, job.cput), (60, Some(100)));
        assert_eq!(job.max_rss, Some(2048 * 1024));
        assert!(job.exit_cause.is_empty() && job.deleted_by.is_empty());
        assert_eq!(job.array_index, None);
    }

    #[test]
    fn deleted_requeued_suspended_held_and_sub_jobs() {
        let jobs = fold(
            lines(&[
                // Deleted while queued: ends with the D record.
                (1, RecordType::Queued, "8.srv", Q),
                (5, RecordType::Deleted, "8.srv", "requestor=bob@head"),
                // Deleted while running: the E record ends it.
                (1, RecordType::Queued, "9.srv", Q),
                (2, RecordType::Started, "9.srv", "start=2 exec_host=n1/0*1"),
                (6, RecordType::Deleted, "9.srv", "requestor=root@head"),
                (
                    7,
                    RecordType::Ended,
                    "9.srv",
                    "start=2 exec_host=n1/0*1 end=7 Exit_status=271",
                ),
                // Ran, queued again, waits.
                (1, RecordType::Queued, "10.srv", Q),
                (2, RecordType::Started, "10.srv", "start=2 exec_host=n1/0*1"),
                (
                    3,
                    RecordType::Rerun,
                    "10.srv",
                    "start=2 end=3 Exit_status=-2 exec_host=n1/0*1",
                ),
                // Suspended.
                (
                    2,
                    RecordType::Started,
                    "11[3].srv",
                    "start=2 exec_host=n1/0*1",
                ),
                (4, RecordType::Suspended, "11[3].srv", "requestor=root@head"),
                // An array's own record: its tasks are the jobs.
                (1, RecordType::Queued, "11[].srv", Q),
                // Held.
                (1, RecordType::Queued, "12.srv", Q),
                (
                    2,
                    RecordType::Held,
                    "12.srv",
                    "requestor=alice@h holdtype=u",
                ),
                // Aborted by the server.
                (1, RecordType::Queued, "13.srv", Q),
                (
                    3,
                    RecordType::Aborted,
                    "13.srv",
                    "dependency can never be met",
                ),
            ]),
            secs,
        );
        let deleted = &jobs["8.srv"];
        assert_eq!(
            (deleted.state.as_str(), deleted.end, deleted.start),
            ("F", 5, 0)
        );
        assert_eq!(
            (deleted.exit_cause.as_str(), deleted.deleted_by.as_str()),
            ("deleted", "bob@head")
        );
        let killed = &jobs["9.srv"];
        assert_eq!(
            (killed.state.as_str(), killed.exit_status, killed.end),
            ("F", Some(271), 7)
        );
        assert_eq!(killed.deleted_by, "root@head");
        let requeued = &jobs["10.srv"];
        assert_eq!(
            (requeued.state.as_str(), requeued.requeues, requeued.start),
            ("Q", 1, 0)
        );
        assert!(requeued.exec_nodes.is_empty() && requeued.exit_status.is_none());
        assert_eq!(
            requeued.earlier_runs,
            [v1::AccountedRun {
                start: 2,
                end: 3,
                exit_status: Some(-2),
                exec_nodes: vec!["n1".into()],
                ncpus: 1,
            }]
        );
        let sub = &jobs["11[3].srv"];
        assert_eq!(sub.state, "S");
        assert_eq!((sub.array_job, sub.array_index), (11, Some(3)));
        assert_eq!(jobs["12.srv"].state, "H");
        assert!(!jobs.contains_key("11[].srv"));
        let aborted = &jobs["13.srv"];
        assert_eq!(
            (aborted.state.as_str(), aborted.exit_cause.as_str()),
            ("F", "aborted")
        );
    }
}
