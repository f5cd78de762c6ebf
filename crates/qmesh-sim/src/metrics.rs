//! What a replay is judged by (the seeds' measures): utilization, makespan,
//! waits, bounded slowdown, and the SDSC tables' expansion factor per queue
//! and per request size; what reservations and preemption cost.
//!
//! A job's run is its last one (a job requeued by preemption ran before,
//! and that work was lost); the time it spent suspended is not running.

use std::collections::BTreeMap;

use crate::replay::JobRecord;
use crate::reservations::Outcome;

/// Bounded slowdown's floor on the run time (seconds), as in the
/// literature: very short jobs do not dominate the mean.
pub const BSLD_TAU: f64 = 10.0;

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Metrics {
    pub jobs: usize,
    /// Node-seconds used over node-seconds available from the first
    /// submission to the last end. Used: nodes held by running jobs, the
    /// runs requeued by preemption too, not the time suspended.
    pub utilization: f64,
    /// Node-seconds offered (every job's nodes × run time) over the
    /// machine's node-seconds from the first submission to the last one.
    pub offered_load: f64,
    /// Seconds from the first submission to the last end.
    pub makespan: i64,
    pub mean_wait: f64,
    pub median_wait: f64,
    /// Mean of max(1, (wait + run) / max(run, 10 s)).
    pub mean_bounded_slowdown: f64,
    /// Per queue, its jobs' mean wait and expansion factor (SDSC's Table 5).
    pub by_queue: BTreeMap<String, Group>,
    /// The same by request size, in power-of-two classes (1, 2, 3-4, 5-8...),
    /// keyed by the class's upper bound (SDSC's Table 3).
    pub by_size: BTreeMap<u32, Group>,
    /// How good spwhen was, when predictions were recorded: planning with
    /// requested wall times (what Slurm and PBS do)...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predictions: Option<Predictions>,
    /// ... and with predicted run times (`Scheduler::when_predicted`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predictions_from_runs: Option<Predictions>,
}

/// The jobs of one queue or one size class.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Group {
    pub jobs: usize,
    pub mean_wait: f64,
    /// Mean of (wait + run) / run: how much longer than on an empty machine.
    pub expansion: f64,
}

/// spwhen's predictions against the starts that happened.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Predictions {
    /// Jobs given a predicted start (the others had none: no reservation).
    pub predicted: usize,
    pub without: usize,
    /// Mean of |predicted − actual start|, seconds.
    pub mean_abs_error: f64,
    /// Mean of predicted − actual start: above 0, spwhen was pessimistic
    /// (jobs ending before their wall time), below, optimistic (jobs that
    /// came later overtook).
    pub mean_error: f64,
    /// Share predicted within 10 minutes of their start.
    pub within_10_min: f64,
    /// Share predicted within 10 % of their wait (exactly, for no wait).
    pub within_10_pct_of_wait: f64,
    /// The same two shares over the jobs that did not start at once (the
    /// others are predicted exactly: they started in the pass that saw
    /// them).
    pub waited: usize,
    pub waited_within_10_min: f64,
    pub waited_within_10_pct_of_wait: f64,
    /// Over the jobs that waited: the median of |predicted − actual
    /// start| (seconds), and the share within an hour of their start.
    pub waited_median_abs_error: f64,
    pub waited_within_1_hour: f64,
}

