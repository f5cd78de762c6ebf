//! `qmesh-sim --to-swf`: a site's PBS accounting log (qmeshd's, or any
//! PBS server's `server_priv/accounting`) as a Standard Workload Format
//! file, the Parallel Workloads Archive's format, so a site can publish
//! its log or replay it here.
//!
//! One SWF line per job that has an `E` (ended) record: its `qtime` is
//! the submit time, `start` and `end` its run, `Resource_List.nodect` (or
//! the hosts of `exec_host`) its processors, allocated and requested
//! (qmesh's unit is the node), `Resource_List.walltime` the time asked.
//! Status: 1 when it exited 0, 0 when it failed, 5 when it was deleted
//! (`D` record). A job deleted before it ran has no run and is left out,
//! as the archive leaves out what never ran. Users, groups, queues and
//! job names become numbers in order of first appearance, queues named in
//! the header (`; Queue: 1 batch`), the way the reader here takes them.
//! A job requeued and run again keeps its last run (`R` records are
//! passed over).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::Path;

use chrono::NaiveDate;
use qmesh_core::joblog::{LineKind, RecordType, parse_accounting_line, record_keys as keys};

#[derive(Debug, thiserror::Error)]
pub enum ToSwfError {
    #[error("cannot read the accounting directory {dir}: {why}")]
    Dir { dir: String, why: String },
    #[error("cannot read the accounting file {file}: {why}")]
    File { file: String, why: String },
    #[error("no job ended in the accounting log {dir} between the dates given; nothing to write")]
    Empty { dir: String },
}

/// One job as its records tell it.
#[derive(Default, Debug)]
struct Seen {
    order: usize,
    keys: HashMap<String, String>,
    ended: bool,
    deleted: bool,
}

/// An accounting directory's day files (`YYYYMMDD`) from `from` to `to`
/// (both included; all when not given), in day order.
pub fn day_files(
    dir: &Path,
    from: Option<NaiveDate>,
    to: Option<NaiveDate>,
) -> std::io::Result<Vec<(NaiveDate, std::path::PathBuf)>> {
    let listed = std::fs::read_dir(dir)?.flatten().map(|entry| entry.path());
    Ok(qmesh_core::joblog::day_files(listed, from, to))
}

/// The SWF text of the accounting files in `dir` named for the days from
/// `from` to `to` (both included; all when not given).
pub fn from_accounting(
    dir: &Path,
    from: Option<NaiveDate>,
    to: Option<NaiveDate>,
) -> Result<String, ToSwfError> {
    let shown = dir.display().to_string();
    let days = day_files(dir, from, to).map_err(|e| ToSwfError::Dir {
        dir: shown.clone(),
        why: e.to_string(),
    })?;
    let mut jobs: HashMap<String, Seen> = HashMap::new();
    for (_, path) in &days {
        let text = std::fs::read_to_string(path).map_err(|e| ToSwfError::File {
            file: path.display().to_string(),
            why: e.to_string(),
        })?;
        for line in text.lines() {
            let Some(record) = parse_accounting_line(line) else {
                continue;
            };
            let LineKind::Record(kind) = record.kind else {
                continue;
            };
            let next = jobs.len();
            let seen = jobs.entry(record.id.clone()).or_insert_with(|| Seen {
                order: next,
                ..Seen::default()
            });
            match kind {
                RecordType::Queued => seen.keys.extend(keys(&record.message)),
                RecordType::Deleted => seen.deleted = true,
                RecordType::Ended => {
                    seen.keys.extend(keys(&record.message));
                    seen.ended = true;
                }
                _ => {}
            }
        }
    }
    let mut ended: Vec<(String, Seen)> = jobs.into_iter().filter(|(_, s)| s.ended).collect();
    if ended.is_empty() {
        return Err(ToSwfError::Empty { dir: shown });
    }
    let number = |key: &str, seen: &Seen| seen.keys.get(key).and_then(|v| v.parse::<i64>().ok());
    // Submission order, as the archive's files go; ties in log order.
    ended.sort_by_key(|(_, s)| (number("qtime", s).unwrap_or(i64::MAX), s.order));
    let first = ended
        .iter()
        .filter_map(|(_, s)| number("qtime", s))
        .min()
        .unwrap_or(0);
    let mut users = Numbering::default();
    let mut groups = Numbering::default();
    let mut queues = Numbering::default();
    let mut names = Numbering::default();
    let mut lines = String::new();
    let mut max_nodes = 0i64;
    for (n, (_, seen)) in ended.iter().enumerate() {
        let submit = number("qtime", seen).unwrap_or(first);
        let start = number("start", seen).unwrap_or(-1);
        let end = number("end", seen).unwrap_or(-1);
        let (wait, run) = if start > 0 && end >= start {
            (start - submit, end - start)
        } else {
            (-1, -1)
        };
        let nodes = number("Resource_List.nodect", seen).unwrap_or_else(|| {
            seen.keys.get("exec_host").map_or(-1, |h| {
                h.split('+').filter(|p| !p.is_empty()).count() as i64
            })
        });
        max_nodes = max_nodes.max(nodes);
        let asked = seen
            .keys
            .get("Resource_List.walltime")
            .and_then(|w| seconds(w))
            .unwrap_or(-1);
        let status = match (seen.deleted, number("Exit_status", seen)) {
            (true, _) => 5,
            (false, Some(0)) => 1,
            _ => 0,
        };
        let text = |key: &str| seen.keys.get(key).map_or("", String::as_str);
        let _ = writeln!(
            lines,
            "{} {} {wait} {run} {nodes} -1 -1 {nodes} {asked} -1 {status} {} {} {} {} -1 -1 -1",
            n + 1,
            submit - first,
            users.of(text("user")),
            groups.of(text("group")),
            names.of(text("jobname")),
            queues.of(text("queue")),
        );
    }
    let mut out = String::new();
    let _ = writeln!(out, "; Version: 2.2");
    let _ = writeln!(out, "; Computer: a qmesh server");
    let _ = writeln!(
        out,
        "; Conversion: qmesh-sim --to-swf from the PBS accounting log"
    );
    let _ = writeln!(out, "; UnixStartTime: {first}");
    let _ = writeln!(out, "; MaxJobs: {}", ended.len());
    let _ = writeln!(out, "; MaxRecords: {}", ended.len());
    let _ = writeln!(out, "; MaxNodes: {max_nodes}");
    let _ = writeln!(out, "; MaxProcs: {max_nodes}");
    for (name, n) in &queues.names {
        let _ = writeln!(out, "; Queue: {n} {name}");
    }
    let _ = writeln!(
        out,
        "; Note: processors are nodes; users, groups, job names and queues numbered in order of appearance"
    );
    out.push_str(&lines);
    Ok(out)
}

