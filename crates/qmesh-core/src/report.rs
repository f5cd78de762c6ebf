//! qreport's figures from the accounting log, pure: the jobs that ended
//! (their `E` records) grouped by queue, user, group, account, request
//! size, run time, node set, day, month or calendar period, with the
//! measures the seeds report by: jobs, users, node-hours and their share,
//! utilization (given the machine), mean and median wait, mean run,
//! expansion factor ((wait + run) / run, SDSC's Table 5) and bounded
//! slowdown.
//!
//! Who belongs to a group: a job's queue, owner, size or run time; for a
//! node set, every job that ran on it; for a day, month or period, the
//! jobs submitted in it (their waits are what that time of day gave).
//! Node-hours are shared out by where they fell: a job on two node sets
//! counts its nodes on each, a run crossing midnight or the end of prime
//! time counts on both sides. Utilization is a group's node-hours over
//! the node-hours there were: the machine's (or the set's) nodes times the
//! time measured, from the first submission to the last end, or the part
//! of it that was that day or period.

mod stretches;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;
use serde::Serialize;

use crate::calendar::Calendar;
use crate::joblog::{LineKind, RecordType, parse_accounting_line, record_keys};
pub use stretches::HOLIDAY;
use stretches::{Stretch, calendar_buckets, holding, overlaps, period_stretches};

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
    /// The nodes of `exec_host`, one entry per node (empty when the
    /// record does not say).
    pub exec_nodes: Vec<String>,
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
        // PBS's exec_host: host/slot[*cpus]+host/slot...
        let exec_nodes: Vec<String> = keys
            .get("exec_host")
            .map(|h| {
                h.split('+')
                    .filter(|p| !p.is_empty())
                    .map(|p| p.split('/').next().unwrap_or(p).to_string())
                    .collect()
            })
            .unwrap_or_default();
        let nodes = number("Resource_List.nodect")
            .unwrap_or(exec_nodes.len() as i64)
            .max(1);
        Some(Ended {
            id: record.id,
            user: text("user"),
            group: text("group"),
            account: text("account"),
            queue: text("queue"),
            nodes: u32::try_from(nodes).unwrap_or(u32::MAX),
            exec_nodes,
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

/// What the report knows beyond the log: the machine's size, its node
/// sets (for `--by node_set` and the jobs of each set), its calendar (the
/// zone days begin in, prime time, holidays, named periods), and the time
/// measured.
#[derive(Clone, Debug, Default)]
pub struct Context {
    /// Nodes in all; `None` when not known (no utilization then).
    pub nodes: Option<u32>,
    /// Each node set's name and nodes.
    pub sets: Vec<(String, Vec<String>)>,
    pub calendar: Calendar,
    /// The time measured, `[from, to)` in Unix seconds: the days asked
    /// for. Node-hours outside it are not counted. `None`: from the first
    /// submission to the last end.
    pub window: Option<(i64, i64)>,
}

impl Context {
    fn zone(&self) -> Tz {
        self.calendar.zone().unwrap_or(Tz::UTC)
    }
}

/// What the jobs are grouped by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum By {
    Queue,
    User,
    Group,
    Account,
    /// Nodes asked, in power-of-two classes (1, 2, 3-4, 5-8, ...).
    Size,
    /// Run time in whole hours, rounded up (SDSC's Table 4).
    Runtime,
    /// The node sets the jobs ran on.
    NodeSet,
    /// The local day (in the calendar's zone) of submission.
    Day,
    Month,
    /// The calendar's periods: prime, non-prime, holidays, named ones.
    Period,
}

impl By {
    pub const NAMES: &str =
        "queue, user, group, account, size, runtime, node_set, day, month or period";

    pub fn parse(text: &str) -> Result<By, String> {
        Ok(match text {
            "queue" => By::Queue,
            "user" => By::User,
            "group" => By::Group,
            "account" | "project" => By::Account,
            "size" => By::Size,
            "runtime" => By::Runtime,
            "node_set" | "nodeset" | "set" => By::NodeSet,
            "day" => By::Day,
            "month" => By::Month,
            "period" => By::Period,
            other => {
                return Err(format!("cannot group by \"{other}\"; give {}", By::NAMES));
            }
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            By::Queue => "queue",
            By::User => "user",
            By::Group => "group",
            By::Account => "account",
            By::Size => "size",
            By::Runtime => "runtime",
            By::NodeSet => "node_set",
            By::Day => "day",
            By::Month => "month",
            By::Period => "period",
        }
    }

    /// The key of a group that is one value of the job's.
    fn key(self, job: &Ended) -> String {
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
            By::Size => size_class(job.nodes),
            By::Runtime => format!("{:>4}", (job.run().max(1) as u64).div_ceil(3600)),
            By::NodeSet | By::Day | By::Month | By::Period => String::new(),
        }
    }
}

/// `    1`, `    2`, `  3-4`, `  5-8`: keys that sort in size order.
fn size_class(nodes: u32) -> String {
    let top = nodes.next_power_of_two();
    if top <= 2 {
        format!("{nodes:>5}")
    } else {
        format!("{:>5}-{top}", top / 2 + 1)
    }
}

/// The figures of one group (or of all the jobs).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Row {
    pub key: String,
    pub jobs: usize,
    /// Distinct users among the jobs.
    pub users: usize,
    pub node_hours: f64,
    /// This group's node-hours over all the jobs' node-hours.
    pub share: f64,
    /// Node-hours over the node-hours there were; `None` when the
    /// machine's size is not known.
    pub utilization: Option<f64>,
    pub mean_wait: f64,
    pub median_wait: f64,
    pub mean_run: f64,
    pub expansion: f64,
    pub bounded_slowdown: f64,
    /// The group's jobs by the node set most of their nodes were in
    /// (given the node sets).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub jobs_by_set: BTreeMap<String, usize>,
}

