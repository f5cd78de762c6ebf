//! Preemption, PBS Pro's way: which jobs may take the nodes of which, and
//! how a job that gives its nodes up is stopped.
//!
//! A job of an *express* queue (priority at or above the server's
//! `preempt_queue_prio`, 150 as in PBS Pro) that cannot start may preempt
//! running jobs of normal queues (below it), when `preempt_prio` names
//! `express_queue`. A queue's `resources_default.preempt_targets`
//! (`queue=workq,queue=long` or `NONE`) narrows whom its jobs may
//! preempt: Slurm's "this partition preempts that one". Jobs of an
//! advance reservation's queue are never preempted: their nodes are
//! theirs.
//!
//! How a preempted job gives its nodes up is `preempt_order` (PBS Pro's
//! `SCR`, optionally in bands of wall time left: `SCR 80 SC 50 S`):
//! the first method of its band that can be done. S suspends it (its
//! nodes are lent to the express job and it resumes when they are all
//! free again; the suspended span is not charged), R requeues it (only if
//! it may be rerun), D deletes it. C checkpoints it: the agent of its
//! first host runs the site's checkpoint program (`qmesh-agent
//! --checkpoint`, PBS's checkpoint_abort), then it is killed and queued
//! again, to restart from what it saved; a job submitted with `-c n` or
//! not rerunnable is not checkpointed (the next method is tried).
//!
//! This module is the policy as values; the pass (`scheduler`) chooses
//! the fewest, lowest jobs that free a placement, and `suspend` holds the
//! state's side.

use std::fmt;

use crate::job::Job;
use crate::queue::Queue;
pub use crate::resources::PreemptTargets as Targets;
use crate::server::Config;

/// PBS Pro's default `preempt_queue_prio`.
pub const EXPRESS_PRIORITY: i32 = 150;

/// How a preempted job gives its nodes up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// Suspended; its nodes lent until they are all free again.
    Suspend,
    /// Checkpointed by the site's program, then killed and queued again.
    Checkpoint,
    /// Killed and queued again.
    Requeue,
    /// Killed.
    Delete,
}

impl Method {
    pub fn letter(self) -> char {
        match self {
            Method::Suspend => 'S',
            Method::Checkpoint => 'C',
            Method::Requeue => 'R',
            Method::Delete => 'D',
        }
    }

    fn of_letter(c: char) -> Option<Method> {
        match c.to_ascii_uppercase() {
            'S' => Some(Method::Suspend),
            'C' => Some(Method::Checkpoint),
            'R' => Some(Method::Requeue),
            'D' => Some(Method::Delete),
            _ => None,
        }
    }

    /// What the job's comment says was done.
    pub fn done(self) -> &'static str {
        match self {
            Method::Suspend => "suspended",
            Method::Checkpoint => "checkpointed",
            Method::Requeue => "requeued",
            Method::Delete => "deleted",
        }
    }
}

/// `preempt_order`: methods to try, in bands of the share of wall time a
/// job has left (`SCR 80 SC 50 S`: above 80 % left SCR, above 50 % SC,
/// else S).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreemptOrder {
    /// `(methods, lower bound in percent left)`, from 100 down; the last
    /// band's bound is 0.
    bands: Vec<(Vec<Method>, u8)>,
}

impl Default for PreemptOrder {
    fn default() -> Self {
        PreemptOrder {
            bands: vec![(
                vec![Method::Suspend, Method::Checkpoint, Method::Requeue],
                0,
            )],
        }
    }
}

