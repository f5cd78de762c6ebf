//! What-if on the site's own history: `qmesh-sim --accounting DIR` reads
//! what really arrived from the PBS accounting log (through `to_swf`),
//! replays it with the jobs' real run times on a configuration (today's,
//! or one changed with `--config` / `--qmgr`), and sets the replay's
//! utilization, waits and expansion factors, overall and per queue,
//! beside what really happened.
//!
//! What happened is read from the same records: each job's real wait and
//! run (`start - qtime`, `end - start`), so both sides are measured by
//! the one `metrics::measure` on the same jobs.

use std::fmt::Write as _;
use std::path::Path;

use chrono::NaiveDate;

use crate::metrics::{Metrics, measure};
use crate::replay::{JobRecord, Options, Replay, ReplayError, replay};
use crate::swf::{SwfError, Trace};
use crate::to_swf::{ToSwfError, from_accounting};

#[derive(Debug, thiserror::Error)]
pub enum WhatIfError {
    #[error(transparent)]
    Accounting(#[from] ToSwfError),
    #[error("the accounting log read as SWF does not parse: {0}")]
    Swf(#[from] SwfError),
    #[error(transparent)]
    Replay(#[from] ReplayError),
}

/// Both sides, measured alike.
#[derive(Debug, serde::Serialize)]
pub struct WhatIf {
    pub nodes: u32,
    pub happened: Metrics,
    pub replayed: Metrics,
    /// Jobs the replay could not take (a queue that refuses them now...).
    pub skipped: usize,
}

/// Reads the log of the days `from` to `to` and replays it with `options`.
pub fn what_if(
    dir: &Path,
    from: Option<NaiveDate>,
    to: Option<NaiveDate>,
    options: &Options,
) -> Result<WhatIf, WhatIfError> {
    let text = from_accounting(dir, from, to)?;
    let trace = crate::swf::read(text.as_bytes(), &dir.display().to_string())?;
    let result: Replay = replay(&trace, options)?;
    let replayed_numbers: std::collections::HashSet<u64> =
        result.records.iter().map(|r| r.number).collect();
    // The same jobs on both sides: those the replay took.
    let happened: Vec<JobRecord> = history(&trace)
        .into_iter()
        .filter(|r| replayed_numbers.contains(&r.number))
        .collect();
    Ok(WhatIf {
        nodes: result.nodes,
        happened: measure(&happened, result.nodes),
        replayed: measure(&result.records, result.nodes),
        skipped: result.skipped.len(),
    })
}

/// What really happened to each job that ran, as records.
fn history(trace: &Trace) -> Vec<JobRecord> {
    trace
        .jobs
        .iter()
        .filter(|j| j.wait >= 0 && j.run >= 0)
        .map(|j| JobRecord {
            start: j.submit + j.wait,
            end: j.submit + j.wait + j.run,
            ..JobRecord::new(
                j.number,
                j.submit,
                u32::try_from(j.procs().max(1)).unwrap_or(u32::MAX),
                trace.queue_name(j.queue),
            )
        })
        .collect()
}

/// The comparison as a table: what happened, the replay, the difference.
pub fn table(w: &WhatIf) -> String {
    let (h, r) = (&w.happened, &w.replayed);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} jobs on {} nodes ({} the replay could not take)",
        h.jobs, w.nodes, w.skipped
    );
    let _ = writeln!(
        out,
        "{:<24}{:>14}{:>14}{:>14}",
        "", "happened", "what-if", "difference"
    );
    let row = |out: &mut String, name: &str, a: f64, b: f64, unit: &str| {
        let _ = writeln!(
            out,
            "{name:<24}{:>14}{:>14}{:>14}",
            format!("{a:.2}{unit}"),
            format!("{b:.2}{unit}"),
            format!("{:+.2}{unit}", b - a)
        );
    };
    row(
        &mut out,
        "utilization",
        h.utilization * 100.0,
        r.utilization * 100.0,
        " %",
    );
    row(
        &mut out,
        "mean wait",
        h.mean_wait / 60.0,
        r.mean_wait / 60.0,
        " min",
    );
    row(
        &mut out,
        "median wait",
        h.median_wait / 60.0,
        r.median_wait / 60.0,
        " min",
    );
    row(
        &mut out,
        "mean bounded slowdown",
        h.mean_bounded_slowdown,
        r.mean_bounded_slowdown,
        "",
    );
    let queues: std::collections::BTreeSet<&String> =
        h.by_queue.keys().chain(r.by_queue.keys()).collect();
    for q in queues {
        let (a, b) = (h.by_queue.get(q), r.by_queue.get(q));
        let jobs = a.or(b).map_or(0, |g| g.jobs);
        let _ = writeln!(out, "queue {q} ({jobs} jobs)");
        row(
            &mut out,
            "  mean wait",
            a.map_or(0.0, |g| g.mean_wait) / 60.0,
            b.map_or(0.0, |g| g.mean_wait) / 60.0,
            " min",
        );
        row(
            &mut out,
            "  expansion factor",
            a.map_or(0.0, |g| g.expansion),
            b.map_or(0.0, |g| g.expansion),
            "",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two one-node jobs that waited for each other on a one-node
    /// machine; replayed on two nodes, nobody waits.
    #[test]
    fn a_bigger_machine_takes_the_wait_away() {
        let dir = tempfile::tempdir().unwrap();
        let day = "11/24/2026 10:00:00";
        let text = format!(
            "{day};E;1.s;user=a group=g jobname=a queue=batch qtime=1000 start=1000 Resource_List.nodect=1 Resource_List.walltime=00:10:00 end=1600 Exit_status=0\n\
             {day};E;2.s;user=a group=g jobname=a queue=batch qtime=1000 start=1600 Resource_List.nodect=1 Resource_List.walltime=00:10:00 end=2200 Exit_status=0\n"
        );
        std::fs::write(dir.path().join("20261124"), text).unwrap();
        let options = Options {
            machine: crate::machine::Machine::Single {
                topology: qmesh_core::node::Topology::Flat,
                nodes: Some(2),
            },
            ..Options::default()
        };
        let w = what_if(dir.path(), None, None, &options).unwrap();
        assert_eq!(w.happened.jobs, 2);
        assert_eq!(w.replayed.jobs, 2);
        assert_eq!(w.happened.mean_wait, 300.0);
        assert_eq!(w.replayed.mean_wait, 0.0);
        let t = table(&w);
        assert!(t.contains("queue batch (2 jobs)"), "{t}");
        assert!(t.contains("-5.00 min"), "{t}");
    }
}
