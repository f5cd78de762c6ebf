//! The site configurations in `etc/examples` run: each starts a daemon that
//! shows its queues and node groups and runs a job; `print server` of the
//! EPCC site rebuilds it in a fresh daemon; the cron scripts in `etc/cron`
//! apply to it.
//!
//! The files are used as they are, but for what only a real site has: the
//! NCAR cluster's agent port and cluster key, and its other three machines,
//! which are agents the test starts for their host names.

use std::path::{Path, PathBuf};
use std::process::Child;

use crate::agents::{agent_with, free_port};
use crate::harness::{Daemon, stderr};

fn repo_file(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn example(name: &str) -> String {
    let path = repo_file(&format!("etc/examples/{name}"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn print_server(d: &Daemon) -> String {
    d.ok("qmgr", &["-c", "print server"])
}

fn assert_lists(dump: &str, lines: &[&str]) {
    for line in lines {
        assert!(
            dump.lines().any(|l| l == *line),
            "print server lacks \"{line}\":\n{dump}"
        );
    }
}

/// A job that exits 0; waits for it and returns the nodes it ran on.
fn run_job(d: &Daemon, args: &[&str]) -> String {
    d.script("hello.sh", "#!/bin/sh\necho hello\n");
    let mut args = args.to_vec();
    args.push("hello.sh");
    let id = d.qsub(&args);
    let info = d.wait_job(&id);
    assert_eq!(info.exit_status, Some(0), "{info:?}\n{}", d.log());
    d.exec_nodes(&id).join("+")
}

fn queue_of(d: &Daemon, id: &str) -> String {
    d.job_json(id)["queue"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Runs a qmgr file through standard input, as cron does.
fn qmgr_stdin(d: &Daemon, file: &Path) -> std::process::Output {
    let input = std::fs::File::open(file).expect("open the qmgr file");
    d.cmd("qmgr").stdin(input).output().expect("run qmgr")
}

#[test]
fn the_sdsc_paragon_example_runs_jobs_in_its_node_groups() {
    let mut d = Daemon::start_with(Some(&example("sdsc-paragon.toml")));
    let dump = print_server(&d);
    assert_lists(
        &dump,
        &[
            "set calendar time_zone = America/Los_Angeles",
            "# node group any is made by the configuration file",
            "set node_group fat sets = \"set2,set3\"",
            "set node_group fat sets.prime = set2",
            "set node_group short sets.prime = \"set3,set1,set2\"",
            "set queue q4t queue_type = Execution",
            "set queue q128l queue_type = Execution",
            "set queue qf128l queue_type = Execution",
            "set queue fstandby queue_type = Execution",
            "set queue qf32s node_group = fat_short",
        ],
    );
    // A fat job runs on the 32 MB nodes, set 2 or (at night) set 3.
    let nodes = run_job(&d, &["-q", "qf8s", "-lP", "4", "-l", "walltime=5:00"]);
    assert!(
        nodes.starts_with("set2") || nodes.starts_with("set3"),
        "{nodes}"
    );
    // Limits come from Table 5.
    d.script("big.sh", "#!/bin/sh\n");
    let out = d.run("qsub", &["-q", "q4s", "-lP", "8", "big.sh"]);
    assert!(!out.status.success(), "q4s took 8 nodes");
    d.stop();
}

#[test]
fn the_epcc_t3d_example_routes_holds_and_runs() {
    let mut d = Daemon::start_with(Some(&example("epcc-t3d.toml")));
    let dump = print_server(&d);
    assert_lists(
        &dump,
        &[
            "set calendar time_zone = Europe/London",
            "set calendar period.DAY = \"Mon-Fri 10:00-18:00\"",
            "# node group batch is made by the configuration file",
            "set node_group batch sets.POOL64_BATCH = \"POOL_256,POOL_64\"",
            "set queue MPP_S64 queue_type = Execution",
            "set queue W_MPP_256 queue_type = Execution",
            "set queue MPP_256 period_end = kill",
            "# Define queue NIGHT (the configuration file creates it)",
            "set queue NIGHT queue_type = Route",
            "set queue NIGHT holding_queue = HOLD",
            "set queue DAY default_destination = COMPILE",
        ],
    );
    d.script("job.sh", "#!/bin/sh\n");
    // The pipes route by PEs and time, whatever the hour.
    let long = d.qsub(&["-q", "NIGHT", "-l", "nodes=256,walltime=13:00:00", "job.sh"]);
    assert_eq!(queue_of(&d, &long), "HOLD");
    let comment = d.job_json(&long)["comment"].to_string();
    assert!(comment.contains("pipe queue NIGHT"), "{comment}");
    let mid = d.qsub(&["-q", "DAY", "-l", "nodes=100,walltime=0:30:00", "job.sh"]);
    assert_eq!(queue_of(&d, &mid), "MPP_128");
    // DAY is the default queue; a job naming nothing falls through to COMPILE.
    let compile = d.qsub(&["job.sh"]);
    assert_eq!(queue_of(&d, &compile), "COMPILE");
    // SYSTEST runs at any hour, in a pool's fixed shape.
    let nodes = run_job(&d, &["-q", "SYSTEST", "-l", "nodes=2,walltime=1:00"]);
    assert!(nodes.contains("pe"), "{nodes}");
    d.stop();
}

#[test]
fn print_server_rebuilds_the_epcc_site_in_a_fresh_daemon() {
    // The site as its file makes it, then changed as cron changes it at
    // night: the backup holds both.
    let mut first = Daemon::start_with(Some(&example("epcc-t3d.toml")));
    let out = qmgr_stdin(&first, &repo_file("etc/cron/night.qmgr"));
    assert!(out.status.success(), "night.qmgr: {}", stderr(&out));
    let dump = print_server(&first);
    first.stop();

    // A fresh daemon started from the same file has the file's queues
    // already: the backup sets them, it does not create them again.
    let mut fresh = Daemon::start_with(Some(&example("epcc-t3d.toml")));
    assert_ne!(
        print_server(&fresh),
        dump,
        "the night's changes are not there yet"
    );
    let file = fresh.work.join("epcc.qmgr");
    std::fs::write(&file, &dump).unwrap();
    let out = qmgr_stdin(&fresh, &file);
    assert!(out.status.success(), "qmgr < dump: {}", stderr(&out));
    assert_eq!(print_server(&fresh), dump);
    fresh.stop();
}

#[test]
fn the_cron_scripts_apply_to_the_epcc_site() {
    let mut d = Daemon::start_with(Some(&example("epcc-t3d.toml")));
    let mut scripts: Vec<PathBuf> = std::fs::read_dir(repo_file("etc/cron"))
        .expect("etc/cron")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "qmgr"))
        .collect();
    scripts.sort();
    assert!(scripts.len() >= 2, "{scripts:?}");
    for script in &scripts {
        let out = qmgr_stdin(&d, script);
        assert!(
            out.status.success(),
            "qmgr < {}: {}",
            script.display(),
            stderr(&out)
        );
    }
    // night.qmgr then day.qmgr: the day's queues run, the night's do not.
    for name in ["night.qmgr", "day.qmgr"] {
        let out = qmgr_stdin(&d, &repo_file(&format!("etc/cron/{name}")));
        assert!(out.status.success(), "{name}: {}", stderr(&out));
    }
    let day = d.ok("qmgr", &["-c", "list queue MPP_S64"]);
    assert!(day.contains("    started = True\n"), "{day}");
    let night = d.ok("qmgr", &["-c", "list queue MPP_256"]);
    assert!(night.contains("    started = False\n"), "{night}");
    let dump = print_server(&d);
    assert_lists(
        &dump,
        &[
            "set node_group interactive sets = \"POOL_64,POOL_256\"",
            "set server default_queue = DAY",
        ],
    );
    d.stop();
}

#[test]
fn the_ncar_cluster_example_sends_jobs_to_the_machine_they_need() {
    let port = free_port();
    let keydir = tempfile::tempdir().unwrap();
    let key = keydir.path().join("cluster.key");
    std::fs::write(&key, "el-cluster\n").unwrap();
    let config = example("ncar-cluster.toml")
        .replace("0.0.0.0:15001", &format!("127.0.0.1:{port}"))
        .replace("/etc/qmesh/cluster.key", &key.display().to_string())
        .replace("[agents]\n", "[agents]\nheartbeat_secs = 1\n");
    let mut d = Daemon::start_with(Some(&config));
    // el1 is the daemon's own agent; the other machines connect over TCP
    // and report their CPUs and the load the test writes for them.
    let mut agents: Vec<Child> = [("el2", "8"), ("el3", "8"), ("el4", "2")]
        .iter()
        .map(|&(host, cpus)| {
            let load = d.work.join(format!("load-{host}"));
            std::fs::write(&load, "0\n").unwrap();
            let command = format!("cat {}", load.display());
            let args = ["--load-command", &command, "--cpus", cpus];
            agent_with(&d, port, host, &key, host, &args)
        })
        .collect();

    let dump = print_server(&d);
    assert_lists(
        &dump,
        &[
            "# node group cluster is made by the configuration file",
            "set node_group cluster sets = \"el4,el3,el1,el2\"",
            "set queue central queue_type = Execution",
            "set queue central node_group = cluster",
        ],
    );
    // Licensed software is on el3 only; eight CPUs and 2 GB on an EL 98
    // with 2 GB. (Which machine a small job takes depends on which agents
    // have connected yet, so it is not asserted.)
    assert_eq!(run_job(&d, &["-l", "feature=imsl"]), "el3");
    let big = run_job(&d, &["-l", "ncpus=8,mem=2gb"]);
    assert!(big == "el1" || big == "el2", "{big}");
    let small = run_job(&d, &["-l", "mem=256mb"]);
    assert!(small.starts_with("el"), "{small}");
    // No agent was refused: the remote ones proved the key (the daemon's
    // own, on its Unix socket, needs none).
    let log = d.log();
    assert!(
        !log.contains("wrong cluster key"),
        "an agent was refused:\n{log}"
    );
    // No machine has 4 GB: refused at once, not queued for ever.
    d.script("huge.sh", "#!/bin/sh\n");
    let out = d.run("qsub", &["-l", "mem=4gb", "huge.sh"]);
    assert!(!out.status.success(), "a 4 GB job was taken");
    // el4 (512 MB) is listed first, so a job that fits it goes there; a
    // job asking 1 GB never does.
    for _ in 0..3 {
        let host = run_job(&d, &["-l", "mem=1gb"]);
        assert!(host != "el4" && host.starts_with("el"), "{host}");
    }

    // el2's run queue at 40, over four times its 8 CPUs: busy. el1 and el3
    // are taken out for repair. A job that needs 8 CPUs has no machine.
    std::fs::write(d.work.join("load-el2"), "40\n").unwrap();
    d.ok("pbsnodes", &["-o", "el1", "el3", "-C", "repair"]);
    d.await_node_state("el2", "busy");
    d.script("eight.sh", "#!/bin/sh\necho hello\n");
    let eight = d.qsub(&["-l", "ncpus=8", "eight.sh"]);
    // Once a pass has looked at it (it says why it waits), it still waits.
    for _ in 0..600 {
        if !d.job_json(&eight)["reason"]
            .as_str()
            .unwrap_or("")
            .is_empty()
        {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let job = d.job_json(&eight);
    assert_eq!(job["job_state"], "Q", "{job}");
    // el2's load drops: the job runs there, not on the offline machines.
    std::fs::write(d.work.join("load-el2"), "3\n").unwrap();
    let info = d.wait_job(&eight);
    assert_eq!(info.exit_status, Some(0));
    assert_eq!(d.exec_nodes(&eight), vec!["el2"]);

    // The machines are shared (jobs_per_node): among those that may take
    // a job, the least busy by run queue over CPUs wins. el1 (the test
    // machine's own load) stays out.
    d.ok("pbsnodes", &["-r", "el3"]);
    let loads = |el2: &str, el3: &str, el4: &str| {
        for (host, load) in [("el2", el2), ("el3", el3), ("el4", el4)] {
            std::fs::write(d.work.join(format!("load-{host}")), format!("{load}\n")).unwrap();
        }
        for (host, load) in [("el2", el2), ("el3", el3), ("el4", el4)] {
            await_node_load(&d, host, load.parse().unwrap());
        }
    };
    // el3 at 2/8 is less busy than el4 at 1/2 and el2 at 12/8.
    loads("12", "2", "1");
    assert_eq!(run_job(&d, &[]), "el3");
    // el3 at 12/8: el4 at 1/2 now.
    loads("12", "12", "1");
    assert_eq!(run_job(&d, &[]), "el4");
    let node = d.ok("pbsnodes", &["el4"]);
    assert!(node.contains("jobs_per_node = 2"), "{node}");
    d.ok("pbsnodes", &["-r", "el1"]);

    for child in &mut agents {
        crate::agents::stop_agent(child);
    }
    d.stop();
}

/// Waits until pbsnodes shows `load` for `node` (its agent reported it).
fn await_node_load(d: &Daemon, node: &str, load: f64) {
    for _ in 0..600 {
        let out = d.ok("pbsnodes", &["-F", "json", node]);
        let doc: serde_json::Value = serde_json::from_str(&out).expect("pbsnodes JSON");
        if doc["nodes"][node]["load"].as_f64() == Some(load) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!(
        "node {node} does not show load {load} after 60 s:\n{}",
        d.log()
    );
}
