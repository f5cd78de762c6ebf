//! qreport's figures from the accounting log, pure: the jobs that ended
//! (their `E` records) grouped by queue, user, group, account, request
//! size or day, with the measures the seeds report by: jobs, node-hours,
//! utilization (given the machine's size), mean and median wait, mean
//! expansion factor ((wait + run) / run, SDSC's Table 5) and mean bounded
//! slowdown.

use std::collections::BTreeMap;

use chrono::{DateTime, FixedOffset, TimeZone, Utc};
use serde::Serialize;

use crate::joblog::{LineKind, RecordType, parse_accounting_line, record_keys};

/// Bounded slowdown's floor on the run time, seconds.
pub const BSLD_TAU: f64 = 10.0;

/// One job's end as its `E` record says it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ended {
    pub id: String,
    pub user: String,
    pub group: String,
    pub account: String,
    pub queue: String,
    pub nodes: u32,
    pub qtime: i64,
    pub start: i64,
    pub end: i64,
}

impl Ended {
    /// From an `E` line; `None` for other lines and for a job that never
    /// started.
    pub fn from_line(line: &str) -> Option<Ended> {
        let record = parse_accounting_line(line)?;
        if record.kind != LineKind::Record(RecordType::Ended) {
            return None;
        }
        let keys: BTreeMap<String, String> = record_keys(&record.message).into_iter().collect();
        let text = |k: &str| keys.get(k).cloned().unwrap_or_default();
        let number = |k: &str| keys.get(k).and_then(|v| v.parse::<i64>().ok());
        let start = number("start").filter(|s| *s > 0)?;
        let nodes = number("Resource_List.nodect")
            .or_else(|| {
                keys.get("exec_host")
                    .map(|h| h.split('+').filter(|p| !p.is_empty()).count() as i64)
            })
            .unwrap_or(1);
        Some(Ended {
            id: record.id,
            user: text("user"),
            group: text("group"),
            account: text("account"),
            queue: text("queue"),
            nodes: u32::try_from(nodes.max(1)).unwrap_or(u32::MAX),
            qtime: number("qtime").unwrap_or(start),
            start,
            end: number("end").unwrap_or(start).max(start),
        })
    }

    pub fn wait(&self) -> i64 {
        (self.start - self.qtime).max(0)
    }

    pub fn run(&self) -> i64 {
        self.end - self.start
    }
}

/// What the jobs are grouped by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum By {
    Queue,
    User,
    Group,
    Account,
    /// Nodes asked, in power-of-two classes (1, 2, 3-4, 5-8, ...).
    Size,
    /// The day the job ended, in the time zone the report is given.
    Day,
}

impl By {
    pub fn parse(text: &str) -> Result<By, String> {
        Ok(match text {
            "queue" => By::Queue,
            "user" => By::User,
            "group" => By::Group,
            "account" => By::Account,
            "size" => By::Size,
            "day" => By::Day,
            other => {
                return Err(format!(
                    "cannot group by \"{other}\"; give queue, user, group, account, size or day"
                ));
            }
        })
    }

    fn key(self, job: &Ended, zone: FixedOffset) -> String {
        let or_none = |s: &str| {
            if s.is_empty() {
                "(none)".to_string()
            } else {
                s.to_string()
            }
        };
        match self {
            By::Queue => or_none(&job.queue),
            By::User => or_none(&job.user),
            By::Group => or_none(&job.group),
            By::Account => or_none(&job.account),
            By::Size => {
                let top = job.nodes.next_power_of_two();
                let low = top / 2 + 1;
                if top <= 2 {
                    format!("{:>5}", job.nodes)
                } else {
                    format!("{low:>5}-{top}")
                }
            }
            By::Day => zone
                .timestamp_opt(job.end, 0)
                .single()
                .map_or_else(|| "(bad time)".into(), |t| t.format("%Y-%m-%d").to_string()),
        }
    }
}

/// The figures of one group (or of all the jobs).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Row {
    pub key: String,
    pub jobs: usize,
    pub node_hours: f64,
    /// Share of the machine's node-hours over the period; `None` when its
    /// size was not given.
    pub utilization: Option<f64>,
    pub mean_wait: f64,
    pub median_wait: f64,
    pub expansion: f64,
    pub bounded_slowdown: f64,
}

/// The report: a row per group in key order, then the total.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Report {
    pub by: Option<By>,
    /// The period measured: from the first submission to the last end.
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    pub rows: Vec<Row>,
    pub total: Row,
}

