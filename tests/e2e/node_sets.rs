//! Node sets made with qmgr: they run jobs at once, survive a restart, and
//! overlapping or busy changes are refused with a message that says why.

use crate::harness::{Daemon, stderr};

#[test]
fn a_node_set_made_with_qmgr_runs_jobs_and_survives_a_restart() {
    let mut d = Daemon::start();
    // Two new nodes, served by the local agent (host localhost), and one
    // on a host no agent serves yet.
    d.ok(
        "qmgr",
        &[
            "-c",
            "create node_set extra nodes = \"x[1-2]\", host = localhost, ncpus = 2\n\
             create node_set far nodes = f1, host = farhost\n\
             set queue batch node_sets = extra",
        ],
    );
    let listed = d.ok("qmgr", &["-c", "list node_set"]);
    assert!(
        listed.contains("Node set local\n    source = configuration file\n"),
        "{listed}"
    );
    assert!(
        listed.contains("Node set extra\n    source = qmgr\n    topology = flat\n    nodes = 2\n    node_names = x1,x2\n    hosts = localhost\n"),
        "{listed}"
    );

    // A job in batch runs on the new nodes, and only there.
    let started = d.fifo("started");
    let go = d.fifo("go");
    d.script(
        "two.sh",
        "#!/bin/sh\necho up > started\nread x < go\nexit 0\n",
    );
    let id = d.qsub(&["-lP", "2", "two.sh"]);
    d.read_fifo(&started);
    let job = d.job_json(&id);
    let exec_host = job["exec_host"].as_str().expect("exec_host").to_string();
    assert!(
        exec_host.contains("x1") && exec_host.contains("x2"),
        "{exec_host}"
    );

    // While it runs: its nodes may not be taken, overlaps are refused,
    // a set a queue uses is not deleted; and nothing of a script applies.
    for (script, says) in [
        (
            "create node_set other nodes = \"y1,x2\", host = localhost",
            "node \"x2\" is already in node set \"extra\"; node sets are disjoint",
        ),
        (
            "set node_set extra nodes -= x2",
            "runs on node x2 of node set \"extra\"",
        ),
        (
            "delete node_set extra",
            "node set \"extra\" is used by queue \"batch\"",
        ),
        (
            "set node_set local mem = 1gb",
            "node set \"local\" comes from the configuration file; change it there and restart qmeshd",
        ),
        (
            "create node_set ok nodes = z1, host = localhost\ndelete node_set nosuch",
            "node set \"nosuch\" does not exist",
        ),
    ] {
        let out = d.run("qmgr", &["-c", script]);
        assert!(!out.status.success(), "{script} was accepted");
        let msg = stderr(&out);
        assert!(msg.contains(says), "{script}: {msg}");
        assert!(msg.contains("nothing was changed"), "{msg}");
    }
    assert!(
        !d.ok("qmgr", &["-c", "list node_set"])
            .contains("Node set ok")
    );
    d.write_fifo(&go, "go\n");
    let done = d.wait_job(&id);
    assert_eq!(done.exit_status, Some(0), "{done:?}");

    // After a restart the sets are there, and still run jobs.
    d.stop();
    d.spawn();
    let listed_again = d.ok("qmgr", &["-c", "list node_set"]);
    assert_eq!(listed_again, listed);
    let backup = d.ok("qmgr", &["-c", "print server"]);
    assert!(
        backup.contains("create node_set extra nodes = \"x1,x2\", host = localhost, ncpus = 2\n"),
        "{backup}"
    );
    d.script("one.sh", "#!/bin/sh\nexit 3\n");
    let again = d.qsub(&["-lP", "2", "one.sh"]);
    assert_eq!(d.wait_job(&again).exit_status, Some(3));

    // Out of the queue, the set may go.
    d.ok(
        "qmgr",
        &[
            "-c",
            "unset queue batch node_sets\ndelete node_set extra, far",
        ],
    );
    assert!(!d.ok("qmgr", &["-c", "list node_set"]).contains("extra"));
}

#[test]
fn a_stored_set_the_file_now_overlaps_is_left_out_with_a_warning() {
    let file = "[agents]\nlocal = true\nlocal_host = \"localhost\"\n\n\
                [[queue]]\nname = \"batch\"\n\n\
                [[node_set]]\nname = \"base\"\nnodes = [\"b1\", \"b2\"]\nhost = \"localhost\"\n";
    let mut d = Daemon::start_with(Some(file));
    d.ok(
        "qmgr",
        &[
            "-c",
            "create node_set extra nodes = \"e1,e2\", host = localhost",
        ],
    );
    d.stop();
    // The machine's description now claims e2.
    std::fs::write(
        d.root.path().join("qmesh.toml"),
        file.replace("\"b2\"]", "\"b2\", \"e2\"]"),
    )
    .unwrap();
    d.spawn();
    let listed = d.ok("qmgr", &["-c", "list node_set"]);
    assert!(listed.contains("Node set base"), "{listed}");
    assert!(!listed.contains("Node set extra"), "{listed}");
    let log = d.log();
    assert!(
        log.contains("node set \"extra\" (made with qmgr) is left out: node \"e2\" is already in node set \"base\""),
        "{log}"
    );
    // The set can be made again without the file's node.
    d.ok(
        "qmgr",
        &["-c", "create node_set extra nodes = e1, host = localhost"],
    );
}

#[test]
fn a_shared_node_runs_as_many_jobs_as_it_has_room_for() {
    let mut d = Daemon::start();
    d.ok(
        "qmgr",
        &[
            "-c",
            "create node_set pool nodes = s1, host = localhost, jobs_per_node = 2\n\
             set queue batch node_sets = pool",
        ],
    );
    let listed = d.ok("qmgr", &["-c", "list node_set pool"]);
    assert!(listed.contains("attributes = jobs_per_node=2"), "{listed}");
    let started = d.fifo("started");
    // Each job holds its slot until the test makes the file `release`.
    d.script(
        "hold.sh",
        "#!/bin/sh\necho \"$PBS_JOBID\" > started\n\
         while [ ! -e release ]; do sleep 0.05; done\nexit 0\n",
    );
    let ids: Vec<String> = (0..3).map(|_| d.qsub(&["hold.sh"])).collect();
    // Two jobs run on s1 at once.
    let mut running: Vec<String> = Vec::new();
    while running.len() < 2 {
        running.extend(d.read_fifo(&started).lines().map(String::from));
    }
    running.sort();
    assert_eq!(running, ids[..2], "the first two start");
    for id in &ids[..2] {
        assert_eq!(d.exec_nodes(id), vec!["s1"]);
    }
    let node = d.ok("pbsnodes", &["-F", "json", "s1"]);
    let doc: serde_json::Value = serde_json::from_str(&node).unwrap();
    assert_eq!(doc["nodes"]["s1"]["state"], "job-busy", "{doc}");
    assert_eq!(doc["nodes"]["s1"]["jobs"].as_array().map(Vec::len), Some(2));
    // The third waits for room, and says so once a pass has seen it.
    let third = &ids[2];
    loop {
        let job = d.job_json(third);
        if !job["reason"].as_str().unwrap_or("").is_empty() {
            assert_eq!(job["job_state"], "Q", "{job}");
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // Let them go: the third runs on s1 too.
    std::fs::write(d.work.join("release"), "").unwrap();
    let line = d.read_fifo(&started);
    assert_eq!(line.trim(), third.as_str());
    assert_eq!(d.wait_job(third).exit_status, Some(0));
    assert_eq!(d.exec_nodes(third), vec!["s1"]);
    d.stop();
}
