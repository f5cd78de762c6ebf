//! The daemon's half of tracejob: a job's lines in the job logs of the
//! last days (accounting records and server events, `crate::joblog`).
//!
//! The task only checks who asks: a job's owner, operators and managers
//! may trace it; a job that has left the history is traced for its owner
//! if its records say `user=` them. The files are read on a blocking
//! thread, once the writer has written every line queued before the
//! request, so a trace right after a job ended finds its `E` record; the
//! task never waits for the disk.

use std::path::Path;
use std::time::Duration;

use chrono::{Local, NaiveDate, NaiveDateTime};
use qmesh_core::joblog::{self, LineKind, LogLine};
use qmesh_core::{CoreError, Role};
use qmesh_store::Store;

use super::SchedulerTask;
use crate::answer::Trace;
use crate::dispatch::Now;
use crate::error::TaskError;
use crate::event::Reply;
use crate::identity::Peer;

/// Days tracejob may look back (PBS has no limit; a year of files is
/// already a lot to read for one job).
const MAX_DAYS: u32 = 366;

impl SchedulerTask {
    pub(super) fn trace(
        &mut self,
        peer: &Peer,
        job_id: &str,
        days: u32,
        reply: Reply<Trace>,
        now: Now,
    ) {
        let caller = self.caller(peer);
        let id = match self.state.parse_id(job_id) {
            Ok(id) => id,
            Err(e) => {
                let _ = reply.send(Err(e.into()));
                return;
            }
        };
        let full = self.state.full_id(id);
        // None: may read every line; Some(user): only if the records say
        // the job is theirs.
        let only_for = match self.state.job(id) {
            _ if caller.role >= Role::Operator => None,
            Some(job) if job.owner.uid == caller.uid => None,
            Some(job) => {
                let e = CoreError::NotYourJob {
                    id: full,
                    owner: job.owner.user.clone(),
                    action: "trace".into(),
                };
                let _ = reply.send(Err(e.into()));
                return;
            }
            None => Some(caller.user.clone()),
        };
        let Some((accounting, events)) = self.logs.writer().dirs() else {
            let _ = reply.send(Err(TaskError::Unavailable(
                "this daemon writes no job logs; tracejob has nothing to read".into(),
            )));
            return;
        };
        let days = days.clamp(1, MAX_DAYS);
        // Accounting records reach the log's writer once their turn is
        // durable: ask for its flush from the store's writer, after them.
        let records = self.logs.writer().records();
        let (marker_tx, marker) = std::sync::mpsc::channel();
        self.durability.store().on_durable(Box::new(move |_| {
            let _ = marker_tx.send(records.flushed());
        }));
        let today = now.wall.with_timezone(&Local).date_naive();
        // Read on a thread of its own: the task never waits for the disk.
        let reader = move || {
            // Lines queued before the request are on disk (or the writer
            // is stuck: read what there is).
            if let Ok(flushed) = marker.recv_timeout(Duration::from_secs(10)) {
                let _ = flushed.recv_timeout(Duration::from_secs(10));
            }
            let answer = read_trace(&accounting, &events, &full, days, today).and_then(|lines| {
                match &only_for {
                    Some(user) if !lines.is_empty() && !owned_by(&lines, user) => {
                        Err(TaskError::Denied(format!(
                            "job {full} belongs to another user; only its owner, an operator or a manager may trace it"
                        )))
                    }
                    _ => Ok(Trace {
                        job_id: full.clone(),
                        lines,
                        days,
                    }),
                }
            });
            let _ = reply.send(answer);
        };
        if let Err(e) = std::thread::Builder::new()
            .name("qmeshd-trace".into())
            .spawn(reader)
        {
            tracing::error!(error = %e, "could not start a thread to read the job logs");
        }
    }
}

