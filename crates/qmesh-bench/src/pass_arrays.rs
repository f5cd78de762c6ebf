//! One scheduling pass over a queue of job arrays, against the same queue
//! of plain jobs. An array waits in its queue as one pending job, and a
//! pass plans its sub-jobs one after another only while they can start, so
//! 1,000 arrays of 1,000 sub-jobs should cost a pass what 1,000 plain jobs
//! cost, not what a million would.
//!
//! Both queues come from the same generator (`pass::workload`: the same
//! sizes, wall times, owners and submit times) on the same full machine,
//! and their passes are timed alternately, so that a shared machine's slow
//! phases fall on both alike.

use std::time::{Duration, Instant};

use qmesh_core::{Backfill, Scheduler, State};

use crate::Report;
use crate::pass::{bench_epoch, workload};

/// `ARRAYSxTASKS`, as given to `--arrays`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub arrays: usize,
    pub tasks: u32,
}

/// Reads `1000x1000` (arrays × sub-jobs each); for clap.
pub fn parse_shape(text: &str) -> Result<Shape, String> {
    let wrong = || format!("\"{text}\": give ARRAYSxTASKS, for example 1000x1000");
    let (a, t) = text.trim().split_once(['x', 'X']).ok_or_else(wrong)?;
    let arrays: usize = a.trim().parse().map_err(|_| wrong())?;
    let tasks: u32 = t.trim().parse().map_err(|_| wrong())?;
    if arrays == 0 || tasks == 0 {
        return Err(format!("\"{text}\": both counts must be at least 1"));
    }
    Ok(Shape { arrays, tasks })
}

/// Medians (and ranges) of `runs` passes of each queue, EASY and
/// conservative.
pub fn run(nodes: usize, shape: Shape, runs: usize, calendar: bool) -> anyhow::Result<Report> {
    let Shape { arrays, tasks } = shape;
    let mut text = format!(
        "scheduling pass, {nodes} flat nodes all running, full depth{}: {arrays} arrays of {tasks} \
         sub-jobs against {arrays} plain jobs of the same sizes and wall times \
         (passes alternated; median [min - max] of {}):\n",
        if calendar {
            ", queue following the calendar"
        } else {
            ""
        },
        runs.max(1)
    );
    let mut rows = Vec::new();
    for mode in [Backfill::Easy, Backfill::Conservative] {
        let plain = workload(nodes, arrays, mode, calendar, None)?;
        let array = workload(nodes, arrays, mode, calendar, Some(tasks))?;
        let waiting = sub_jobs_waiting(&array);
        let expected = arrays as u64 * u64::from(tasks);
        if waiting != expected {
            anyhow::bail!(
                "the array queue holds {waiting} sub-jobs waiting, not {expected}: \
                 the benchmark would not measure what it says"
            );
        }
        let (mut p, mut a) = (Timed::default(), Timed::default());
        for _ in 0..runs.max(1) {
            p.pass(&plain)?;
            a.pass(&array)?;
        }
        let (p, a) = (p.sorted(), a.sorted());
        text.push_str(&format!(
            "  {:>12}: plain {} ({} reservations), arrays {} ({} reservations, {waiting} sub-jobs waiting)\n",
            mode.as_str(),
            p.text(),
            p.reserved,
            a.text(),
            a.reserved,
        ));
        rows.push(serde_json::json!({
            "backfill": mode.as_str(),
            "calendar": calendar,
            "nodes": nodes,
            "arrays": arrays,
            "tasks_per_array": tasks,
            "sub_jobs_waiting": waiting,
            "plain": p.json(),
            "arrays_pass": a.json(),
        }));
    }
    Ok(Report {
        text: text.trim_end().to_string(),
        json: serde_json::json!({ "bench": "pass_arrays", "results": rows }),
    })
}

/// Sub-jobs left to start, over every array in the state.
fn sub_jobs_waiting(state: &State) -> u64 {
    state
        .jobs()
        .filter_map(|j| j.array.as_ref())
        .map(|a| u64::from(a.unstarted()))
        .sum()
}

/// The passes of one queue.
#[derive(Default)]
struct Timed {
    times: Vec<Duration>,
    reserved: usize,
}

impl Timed {
    fn pass(&mut self, state: &State) -> anyhow::Result<()> {
        let now = bench_epoch()?;
        let start = Instant::now();
        let plan = Scheduler.pass(state, now);
        self.times.push(start.elapsed());
        self.reserved = plan
            .queue
            .iter()
            .filter(|e| e.expected_start.is_some())
            .count();
        Ok(())
    }

    fn sorted(mut self) -> Timed {
        self.times.sort();
        self
    }

    fn ms(&self, at: usize) -> f64 {
        self.times
            .get(at)
            .map_or(f64::NAN, |t| t.as_secs_f64() * 1e3)
    }

    fn median_ms(&self) -> f64 {
        self.ms(self.times.len() / 2)
    }

    fn text(&self) -> String {
        format!(
            "{:.2} ms [{:.2} - {:.2}]",
            self.median_ms(),
            self.ms(0),
            self.ms(self.times.len().saturating_sub(1))
        )
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "median_ms": self.median_ms(),
            "min_ms": self.ms(0),
            "max_ms": self.ms(self.times.len().saturating_sub(1)),
            "all_ms": self.times.iter().map(|t| t.as_secs_f64() * 1e3).collect::<Vec<_>>(),
            "reservations": self.reserved,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_read_and_nonsense_refused() {
        assert_eq!(
            parse_shape("1000x1000"),
            Ok(Shape {
                arrays: 1000,
                tasks: 1000
            })
        );
        assert_eq!(parse_shape(" 10X5 ").map(|s| s.tasks), Ok(5));
        assert!(parse_shape("1000").is_err());
        assert!(parse_shape("0x10").is_err());
        assert!(parse_shape("10x").is_err());
        assert!(parse_shape("axb").is_err());
    }

    #[test]
    fn an_array_queue_holds_every_sub_job_and_plans_like_plain_jobs() {
        let plain = workload(256, 20, Backfill::Easy, false, None).unwrap();
        let arrays = workload(256, 20, Backfill::Easy, false, Some(50)).unwrap();
        assert_eq!(sub_jobs_waiting(&plain), 0);
        assert_eq!(sub_jobs_waiting(&arrays), 20 * 50);
        let now = bench_epoch().unwrap();
        // The machine is full: nothing starts, one entry per queued job.
        let (p, a) = (Scheduler.pass(&plain, now), Scheduler.pass(&arrays, now));
        assert!(p.starts.is_empty() && a.starts.is_empty());
        assert_eq!(p.queue.len(), a.queue.len());
    }
}
