//! qselect: which jobs meet every selection option (PBS Pro's qselect(1B)).
//!
//! Each option is a filter; a job is listed when it passes them all. Some
//! compare with an operator written between dots, `.eq. .ne. .ge. .gt.
//! .le. .lt.`: before the value where the attribute is implied (`-p.gt.5`,
//! `-a.ge.2230`, `-ts.lt.09251500`), between name and value in a resource
//! list (`-l walltime.gt.01:00:00,ncpus.ge.4`). No operator means `.eq.`.
//! An attribute a job does not have (no `-a` time, no such resource)
//! matches nothing, as in PBS.
//!
//! Resources are read by name from the job's `Resource_List`, so a
//! resource a site defines is selectable like the built-in ones; values
//! compare as numbers, sizes (`2gb`) or durations (`01:00:00`) when both
//! sides read as one, else as text.
//!
//! The daemon sends the jobs (the Status call); this module only decides.
//! Date-times are read by the command in the user's time zone and arrive
//! here as instants.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use crate::resources::parse_size;
use crate::time::Time;
use crate::time::parse_duration;

/// A comparison, PBS's `.op.`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Ge,
    Gt,
    Le,
    Lt,
}

const OPS: [(&str, Op); 6] = [
    (".eq.", Op::Eq),
    (".ne.", Op::Ne),
    (".ge.", Op::Ge),
    (".gt.", Op::Gt),
    (".le.", Op::Le),
    (".lt.", Op::Lt),
];

impl Op {
    /// A leading `.op.` split off `text`; none: `.eq.`.
    pub fn split(text: &str) -> (Op, &str) {
        let text = text.trim();
        for (token, op) in OPS {
            if let Some(rest) = text.strip_prefix(token) {
                return (op, rest.trim());
            }
        }
        (Op::Eq, text)
    }

    /// Whether `attribute` compared to the wanted value (`ordering`)
    /// passes.
    pub fn holds(self, ordering: Ordering) -> bool {
        match self {
            Op::Eq => ordering == Ordering::Equal,
            Op::Ne => ordering != Ordering::Equal,
            Op::Ge => ordering != Ordering::Less,
            Op::Gt => ordering == Ordering::Greater,
            Op::Le => ordering != Ordering::Greater,
            Op::Lt => ordering == Ordering::Less,
        }
    }

    fn token(self) -> &'static str {
        OPS.iter()
            .find(|(_, op)| *op == self)
            .map_or(".eq.", |(t, _)| t)
    }
}

/// Which jobs are looked at besides queued and running ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum History {
    /// Queued, held, waiting and running jobs (no `-x` or `-H`).
    #[default]
    Current,
    /// `-x`: finished ones too.
    All,
    /// `-H`: finished ones only.
    FinishedOnly,
}

/// The time attributes `-t` compares (PBS's letters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeAttr {
    /// `a`: Execution_Time (qsub -a).
    Execution,
    /// `c`: ctime.
    Created,
    /// `e`: etime, eligible since.
    Eligible,
    /// `g`: eligible_time, a duration.
    EligibleFor,
    /// `m`: mtime.
    Modified,
    /// `q`: qtime.
    Queued,
    /// `s`: stime.
    Started,
    /// `t`: estimated.start_time.
    EstimatedStart,
}

impl TimeAttr {
    pub fn from_letter(c: char) -> Option<TimeAttr> {
        Some(match c {
            'a' => TimeAttr::Execution,
            'c' => TimeAttr::Created,
            'e' => TimeAttr::Eligible,
            'g' => TimeAttr::EligibleFor,
            'm' => TimeAttr::Modified,
            'q' => TimeAttr::Queued,
            's' => TimeAttr::Started,
            't' => TimeAttr::EstimatedStart,
            _ => return None,
        })
    }
}

/// A `-t` (or `-a`) test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimeTest {
    pub attr: TimeAttr,
    pub op: Op,
    pub value: TimeValue,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TimeValue {
    At(Time),
    /// Seconds (`-tg`, eligible_time).
    Duration(u64),
}

/// One `name.op.value` of `-l`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceTest {
    pub name: String,
    pub op: Op,
    pub value: String,
}

/// A user of `-u`: `name[@host]`, the host possibly wildcarded on its
/// left (`*.example.org`); no host means any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserPattern {
    pub user: String,
    pub host: Option<String>,
}

