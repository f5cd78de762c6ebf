//! Load sweeps: the same trace replayed at a range of load scales under
//! several policy/allocator pairs, the points shared out over the cores
//! (each replay is independent and single-threaded). The torus seed's
//! Figures 3-7 are such sweeps.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::machine::{Alloc, Machine, Policy};
use crate::metrics::{Metrics, measure};
use crate::replay::{Options, ReplayError, replay};
use crate::swf::Trace;

/// One policy with one allocator (`easy/nep`), or a policy alone (`easy`:
/// the machine's own node sets, as `--alloc` or `--config` give them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pair {
    pub policy: Policy,
    pub alloc: Option<Alloc>,
}

impl std::str::FromStr for Pair {
    type Err = String;

    fn from_str(text: &str) -> Result<Pair, String> {
        use clap::ValueEnum;
        let (p, a) = match text.split_once('/') {
            Some((p, a)) => (p, Some(a)),
            None => (text, None),
        };
        let policy = Policy::from_str(p, true).map_err(|_| {
            format!(
                "\"{p}\" in \"{text}\" is not a policy; write fcfs, easy, conservative, easy++ \
                 or config"
            )
        })?;
        let alloc = a
            .map(|a| {
                Alloc::from_str(a, true).map_err(|_| {
                    format!(
                        "\"{a}\" in \"{text}\" is not an allocator; write flat, m2db, ep or nep"
                    )
                })
            })
            .transpose()?;
        Ok(Pair { policy, alloc })
    }
}

impl std::fmt::Display for Pair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.alloc {
            Some(alloc) => write!(f, "{}/{}", self.policy.as_str(), alloc.as_str()),
            None => f.write_str(self.policy.as_str()),
        }
    }
}

/// `START:END:STEP` load scales, e.g. `0.2:2.0:0.05`.
pub fn parse_range(text: &str) -> Result<Vec<f64>, String> {
    let bad = || format!("\"{text}\" is not a range; write START:END:STEP, e.g. 0.2:2.0:0.05");
    let text = text.strip_prefix("load=").unwrap_or(text);
    let parts: Vec<f64> = text
        .split(':')
        .map(|p| p.trim().parse::<f64>().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    let [start, end, step] = parts[..] else {
        return Err(bad());
    };
    if !(start > 0.0 && end >= start && step > 0.0) {
        return Err(format!(
            "{text}: the range needs 0 < START <= END and STEP > 0"
        ));
    }
    let count = ((end - start) / step + 1e-9).floor() as usize + 1;
    Ok((0..count).map(|i| start + step * i as f64).collect())
}

/// One point of a sweep.
#[derive(Clone, Debug)]
pub struct Point {
    pub pair: Pair,
    pub load_scale: f64,
    pub metrics: Metrics,
}

/// Replays every pair at every load scale on `threads` threads; points in
/// pair order, then load order. `base` gives everything but the policy,
/// machine and load scale; `machine` makes each pair's machine from its
/// allocator.
pub fn sweep(
    trace: &Trace,
    base: &Options,
    pairs: &[Pair],
    loads: &[f64],
    threads: usize,
    machine: impl Fn(Option<Alloc>) -> Result<Machine, String> + Sync,
    progress: impl Fn(usize, usize) + Sync,
) -> Result<Vec<Point>, String> {
    let work: Vec<(Pair, f64)> = pairs
        .iter()
        .flat_map(|&pair| loads.iter().map(move |&l| (pair, l)))
        .collect();
    let results: Mutex<Vec<Option<Result<Point, String>>>> = Mutex::new(vec![None; work.len()]);
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1).min(work.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(pair, load_scale)) = work.get(i) else {
                        break;
                    };
                    let point = machine(pair.alloc).and_then(|machine| {
                        let options = Options {
                            policy: pair.policy,
                            machine,
                            load_scale,
                            ..base.clone()
                        };
                        replay(trace, &options)
                            .map(|r| Point {
                                pair,
                                load_scale,
                                metrics: measure(&r.records, r.nodes),
                            })
                            .map_err(|e: ReplayError| e.to_string())
                    });
                    if let Ok(mut all) = results.lock() {
                        all[i] = Some(point);
                    }
                    progress(done.fetch_add(1, Ordering::Relaxed) + 1, work.len());
                }
            });
        }
    });
    let all = results
        .into_inner()
        .map_err(|_| "a sweep thread failed".to_string())?;
    all.into_iter()
        .map(|p| p.unwrap_or_else(|| Err("a point was not replayed".into())))
        .collect()
}

