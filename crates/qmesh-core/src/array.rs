//! Job arrays: one submission, many sub-jobs (PBS Pro's `qsub -J 1-100:2%10`,
//! Torque's `qsub -t 1,4,9-12%5`).
//!
//! An array is one job record until its sub-jobs start, as Slurm keeps it:
//! the record holds the index list ([`ArraySpec`]) and the sub-jobs deleted
//! before they started. A sub-job gets a record of its own only when it
//! starts or is acted on alone (held, altered); which sub-jobs are left is
//! worked out at load from the records that exist ([`ArrayTally`]). Sets
//! are of positions (0..count) in the index list, not of indices, so a
//! stepped array (`1-99999:2`) is still one range, and a 100,000-task
//! array costs its store a few hundred bytes.
//!
//! A sub-job's id carries its index ([`JobId::sub_job`]): `12[3]` is a job like
//! any other to the store, the agents and the logs.

use std::fmt;

use rangemap::RangeSet;
use serde::{Deserialize, Serialize};

use crate::error::CoreError;
use crate::ids::JobId;

/// Positions in an array's index list, as ranges.
pub type Positions = RangeSet<u32>;

/// The largest index a sub-job may have (the id keeps 24 bits for it).
pub const MAX_INDEX: u32 = (1 << 24) - 2;

/// Which command's form the array was asked in: PBS Pro's `-J` or
/// Torque's `-t`. It decides the output files' names (`NAME.o12.3` or
/// `NAME.o12-3`) and the environment's variables.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArrayStyle {
    #[default]
    PbsPro,
    Torque,
}

/// `first`, `first + step`, ... up to `last`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    pub first: u32,
    pub last: u32,
    pub step: u32,
}

impl Run {
    fn count(self) -> u32 {
        (self.last - self.first) / self.step + 1
    }
}

/// The indices of an array, as asked, and its throttle (`%N`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArraySpec {
    pub runs: Vec<Run>,
    /// At most this many sub-jobs run at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttle: Option<u32>,
    #[serde(default)]
    pub style: ArrayStyle,
}

impl ArraySpec {
    /// PBS Pro's `-J X-Y[:Z][%N]`.
    pub fn parse_pbs(text: &str) -> Result<ArraySpec, CoreError> {
        let (body, throttle) = split_throttle(text, "-J")?;
        let bad = |why: &str| bad("-J", text, why);
        let (first, rest) = body
            .split_once('-')
            .ok_or_else(|| bad("write it as X-Y, X-Y:STEP, with %N to run at most N at once"))?;
        let (last, step) = match rest.split_once(':') {
            Some((last, step)) => (last, number(step, "-J", text)?),
            None => (rest, 1),
        };
        let run = run_of(number(first, "-J", text)?, number(last, "-J", text)?, step)
            .map_err(|why| bad(&why))?;
        Ok(ArraySpec {
            runs: vec![run],
            throttle,
            style: ArrayStyle::PbsPro,
        })
    }

    /// Torque's `-t 1-100`, `-t 1,4,9-12`, with `%N` to run at most N.
    pub fn parse_torque(text: &str) -> Result<ArraySpec, CoreError> {
        let (body, throttle) = split_throttle(text, "-t")?;
        let mut runs: Vec<Run> = Vec::new();
        for part in body.split(',') {
            let part = part.trim();
            let (range, step) = match part.split_once(':') {
                Some((range, step)) => (range, number(step, "-t", text)?),
                None => (part, 1),
            };
            let (first, last) = match range.split_once('-') {
                Some((a, b)) => (number(a, "-t", text)?, number(b, "-t", text)?),
                None => {
                    let n = number(range, "-t", text)?;
                    (n, n)
                }
            };
            let run = run_of(first, last, step).map_err(|why| bad("-t", text, &why))?;
            if let Some(prev) = runs.last()
                && run.first <= prev.last
            {
                return Err(bad(
                    "-t",
                    text,
                    "list the indices in increasing order, each once (1,4,9-12)",
                ));
            }
            runs.push(run);
        }
        Ok(ArraySpec {
            runs,
            throttle,
            style: ArrayStyle::Torque,
        })
    }

    /// How many sub-jobs it has.
    pub fn count(&self) -> u32 {
        self.runs.iter().map(|r| r.count()).sum()
    }

    /// The index at a position of the list.
    pub fn index_at(&self, mut pos: u32) -> Option<u32> {
        for run in &self.runs {
            let n = run.count();
            if pos < n {
                return Some(run.first + pos * run.step);
            }
            pos -= n;
        }
        None
    }