impl PreemptOrder {
    /// Reads PBS Pro's form: letters from S, C, R, D, then optionally a
    /// percentage and more letters, the percentages falling.
    pub fn parse(text: &str) -> Result<PreemptOrder, String> {
        let bad = |why: String| {
            format!(
                "preempt_order \"{}\": {why}; write letters of S (suspend), C (checkpoint), \
                 R (requeue), D (delete), optionally in bands of wall time left: \"SCR 80 SC 50 S\"",
                text.trim()
            )
        };
        let words: Vec<&str> = text.split_whitespace().collect();
        if words.is_empty() {
            return Err(bad("it is empty".into()));
        }
        let mut bands: Vec<(Vec<Method>, u8)> = Vec::new();
        let mut last_bound = 100u8;
        let mut i = 0;
        while i < words.len() {
            let methods = words[i]
                .chars()
                .map(|c| Method::of_letter(c).ok_or_else(|| bad(format!("'{c}' is not a method"))))
                .collect::<Result<Vec<Method>, String>>()?;
            let bound = match words.get(i + 1) {
                None => 0,
                Some(n) => match n.parse::<u8>() {
                    Ok(b) if b < last_bound => b,
                    _ => {
                        return Err(bad(format!(
                            "\"{n}\" is not a percentage below {last_bound}"
                        )));
                    }
                },
            };
            if words.get(i + 1).is_some() && words.get(i + 2).is_none() {
                return Err(bad(format!("methods must follow {bound}")));
            }
            bands.push((methods, bound));
            last_bound = bound;
            i += 2;
        }
        Ok(PreemptOrder { bands })
    }

    /// The methods for a job with `left` percent of its wall time left.
    pub fn methods_at(&self, left: f64) -> &[Method] {
        self.bands
            .iter()
            .find(|(_, bound)| left > f64::from(*bound))
            .or(self.bands.last())
            .map_or(&[], |(m, _)| m.as_slice())
    }

    /// Whether C may be chosen: in some band it comes before S and D,
    /// which can always be done.
    pub fn may_checkpoint(&self) -> bool {
        self.bands.iter().any(|(methods, _)| {
            methods
                .iter()
                .take_while(|m| !matches!(m, Method::Suspend | Method::Delete))
                .any(|m| *m == Method::Checkpoint)
        })
    }

    /// The first method of `job`'s band that can be done to it (with
    /// `used` seconds of its wall time run); `None` if none can.
    pub fn method_for(&self, job: &Job, used: u64) -> Option<Method> {
        let wall = job.walltime.max(1) as f64;
        let left = 100.0 * (wall - used as f64).max(0.0) / wall;
        let checkpointable = job
            .options
            .checkpoint
            .as_deref()
            .is_none_or(crate::job::options::wants_checkpoints);
        self.methods_at(left).iter().copied().find(|m| match m {
            Method::Suspend | Method::Delete => true,
            // Checkpointed, then queued again: it must be rerunnable.
            Method::Checkpoint => job.rerunnable && checkpointable,
            Method::Requeue => job.rerunnable,
        })
    }
}

impl fmt::Display for PreemptOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (methods, bound)) in self.bands.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            for m in methods {
                write!(f, "{}", m.letter())?;
            }
            if *bound > 0 {
                write!(f, " {bound}")?;
            }
        }
        Ok(())
    }
}

/// `preempt_prio`'s levels that qmesh knows; only `express_queue` and
/// `normal_jobs` take effect.
pub const LEVELS: &[&str] = &[
    "express_queue",
    "normal_jobs",
    "starving_jobs",
    "fairshare",
    "queue_softlimits",
    "server_softlimits",
];

/// Reads `preempt_prio` (`"express_queue, normal_jobs"`): its levels, or
/// why not. Levels other than those two are kept and have no effect;
/// the caller warns.
pub fn parse_levels(text: &str) -> Result<Vec<String>, String> {
    let mut levels = Vec::new();
    for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        for word in item.split('+').map(str::trim) {
            if !LEVELS.contains(&word) {
                return Err(format!(
                    "preempt_prio \"{}\": \"{word}\" is not a preemption level; known: {}",
                    text.trim(),
                    LEVELS.join(", ")
                ));
            }
        }
        levels.push(item.to_string());
    }
    Ok(levels)
}