/// The sweep as CSV, one row per point.
pub fn csv(points: &[Point]) -> String {
    let mut out = String::from(
        "policy,alloc,load_scale,offered_load,utilization,mean_wait,median_wait,\
         mean_bounded_slowdown,makespan,jobs,prediction_mae,within_10_min,within_10_pct,\
         prediction_bias,waited_within_10_min,waited_within_10_pct\n",
    );
    for p in points {
        let m = &p.metrics;
        // spwhen's accuracy, when the sweep recorded it (--predict).
        let predicted = match &m.predictions {
            Some(pr) => format!(
                "{:.1},{:.4},{:.4},{:.1},{:.4},{:.4}",
                pr.mean_abs_error,
                pr.within_10_min,
                pr.within_10_pct_of_wait,
                pr.mean_error,
                pr.waited_within_10_min,
                pr.waited_within_10_pct_of_wait
            ),
            None => ",,,,,".into(),
        };
        out.push_str(&format!(
            "{},{},{:.3},{:.4},{:.4},{:.1},{:.1},{:.3},{},{},{predicted}\n",
            p.pair.policy.as_str(),
            p.pair.alloc.map_or("config", Alloc::as_str),
            p.load_scale,
            m.offered_load,
            m.utilization,
            m.mean_wait,
            m.median_wait,
            m.mean_bounded_slowdown,
            m.makespan,
            m.jobs,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_pairs_read_and_refuse_clearly() {
        assert_eq!(parse_range("load=0.5:1.0:0.25").unwrap(), [0.5, 0.75, 1.0]);
        assert_eq!(parse_range("0.2:2.0:0.05").unwrap().len(), 37);
        assert!(
            parse_range("1:0.5:0.1")
                .unwrap_err()
                .contains("START <= END")
        );
        assert!(parse_range("a:b").unwrap_err().contains("START:END:STEP"));
        assert_eq!(
            "easy/nep".parse::<Pair>().unwrap(),
            Pair {
                policy: Policy::Easy,
                alloc: Some(Alloc::Nep)
            }
        );
        assert_eq!("fcfs".parse::<Pair>().unwrap().alloc, None);
        assert_eq!("easy/nep".parse::<Pair>().unwrap().to_string(), "easy/nep");
        assert!(
            "lifo/ep"
                .parse::<Pair>()
                .unwrap_err()
                .contains("not a policy")
        );
    }

    #[test]
    fn a_sweep_gives_every_point_in_order_whatever_the_threads() {
        let mut text = String::from("; MaxProcs: 8\n");
        for i in 0..40 {
            text += &format!(
                "{} {} -1 {} {} -1 -1 {} {} -1 1 1 1 -1 1 -1 -1 -1\n",
                i + 1,
                i * 30,
                100 + i * 7 % 50,
                1 + i % 8,
                1 + i % 8,
                200
            );
        }
        let trace = crate::swf::read(text.as_bytes(), "t.swf").unwrap();
        let pairs = ["fcfs/flat".parse().unwrap(), "easy/flat".parse().unwrap()];
        let loads = [0.5, 1.0, 2.0];
        let run = |threads| {
            sweep(
                &trace,
                &Options::default(),
                &pairs,
                &loads,
                threads,
                |a| {
                    Ok(Machine::Single {
                        topology: a.unwrap_or_default().topology(&[])?,
                        nodes: None,
                    })
                },
                |_, _| {},
            )
            .unwrap()
        };
        let one = run(1);
        let four = run(4);
        assert_eq!(one.len(), 6);
        for (a, b) in one.iter().zip(&four) {
            assert_eq!((a.pair, a.load_scale), (b.pair, b.load_scale));
            assert_eq!(a.metrics, b.metrics, "the same replay on any thread");
        }
        assert!(one[2].metrics.offered_load > one[0].metrics.offered_load);
    }
}
