//! The disk's own flush latency, measured beside the other figures: every
//! durable submission waits for a flush, so this bounds what the daemon can
//! do, and it explains why the same build measures differently on a busy
//! shared machine.

use std::io::Write;
use std::time::{Duration, Instant};

use crate::Report;

pub fn run(flushes: usize) -> anyhow::Result<Report> {
    let dir = tempfile::Builder::new().prefix("qmesh-bench-").tempdir()?;
    let mut file = std::fs::File::create(dir.path().join("probe"))?;
    let block = vec![0x5au8; 4096];
    let mut times: Vec<Duration> = Vec::with_capacity(flushes);
    for _ in 0..flushes.max(1) {
        file.write_all(&block)?;
        let t = Instant::now();
        file.sync_data()?;
        times.push(t.elapsed());
    }
    times.sort();
    let pct = |p: f64| times[((times.len() - 1) as f64 * p) as usize];
    let (p50, p99) = (pct(0.5), pct(0.99));
    Ok(Report {
        text: format!(
            "disk: 4 KiB write + fdatasync: p50 {:.2} ms, p99 {:.2} ms ({} flushes)",
            p50.as_secs_f64() * 1e3,
            p99.as_secs_f64() * 1e3,
            times.len()
        ),
        json: serde_json::json!({
            "bench": "disk", "flushes": times.len(),
            "p50_ms": p50.as_secs_f64() * 1e3, "p99_ms": p99.as_secs_f64() * 1e3,
        }),
    })
}