/// The accuracy of the predictions `pick` reads from each record, if any
/// were recorded.
pub fn predictions(
    records: &[JobRecord],
    pick: impl Fn(&JobRecord) -> Option<i64>,
) -> Option<Predictions> {
    // (job, signed error)
    let with: Vec<(&JobRecord, i64)> = records
        .iter()
        .filter_map(|r| pick(r).map(|p| (r, p - r.start)))
        .collect();
    if with.is_empty() {
        return None;
    }
    let share = |jobs: &[&(&JobRecord, i64)], test: &dyn Fn(&JobRecord, f64) -> bool| {
        let hits = jobs.iter().filter(|(r, e)| test(r, e.abs() as f64)).count();
        hits as f64 / jobs.len().max(1) as f64
    };
    let ten_min = |_: &JobRecord, e: f64| e <= 600.0;
    let one_hour = |_: &JobRecord, e: f64| e <= 3600.0;
    let ten_pct = |r: &JobRecord, e: f64| e <= 0.1 * r.wait() as f64;
    let all: Vec<&(&JobRecord, i64)> = with.iter().collect();
    let waited: Vec<&(&JobRecord, i64)> = with.iter().filter(|(r, _)| r.wait() > 0).collect();
    let n = with.len() as f64;
    Some(Predictions {
        predicted: with.len(),
        without: records.len() - with.len(),
        mean_abs_error: with.iter().map(|(_, e)| e.abs() as f64).sum::<f64>() / n,
        mean_error: with.iter().map(|(_, e)| *e as f64).sum::<f64>() / n,
        within_10_min: share(&all, &ten_min),
        within_10_pct_of_wait: share(&all, &ten_pct),
        waited: waited.len(),
        waited_within_10_min: share(&waited, &ten_min),
        waited_within_10_pct_of_wait: share(&waited, &ten_pct),
        waited_median_abs_error: median(waited.iter().map(|(_, e)| e.abs()).collect()),
        waited_within_1_hour: share(&waited, &one_hour),
    })
}

/// The median of `values` (the mean of the middle two of an even count);
/// 0 for none.
fn median(mut values: Vec<i64>) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_unstable();
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid] as f64
    } else {
        (values[mid - 1] + values[mid]) as f64 / 2.0
    }
}

/// The measures of a replay on `nodes` nodes.
pub fn measure(records: &[JobRecord], nodes: u32) -> Metrics {
    if records.is_empty() {
        return Metrics::default();
    }
    let first = records.iter().map(|r| r.submit).min().unwrap_or(0);
    let last_submit = records.iter().map(|r| r.submit).max().unwrap_or(0);
    let last_end = records.iter().map(|r| r.end).max().unwrap_or(0);
    let makespan = (last_end - first).max(1);
    let used: f64 = records
        .iter()
        .map(|r| f64::from(r.nodes) * r.ran() as f64 + r.requeued_work as f64)
        .sum();
    let machine = f64::from(nodes);
    let waits: Vec<i64> = records.iter().map(JobRecord::wait).collect();
    let n = records.len() as f64;
    let mean_wait = waits.iter().sum::<i64>() as f64 / n;
    let median_wait = median(waits);
    // Over its running time: a suspension slows a job down.
    let bsld = |r: &JobRecord| {
        let ran = r.ran() as f64;
        ((r.wait() as f64 + r.run() as f64) / ran.max(BSLD_TAU)).max(1.0)
    };
    let expansion = |r: &JobRecord| {
        let ran = r.ran().max(1) as f64;
        (r.wait() as f64 + r.run().max(1) as f64) / ran
    };
    // Per group: jobs, waits and expansions summed.
    let mut by_queue: BTreeMap<String, (usize, f64, f64)> = BTreeMap::new();
    let mut by_size: BTreeMap<u32, (usize, f64, f64)> = BTreeMap::new();
    for r in records {
        let e = expansion(r);
        for sums in [
            by_queue.entry(r.queue.to_string()).or_default(),
            by_size.entry(r.nodes.next_power_of_two()).or_default(),
        ] {
            sums.0 += 1;
            sums.1 += r.wait() as f64;
            sums.2 += e;
        }
    }
    Metrics {
        jobs: records.len(),
        utilization: used / (machine * makespan as f64),
        offered_load: used / (machine * (last_submit - first).max(1) as f64),
        makespan,
        mean_wait,
        median_wait,
        mean_bounded_slowdown: records.iter().map(bsld).sum::<f64>() / n,
        by_queue: groups(by_queue),
        by_size: groups(by_size),
        predictions: predictions(records, |r| r.predicted),
        predictions_from_runs: predictions(records, |r| r.predicted_from_runs),
    }
}