/// The report: a row per group in key order, then the total.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Report {
    pub by: Option<By>,
    /// The time measured: from the first submission to the last end.
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    /// Jobs running on average over that time.
    pub mean_running: f64,
    pub rows: Vec<Row>,
    pub total: Row,
}

/// One group being gathered: its jobs, node-seconds and the node-seconds
/// there were.
struct Group<'a> {
    key: String,
    members: Vec<&'a Ended>,
    node_seconds: f64,
    capacity: Option<f64>,
}

impl<'a> Group<'a> {
    fn new(key: String) -> Group<'a> {
        Group {
            key,
            members: Vec::new(),
            node_seconds: 0.0,
            capacity: None,
        }
    }
}

/// Groups `jobs` by `by` in `machine`'s context.
pub fn report(jobs: &[Ended], by: By, machine: &Context) -> Report {
    let (first, last) = match machine.window {
        Some((from, to)) if !jobs.is_empty() => (Some(from), Some(to)),
        _ => (
            jobs.iter().map(|j| j.qtime).min(),
            jobs.iter().map(|j| j.end).max(),
        ),
    };
    let (from, to) = (
        first.unwrap_or(0),
        last.unwrap_or(0).max(first.unwrap_or(0)),
    );
    let span = (to - from).max(1) as f64;
    // A job's run within the time measured.
    let within = |job: &Ended| (job.end.min(to) - job.start.max(from)).max(0) as f64;
    let set_of = set_of(machine);
    let nodes = machine.nodes.map(f64::from);
    let groups = match by {
        By::NodeSet => by_node_set(jobs, machine, &set_of, span, &within),
        By::Day | By::Month => {
            let (keys, stretches) = calendar_buckets(machine.zone(), from, to, by == By::Month);
            over_time(jobs, keys, &[stretches], nodes)
        }
        By::Period => {
            let mut names = vec![
                crate::calendar::PRIME.to_string(),
                crate::calendar::NON_PRIME.to_string(),
            ];
            if !machine.calendar.holidays.is_empty() {
                names.push(HOLIDAY.to_string());
            }
            names.extend(machine.calendar.periods.keys().cloned());
            let stretches: Vec<Vec<Stretch>> = names
                .iter()
                .enumerate()
                .map(|(i, name)| period_stretches(&machine.calendar, name, from, to, i))
                .collect();
            over_time(jobs, names, &stretches, nodes)
        }
        _ => {
            let mut keyed: BTreeMap<String, Group> = BTreeMap::new();
            for job in jobs {
                let key = by.key(job);
                let g = keyed.entry(key.clone()).or_insert_with(|| Group::new(key));
                g.members.push(job);
                g.node_seconds += f64::from(job.nodes) * within(job);
            }
            keyed
                .into_values()
                .map(|mut g| {
                    g.capacity = nodes.map(|n| n * span);
                    g
                })
                .collect()
        }
    };
    let all_seconds: f64 = jobs.iter().map(|j| f64::from(j.nodes) * within(j)).sum();
    let total = Group {
        key: "total".into(),
        members: jobs.iter().collect(),
        node_seconds: all_seconds,
        capacity: nodes.map(|n| n * span),
    };
    let running: f64 = jobs.iter().map(within).sum();
    Report {
        by: Some(by),
        from: first.and_then(|t| Utc.timestamp_opt(t, 0).single()),
        to: last.and_then(|t| Utc.timestamp_opt(t, 0).single()),
        mean_running: if jobs.is_empty() { 0.0 } else { running / span },
        rows: groups
            .into_iter()
            .map(|g| row(g, all_seconds, &set_of))
            .collect(),
        total: row(total, all_seconds, &set_of),
    }
}

/// Each node's set.
fn set_of(machine: &Context) -> HashMap<&str, &str> {
    machine
        .sets
        .iter()
        .flat_map(|(set, nodes)| nodes.iter().map(move |n| (n.as_str(), set.as_str())))
        .collect()
}