/// Names to numbers from 1, in order of first appearance.
#[derive(Default)]
struct Numbering {
    names: BTreeMap<String, i64>,
}

impl Numbering {
    fn of(&mut self, name: &str) -> i64 {
        if name.is_empty() {
            return -1;
        }
        let next = self.names.len() as i64 + 1;
        *self.names.entry(name.to_string()).or_insert(next)
    }
}

/// `HH:MM:SS` (or seconds) as seconds.
fn seconds(text: &str) -> Option<i64> {
    let parts: Vec<i64> = text
        .split(':')
        .map(|p| p.parse::<i64>())
        .collect::<Result<_, _>>()
        .ok()?;
    Some(parts.iter().fold(0, |acc, p| acc * 60 + p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_take_quoted_values_whole() {
        // The reader is the core's (joblog::record_keys).
        let k =
            keys("user=alice jobname=\"two words\" queue=batch Resource_List.walltime=01:00:00");
        assert_eq!(
            k,
            vec![
                ("user".into(), "alice".into()),
                ("jobname".into(), "two words".into()),
                ("queue".into(), "batch".into()),
                ("Resource_List.walltime".into(), "01:00:00".into()),
            ]
        );
        assert_eq!(seconds("01:02:03"), Some(3723));
        assert_eq!(seconds("90"), Some(90));
    }

    #[test]
    fn ended_jobs_become_swf_lines_in_submission_order() {
        let dir = tempfile::tempdir().unwrap();
        let day = "11/24/2026 10:00:00";
        let text = format!(
            "{day};Q;2.srv;user=bob group=g jobname=b queue=long ctime=1000 qtime=1000 etime=1000 Resource_List.nodect=2 Resource_List.walltime=00:10:00\n\
             {day};Q;1.srv;user=alice group=g jobname=a queue=batch ctime=900 qtime=900 etime=900 Resource_List.nodect=1 Resource_List.walltime=00:05:00\n\
             {day};Q;3.srv;user=alice group=g jobname=a queue=batch ctime=950 qtime=950 etime=950 Resource_List.nodect=1\n\
             {day};D;3.srv;requestor=alice@h\n\
             {day};E;1.srv;user=alice group=g jobname=a queue=batch ctime=900 qtime=900 etime=900 start=910 exec_host=n1/0 Resource_List.nodect=1 Resource_List.walltime=00:05:00 session=5 end=1010 Exit_status=0\n\
             {day};E;2.srv;user=bob group=g jobname=b queue=long ctime=1000 qtime=1000 etime=1000 start=1100 exec_host=n1/0+n2/0 Resource_List.nodect=2 Resource_List.walltime=00:10:00 session=6 end=1200 Exit_status=271\n"
        );
        std::fs::write(dir.path().join("20261124"), text).unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not a day").unwrap();
        let swf = from_accounting(dir.path(), None, None).unwrap();
        let jobs: Vec<&str> = swf.lines().filter(|l| !l.starts_with(';')).collect();
        assert_eq!(
            jobs,
            [
                "1 0 10 100 1 -1 -1 1 300 -1 1 1 1 1 1 -1 -1 -1",
                "2 100 100 100 2 -1 -1 2 600 -1 0 2 1 2 2 -1 -1 -1",
            ],
            "{swf}"
        );
        assert!(swf.contains("; UnixStartTime: 900"), "{swf}");
        assert!(
            swf.contains("; Queue: 1 batch") && swf.contains("; Queue: 2 long"),
            "{swf}"
        );
        // Read back by the simulator's own reader.
        let trace = crate::swf::read(swf.as_bytes(), "t").unwrap();
        assert_eq!(trace.jobs.len(), 2);
        assert_eq!(trace.queue_name(2), "long");
        let later = NaiveDate::from_ymd_opt(2026, 11, 25);
        assert!(matches!(
            from_accounting(dir.path(), later, None),
            Err(ToSwfError::Empty { .. })
        ));
    }
}