/// What reservations cost (`--reservations`): the node-seconds they held
/// and how much of that their own jobs used, and every other job measured
/// apart.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ResvMetrics {
    pub confirmed: usize,
    pub refused: usize,
    /// Node-seconds their occurrences held (nodes × duration, summed).
    pub held_node_seconds: f64,
    /// Of those, the ones within the span measured (the first submission
    /// to the last end), which the capacity counts.
    pub held_in_span: f64,
    /// `held_in_span` over the capacity (nodes × makespan).
    pub held_share: f64,
    /// Node-seconds their jobs ran (inside them).
    pub used_node_seconds: f64,
    /// `used_node_seconds` over `held_in_span`.
    pub used_share: f64,
    /// Jobs sent to their queues; of those, the ones that ran, and those
    /// still queued at their reservation's last end (deleted).
    pub jobs: usize,
    pub ran: usize,
    pub deleted: usize,
    /// Mean wait of their jobs that ran.
    pub mean_wait: f64,
    /// Every job that ran outside the reservations.
    pub others: Others,
    /// Each line of the file, in its order.
    pub list: Vec<Outcome>,
}

/// The jobs outside the reservations.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Others {
    pub jobs: usize,
    /// Their node-seconds over the capacity.
    pub utilization: f64,
    /// Their node-seconds over the capacity the reservations did not hold.
    pub utilization_not_held: f64,
    pub mean_wait: f64,
    pub median_wait: f64,
    pub mean_bounded_slowdown: f64,
}

/// The reservations' measures, from what became of them and the records
/// of the replay on `nodes` nodes.
pub fn reservations(outcomes: &[Outcome], records: &[JobRecord], nodes: u32) -> ResvMetrics {
    let first = records.iter().map(|r| r.submit).min().unwrap_or(0);
    let last_end = records.iter().map(|r| r.end).max().unwrap_or(0);
    let makespan = (last_end - first).max(1);
    let capacity = f64::from(nodes) * makespan as f64;
    let spans = || outcomes.iter().flat_map(|o| o.occurrences.iter());
    let held: f64 = spans().map(|s| s.held()).sum();
    let held_in_span: f64 = spans()
        .map(|s| {
            let length = (s.end.min(first + makespan) - s.start.max(first)).max(0);
            s.nodes.len() as f64 * length as f64
        })
        .sum();
    let (own, others): (Vec<&JobRecord>, Vec<&JobRecord>) =
        records.iter().partition(|r| r.reservation.is_some());
    let run = |r: &&JobRecord| f64::from(r.nodes) * r.run() as f64;
    let used: f64 = own.iter().map(run).sum();
    let others_used: f64 = others.iter().map(run).sum();
    let others: Vec<JobRecord> = others.into_iter().cloned().collect();
    let m = measure(&others, nodes);
    // (An empty f64 sum is -0.0: shown as "-0.0 %".)
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b + 0.0 } else { 0.0 };
    ResvMetrics {
        confirmed: outcomes.iter().filter(|o| o.id.is_some()).count(),
        refused: outcomes.iter().filter(|o| o.refused.is_some()).count(),
        held_node_seconds: held,
        held_in_span,
        held_share: ratio(held_in_span, capacity),
        used_node_seconds: used,
        used_share: ratio(used, held_in_span),
        jobs: outcomes.iter().map(|o| o.jobs).sum(),
        ran: own.len(),
        deleted: outcomes.iter().map(|o| o.deleted).sum(),
        mean_wait: ratio(own.iter().map(|r| r.wait() as f64).sum(), own.len() as f64),
        others: Others {
            jobs: m.jobs,
            utilization: ratio(others_used, capacity),
            utilization_not_held: ratio(others_used, capacity - held_in_span),
            mean_wait: m.mean_wait,
            median_wait: m.median_wait,
            mean_bounded_slowdown: m.mean_bounded_slowdown,
        },
        list: outcomes.to_vec(),
    }
}