/// Every selection option given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    pub times: Vec<TimeTest>,
    pub account: Option<String>,
    pub checkpoint: Vec<(Op, String)>,
    pub holds: Option<BTreeSet<char>>,
    pub history: History,
    /// `-J`: job arrays only.
    pub arrays_only: bool,
    pub resources: Vec<ResourceTest>,
    pub name: Option<String>,
    pub priority: Vec<(Op, i64)>,
    pub project: Option<String>,
    pub queue: Option<String>,
    pub rerunnable: Option<bool>,
    pub states: Option<BTreeSet<char>>,
    pub users: Vec<UserPattern>,
}

/// What qselect reads of a job.
#[derive(Clone, Debug)]
pub struct Candidate<'a> {
    /// The state letter qstat shows.
    pub state: char,
    pub name: &'a str,
    pub owner: &'a str,
    /// The host it was submitted from (PBS's `Job_Owner` host).
    pub owner_host: &'a str,
    /// Empty: none.
    pub account: &'a str,
    /// Empty: PBS's default project.
    pub project: &'a str,
    pub queue: &'a str,
    pub rerunnable: bool,
    /// PBS `Hold_Types`: `n`, or some of `u o s p`.
    pub hold_types: &'a str,
    pub priority: i64,
    /// PBS `Checkpoint`; empty: `u`.
    pub checkpoint: &'a str,
    pub resources: &'a BTreeMap<String, String>,
    pub execution_time: Option<Time>,
    pub ctime: Option<Time>,
    pub etime: Option<Time>,
    pub eligible_for: Option<u64>,
    pub mtime: Option<Time>,
    pub qtime: Option<Time>,
    pub stime: Option<Time>,
    pub estimated_start: Option<Time>,
    pub is_array: bool,
}

static NO_RESOURCES: BTreeMap<String, String> = BTreeMap::new();

impl Default for Candidate<'_> {
    fn default() -> Self {
        Candidate {
            state: 'Q',
            name: "",
            owner: "",
            owner_host: "",
            account: "",
            project: "",
            queue: "",
            rerunnable: true,
            hold_types: "n",
            priority: 0,
            checkpoint: "",
            resources: &NO_RESOURCES,
            execution_time: None,
            ctime: None,
            etime: None,
            eligible_for: None,
            mtime: None,
            qtime: None,
            stime: None,
            estimated_start: None,
            is_array: false,
        }
    }
}

/// PBS's name for the project of a job that names none.
pub const DEFAULT_PROJECT: &str = "_pbs_project_default";

impl Selection {
    /// Whether the job passes every option.
    pub fn matches(&self, c: &Candidate) -> bool {
        let finished = matches!(c.state, 'F' | 'M' | 'X');
        let history_ok = match self.history {
            History::Current => !finished,
            History::All => true,
            History::FinishedOnly => finished,
        };
        history_ok
            && (!self.arrays_only || c.is_array)
            && self.account.as_deref().is_none_or(|a| a == c.account)
            && self.name.as_deref().is_none_or(|n| n == c.name)
            && self.queue.as_deref().is_none_or(|q| q == c.queue)
            && self.project.as_deref().is_none_or(|p| {
                p == if c.project.is_empty() {
                    DEFAULT_PROJECT
                } else {
                    c.project
                }
            })
            && self.rerunnable.is_none_or(|r| r == c.rerunnable)
            && self
                .states
                .as_ref()
                .is_none_or(|states| states.contains(&c.state))
            && self.holds.as_ref().is_none_or(|holds| {
                let have: BTreeSet<char> = c.hold_types.chars().collect();
                *holds == have
            })
            && self
                .priority
                .iter()
                .all(|(op, p)| op.holds(c.priority.cmp(p)))
            && self.checkpoint.iter().all(|(op, want)| {
                op.holds(checkpoint_rank(c.checkpoint).cmp(&checkpoint_rank(want)))
            })
            && (self.users.is_empty() || self.users.iter().any(|u| u.matches(c)))
            && self.times.iter().all(|t| t.matches(c))
            && self.resources.iter().all(|r| r.matches(c.resources))
    }
}

impl UserPattern {
    fn matches(&self, c: &Candidate) -> bool {
        if self.user != c.owner {
            return false;
        }
        match self.host.as_deref() {
            None | Some("*") => true,
            Some(host) => match host.strip_prefix('*') {
                Some(suffix) => c.owner_host.ends_with(suffix),
                None => host == c.owner_host,
            },
        }
    }
}

