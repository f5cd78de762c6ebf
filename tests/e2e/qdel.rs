//! qdel's PBS Pro options: `-W force` removes a job whose agent cannot
//! confirm its end (its old run is killed when the agent comes back), and
//! `-x` deletes a job's history too, for good.

use std::time::Duration;

use crate::cluster::Cluster;
use crate::harness::Daemon;

#[test]
fn qdel_w_force_removes_a_job_whose_agent_is_gone_and_its_run_dies_later() {
    let mut c = Cluster::start(1, 1, 600, None);
    c.await_nodes(&["h1"], "free");
    let started = c.d.fifo("started");
    let gone = c.d.fifo("gone");
    c.d.script(
        "stay.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\ntrap 'echo killed > gone; exit 1' TERM\necho up > started\nwhile :; do sleep 1; done\n",
    );
    let id = c.d.qsub(&["stay.sh"]);
    c.d.read_fifo(&started);
    c.agents[0].kill9();
    c.await_nodes(&["h1"], "down");
    // Without force the deletion waits for the agent: the job is exiting.
    assert_eq!(c.d.ok("qdel", &[&id]), "");
    assert_eq!(c.d.job_json(&id)["job_state"], "E");
    // With it, the job is gone at once.
    assert_eq!(c.d.ok("qdel", &["-W", "force", &id]), "");
    let job = c.d.job_json(&id);
    assert_eq!(job["job_state"], "F", "{job}");
    let comment = job["comment"].as_str().unwrap_or_default();
    assert!(
        comment.contains(
            "deleted by root with qdel -W force; the agent of host h1 did not confirm the end"
        ),
        "{job}"
    );
    // The agent comes back still running it: the old run is killed.
    c.restart_agent(0);
    assert_eq!(c.d.read_fifo(&gone), "killed\n");
    c.await_nodes(&["h1"], "free");
    let again = c.d.qsub(&["stay.sh"]);
    c.d.read_fifo(&started);
    c.d.ok("qdel", &[&again]);
    assert_eq!(c.d.read_fifo(&gone), "killed\n");
    c.d.wait_job(&again);
}

#[test]
fn qdel_x_deletes_the_history_for_good() {
    let mut d = Daemon::start();
    d.script("quick.sh", "exit 0\n");
    let done = d.qsub(&["quick.sh"]);
    d.wait_job(&done);
    assert_eq!(d.ok("qdel", &["-x", &done]), "");
    let out = d.run("qstat", &["-x", &done]);
    assert!(!out.status.success(), "qstat knows it no more");
    assert!(!d.all_job_ids().contains(&done));
    // A running job: deleted, and its history goes once it has ended.
    let started = d.fifo("started");
    d.script(
        "stay.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho up > started\nwhile :; do sleep 1; done\n",
    );
    let running = d.qsub(&["stay.sh"]);
    d.read_fifo(&started);
    d.ok("qdel", &["-x", &running]);
    for tries in 0.. {
        // The daemon's own view; there is no event to await.
        if !d.all_job_ids().contains(&running) {
            break;
        }
        assert!(
            tries < 600,
            "{running} still in the history after 60 s:\n{}",
            d.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Gone from the store too: a restarted daemon does not know them.
    let kept = d.qsub(&["quick.sh"]);
    d.wait_job(&kept);
    d.stop();
    d.spawn();
    let ids = d.all_job_ids();
    assert_eq!(ids, [kept], "only the job whose history was kept");
}
