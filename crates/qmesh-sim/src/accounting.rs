//! A replay written as a PBS accounting log: the `Q`, `S` and `E` records
//! the daemon would have written for the replay's jobs, formatted by the
//! daemon's own code (`qmesh_core::joblog`), one file per day of the
//! site's calendar zone under a directory, as qmeshd keeps
//! `server_priv/accounting`. What `qreport`, `tracejob`, `--to-swf` and a
//! what-if then read is what a real site's log would be: a seed's trace on
//! its seed configuration becomes a history to report on.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;

use chrono::{DateTime, NaiveDate, Utc};
use chrono_tz::Tz;
use qmesh_core::joblog::{self, RecordType};
use qmesh_core::{Job, JobExit};

/// One accounting record, as the daemon hands it to its log writer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub at: DateTime<Utc>,
    pub kind: RecordType,
    /// The job's full id (`12.paragon`, `13[].paragon`).
    pub id: String,
    pub text: String,
}

impl Record {
    /// `Q`: the job (or array) was queued.
    pub fn queued(job: &Job, server: &str, at: DateTime<Utc>) -> Record {
        Record {
            at,
            kind: RecordType::Queued,
            id: job.full_id(server),
            text: joblog::queued(job, server),
        }
    }

    /// `S`: the job started.
    pub fn started(job: &Job, server: &str, at: DateTime<Utc>) -> Record {
        Record {
            at,
            kind: RecordType::Started,
            id: job.full_id(server),
            text: joblog::started(job, server),
        }
    }

    /// `E`: `job` (read after its end) ended; `run` is what
    /// [`joblog::EndedRun::of`] read of it before.
    pub fn ended(
        job: &Job,
        server: &str,
        run: joblog::EndedRun,
        exit: &JobExit,
        at: DateTime<Utc>,
    ) -> Record {
        let run = run.ended(at.timestamp(), exit);
        Record {
            at,
            kind: RecordType::Ended,
            id: job.full_id(server),
            text: joblog::ended(job, server, &run),
        }
    }
}

/// Writes `records` (in time order) under `dir`, one file per day of
/// `zone` named `YYYYMMDD`, each line in the daemon's format with the
/// zone's local time, as qmeshd writes in the server's. The directory is
/// made if missing; a day's file that exists is refused, not appended to
/// or rewritten (an accounting log is never rewritten). Returns the files
/// written, in day order.
pub fn write_log(dir: &Path, records: &[Record], zone: Tz) -> Result<Vec<String>, String> {
    std::fs::create_dir_all(dir).map_err(|e| {
        format!(
            "cannot make the accounting directory {}: {e}",
            dir.display()
        )
    })?;
    let mut days: BTreeMap<NaiveDate, String> = BTreeMap::new();
    for r in records {
        let local = r.at.with_timezone(&zone).naive_local();
        let file = days.entry(local.date()).or_default();
        file.push_str(&joblog::accounting_line(local, r.kind, &r.id, &r.text));
        file.push('\n');
    }
    let mut written = Vec::with_capacity(days.len());
    for (day, text) in &days {
        let path = dir.join(joblog::file_name(*day));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    format!(
                        "{} exists: an accounting log is not written over; give an empty directory",
                        path.display()
                    )
                } else {
                    format!("cannot create {}: {e}", path.display())
                }
            })?;
        file.write_all(text.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        written.push(path.display().to_string());
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_go_to_the_file_of_their_local_day_and_no_file_is_written_over() {
        let at = |s: i64| DateTime::<Utc>::from_timestamp(s, 0).unwrap();
        let record = |s: i64, id: &str| Record {
            at: at(s),
            kind: RecordType::Queued,
            id: id.into(),
            text: "user=u1 queue=batch".into(),
        };
        // 2026-11-24 07:30 UTC is 23:30 the day before in Los Angeles.
        let records = [record(1_795_505_400, "1.s"), record(1_795_512_600, "2.s")];
        let dir = tempfile::tempdir().unwrap();
        let zone: Tz = "America/Los_Angeles".parse().unwrap();
        let files = write_log(dir.path(), &records, zone).unwrap();
        assert_eq!(files.len(), 2, "{files:?}");
        let first = std::fs::read_to_string(dir.path().join("20261123")).unwrap();
        assert_eq!(first, "11/23/2026 23:30:00;Q;1.s;user=u1 queue=batch\n");
        let second = std::fs::read_to_string(dir.path().join("20261124")).unwrap();
        assert!(second.starts_with("11/24/2026 01:30:00;Q;2.s;"), "{second}");
        let again = write_log(dir.path(), &records, zone).unwrap_err();
        assert!(again.contains("is not written over"), "{again}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("20261123")).unwrap(),
            first
        );
    }
}
