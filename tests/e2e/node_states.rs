//! Nodes an operator takes out of service: `pbsnodes -o` (or qmgr's `set
//! node`) keeps new jobs off a node, the mark survives a restart, and
//! `pbsnodes -r` gives the node back.

use crate::harness::Daemon;

#[test]
fn an_offline_node_takes_no_job_until_it_is_put_back() {
    let mut d = Daemon::start();
    // The local agent has connected: its nodes are up.
    d.await_node_state("local01", "free");
    d.ok("pbsnodes", &["-o", "local00", "-C", "fan replaced"]);
    let listed = d.ok("pbsnodes", &["-l"]);
    assert!(
        listed.contains("local00") && listed.contains("offline") && listed.contains("fan replaced"),
        "{listed}"
    );
    assert!(!listed.contains("local01"), "{listed}");

    // The whole mesh cannot be had while one node is out.
    d.script("whole.sh", "#!/bin/sh\nexit 0\n");
    let whole = d.qsub(&["-lP", "16", "whole.sh"]);
    let started = d.fifo("started");
    let go = d.fifo("go");
    d.script("one.sh", "#!/bin/sh\necho up > started\nread x < go\n");
    let one = d.qsub(&["-lP", "15", "one.sh"]);
    d.read_fifo(&started);
    let job = d.job_json(&one);
    let exec_host = job["exec_host"].as_str().expect("exec_host");
    assert!(
        !d.exec_nodes(&one).iter().any(|n| n == "local00"),
        "{exec_host}"
    );
    assert_eq!(d.job_json(&whole)["job_state"], "Q");
    // qstat -n1 shows the nodes on the job's line.
    let table = d.ok("qstat", &["-n1", &one]);
    assert!(table.ends_with(&format!(" {exec_host}\n")), "{table}");

    // A restart keeps the node out.
    d.stop();
    d.spawn();
    let node = d.ok("pbsnodes", &["-F", "json", "local00"]);
    let doc: serde_json::Value = serde_json::from_str(&node).unwrap();
    // Offline whether or not the agent has reconnected yet (down,offline).
    let state = doc["nodes"]["local00"]["state"].as_str().unwrap();
    assert!(state.ends_with("offline"), "{doc}");
    assert_eq!(doc["nodes"]["local00"]["comment"], "fan replaced", "{doc}");
    d.write_fifo(&go, "go\n");
    assert_eq!(d.wait_job(&one).exit_status, Some(0));
    assert_eq!(d.job_json(&whole)["job_state"], "Q", "still one node short");

    // Back in service: the 16-node job runs.
    d.ok("pbsnodes", &["-r", "local00"]);
    assert_eq!(d.wait_job(&whole).exit_status, Some(0));
    assert_eq!(d.ok("pbsnodes", &["-l"]), "");
    let unknown = d.run("pbsnodes", &["-o", "nosuch"]);
    assert!(!unknown.status.success());
    assert!(
        crate::harness::stderr(&unknown).contains("node \"nosuch\" does not exist"),
        "{}",
        crate::harness::stderr(&unknown)
    );
    d.stop();
}