/// What preemption cost (`--express`): the express jobs' waits against
/// the others', how many jobs were preempted and how, and the work lost.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct PreemptMetrics {
    /// The jobs of the queue `express`.
    pub express: Waits,
    /// Every other job.
    pub others: Waits,
    /// Preemptions by method: suspensions, requeues, deletions.
    pub suspended: usize,
    pub requeued: usize,
    pub deleted: usize,
    /// Jobs preempted at least once.
    pub jobs_preempted: usize,
    /// Seconds the jobs' last runs spent suspended, in all.
    pub suspended_seconds: i64,
    /// Node-seconds of work thrown away: the runs requeued, and those of
    /// the jobs deleted.
    pub lost_node_seconds: f64,
    /// `lost_node_seconds` over the capacity (nodes × makespan).
    pub lost_share: f64,
    /// As [`Metrics::utilization`]: the nodes' running time, lost work
    /// included, over the capacity.
    pub utilization: f64,
    /// The work kept: `utilization` less `lost_share`.
    pub useful_utilization: f64,
}

/// Some jobs' waits.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Waits {
    pub jobs: usize,
    pub mean_wait: f64,
    pub median_wait: f64,
}

impl Waits {
    fn of<'a>(records: impl Iterator<Item = &'a JobRecord>) -> Waits {
        let mut waits: Vec<i64> = records.map(JobRecord::wait).collect();
        if waits.is_empty() {
            return Waits::default();
        }
        waits.sort_unstable();
        let n = waits.len();
        let median_wait = if n % 2 == 1 {
            waits[n / 2] as f64
        } else {
            (waits[n / 2 - 1] + waits[n / 2]) as f64 / 2.0
        };
        Waits {
            jobs: n,
            mean_wait: waits.iter().sum::<i64>() as f64 / n as f64,
            median_wait,
        }
    }
}

/// Preemption's measures, from the records of the replay on `nodes` nodes.
pub fn preemption(records: &[JobRecord], nodes: u32) -> PreemptMetrics {
    let m = measure(records, nodes);
    let capacity = f64::from(nodes) * m.makespan.max(1) as f64;
    let lost = records.iter().map(|r| r.lost() as f64).sum::<f64>() + 0.0;
    let lost_share = if records.is_empty() {
        0.0
    } else {
        lost / capacity
    };
    PreemptMetrics {
        express: Waits::of(records.iter().filter(|r| r.express)),
        others: Waits::of(records.iter().filter(|r| !r.express)),
        suspended: records.iter().map(|r| r.suspensions as usize).sum(),
        requeued: records.iter().map(|r| r.requeues as usize).sum(),
        deleted: records.iter().filter(|r| r.killed).count(),
        jobs_preempted: records
            .iter()
            .filter(|r| r.suspensions > 0 || r.requeues > 0 || r.killed)
            .count(),
        suspended_seconds: records.iter().map(|r| r.suspended).sum(),
        lost_node_seconds: lost,
        lost_share,
        utilization: m.utilization,
        useful_utilization: m.utilization - lost_share,
    }
}