/// Groups `jobs` by `by`; `nodes` is the machine's size, for
/// utilization; days are in `zone`.
pub fn report(jobs: &[Ended], by: By, nodes: Option<u32>, zone: FixedOffset) -> Report {
    let first = jobs.iter().map(|j| j.qtime).min();
    let last = jobs.iter().map(|j| j.end).max();
    let span = match (first, last) {
        (Some(f), Some(l)) => (l - f).max(1) as f64,
        _ => 1.0,
    };
    let mut groups: BTreeMap<String, Vec<&Ended>> = BTreeMap::new();
    for job in jobs {
        groups.entry(by.key(job, zone)).or_default().push(job);
    }
    let rows = groups
        .into_iter()
        .map(|(key, members)| row(key, &members, nodes, span))
        .collect();
    let all: Vec<&Ended> = jobs.iter().collect();
    Report {
        by: Some(by),
        from: first.and_then(|t| Utc.timestamp_opt(t, 0).single()),
        to: last.and_then(|t| Utc.timestamp_opt(t, 0).single()),
        rows,
        total: row("total".into(), &all, nodes, span),
    }
}

fn row(key: String, jobs: &[&Ended], nodes: Option<u32>, span: f64) -> Row {
    if jobs.is_empty() {
        return Row {
            key,
            ..Row::default()
        };
    }
    let n = jobs.len() as f64;
    let node_seconds: f64 = jobs
        .iter()
        .map(|j| f64::from(j.nodes) * j.run() as f64)
        .sum();
    let mut waits: Vec<i64> = jobs.iter().map(|j| j.wait()).collect();
    waits.sort_unstable();
    let mid = waits.len() / 2;
    let median_wait = if waits.len() % 2 == 1 {
        waits[mid] as f64
    } else {
        (waits[mid - 1] + waits[mid]) as f64 / 2.0
    };
    let expansion = jobs
        .iter()
        .map(|j| (j.wait() + j.run().max(1)) as f64 / j.run().max(1) as f64)
        .sum::<f64>()
        / n;
    let bounded_slowdown = jobs
        .iter()
        .map(|j| {
            let run = j.run() as f64;
            ((j.wait() as f64 + run) / run.max(BSLD_TAU)).max(1.0)
        })
        .sum::<f64>()
        / n;
    Row {
        key,
        jobs: jobs.len(),
        node_hours: node_seconds / 3600.0,
        utilization: nodes.map(|m| node_seconds / (f64::from(m.max(1)) * span)),
        mean_wait: waits.iter().sum::<i64>() as f64 / n,
        median_wait,
        expansion,
        bounded_slowdown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(
        id: &str,
        user: &str,
        queue: &str,
        nodes: u32,
        qtime: i64,
        start: i64,
        end: i64,
    ) -> String {
        format!(
            "11/24/2026 10:00:00;E;{id};user={user} group=g queue={queue} qtime={qtime} start={start} \
             exec_host=n1/0 Resource_List.nodect={nodes} end={end} Exit_status=0"
        )
    }

    #[test]
    fn jobs_are_grouped_with_the_seeds_measures() {
        let jobs: Vec<Ended> = [
            line("1.s", "alice", "batch", 2, 1000, 1000, 4600),
            line("2.s", "bob", "batch", 1, 1000, 2800, 6400),
            line("3.s", "alice", "long", 4, 1000, 1000, 2800),
            "11/24/2026 10:00:00;Q;4.s;user=carol queue=batch".to_string(),
            "11/24/2026 10:00:00;E;5.s;user=dave queue=batch qtime=0 start=0 end=0".to_string(),
        ]
        .iter()
        .filter_map(|l| Ended::from_line(l))
        .collect();
        assert_eq!(
            jobs.len(),
            3,
            "a Q record and a job that never started are not jobs that ran"
        );
        let utc = FixedOffset::east_opt(0).unwrap();
        let r = report(&jobs, By::Queue, Some(4), utc);
        assert_eq!(r.rows.len(), 2);
        let batch = &r.rows[0];
        assert_eq!((batch.key.as_str(), batch.jobs), ("batch", 2));
        assert_eq!(batch.node_hours, 3.0);
        assert_eq!(batch.mean_wait, 900.0);
        assert_eq!(batch.median_wait, 900.0);
        assert_eq!(batch.expansion, (1.0 + 1.5) / 2.0);
        assert_eq!(r.total.jobs, 3);
        assert_eq!(r.total.node_hours, 5.0);
        // 5 node-hours over 4 nodes for 1.5 hours.
        assert!((r.total.utilization.unwrap() - 5.0 / 6.0).abs() < 1e-9);
        let by_user = report(&jobs, By::User, None, utc);
        let keys: Vec<&str> = by_user.rows.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys, ["alice", "bob"]);
        assert_eq!(by_user.total.utilization, None);
        let by_size = report(&jobs, By::Size, None, utc);
        let keys: Vec<&str> = by_size.rows.iter().map(|r| r.key.trim()).collect();
        assert_eq!(keys, ["1", "2", "3-4"]);
        let by_day = report(&jobs, By::Day, None, utc);
        assert_eq!(by_day.rows[0].key, "1970-01-01");
        assert!(
            By::parse("colour")
                .unwrap_err()
                .contains("queue, user, group")
        );
    }
}