    /// Where an index stands in the list, if it is one of the array's.
    pub fn position_of(&self, index: u32) -> Option<u32> {
        let mut before = 0;
        for run in &self.runs {
            if (run.first..=run.last).contains(&index) && (index - run.first) % run.step == 0 {
                return Some(before + (index - run.first) / run.step);
            }
            before += run.count();
        }
        None
    }

    /// Every position whose index lies in `first..=last`, as ranges.
    pub fn positions_between(&self, first: u32, last: u32) -> RangeSet<u32> {
        let mut set = RangeSet::new();
        let mut before = 0;
        for run in &self.runs {
            let lo = first.max(run.first);
            let hi = last.min(run.last);
            if lo <= hi {
                let from = (lo - run.first).div_ceil(run.step);
                let to = (hi - run.first) / run.step;
                if from <= to {
                    set.insert(before + from..before + to + 1);
                }
            }
            before += run.count();
        }
        set
    }

    /// The indices as asked, without the throttle (`array_indices_submitted`).
    pub fn indices_text(&self) -> String {
        let runs: Vec<String> = self
            .runs
            .iter()
            .map(|r| match (r.first == r.last, r.step) {
                (true, _) => r.first.to_string(),
                (false, 1) => format!("{}-{}", r.first, r.last),
                (false, s) => format!("{}-{}:{s}", r.first, r.last),
            })
            .collect();
        runs.join(",")
    }

    /// The default output file of a sub-job, to be completed by
    /// [`sub_path`]: `NAME.o12.^array_index^` (PBS Pro) or
    /// `NAME.o12-^array_index^` (Torque).
    pub fn default_file(&self, name: &str, kind: char, id: JobId) -> String {
        let sep = match self.style {
            ArrayStyle::PbsPro => '.',
            ArrayStyle::Torque => '-',
        };
        format!("{name}.{kind}{id}{sep}{INDEX_TOKEN}")
    }
}

/// The positions in both sets.
pub fn intersection(a: &Positions, b: &Positions) -> Positions {
    let mut both = Positions::new();
    for r in a.iter() {
        for hit in b.overlapping(r) {
            both.insert(hit.start.max(r.start)..hit.end.min(r.end));
        }
    }
    both
}

/// How many positions a set holds.
pub fn count(set: &Positions) -> u32 {
    set.iter().map(|r| r.end - r.start).sum()
}

/// What PBS replaces with a sub-job's index in its output paths.
pub const INDEX_TOKEN: &str = "^array_index^";

/// A sub-job's path: the array's with its index in place of
/// `^array_index^`.
pub fn sub_path(path: &str, index: u32) -> String {
    path.replace(INDEX_TOKEN, &index.to_string())
}

fn split_throttle<'a>(text: &'a str, option: &str) -> Result<(&'a str, Option<u32>), CoreError> {
    let text = text.trim();
    match text.split_once('%') {
        Some((body, n)) => {
            let n = number(n, option, text)?;
            if n == 0 {
                return Err(bad(option, text, "%N must be at least 1"));
            }
            Ok((body.trim(), Some(n)))
        }
        None => Ok((text, None)),
    }
}

fn run_of(first: u32, last: u32, step: u32) -> Result<Run, String> {
    if step == 0 {
        return Err("the step must be at least 1".into());
    }
    if first > last {
        return Err(format!("the first index {first} is above the last {last}"));
    }
    if last > MAX_INDEX {
        return Err(format!("indices go up to {MAX_INDEX}"));
    }
    Ok(Run { first, last, step })
}

fn number(text: &str, option: &str, whole: &str) -> Result<u32, CoreError> {
    let text = text.trim();
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad(
            option,
            whole,
            &format!("\"{text}\" is not a whole number"),
        ));
    }
    text.parse()
        .map_err(|_| bad(option, whole, &format!("{text} is too large")))
}

fn bad(option: &str, text: &str, why: &str) -> CoreError {
    let form = match option {
        "-J" => "-J 1-100, -J 1-100:2, -J 1-100%10",
        _ => "-t 1-100, -t 1,4,9-12, -t 0-99%10",
    };
    CoreError::BadOption {
        message: format!("{option} {text}: {why}; for example {form}"),
    }
}

/// An array's part of its job record: what was asked, and which sub-jobs
/// were deleted before they started. The rest is derived ([`ArrayTally`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct JobArray {
    pub spec: ArraySpec,
    /// Positions deleted before they started (qdel of a range, or of the
    /// array).
    #[serde(default, skip_serializing_if = "RangeSet::is_empty")]
    pub removed: RangeSet<u32>,
    /// Worked out at admission and at load; never stored.
    #[serde(skip)]
    pub tally: ArrayTally,
}