impl TimeTest {
    fn matches(&self, c: &Candidate) -> bool {
        let have = match self.attr {
            TimeAttr::Execution => c.execution_time,
            TimeAttr::Created => c.ctime,
            TimeAttr::Eligible => c.etime,
            TimeAttr::Modified => c.mtime,
            TimeAttr::Queued => c.qtime,
            TimeAttr::Started => c.stime,
            TimeAttr::EstimatedStart => c.estimated_start,
            TimeAttr::EligibleFor => {
                return match (&self.value, c.eligible_for) {
                    (TimeValue::Duration(want), Some(have)) => self.op.holds(have.cmp(want)),
                    _ => false,
                };
            }
        };
        match (&self.value, have) {
            (TimeValue::At(want), Some(have)) => self.op.holds(have.cmp(want)),
            _ => false,
        }
    }
}

impl ResourceTest {
    fn matches(&self, resources: &BTreeMap<String, String>) -> bool {
        resources
            .get(&self.name)
            .is_some_and(|have| self.op.holds(compare_values(have, &self.value)))
    }
}

/// Two resource values compared as numbers, sizes or durations when both
/// read as one, else as text.
pub fn compare_values(have: &str, want: &str) -> Ordering {
    let (have, want) = (have.trim(), want.trim());
    if let (Ok(a), Ok(b)) = (have.parse::<i64>(), want.parse::<i64>()) {
        return a.cmp(&b);
    }
    let has_unit = |s: &str| s.ends_with(|c: char| c.is_ascii_alphabetic());
    if (has_unit(have) || has_unit(want))
        && let (Ok(a), Ok(b)) = (parse_size(have), parse_size(want))
    {
        return a.cmp(&b);
    }
    if (have.contains(':') || want.contains(':'))
        && let (Ok(a), Ok(b)) = (parse_duration(have), parse_duration(want))
    {
        return a.cmp(&b);
    }
    have.cmp(want)
}

/// PBS's order of checkpoint values: `n > s > c=minutes > c > u` (`w` as
/// `c`, `w=minutes` as `c=minutes`); minutes compare among themselves.
fn checkpoint_rank(value: &str) -> (u8, u64) {
    let value = value.trim();
    let minutes = |s: &str| s.trim().parse::<u64>().unwrap_or(0);
    match value {
        "" | "u" => (0, 0),
        "c" | "w" => (1, 0),
        "s" => (3, 0),
        "n" => (4, 0),
        other => match other
            .strip_prefix("c=")
            .or_else(|| other.strip_prefix("w="))
        {
            Some(m) => (2, minutes(m)),
            None => (0, 0),
        },
    }
}

/// Reads `-l name.op.value[,name.op.value...]`.
pub fn parse_resources(text: &str) -> Result<Vec<ResourceTest>, String> {
    let mut tests = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let found = OPS
            .iter()
            .filter_map(|(token, op)| part.find(token).map(|at| (at, *token, *op)))
            .min_by_key(|(at, _, _)| *at);
        let Some((at, token, op)) = found else {
            return Err(format!(
                "-l {part}: write RESOURCE.OP.VALUE with OP one of eq, ne, ge, gt, le, lt, \
                 e.g. walltime.gt.01:00:00"
            ));
        };
        let name = part[..at].trim();
        let value = part[at + token.len()..].trim();
        if name.is_empty() || value.is_empty() {
            return Err(format!(
                "-l {part}: name the resource and give a value, e.g. ncpus.ge.4"
            ));
        }
        tests.push(ResourceTest {
            name: name.to_string(),
            op,
            value: value.to_string(),
        });
    }
    if tests.is_empty() {
        return Err("-l: give at least one RESOURCE.OP.VALUE, e.g. ncpus.ge.4".into());
    }
    Ok(tests)
}

/// Reads `-t LETTER[.op.]TIME`; `at` reads a date-time.
pub fn parse_time_test(
    text: &str,
    at: &dyn Fn(&str) -> Result<Time, String>,
) -> Result<TimeTest, String> {
    let text = text.trim();
    let mut chars = text.chars();
    let attr = chars
        .next()
        .and_then(TimeAttr::from_letter)
        .ok_or_else(|| {
            format!(
                "-t {text}: start with the time attribute, one of a c e g m q s t, \
             e.g. -ts.gt.09251200"
            )
        })?;
    let (op, value) = Op::split(chars.as_str());
    let value = if attr == TimeAttr::EligibleFor {
        TimeValue::Duration(parse_duration(value).map_err(|e| format!("-t {text}: {e}"))?)
    } else {
        TimeValue::At(at(value).map_err(|e| format!("-t {text}: {e}"))?)
    };
    Ok(TimeTest { attr, op, value })
}