/// The server's preemption settings, read for one pass.
#[derive(Clone, Debug)]
pub struct Policy {
    pub order: PreemptOrder,
    /// `preempt_queue_prio`.
    express_at: i32,
}

impl Policy {
    /// The policy, or `None` when no job may preempt: `preempt_prio`
    /// does not name `express_queue`, or no queue is express.
    pub fn of(config: &Config) -> Option<Policy> {
        let server = &config.server;
        if !server.preempt_prio.iter().any(|l| l == "express_queue") {
            return None;
        }
        let express_at = server.preempt_queue_prio;
        if !config.queues.values().any(|q| q.priority >= express_at) {
            return None;
        }
        let order = PreemptOrder::parse(&server.preempt_order).unwrap_or_default();
        Some(Policy { order, express_at })
    }

    /// A policy under which no job preempts (lent jobs still resume).
    pub fn never() -> Policy {
        Policy {
            order: PreemptOrder::default(),
            express_at: i32::MAX,
        }
    }

    /// Whether `queue`'s jobs may preempt.
    pub fn is_express(&self, queue: &Queue) -> bool {
        queue.priority >= self.express_at && queue.reservation.is_none()
    }

    /// Whether job `by` of queue `by_queue` may preempt a running job of
    /// `victim`.
    pub fn may_preempt(&self, by: &Job, by_queue: &Queue, victim: &Queue) -> bool {
        self.is_express(by_queue)
            && victim.priority < self.express_at
            && victim.reservation.is_none()
            && targets_of(by, by_queue).allow(&victim.name)
    }
}

/// Whom job `job` of `queue` may preempt: its own `preempt_targets`, else
/// its queue's default (a value that no longer reads: any).
pub fn targets_of(job: &Job, queue: &Queue) -> Targets {
    job.resource_list
        .get(Targets::RESOURCE)
        .or_else(|| queue.resources_default.get(Targets::RESOURCE))
        .and_then(|t| Targets::parse(t).ok())
        .unwrap_or(Targets::Any)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preempt_order_reads_pbs_bands_and_picks_by_wall_time_left() {
        let order = PreemptOrder::parse("SCR 80 SC 50 S").unwrap();
        assert_eq!(order.to_string(), "SCR 80 SC 50 S");
        assert_eq!(order.methods_at(90.0)[0], Method::Suspend);
        assert_eq!(order.methods_at(60.0).len(), 2);
        assert_eq!(order.methods_at(10.0), [Method::Suspend]);
        assert_eq!(PreemptOrder::default().to_string(), "SCR");
        assert_eq!(PreemptOrder::parse("rd").unwrap().to_string(), "RD");
        for bad in ["", "SX", "S 80", "S 80 R 90 D", "S 100 R"] {
            assert!(PreemptOrder::parse(bad).is_err(), "{bad:?}");
        }
        assert!(!PreemptOrder::parse("SCR").unwrap().may_checkpoint());
        assert!(PreemptOrder::parse("S 50 CR").unwrap().may_checkpoint());
        let err = PreemptOrder::parse("SX").unwrap_err();
        assert!(err.contains("'X' is not a method"), "{err}");
    }

    #[test]
    fn targets_are_queues_or_none() {
        assert_eq!(
            Targets::parse("queue=workq, queue=long").unwrap(),
            Targets::Queues(vec!["workq".into(), "long".into()])
        );
        assert_eq!(Targets::parse("NONE").unwrap(), Targets::Nobody);
        let err = Targets::parse("Resource_List.ncpus=4").unwrap_err();
        assert!(err.contains("queue=NAME"), "{err}");
    }

    #[test]
    fn preempt_prio_knows_pbs_levels() {
        assert_eq!(
            parse_levels("express_queue, normal_jobs").unwrap(),
            ["express_queue", "normal_jobs"]
        );
        assert!(parse_levels("express_queue, starving_jobs+fairshare").is_ok());
        assert!(
            parse_levels("vip")
                .unwrap_err()
                .contains("not a preemption level")
        );
    }
}
