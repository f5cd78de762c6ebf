//! The ANL sp commands against a real daemon: pausing, releasing nodes,
//! waiting, getjid, spq's listing, and the worked example of backfilling
//! from the ANL paper (Lifka 1995), both variants, on a 128-node machine.

use std::collections::HashMap;
use std::process::Stdio;

use serde_json::Value;

use crate::harness::{Daemon, bin, stderr};

fn json(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("bad JSON ({e}):\n{out}"))
}

/// `spq --json` as a JSON value.
fn spq(d: &Daemon) -> Value {
    json(&d.ok("spq", &["--json"]))
}

/// The entry of `id` in spq's `list` ("running" or "queued").
fn spq_entry(doc: &Value, list: &str, id: &str) -> Value {
    doc[list]
        .as_array()
        .and_then(|l| l.iter().find(|e| e["job_id"] == id))
        .cloned()
        .unwrap_or_else(|| panic!("{id} is not in spq's {list} list: {doc:#}"))
}

fn ids(doc: &Value, list: &str) -> Vec<String> {
    doc[list]
        .as_array()
        .map(|l| {
            l.iter()
                .map(|e| e["job_id"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// A job that says it started through FIFO `name`, then sleeps.
fn sleeper(d: &Daemon, name: &str) -> std::path::PathBuf {
    let fifo = d.fifo(&format!("started-{name}"));
    d.script(
        &format!("{name}.sh"),
        &format!("#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho go > started-{name}\nexec sleep 86400\n"),
    );
    fifo
}

#[test]
fn sppause_keeps_a_queued_job_and_spunpause_lets_it_run() {
    let d = Daemon::start();
    d.script("quick.sh", "echo ran\n");
    d.ok("qmgr", &["-c", "set server scheduling = false"]);
    let paused = d.qsub(&["quick.sh"]);
    d.ok("sppause", &[&paused]);
    d.ok("qmgr", &["-c", "set server scheduling = true"]);
    // A later job runs to its end, so passes have run past the paused one.
    let later = d.qsub(&["quick.sh"]);
    d.wait_job(&later);
    let job = d.job_json(&paused);
    assert_eq!(job["job_state"], "H", "{job}");
    assert_eq!(job["Hold_Types"], "u", "{job}");
    assert_eq!(spq_entry(&spq(&d), "queued", &paused)["status"], "Paused");
    d.ok("spunpause", &[&paused]);
    assert_eq!(d.wait_job(&paused).exit_status, Some(0));
}

#[test]
fn sprelease_ends_a_running_job_and_refuses_a_queued_one() {
    let d = Daemon::start();
    let started = sleeper(&d, "run");
    let running = d.qsub(&["run.sh"]);
    d.read_fifo(&started);
    d.script("whole.sh", "echo whole machine\n");
    // Needs every node: it waits while the sleeper holds one.
    let queued = d.qsub(&["-l", "nodes=16", "whole.sh"]);

    let refused = d.run("sprelease", &[&queued]);
    assert_eq!(refused.status.code(), Some(1));
    assert_eq!(
        stderr(&refused).trim(),
        format!("sprelease: job {queued} is queued, not running; qdel removes a queued job")
    );
    assert_eq!(d.job_json(&queued)["job_state"], "Q");

    d.ok("sprelease", &[&running]);
    let info = d.wait_job(&running);
    assert_eq!(info.exit_signal, Some(15), "{info:?}");
    // Its nodes are free again: the whole-machine job runs.
    assert_eq!(d.wait_job(&queued).exit_status, Some(0));
}

#[test]
fn spwait_blocks_until_the_end_and_exits_with_the_jobs_status() {
    let d = Daemon::start();
    let gate = d.fifo("gate");
    d.script(
        "gated.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\nread line < gate\nexit 7\n",
    );
    let id = d.qsub(&["gated.sh"]);
    let mut wait = d
        .cmd("spwait")
        .arg(&id)
        .stderr(Stdio::piped())
        .spawn()
        .expect("start spwait");
    // The job cannot end before the gate opens, so spwait must still wait.
    assert!(wait.try_wait().unwrap().is_none(), "spwait returned early");
    d.write_fifo(&gate, "go\n");
    let status = wait.wait().unwrap();
    assert_eq!(status.code(), Some(7));

    // A job ended by a signal reads as a shell reads it: 128 + 15.
    let started = sleeper(&d, "killed");
    let killed = d.qsub(&["killed.sh"]);
    d.read_fifo(&started);
    d.ok("sprelease", &[&killed]);
    assert_eq!(d.run("spwait", &[&killed]).status.code(), Some(143));

    let unknown = d.run("spwait", &["999"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(
        stderr(&unknown).contains("does not exist"),
        "{}",
        stderr(&unknown)
    );
}

#[test]
fn getjid_names_the_job_holding_a_node() {
    let d = Daemon::start();
    // Inside a job, getjid without arguments reads the job's node file.
    let started = d.fifo("started-jid");
    d.script(
        "jid.sh",
        &format!(
            "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\n{} > jid.out 2>&1\necho go > started-jid\nexec sleep 86400\n",
            bin("getjid")
        ),
    );
    let socket = format!("QMESH_SOCKET={}", d.socket.display());
    let id = d.qsub(&["-l", "nodes=2", "-v", &socket, "jid.sh"]);
    d.read_fifo(&started);
    let inside = std::fs::read_to_string(d.work.join("jid.out")).unwrap();
    assert_eq!(inside, format!("{id}\n"));

    let job = d.job_json(&id);
    assert!(job["exec_host"].is_string(), "{job}");
    let exec_nodes = d.exec_nodes(&id);
    let nodes: Vec<&str> = exec_nodes.iter().map(String::as_str).collect();
    assert_eq!(d.ok("getjid", &[nodes[1]]), format!("{id}\n"));
    assert_eq!(d.ok("getjid", &nodes), format!("{id}\n"), "each job once");

    let all = json(&d.ok("getjid", &["--json", "-H", "localhost"]));
    let all = all.as_array().unwrap();
    assert_eq!(all.len(), 16);
    let free = all
        .iter()
        .find(|n| n["job_id"].is_null())
        .and_then(|n| n["node"].as_str())
        .expect("a free node")
        .to_string();
    let out = d.run("getjid", &[&free]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out).trim(),
        format!("getjid: no job holds node {free}")
    );
    let out = d.run("getjid", &["nosuchnode"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("\"nosuchnode\" is unknown"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn spq_lists_running_jobs_then_the_queue() {
    let d = Daemon::start();
    let started = sleeper(&d, "run");
    let running = d.qsub(&["-l", "walltime=30:00", "run.sh"]);
    d.read_fifo(&started);
    d.script("whole.sh", "echo whole machine\n");
    let big = d.qsub(&["-l", "nodes=16", "whole.sh"]);
    let paused = d.qsub(&["-h", "whole.sh"]);

    let doc = spq(&d);
    assert_eq!(ids(&doc, "running"), std::slice::from_ref(&running));
    let run = spq_entry(&doc, "running", &running);
    assert_eq!(run["status"], "Running");
    assert_eq!(run["minutes"], 30);
    let start = run["start"].as_i64().expect("a start time");
    assert_eq!(run["expected_end"].as_i64(), Some(start + 1800));
    let queued = ids(&doc, "queued");
    assert!(queued.contains(&big) && queued.contains(&paused), "{doc:#}");
    let b = spq_entry(&doc, "queued", &big);
    assert_eq!(b["nodes"], 16);
    assert!(b["start"].is_null(), "{b}");
    assert_eq!(spq_entry(&doc, "queued", &paused)["status"], "Paused");

    let text = d.ok("spq", &[]);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("JOBID"), "{text}");
    assert!(
        lines[2].starts_with(&running),
        "running jobs first:\n{text}"
    );
    assert!(lines[2].contains("Running"), "{text}");
    assert!(d.ok("spq", &["-u", "nosuchuser"]).is_empty());

    let free = json(&d.ok("spfree", &["--json"]));
    let set = &free["node_sets"][0];
    assert_eq!(set["node_set"], "local");
    assert_eq!(
        (set["free"].as_i64(), set["total"].as_i64()),
        (Some(15), Some(16))
    );
    assert_eq!(set["up"], 16);

    let when = json(&d.ok("spwhen", &["--json", &running]));
    assert_eq!(when["status"], "Running");
    assert!(d.ok("spwhen", &[&running]).contains("is running since"));
    let out = d.run("spwhen", &["999"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("spwhen: job 999."),
        "{}",
        stderr(&out)
    );
}

/// The ANL paper's queue: user, nodes, minutes; F has 10 nodes in the
/// first variant and 8 in the second.
fn anl_queue(f_nodes: u32) -> [(&'static str, u32, u32); 8] {
    [
        ("A", 32, 120),
        ("B", 64, 60),
        ("C", 24, 180),
        ("D", 32, 120),
        ("E", 16, 120),
        ("F", f_nodes, 480),
        ("G", 4, 30),
        ("H", 32, 120),
    ]
}

/// One 128-node flat node set, EASY backfilling; the periodic pass is an
/// hour apart, so the plan the test reads is the one that started the jobs.
const SP128: &str = r#"
[agents]
local = true
local_host = "localhost"

[server]
default_queue = "batch"
scheduling = false
scheduler_iteration = "1:00:00"

[[queue]]
name = "batch"
max_walltime = "24:00:00"

[[node_set]]
name = "sp"
count = 128
host = "localhost"
"#;

/// Submits A..H with scheduling off, turns it on, waits until the jobs in
/// `starts` say they started, and returns the daemon, the ids by letter
/// and `spq --json`.
fn anl_example(f_nodes: u32, starts: &[&str]) -> (Daemon, HashMap<&'static str, String>, Value) {
    let d = Daemon::start_with(Some(SP128));
    d.ok("qmgr", &["-c", "set server backfill = easy"]);
    let mut fifos = HashMap::new();
    let mut jobs = HashMap::new();
    for (user, nodes, minutes) in anl_queue(f_nodes) {
        fifos.insert(user, sleeper(&d, user));
        let resources = format!("nodes={nodes},walltime={minutes}:00");
        let id = d.qsub(&["-N", user, "-l", &resources, &format!("{user}.sh")]);
        jobs.insert(user, id);
    }
    d.ok("qmgr", &["-c", "set server scheduling = true"]);
    for user in starts {
        d.read_fifo(&fifos[user]);
    }
    let doc = spq(&d);
    (d, jobs, doc)
}

/// D is blocked until B ends, 60 minutes after the starts: spwhen says so.
fn d_starts_when_b_ends(d: &Daemon, jobs: &HashMap<&str, String>, doc: &Value) {
    let b = spq_entry(doc, "running", &jobs["B"]);
    let b_end = b["start"].as_i64().expect("B's start") + 3600;
    assert_eq!(b["expected_end"].as_i64(), Some(b_end));
    let when = json(&d.ok("spwhen", &["--json", &jobs["D"]]));
    let start = when["expected_start"]
        .as_i64()
        .unwrap_or_else(|| panic!("spwhen D gives no start: {when:#}"));
    assert!(
        (start - b_end).abs() <= 5,
        "D should start when B ends ({b_end}), spwhen says {start}: {when:#}"
    );
    assert_eq!(when["status"], "Blocked", "{when:#}");
    let text = d.ok("spwhen", &[&jobs["D"]]);
    assert!(text.contains("expected start: "), "{text}");
}

#[test]
fn anl_example_g_backfills_while_d_is_blocked() {
    let (d, jobs, doc) = anl_example(10, &["A", "B", "C", "G"]);
    let mut running = ids(&doc, "running");
    running.sort();
    let mut expected: Vec<String> = ["A", "B", "C", "G"]
        .iter()
        .map(|u| jobs[u].clone())
        .collect();
    expected.sort();
    assert_eq!(running, expected, "{doc:#}");
    let queued: Vec<String> = ["D", "E", "F", "H"]
        .iter()
        .map(|u| jobs[u].clone())
        .collect();
    assert_eq!(ids(&doc, "queued"), queued, "the queue in plan order");
    let status = |u: &str| spq_entry(&doc, "queued", &jobs[u])["status"].clone();
    assert_eq!(status("D"), "Blocked", "{doc:#}");
    assert_eq!(status("E"), "Cannot Backfill", "{doc:#}");
    assert_eq!(status("F"), "Cannot Backfill", "{doc:#}");
    d_starts_when_b_ends(&d, &jobs, &doc);

    // 4 nodes stay free: D's reservation takes B's nodes, not these.
    let free = json(&d.ok("spfree", &["--json"]));
    assert_eq!(free["node_sets"][0]["free"], 4, "{free:#}");
    assert!(free["node_sets"][0]["until"].is_null(), "{free:#}");
    assert_eq!(d.ok("spwhat", &[]), "4 nodes without limit\n");
    let full = d.ok("qstat", &["-f", &jobs["D"]]);
    assert!(full.contains("    estimated.start_time = "), "{full}");
}

#[test]
fn anl_example_f_with_8_nodes_backfills_and_g_waits() {
    let (d, jobs, doc) = anl_example(8, &["A", "B", "C", "F"]);
    let mut running = ids(&doc, "running");
    running.sort();
    let mut expected: Vec<String> = ["A", "B", "C", "F"]
        .iter()
        .map(|u| jobs[u].clone())
        .collect();
    expected.sort();
    assert_eq!(running, expected, "{doc:#}");
    let queued: Vec<String> = ["D", "E", "G", "H"]
        .iter()
        .map(|u| jobs[u].clone())
        .collect();
    assert_eq!(ids(&doc, "queued"), queued, "G waits, in plan order");
    let status = |u: &str| spq_entry(&doc, "queued", &jobs[u])["status"].clone();
    assert_eq!(status("D"), "Blocked", "{doc:#}");
    assert_eq!(status("E"), "Cannot Backfill", "{doc:#}");
    assert_eq!(d.job_json(&jobs["G"])["job_state"], "Q");
    d_starts_when_b_ends(&d, &jobs, &doc);
}

/// spq --watch on a real terminal: the view follows the queue frame by
/// frame, drawn in place on the alternate screen, and Ctrl-C gives the
/// terminal back as it was.
#[test]
fn spq_watch_redraws_in_place_until_ctrl_c() {
    let d = Daemon::start();
    let _started = sleeper(&d, "long");
    let script = d.work.join("long.sh");
    let first = d.qsub(&["-N", "first", "-l", "nodes=16", script.to_str().unwrap()]);
    let mut term = crate::interactive::Terminal::run(&d, "spq", &d.socket, &["--watch", "0.2"]);
    term.expect("(Ctrl-C to stop)", &d);
    term.expect(first.split('.').next().unwrap(), &d);
    term.expect("node set local", &d);
    // A job submitted meanwhile shows in a later frame.
    let second = d.qsub(&["-N", "second", script.to_str().unwrap()]);
    term.expect(&format!("{} ", second.split('.').next().unwrap()), &d);
    let seen = term.seen.0.lock().unwrap().clone();
    assert!(
        seen.contains("\x1b[?1049h"),
        "the alternate screen: {seen:?}"
    );
    assert!(
        !seen.contains("\x1b[2J"),
        "a frame is never erased whole: {seen:?}"
    );
    term.type_in("\x03");
    let status = term.child.wait().unwrap();
    assert!(
        status.success(),
        "spq --watch ends well on Ctrl-C: {status:?}"
    );
    term.expect("\x1b[?1049l", &d);
    term.expect("\x1b[?25h", &d);
    d.ok("qdel", &[&first, &second]);
}

/// The daemon learns what a user's jobs run from their ends (the agent's
/// reports): spwhen's estimate is then from predicted run times, and says
/// so, with the wall-time one beside it.
#[test]
fn spwhen_estimates_from_the_users_last_two_jobs_and_says_so() {
    let d = Daemon::start();
    d.script("quick.sh", "echo ran\n");
    for _ in 0..2 {
        let quick = d.qsub(&["-l", "walltime=1:00:00", "quick.sh"]);
        assert_eq!(d.wait_job(&quick).exit_status, Some(0));
    }
    // Asks an hour, like the two before it, which ran a second or so.
    let started = sleeper(&d, "whole");
    let running = d.qsub(&["-l", "nodes=16,walltime=1:00:00", "whole.sh"]);
    d.read_fifo(&started);
    d.script("next.sh", "echo next\n");
    let next = d.qsub(&["-l", "nodes=16,walltime=1:00:00", "next.sh"]);
    let start = spq_entry(&spq(&d), "running", &running)["start"]
        .as_i64()
        .expect("its start");
    let when = json(&d.ok("spwhen", &["--json", &next]));
    assert_eq!(when["estimate"], "predicted", "{when:#}");
    let walltime = when["walltime_start"].as_i64().expect("a wall-time start");
    assert!((walltime - (start + 3600)).abs() <= 5, "{when:#}");
    // Predicted a second or two; once outlived, the ladder's first step.
    let predicted = when["expected_start"].as_i64().expect("a start");
    assert!(predicted <= start + 60 + 5, "{when:#}");
    let text = d.ok("spwhen", &[&next]);
    assert!(
        text.contains("estimate from predicted run times (last two jobs of each user")
            && text.contains("from requested wall times: "),
        "{text}"
    );
}