/// Reads `-a [.op.]TIME` (the Execution_Time test).
pub fn parse_execution_test(
    text: &str,
    at: &dyn Fn(&str) -> Result<Time, String>,
) -> Result<TimeTest, String> {
    let (op, value) = Op::split(text);
    Ok(TimeTest {
        attr: TimeAttr::Execution,
        op,
        value: TimeValue::At(at(value).map_err(|e| format!("-a {text}: {e}"))?),
    })
}

/// Reads `-p [.op.]PRIORITY`.
pub fn parse_priority(text: &str) -> Result<(Op, i64), String> {
    let (op, value) = Op::split(text);
    let p: i64 = value
        .parse()
        .map_err(|_| format!("-p {text}: the priority is a whole number, e.g. -p.gt.5"))?;
    Ok((op, p))
}

/// Reads `-c [.op.]INTERVAL`: `n`, `s`, `c`, `c=MINUTES`, `w`,
/// `w=MINUTES`, `u`; `u` only with `.eq.` or `.ne.`.
pub fn parse_checkpoint(text: &str) -> Result<(Op, String), String> {
    let (op, value) = Op::split(text);
    let ok = match value {
        "n" | "s" | "c" | "w" | "u" => true,
        other => other
            .strip_prefix("c=")
            .or_else(|| other.strip_prefix("w="))
            .is_some_and(|m| !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit())),
    };
    if !ok {
        return Err(format!(
            "-c {text}: write n, s, c, c=MINUTES, w, w=MINUTES or u, e.g. -c.gt.c=30"
        ));
    }
    if value == "u" && !matches!(op, Op::Eq | Op::Ne) {
        return Err(format!(
            "-c {text}: u (unspecified) compares only with .eq. or .ne., not {}",
            op.token()
        ));
    }
    Ok((op, value.to_string()))
}

/// Reads `-h`: `n`, or some of `u o p s` (duplicates count once).
pub fn parse_holds(text: &str) -> Result<BTreeSet<char>, String> {
    let holds: BTreeSet<char> = text.trim().chars().collect();
    let ok = !holds.is_empty()
        && (holds.iter().all(|c| "uops".contains(*c)) || holds == BTreeSet::from(['n']));
    if !ok {
        return Err(format!(
            "-h {text}: write n (no hold) or some of u, o, p, s, e.g. -h uo"
        ));
    }
    Ok(holds)
}

/// Reads `-s`: some of `B E F H M Q R S T U W X`.
pub fn parse_states(text: &str) -> Result<BTreeSet<char>, String> {
    let states: BTreeSet<char> = text.trim().chars().collect();
    if states.is_empty() || !states.iter().all(|c| "BEFHMQRSTUWX".contains(*c)) {
        return Err(format!(
            "-s {text}: write job state letters, some of B E F H M Q R S T U W X, e.g. -s QR"
        ));
    }
    Ok(states)
}

/// Reads `-u user[@host][,user[@host]...]`.
pub fn parse_users(text: &str) -> Result<Vec<UserPattern>, String> {
    let users: Vec<UserPattern> = text
        .split(',')
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(|u| match u.split_once('@') {
            Some((user, host)) => UserPattern {
                user: user.to_string(),
                host: Some(host.to_string()),
            },
            None => UserPattern {
                user: u.to_string(),
                host: None,
            },
        })
        .collect();
    if users.is_empty() || users.iter().any(|u| u.user.is_empty()) {
        return Err(format!(
            "-u {text}: write user names, each with an optional @host, e.g. -u alice,bob@login1"
        ));
    }
    Ok(users)
}

/// Reads `-r y|n`.
pub fn parse_rerunnable(text: &str) -> Result<bool, String> {
    match text.trim() {
        "y" | "Y" => Ok(true),
        "n" | "N" => Ok(false),
        other => Err(format!("-r {other}: write y or n")),
    }
}

#[cfg(test)]
mod tests;
