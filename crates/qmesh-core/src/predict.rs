//! Predicted run times, so that start estimates and backfilling need not
//! believe requested wall times (users ask for two to five times what
//! their jobs run).
//!
//! Tsafrir, Etsion and Feitelson ("Backfilling using system-generated
//! predictions rather than user runtime estimates", 2007): a new job is
//! predicted to run the average of its owner's last two completed jobs,
//! never more than it asked for; with no history, what it asked for. A
//! running job that outlives its prediction is predicted again, up the
//! fixed [`LADDER`] of run times (or to its wall time, whichever comes
//! first), so a plan never counts on nodes that are still busy.
//!
//! [`RunHistory`] keeps each user's last few runs (bounded: a user's
//! [`KEPT_PER_USER`]). The state owns one and feeds it every job's end,
//! so the daemon and the simulator learn alike; nothing here reads a
//! clock.

use std::collections::{HashMap, VecDeque};

/// How many of each user's runs are kept: enough to find the last two of
/// one request among them ([`Likeness::Request`]).
pub const KEPT_PER_USER: usize = 8;

/// The run times (seconds) a running job's prediction moves up to, one
/// after another, as it outlives each: 1, 5, 15 and 30 minutes, 1, 2, 5,
/// 10, 20, 50 and 100 hours. Past the last, its wall time.
pub const LADDER: [u64; 11] = [
    60, 300, 900, 1_800, 3_600, 7_200, 18_000, 36_000, 72_000, 180_000, 360_000,
];

/// Which of a user's earlier jobs a new one is predicted from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Likeness {
    /// The user's last two (Tsafrir et al.).
    #[default]
    User,
    /// The user's last two of the same size and wall time when two such
    /// are among the runs kept, else the user's last two.
    Request,
}

/// One completed run, as the history keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub nodes: u32,
    /// What it asked for (seconds).
    pub walltime: u64,
    /// What it ran (seconds), suspensions left out.
    pub ran: u64,
}

/// Each user's last runs, newest first, at most [`KEPT_PER_USER`] each.
#[derive(Clone, Debug, Default)]
pub struct RunHistory {
    by_user: HashMap<String, VecDeque<Run>>,
    likeness: Likeness,
}

impl RunHistory {
    pub fn new(likeness: Likeness) -> RunHistory {
        RunHistory {
            by_user: HashMap::new(),
            likeness,
        }
    }

    pub fn likeness(&self) -> Likeness {
        self.likeness
    }

    /// Predicts from other like jobs from now on; the runs kept stay.
    pub fn set_likeness(&mut self, likeness: Likeness) {
        self.likeness = likeness;
    }

    /// Remembers that a job of `user` ended after running `run.ran`.
    pub fn record(&mut self, user: &str, run: Run) {
        let runs = match self.by_user.get_mut(user) {
            Some(runs) => runs,
            None => self.by_user.entry(user.to_string()).or_default(),
        };
        if runs.len() == KEPT_PER_USER {
            runs.pop_back();
        }
        runs.push_front(run);
    }

    /// The run time predicted for a new job of `user` asking `nodes` for
    /// `walltime`: the mean of the like runs (at most two), capped at
    /// `walltime` and at least 1 s; `None` when the user has no run yet
    /// (the job is then planned with its wall time).
    pub fn predict(&self, user: &str, nodes: u32, walltime: u64) -> Option<u64> {
        let runs = self.by_user.get(user).filter(|r| !r.is_empty())?;
        let same = |r: &&Run| r.nodes == nodes && r.walltime == walltime;
        let like: Vec<u64> = match self.likeness {
            Likeness::Request if runs.iter().filter(same).take(2).count() == 2 => {
                runs.iter().filter(same).take(2).map(|r| r.ran).collect()
            }
            _ => runs.iter().take(2).map(|r| r.ran).collect(),
        };
        let mean = like.iter().sum::<u64>() / like.len() as u64;
        Some(mean.min(walltime).max(1))
    }

    /// Users with runs kept.
    pub fn users(&self) -> usize {
        self.by_user.len()
    }
}

/// The seconds a job is planned to run: its prediction, never above its
/// wall time (`qalter` may have lowered it since), at least 1 s; its wall
/// time when it has no prediction.
pub fn planned_run(walltime: u64, predicted: Option<u64>) -> u64 {
    predicted.unwrap_or(walltime).min(walltime).max(1)
}

/// A running job's prediction once it has run `elapsed` seconds: as
/// planned while it has not outlived it; else the next run time of
/// [`LADDER`] beyond `elapsed`, or its wall time if that comes first (a
/// job past its wall time is being killed: its wall time).
pub fn corrected(planned: u64, elapsed: u64, walltime: u64) -> u64 {
    let walltime = walltime.max(1);
    let planned = planned.clamp(1, walltime);
    if elapsed < planned {
        return planned;
    }
    LADDER
        .iter()
        .copied()
        .find(|&step| step > elapsed)
        .map_or(walltime, |step| step.min(walltime))
}

/// Which plan a start estimate comes from (spwhen says it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Estimate {
    /// Jobs run what their owners' last two jobs ran.
    PredictedRunTimes,
    /// Jobs run their requested wall times.
    RequestedWallTimes,
}

impl Estimate {
    /// The words spwhen prints after "estimate from".
    pub fn as_str(self) -> &'static str {
        match self {
            Estimate::PredictedRunTimes => {
                "predicted run times (last two jobs of each user; their wall time for users with none)"
            }
            Estimate::RequestedWallTimes => "requested wall times",
        }
    }

    /// The key `--json` gives.
    pub fn key(self) -> &'static str {
        match self {
            Estimate::PredictedRunTimes => "predicted",
            Estimate::RequestedWallTimes => "walltime",
        }
    }
}

#[cfg(test)]
mod tests;