/// The job's lines in `days` days of both logs, up to `today`, in time
/// order (server events before records of the same second, each log in
/// its own order).
fn read_trace(
    accounting: &Path,
    events: &Path,
    id: &str,
    days: u32,
    today: NaiveDate,
) -> Result<Vec<LogLine>, TaskError> {
    let mut found: Vec<(NaiveDateTime, u8, usize, LogLine)> = Vec::new();
    let mut seq = 0usize;
    for back in (0..days).rev() {
        let Some(day) = today.checked_sub_days(chrono::Days::new(back.into())) else {
            continue;
        };
        let name = joblog::file_name(day);
        for (dir, parse, order) in [
            (
                events,
                joblog::parse_event_line as fn(&str) -> Option<LogLine>,
                0u8,
            ),
            (accounting, joblog::parse_accounting_line, 1u8),
        ] {
            let path = dir.join(&name);
            let text = match std::fs::read_to_string(&path) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    return Err(TaskError::Unavailable(format!(
                        "cannot read the job log {}: {e}",
                        path.display()
                    )));
                }
            };
            for line in text.lines().filter_map(parse).filter(|l| l.id == id) {
                seq += 1;
                found.push((line.time, order, seq, line));
            }
        }
    }
    found.sort_by_key(|(time, order, seq, _)| (*time, *order, *seq));
    Ok(found.into_iter().map(|(_, _, _, line)| line).collect())
}

/// Whether the job's accounting records name `user` as its owner.
fn owned_by(lines: &[LogLine], user: &str) -> bool {
    let key = format!("user={user}");
    lines
        .iter()
        .any(|l| matches!(l.kind, LineKind::Record(_)) && l.message.split(' ').any(|k| k == key))
}

#[cfg(test)]
mod tests {
    use super::*;
    use qmesh_core::joblog::{EventClass, RecordType};

    fn day(d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 3, d).unwrap()
    }

    #[test]
    fn lines_of_the_job_from_both_logs_over_the_days_in_time_order() {
        let dir = tempfile::tempdir().unwrap();
        let (acct, events) = (dir.path().join("a"), dir.path().join("s"));
        std::fs::create_dir_all(&acct).unwrap();
        std::fs::create_dir_all(&events).unwrap();
        let at = |d, h| day(d).and_hms_opt(h, 0, 0).unwrap();
        let write = |path: std::path::PathBuf, lines: &[String]| {
            std::fs::write(path, lines.join("\n") + "\n").unwrap();
        };
        write(
            acct.join(joblog::file_name(day(3))),
            &[
                joblog::accounting_line(
                    at(3, 9),
                    RecordType::Queued,
                    "7.srv",
                    "user=alice queue=batch",
                ),
                joblog::accounting_line(at(3, 9), RecordType::Queued, "8.srv", "user=bob"),
                joblog::accounting_line(
                    at(3, 10),
                    RecordType::Started,
                    "7.srv",
                    "user=alice start=1",
                ),
            ],
        );
        write(
            events.join(joblog::file_name(day(3))),
            &[joblog::event_line(
                at(3, 9),
                EventClass::Job,
                "srv",
                "7.srv",
                "Job Queued",
            )],
        );
        write(
            acct.join(joblog::file_name(day(4))),
            &[joblog::accounting_line(
                at(4, 1),
                RecordType::Ended,
                "7.srv",
                "user=alice Exit_status=0",
            )],
        );
        let lines = read_trace(&acct, &events, "7.srv", 2, day(4)).unwrap();
        let kinds: Vec<LineKind> = lines.iter().map(|l| l.kind).collect();
        assert_eq!(
            kinds,
            [
                LineKind::Event(8),
                LineKind::Record(RecordType::Queued),
                LineKind::Record(RecordType::Started),
                LineKind::Record(RecordType::Ended)
            ]
        );
        assert!(owned_by(&lines, "alice") && !owned_by(&lines, "bob"));
        // One day back only: yesterday's lines are not read.
        let today_only = read_trace(&acct, &events, "7.srv", 1, day(4)).unwrap();
        assert_eq!(today_only.len(), 1);
        assert!(
            read_trace(&acct, &events, "9.srv", 5, day(4))
                .unwrap()
                .is_empty()
        );
    }
}
