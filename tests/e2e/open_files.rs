//! qmeshd raises its soft limit on open files to the hard limit: an
//! agent's connection per host, a qstat's per caller. Its local agent
//! keeps the limit qmeshd started with, for its jobs.

use crate::harness::Daemon;

/// The soft and hard "Max open files" of a process, from /proc.
fn open_files(pid: u32) -> (u64, u64) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).expect("read limits");
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .expect("a Max open files line");
    let numbers: Vec<u64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    (numbers[0], numbers[1])
}

#[test]
fn qmeshd_raises_its_soft_limit_on_open_files_to_the_hard_limit() {
    let mut d = Daemon::unstarted(None, |_| {});
    d.soft_open_files = Some(256);
    d.spawn();
    let (soft, hard) = open_files(d.pid().expect("qmeshd runs"));
    assert!(
        hard > 256,
        "the test needs a hard limit above 256, not {hard}"
    );
    assert_eq!(soft, hard);
    assert!(
        d.log().contains(&format!(
            "soft limit raised from 256 to the hard limit, {hard}"
        )),
        "{}",
        d.log()
    );
    // Its agent, and so its jobs, keep the limit qmeshd started with.
    d.await_in_log(&d.log_path(), "local agent started", 1);
    let agent = d.local_agent_pid();
    assert_eq!(open_files(agent), (256, hard));
    d.test_over();
}