/// Count and sums per key, as means per key.
fn groups<K: Ord>(sums: BTreeMap<K, (usize, f64, f64)>) -> BTreeMap<K, Group> {
    sums.into_iter()
        .map(|(k, (jobs, waits, expansions))| {
            let n = jobs as f64;
            (
                k,
                Group {
                    jobs,
                    mean_wait: waits / n,
                    expansion: expansions / n,
                },
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(submit: i64, start: i64, end: i64, nodes: u32, queue: &str) -> JobRecord {
        JobRecord {
            start,
            end,
            ..JobRecord::new(0, submit, nodes, queue)
        }
    }

    #[test]
    fn measures_by_hand() {
        // 4 nodes. A: 2 nodes 0-100; B: 4 nodes, waits 99, runs 100-150;
        // C: 2 nodes, 5 s run after a 5 s wait.
        let records = [
            rec(0, 0, 100, 2, "q1"),
            rec(1, 100, 150, 4, "q1"),
            rec(2, 7, 12, 2, "q2"),
        ];
        let m = measure(&records, 4);
        // Used: 200 + 200 + 10 node-seconds over 4 × 150.
        assert!((m.utilization - 410.0 / 600.0).abs() < 1e-12);
        assert_eq!(m.makespan, 150);
        assert!((m.mean_wait - (0.0 + 99.0 + 5.0) / 3.0).abs() < 1e-12);
        assert_eq!(m.median_wait, 5.0);
        // Bounded slowdowns: 1, (99 + 50) / 50, (5 + 5) / 10 = 1.
        let bsld = (1.0 + 149.0 / 50.0 + 1.0) / 3.0;
        assert!((m.mean_bounded_slowdown - bsld).abs() < 1e-12);
        assert!(
            (m.by_queue["q2"].expansion - 2.0).abs() < 1e-12,
            "(5 + 5) / 5"
        );
        assert_eq!(m.by_queue["q1"].jobs, 2);
        assert!((m.by_queue["q1"].mean_wait - 99.0 / 2.0).abs() < 1e-12);
        assert!((m.by_size[&4].expansion - 149.0 / 50.0).abs() < 1e-12);
    }

    #[test]
    fn reservations_by_hand() {
        use crate::reservations::Span;
        // 4 nodes, 0..1000 measured. R1 holds 2 nodes over 100..300 and
        // 900..1100 (100 s of it past the last end); its one job ran 2
        // nodes for 100 s. The others: 4 nodes 0..100, 1 node 300..1000.
        let span = |start, end| Span {
            start,
            end,
            nodes: vec!["n0".into(), "n1".into()],
        };
        let outcome = Outcome {
            line: 1,
            submit: 0,
            nodes: 2,
            share: 1.0,
            id: Some(1),
            refused: None,
            node_set: Some("machine".into()),
            occurrences: vec![span(100, 300), span(900, 1100)],
            jobs: 2,
            ran: 1,
            deleted: 1,
            used: 200.0,
        };
        let refused = Outcome {
            id: None,
            refused: Some("no".into()),
            occurrences: Vec::new(),
            jobs: 0,
            ran: 0,
            deleted: 0,
            used: 0.0,
            ..outcome.clone()
        };
        let records = [
            rec(0, 0, 100, 4, "q"),
            rec(0, 300, 1000, 1, "q"),
            JobRecord {
                reservation: Some(1),
                ..rec(50, 150, 250, 2, "R1")
            },
        ];
        let r = reservations(&[outcome, refused], &records, 4);
        assert_eq!((r.confirmed, r.refused), (1, 1));
        assert_eq!(r.held_node_seconds, 800.0);
        assert_eq!(r.held_in_span, 600.0);
        assert_eq!(r.held_share, 600.0 / 4000.0);
        assert_eq!(r.used_node_seconds, 200.0);
        assert_eq!(r.used_share, 200.0 / 600.0);
        assert_eq!((r.jobs, r.ran, r.deleted), (2, 1, 1));
        assert_eq!(r.mean_wait, 100.0);
        assert_eq!(r.others.jobs, 2);
        assert_eq!(r.others.utilization, 1100.0 / 4000.0);
        assert_eq!(r.others.utilization_not_held, 1100.0 / 3400.0);
        assert_eq!(r.others.mean_wait, 150.0);
    }

    #[test]
    fn preemption_by_hand() {
        // 4 nodes, 0..500 measured. Express A (2 nodes) ran at once
        // 100..200, express B waited 60 s. C (2 nodes, 0..400) was
        // suspended 100 s of it; D (2 nodes) ran 100 s, was requeued and
        // ran again 300..500; E (1 node) was deleted at 150 after 100 s.
        let records = [
            JobRecord {
                express: true,
                ..rec(100, 100, 200, 2, "express")
            },
            JobRecord {
                express: true,
                ..rec(100, 160, 260, 2, "express")
            },
            JobRecord {
                suspensions: 1,
                suspended: 100,
                ..rec(0, 0, 400, 2, "batch")
            },
            JobRecord {
                requeues: 1,
                requeued_work: 200,
                ..rec(0, 300, 500, 2, "batch")
            },
            JobRecord {
                killed: true,
                ..rec(50, 50, 150, 1, "batch")
            },
        ];
        let p = preemption(&records, 4);
        assert_eq!(
            p.express,
            Waits {
                jobs: 2,
                mean_wait: 30.0,
                median_wait: 30.0
            }
        );
        assert_eq!(
            p.others,
            Waits {
                jobs: 3,
                mean_wait: 100.0,
                median_wait: 0.0
            }
        );
        assert_eq!((p.suspended, p.requeued, p.deleted), (1, 1, 1));
        assert_eq!((p.jobs_preempted, p.suspended_seconds), (3, 100));
        // Lost: D's first run (2 × 100) and E's (1 × 100).
        assert_eq!(p.lost_node_seconds, 300.0);
        assert_eq!(p.lost_share, 300.0 / 2000.0);
        // Used: A 200, B 200, C 2 × 300 (not its 100 s suspended), D 400
        // and its 200 lost, E 100.
        assert_eq!(p.utilization, 1700.0 / 2000.0);
        assert!((p.useful_utilization - 1400.0 / 2000.0).abs() < 1e-12);
        let m = measure(&records, 4);
        assert_eq!(m.utilization, p.utilization);
        // C's bounded slowdown is over its 300 s running: 400 / 300.
        let c = measure(&records[2..3], 4);
        assert!((c.mean_bounded_slowdown - 400.0 / 300.0).abs() < 1e-12);
        assert_eq!(preemption(&[], 4), PreemptMetrics::default());
    }

    #[test]
    fn predictions_by_hand() {
        let with = |submit, start, predicted| JobRecord {
            predicted: Some(predicted),
            ..rec(submit, start, start + 100, 1, "q")
        };
        let records = [
            with(0, 0, 0),           // started at once: exact
            with(0, 1000, 1300),     // 300 s late: within 10 min, not 10 %
            with(0, 10_000, 9500),   // 500 s early: within both
            with(0, 10_000, 12_000), // 2000 s late: neither
            rec(0, 50, 150, 1, "q"), // no prediction
        ];
        let p = predictions(&records, |r| r.predicted).unwrap();
        assert_eq!((p.predicted, p.without, p.waited), (4, 1, 3));
        assert_eq!(p.mean_abs_error, (300.0 + 500.0 + 2000.0) / 4.0);
        assert_eq!(p.mean_error, (300.0 - 500.0 + 2000.0) / 4.0);
        assert_eq!((p.within_10_min, p.within_10_pct_of_wait), (0.75, 0.5));
        assert_eq!(p.waited_within_10_min, 2.0 / 3.0);
        assert_eq!(p.waited_within_10_pct_of_wait, 1.0 / 3.0);
        // Of the three that waited: 300, 500, 2000 s off.
        assert_eq!(p.waited_median_abs_error, 500.0);
        assert_eq!(p.waited_within_1_hour, 1.0);
        assert!(
            predictions(&records, |r| r.predicted_from_runs).is_none(),
            "none recorded from predicted run times"
        );
    }

    #[test]
    fn the_median_of_an_even_count_is_between_the_middle_two() {
        assert_eq!(median(vec![4000, 10, 600, 20]), 310.0);
        assert_eq!(median(vec![7]), 7.0);
        assert_eq!(median(Vec::new()), 0.0);
    }
}
