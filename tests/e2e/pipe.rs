//! EPCC's NIGHT pipe queue through the real daemon: set up with qmgr, jobs
//! submitted to it land by nodes and time, one too long waits in the
//! holding queue with the reason and never starts, and qmove sends it to a
//! queue that runs it; the move survives a restart, and a running job does
//! not move.
//!
//! The seed's PEs are scaled to the embedded 16-node machine: 64 PEs are
//! 4 nodes, 128 are 8 and 256 are 16. The times are Table 3's.

use crate::harness::{Daemon, stderr};

const NIGHT: &str = "\
create queue MPP_S256 resources_min.nodes = 9, resources_max.nodes = 16, resources_max.walltime = 00:20:00
create queue MPP_256 resources_min.nodes = 9, resources_max.nodes = 16, resources_max.walltime = 06:00:00
create queue N_MPP_64 resources_max.nodes = 4, resources_max.walltime = 06:00:00
create queue N_MPP_128 resources_min.nodes = 5, resources_max.nodes = 8, resources_max.walltime = 06:00:00
create queue W_MPP_64 resources_max.nodes = 4, resources_max.walltime = 12:00:00
create queue W_MPP_128 resources_min.nodes = 5, resources_max.nodes = 8, resources_max.walltime = 12:00:00
create queue W_MPP_256 resources_min.nodes = 9, resources_max.nodes = 16, resources_max.walltime = 12:00:00
create queue COMPILE_NIGHT resources_max.nodes = 1, resources_max.walltime = 06:00:00
set queue MPP_S256, MPP_256, N_MPP_64, N_MPP_128 enabled = true, started = true
set queue W_MPP_64, W_MPP_128, W_MPP_256, COMPILE_NIGHT enabled = true, started = true
# The holding queue takes what the pipe sends it and never runs it.
create queue HOLD
create queue NIGHT queue_type = pipe, enabled = true
set queue NIGHT route_destinations = \"MPP_S256,MPP_256,N_MPP_64,N_MPP_128\"
set queue NIGHT route_destinations += \"W_MPP_64,W_MPP_128,W_MPP_256\"
set queue NIGHT default_destination = COMPILE_NIGHT
set queue NIGHT holding_queue = HOLD
";

fn queue_of(d: &Daemon, id: &str) -> String {
    d.job_json(id)["queue"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn the_night_pipe_routes_holds_and_qmove_releases() {
    let mut d = Daemon::start();
    let setup = d.work.join("night.qmgr");
    std::fs::write(&setup, NIGHT).unwrap();
    let out = d.ok("qmgr", &[setup.to_str().unwrap()]);
    assert_eq!(
        out, "",
        "no warnings for a holding queue that is not started"
    );
    let listed = d.ok("qmgr", &["-c", "list queue NIGHT"]);
    assert!(listed.contains("    queue_type = Route\n"), "{listed}");
    assert!(
        listed.contains(
            "    route_destinations = MPP_S256,MPP_256,N_MPP_64,N_MPP_128,W_MPP_64,W_MPP_128,W_MPP_256\n"
        ),
        "{listed}"
    );
    let queues = d.ok("qstat", &["-Q"]);
    let night = queues.lines().find(|l| l.starts_with("NIGHT")).unwrap();
    assert!(night.ends_with("Rout"), "{queues}");

    d.script("job.sh", "#!/bin/sh\necho ran\n");
    let cases = [
        (vec!["-l", "nodes=16,walltime=00:10:00"], "MPP_S256"),
        (vec!["-l", "nodes=16,walltime=5:00:00"], "MPP_256"),
        (vec!["-lP", "2", "-lT", "1:00:00"], "N_MPP_64"),
        (vec!["-l", "nodes=4,walltime=11:00:00"], "W_MPP_64"),
        (vec!["-l", "nodes=6,walltime=7:00:00"], "W_MPP_128"),
        (vec![], "COMPILE_NIGHT"),
    ];
    let mut routed = Vec::new();
    for (resources, queue) in &cases {
        let mut args = vec!["-q", "NIGHT"];
        args.extend(resources);
        args.push("job.sh");
        routed.push((d.qsub(&args), *queue));
    }
    let long = d.qsub(&["-q", "NIGHT", "-l", "nodes=16,walltime=13:00:00", "job.sh"]);
    let why = "routed to HOLD by pipe queue NIGHT: no destination takes 16 nodes for \
               13:00:00 (largest wall time 12:00:00)";

    // Every routed job runs to its end in its destination; passes have then
    // run past the held one, which has not started.
    for (id, queue) in &routed {
        let info = d.wait_job(id);
        assert_eq!(info.exit_status, Some(0), "{info:?}");
        assert_eq!(info.queue, *queue, "job {id}");
    }
    let held = d.job_json(&long);
    assert_eq!(held["queue"], "HOLD", "{held}");
    assert_eq!(held["job_state"], "Q", "{held}");
    assert_eq!(held["run_count"], 0, "{held}");
    assert_eq!(held["reason"], "QueueStopped", "{held}");
    assert!(
        held["comment"].as_str().unwrap_or_default().contains(why),
        "{held}"
    );

    // qmove checks the destination's limits and says so with the figures.
    let out = d.run("qmove", &["N_MPP_64", &long]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(
            "qmove: job asks for 16 nodes but queue \"N_MPP_64\" allows at most 4 (resources_max.nodes)"
        ),
        "{}",
        stderr(&out)
    );
    assert_eq!(queue_of(&d, &long), "HOLD", "nothing moved");

    // The move is durable when qmove answers: with scheduling off, it is
    // still in batch after a restart, then it runs there.
    d.ok("qmgr", &["-c", "set server scheduling = false"]);
    d.ok("qmove", &["batch", &long]);
    let backup = d.ok("qmgr", &["-c", "print server"]);
    d.stop();
    d.spawn();
    assert_eq!(queue_of(&d, &long), "batch");
    assert_eq!(d.ok("qmgr", &["-c", "print server"]), backup);
    d.ok("qmgr", &["-c", "set server scheduling = true"]);
    let info = d.wait_job(&long);
    assert_eq!((info.queue.as_str(), info.exit_status), ("batch", Some(0)));
    assert!(info.comment.contains("job ended"), "{info:?}");
}

#[test]
fn a_running_job_does_not_move() {
    let d = Daemon::start();
    d.ok(
        "qmgr",
        &[
            "-c",
            "create queue small resources_max.nodes = 2, enabled = true, started = true",
        ],
    );
    let started = d.fifo("started");
    d.script(
        "sleeper.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho go > started\nexec sleep 300\n",
    );
    let id = d.qsub(&["sleeper.sh"]);
    d.read_fifo(&started);
    let out = d.run("qmove", &["small", &id]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!(
            "qmove: cannot move job {id}: it is running; only jobs that have not started (queued, held, waiting) move\n"
        )
    );
    let unknown = d.run("qmove", &["--json", "small", "999"]);
    assert_eq!(unknown.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&unknown.stdout).unwrap();
    assert_eq!(json[0]["ok"], false, "{json}");
    assert!(
        json[0]["error"]
            .as_str()
            .unwrap_or_default()
            .contains("does not exist"),
        "{json}"
    );
    assert_eq!(queue_of(&d, &id), "batch");
    d.ok("qdel", &[&id]);
    d.wait_job(&id);
}