impl PartialEq for JobArray {
    fn eq(&self, other: &JobArray) -> bool {
        self.spec == other.spec && self.removed == other.removed
    }
}

impl Eq for JobArray {}

impl JobArray {
    pub fn new(spec: ArraySpec) -> JobArray {
        let mut array = JobArray {
            spec,
            removed: RangeSet::new(),
            tally: ArrayTally::default(),
        };
        array.tally.unstarted.insert(0..array.spec.count());
        array
    }

    /// Sub-jobs not yet started and not deleted.
    pub fn unstarted(&self) -> u32 {
        count(&self.tally.unstarted)
    }

    /// Whether its throttle lets one more sub-job start, with `extra`
    /// started in this pass already.
    pub fn throttle_room(&self, extra: u32) -> bool {
        self.spec
            .throttle
            .is_none_or(|n| self.tally.running + extra < n)
    }

    /// Whether every sub-job has ended (or was deleted before it started).
    pub fn is_done(&self) -> bool {
        self.tally.unstarted.is_empty() && self.tally.live == 0
    }

    /// PBS Pro's exit status of an array: 0 when every sub-job exited 0,
    /// 1 when one did not, 2 when one was deleted.
    pub fn exit_status(&self) -> i32 {
        if self.tally.deleted {
            2
        } else if self.tally.failed {
            1
        } else {
            0
        }
    }

    /// What is left of it, for spq and spwhen: `95 of 100 left, 3
    /// running, at most 5`.
    pub fn left_text(&self) -> String {
        let mut text = format!(
            "{} of {} left, {} running",
            self.unstarted(),
            self.spec.count(),
            self.tally.running
        );
        if let Some(n) = self.spec.throttle {
            text.push_str(&format!(", at most {n}"));
        }
        text
    }

    /// How many sub-jobs are in each state, for qstat's `array_state_count`.
    pub fn state_count(&self) -> String {
        let t = &self.tally;
        let done = self.spec.count() - self.unstarted() - t.live;
        format!(
            "Queued:{} Running:{} Exiting:0 Expired:{done} ",
            self.unstarted() + t.live - t.running,
            t.running
        )
    }
}

/// What an array's sub-jobs are doing, derived from their records.
#[derive(Clone, Debug, Default)]
pub struct ArrayTally {
    /// Positions with no record yet and not deleted.
    pub unstarted: RangeSet<u32>,
    /// Sub-jobs with a record that have not finished.
    pub live: u32,
    /// Sub-jobs running (or exiting).
    pub running: u32,
    /// Sub-jobs that ever had a record: the array has begun (`B`).
    pub begun: u32,
    /// A sub-job ended with a non-zero exit status.
    pub failed: bool,
    /// A sub-job was deleted, or the array was.
    pub deleted: bool,
}

/// What a job id typed in a command names: one job, or some of an array.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Named {
    /// A job, a whole array (`12[]` or `12`), or one sub-job (`12[3]`).
    One(JobId),
    /// Sub-jobs of an array whose indices lie in `first..=last` (`12[5-9]`).
    Range { array: JobId, first: u32, last: u32 },
}

impl Named {
    /// Reads `12`, `12[]`, `12[3]`, `12[5-9]`, each with or without
    /// `.server`.
    pub fn parse(text: &str, server: &str) -> Result<Named, CoreError> {
        let text = text.trim();
        let Some(open) = text.find('[') else {
            return JobId::parse(text, server).map(Named::One);
        };
        let bad = || CoreError::BadJobId {
            text: text.to_string(),
            server: server.to_string(),
        };
        let close = text[open..].find(']').map(|c| open + c).ok_or_else(bad)?;
        let rest = format!("{}{}", &text[..open], &text[close + 1..]);
        let array = JobId::parse(&rest, server).map_err(|e| match e {
            CoreError::BadJobId { .. } => bad(),
            other => other,
        })?;
        let inside = &text[open + 1..close];
        let index = |s: &str| -> Result<u32, CoreError> {
            let s = s.trim();
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            s.parse::<u32>()
                .ok()
                .filter(|&n| n <= MAX_INDEX)
                .ok_or_else(bad)
        };
        if inside.is_empty() {
            return Ok(Named::One(array));
        }
        match inside.split_once('-') {
            Some((a, b)) => {
                let (first, last) = (index(a)?, index(b)?);
                if first > last {
                    return Err(bad());
                }
                Ok(Named::Range { array, first, last })
            }
            None => Ok(Named::One(array.sub_job(index(inside)?))),
        }
    }
}

impl fmt::Display for Named {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Named::One(id) => write!(f, "{id}"),
            Named::Range { array, first, last } => write!(f, "{array}[{first}-{last}]"),
        }
    }
}

#[cfg(test)]
mod tests;
