//! Figures, not a test: sbatch submissions and squeue listings per second
//! on qmesh and on the rig's Slurm 22.05, side by side on this machine
//! (docs/PERFORMANCE.md, "Slurm's commands"). Ignored by default; run with
//!
//!   cargo test --release --test slurm -- --ignored --nocapture rates
//!
//! Both get the same work: held jobs (so that nothing runs and competes
//! for the CPUs) submitted with `sbatch --parsable -H --wrap true`, by one
//! client after another and by eight at once; then the default `squeue`
//! table of those jobs, listed again and again (and qmesh's qstat of the
//! same jobs, for scale). It prints the figures and asserts nothing of
//! speed.

use std::process::{Command, Output};
use std::time::Instant;

use crate::harness::Daemon;
use crate::rig;

/// Jobs submitted per run, and squeue listings.
const JOBS: usize = 400;
const LISTINGS: usize = 100;
const CLIENTS: usize = 8;

fn submit(mut cmd: Command) -> String {
    let out: Output = cmd
        .args(["--parsable", "-H", "--wrap", "true"])
        .output()
        .expect("run sbatch");
    assert!(
        out.status.success(),
        "sbatch: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Submissions per second: `JOBS` by one client, then by `CLIENTS` at once.
fn submissions(cmd: &(dyn Fn() -> Command + Sync)) -> (f64, f64) {
    let t = Instant::now();
    for _ in 0..JOBS {
        submit(cmd());
    }
    let one = JOBS as f64 / t.elapsed().as_secs_f64();
    let t = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..CLIENTS {
            s.spawn(|| {
                for _ in 0..JOBS / CLIENTS {
                    submit(cmd());
                }
            });
        }
    });
    (one, JOBS as f64 / t.elapsed().as_secs_f64())
}

/// Listings per second of the default table.
fn listings(cmd: &dyn Fn() -> Command) -> (f64, usize) {
    let rows = String::from_utf8_lossy(&cmd().output().expect("squeue").stdout)
        .lines()
        .count();
    let t = Instant::now();
    for _ in 0..LISTINGS {
        let out = cmd().output().expect("run squeue");
        assert!(out.status.success());
    }
    (LISTINGS as f64 / t.elapsed().as_secs_f64(), rows)
}

#[test]
#[ignore = "figures for docs/PERFORMANCE.md; run by hand"]
fn rates_of_sbatch_and_squeue_beside_slurm() {
    let s = rig::slurm();
    let dir = s.workdir("bench");
    let slurm_sbatch = || {
        let mut c = s.cmd("sbatch");
        c.current_dir(&dir);
        c
    };
    let (slurm_one, slurm_many) = submissions(&slurm_sbatch);
    let (slurm_list, slurm_rows) = listings(&|| s.cmd("squeue"));

    let d = Daemon::start();
    let qmesh_sbatch = || d.cmd("sbatch");
    let (qmesh_one, qmesh_many) = submissions(&qmesh_sbatch);
    let (qmesh_list, qmesh_rows) = listings(&|| d.cmd("squeue"));
    let (qstat_list, _) = listings(&|| d.cmd("qstat"));

    println!(
        "| | Slurm 22.05 | qmesh |\n|---|---|---|\n\
         | sbatch, 1 client (jobs/s) | {slurm_one:.0} | {qmesh_one:.0} |\n\
         | sbatch, {CLIENTS} clients (jobs/s) | {slurm_many:.0} | {qmesh_many:.0} |\n\
         | squeue of {} jobs (listings/s) | {slurm_list:.1} | {qmesh_list:.1} |\n\
         | qstat of the same jobs (listings/s) | | {qstat_list:.1} |",
        2 * JOBS,
    );
    assert_eq!(
        slurm_rows, qmesh_rows,
        "both listed the same number of jobs"
    );
    let _ = s.run("scancel", &["-u", &rig::user()]);
}