/// Node sets as groups: each job in every set it ran on, with its nodes
/// there; nodes of no set under `(other)`, jobs that name none under
/// `(unknown)`.
fn by_node_set<'a>(
    jobs: &'a [Ended],
    machine: &Context,
    set_of: &HashMap<&str, &str>,
    span: f64,
    within: &dyn Fn(&Ended) -> f64,
) -> Vec<Group<'a>> {
    let mut groups: BTreeMap<String, Group> = machine
        .sets
        .iter()
        .map(|(name, nodes)| {
            let mut g = Group::new(name.clone());
            g.capacity = Some(nodes.len() as f64 * span);
            (name.clone(), g)
        })
        .collect();
    for job in jobs {
        let mut on: BTreeMap<&str, u32> = BTreeMap::new();
        for node in &job.exec_nodes {
            *on.entry(set_of.get(node.as_str()).copied().unwrap_or("(other)"))
                .or_default() += 1;
        }
        if on.is_empty() {
            on.insert("(unknown)", job.nodes);
        }
        for (set, count) in on {
            let g = groups
                .entry(set.to_string())
                .or_insert_with(|| Group::new(set.to_string()));
            g.members.push(job);
            g.node_seconds += f64::from(count) * within(job);
        }
    }
    groups.into_values().collect()
}

/// Groups over time: `stretches[k]` (sorted, disjoint) are where groups
/// are; a job joins the group its submission falls in and shares its
/// node-seconds out by overlap.
fn over_time<'a>(
    jobs: &'a [Ended],
    keys: Vec<String>,
    stretches: &[Vec<Stretch>],
    nodes: Option<f64>,
) -> Vec<Group<'a>> {
    let mut groups: Vec<Group> = keys
        .into_iter()
        .map(|key| Group {
            capacity: nodes.map(|_| 0.0),
            ..Group::new(key)
        })
        .collect();
    for list in stretches {
        for s in list {
            if let (Some(g), Some(n)) = (groups.get_mut(s.group), nodes) {
                g.capacity = Some(g.capacity.unwrap_or(0.0) + n * (s.end - s.start) as f64);
            }
        }
        for job in jobs {
            if let Some(g) = holding(list, job.qtime).and_then(|i| groups.get_mut(i)) {
                g.members.push(job);
            }
            overlaps(list, job.start, job.end, |i, secs| {
                if let Some(g) = groups.get_mut(i) {
                    g.node_seconds += f64::from(job.nodes) * secs as f64;
                }
            });
        }
    }
    groups
}

fn row(g: Group, all_seconds: f64, set_of: &HashMap<&str, &str>) -> Row {
    let jobs = &g.members;
    let mut out = Row {
        key: g.key,
        node_hours: g.node_seconds / 3600.0,
        share: if all_seconds > 0.0 {
            g.node_seconds / all_seconds
        } else {
            0.0
        },
        utilization: g
            .capacity
            .map(|c| if c > 0.0 { g.node_seconds / c } else { 0.0 }),
        ..Row::default()
    };
    if jobs.is_empty() {
        return out;
    }
    let n = jobs.len() as f64;
    let mut waits: Vec<i64> = jobs.iter().map(|j| j.wait()).collect();
    waits.sort_unstable();
    let mid = waits.len() / 2;
    out.median_wait = if waits.len() % 2 == 1 {
        waits[mid] as f64
    } else {
        (waits[mid - 1] + waits[mid]) as f64 / 2.0
    };
    out.jobs = jobs.len();
    out.users = jobs.iter().map(|j| &j.user).collect::<BTreeSet<_>>().len();
    out.mean_wait = waits.iter().sum::<i64>() as f64 / n;
    out.mean_run = jobs.iter().map(|j| j.run() as f64).sum::<f64>() / n;
    out.expansion = jobs
        .iter()
        .map(|j| (j.wait() + j.run().max(1)) as f64 / j.run().max(1) as f64)
        .sum::<f64>()
        / n;
    out.bounded_slowdown = jobs
        .iter()
        .map(|j| {
            let run = j.run() as f64;
            ((j.wait() as f64 + run) / run.max(BSLD_TAU)).max(1.0)
        })
        .sum::<f64>()
        / n;
    if !set_of.is_empty() {
        for job in jobs {
            *out.jobs_by_set.entry(main_set(job, set_of)).or_default() += 1;
        }
    }
    out
}

/// The node set most of a job's nodes were in (the first such by name).
fn main_set(job: &Ended, set_of: &HashMap<&str, &str>) -> String {
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for node in &job.exec_nodes {
        *count
            .entry(set_of.get(node.as_str()).copied().unwrap_or("(other)"))
            .or_default() += 1;
    }
    let most = count.values().copied().max().unwrap_or(0);
    count
        .into_iter()
        .find(|(_, c)| *c == most)
        .map_or_else(|| "(unknown)".to_string(), |(s, _)| s.to_string())
}

#[cfg(test)]
mod tests;
