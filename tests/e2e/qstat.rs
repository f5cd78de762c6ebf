//! qstat as PBS Pro and Torque print it, read the way the tools that drive
//! PBS read it: Parsl's Torque provider (the state in the fifth column of
//! `qstat ID...`), its PBS Pro provider (`qstat -x -f -F json ID...`), and
//! scripts that check qstat's exit status.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::harness::{Daemon, stderr};

/// A daemon with a job in each state: finished, running (until `go` is
/// written), queued (it wants every node while one is taken) and held.
struct Jobs {
    d: Daemon,
    go: PathBuf,
    done: String,
    running: String,
    queued: String,
    held: String,
}

impl Jobs {
    fn start() -> Jobs {
        let d = Daemon::start();
        d.script("quick.sh", "#!/bin/sh\nexit 0\n");
        let done = d.qsub(&["-N", "done", "quick.sh"]);
        assert_eq!(d.wait_job(&done).exit_status, Some(0));
        let started = d.fifo("started");
        let go = d.fifo("go");
        d.script(
            "run.sh",
            "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho up > started\nread x < go\n",
        );
        let running = d.qsub(&["-N", "runner", "run.sh"]);
        d.read_fifo(&started);
        let queued = d.qsub(&["-N", "big", "-lP", "16", "quick.sh"]);
        let held = d.qsub(&["-h", "quick.sh"]);
        Jobs {
            d,
            go,
            done,
            running,
            queued,
            held,
        }
    }

    fn server(&self) -> &str {
        self.done.split_once('.').expect("SEQ.SERVER").1
    }

    /// Lets the running job end and the queued one run; deletes the held one.
    fn finish(&self) {
        self.d.write_fifo(&self.go, "go\n");
        self.d.wait_job(&self.running);
        self.d.wait_job(&self.queued);
        self.d.ok("qdel", &[&self.held]);
        self.d.wait_job(&self.held);
    }
}

/// What Parsl's TorqueProvider does with `qstat ID...`: skip the header
/// lines, match each row's (possibly cut) id to the ids asked for, take
/// the state from the fifth column.
fn torque_states(out: &str, ids: &[&str]) -> Vec<(String, String)> {
    out.lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .filter(|parts| {
            !parts.is_empty()
                && !parts[0].to_uppercase().starts_with("JOB")
                && !parts[0].starts_with("---")
        })
        .map(|parts| {
            let id = ids
                .iter()
                .find(|id| id.starts_with(parts[0]))
                .unwrap_or_else(|| panic!("row {parts:?} is none of {ids:?}"));
            (id.to_string(), parts[4].to_string())
        })
        .collect()
}

/// The rows of an alternate (`-a`) table: the jobs listed, as the ids of
/// `known` their (possibly cut) id cells stand for.
fn alternate_ids(out: &str, known: &[&String]) -> Vec<String> {
    let rows = out.lines().skip_while(|l| !l.starts_with("-----")).skip(1);
    rows.map(|row| {
        let cell = row.split_whitespace().next().unwrap_or("");
        let id = known
            .iter()
            .find(|id| id.starts_with(cell.trim_end_matches('*')))
            .unwrap_or_else(|| panic!("row {row:?} is none of {known:?}"));
        id.to_string()
    })
    .collect()
}

fn owned(ids: &[&String]) -> Vec<String> {
    ids.iter().map(|id| id.to_string()).collect()
}

fn pairs(list: &[(&String, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(id, s)| (id.to_string(), s.to_string()))
        .collect()
}

#[test]
fn torques_parse_reads_the_state_from_the_fifth_column() {
    let j = Jobs::start();
    let d = &j.d;
    let out = d.ok("qstat", &[&j.running, &j.queued, &j.held]);
    assert_eq!(
        out.lines().next(),
        Some("Job id            Name             User              Time Use S Queue"),
        "{out}"
    );
    let ids = [j.done.as_str(), &j.running, &j.queued, &j.held];
    assert_eq!(
        torque_states(&out, &ids),
        pairs(&[(&j.running, "R"), (&j.queued, "Q"), (&j.held, "H")]),
        "{out}"
    );
    // With -x, a finished job is listed too, as F.
    let out = d.ok("qstat", &["-x", &j.done, &j.running, &j.queued]);
    assert_eq!(
        torque_states(&out, &ids),
        pairs(&[(&j.done, "F"), (&j.running, "R"), (&j.queued, "Q")]),
        "{out}"
    );
    // All jobs: the default table lists those not finished.
    let out = d.ok("qstat", &[]);
    assert_eq!(torque_states(&out, &ids).len(), 3, "{out}");
    j.finish();
}

#[test]
fn pbs_pro_json_for_several_ids_with_dash_x() {
    let j = Jobs::start();
    let d = &j.d;
    let out = d.run(
        "qstat",
        &["-x", "-f", "-F", "json", &j.done, &j.running, &j.queued],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("qstat's JSON");
    assert_eq!(doc["pbs_server"], j.server());
    let jobs = &doc["Jobs"];
    assert_eq!(jobs.as_object().map(|o| o.len()), Some(3), "{doc:#}");
    assert_eq!(jobs[&j.done]["job_state"], "F", "{doc:#}");
    assert_eq!(jobs[&j.done]["exit_status"], 0, "{doc:#}");
    assert_eq!(jobs[&j.running]["job_state"], "R", "{doc:#}");
    assert_eq!(jobs[&j.queued]["job_state"], "Q", "{doc:#}");
    assert_eq!(jobs[&j.queued]["Resource_List"]["nodect"], 16, "{doc:#}");
    j.finish();
}

#[test]
fn unknown_and_finished_jobs_exit_with_pbss_statuses() {
    let j = Jobs::start();
    let d = &j.d;
    let unknown = format!("999.{}", j.server());
    let finished_msg = format!(
        "qstat: {} Job has finished, use -x or -H to obtain historical job information\n",
        j.done
    );

    let out = d.run("qstat", &["999"]);
    assert_eq!(out.status.code(), Some(153), "{}", stderr(&out));
    assert_eq!(stderr(&out), format!("qstat: Unknown Job Id {unknown}\n"));
    assert!(out.stdout.is_empty());

    let out = d.run("qstat", &[&j.done]);
    assert_eq!(out.status.code(), Some(35), "{}", stderr(&out));
    assert_eq!(stderr(&out), finished_msg);
    assert!(out.stdout.is_empty());

    // The jobs that exist are printed; the status is the last refusal's.
    let out = d.run("qstat", &[&j.running, "999", &j.done]);
    assert_eq!(out.status.code(), Some(35), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        torque_states(&text, &[&j.running]),
        pairs(&[(&j.running, "R")])
    );
    assert_eq!(
        stderr(&out),
        format!("qstat: Unknown Job Id {unknown}\n{finished_msg}")
    );
    let out = d.run("qstat", &["-x", "-f", "-F", "json", &j.done, "999"]);
    assert_eq!(out.status.code(), Some(153), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("qstat's JSON");
    assert_eq!(doc["Jobs"][&j.done]["job_state"], "F", "{doc:#}");

    let out = d.run("qstat", &["12abc"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "qstat: illegally formed job identifier: 12abc\n"
    );
    // A destination that is no queue.
    let out = d.run("qstat", &["nosuch"]);
    assert_eq!(out.status.code(), Some(170));
    assert_eq!(stderr(&out), "qstat: Unknown queue nosuch\n");
    j.finish();
}

#[test]
fn filters_and_the_alternate_table() {
    let j = Jobs::start();
    let d = &j.d;
    let owner_at = j.d.job_json(&j.running)["Job_Owner"]
        .as_str()
        .expect("Job_Owner")
        .to_string();
    let owner = owner_at.split('@').next().unwrap();
    let all = [&j.done, &j.running, &j.queued, &j.held];
    let ids = |args: &[&str]| alternate_ids(&d.ok("qstat", args), &all);

    let out = d.ok("qstat", &["-a"]);
    assert!(out.starts_with(&format!("\n{}: \n", j.server())), "{out:?}");
    assert!(
        out.contains(
            "\nJob ID          Username Queue    Jobname    SessID NDS TSK Memory Time  S Time\n"
        ),
        "{out}"
    );
    assert_eq!(
        alternate_ids(&out, &all),
        owned(&[&j.running, &j.queued, &j.held]),
        "{out}"
    );
    assert_eq!(ids(&["-i"]), owned(&[&j.queued, &j.held]));
    assert_eq!(ids(&["-r"]), owned(&[&j.running]));
    assert_eq!(ids(&["-H"]), owned(&[&j.done]));
    assert_eq!(
        ids(&["-x", "-a"]),
        owned(&[&j.done, &j.running, &j.queued, &j.held])
    );
    // A job named by id is shown whatever the filter.
    assert_eq!(ids(&["-r", &j.held]), owned(&[&j.held]));
    assert_eq!(d.ok("qstat", &["-u", "nosuchuser"]), "");
    assert_eq!(
        ids(&["-u", &format!("nosuchuser,{owner_at}")]),
        owned(&[&j.running, &j.queued, &j.held])
    );
    assert_eq!(ids(&["-r", "-u", owner]), owned(&[&j.running]));
    // Destinations: the jobs of a queue.
    let in_batch = [j.running.as_str(), &j.queued, &j.held];
    assert_eq!(
        torque_states(&d.ok("qstat", &["batch"]), &in_batch).len(),
        3
    );
    d.ok(
        "qmgr",
        &["-c", "create queue express enabled=true,started=true"],
    );
    assert_eq!(d.ok("qstat", &["express"]), "");

    // -n1: the job's nodes on its line; -s: its comment under it.
    let exec_host = j.d.job_json(&j.running)["exec_host"]
        .as_str()
        .expect("exec_host")
        .to_string();
    let out = d.ok("qstat", &["-an1", &j.running]);
    let row = out.lines().last().unwrap();
    assert!(row.starts_with(&j.running), "{out}");
    assert!(
        row.contains(" R ") && row.ends_with(&format!(" {exec_host}")),
        "{out}"
    );
    let out = d.ok("qstat", &["-s", &j.queued]);
    let comment = out.lines().last().unwrap();
    assert!(comment.starts_with("   Not Running: "), "{out}");

    // qmesh's own table stays, as --nodes-view.
    let out = d.ok("qstat", &["--nodes-view", "-n", &j.running]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("Job ID") && lines[0].contains(" Nodes Walltime S  Elapsed"));
    assert!(lines[2].starts_with(&j.running), "{out}");
    assert_eq!(lines[3], format!("   {exec_host}"));
    j.finish();
}

#[test]
fn the_server_and_queue_listings() {
    let j = Jobs::start();
    let d = &j.d;
    let server = j.server().to_string();

    let out = d.ok("qstat", &["-B"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "Server             Max   Tot   Que   Run   Hld   Wat   Trn   Ext Status"
    );
    let row: Vec<&str> = lines[2].split_whitespace().collect();
    // Tot Que Run Hld: the held job counts as held.
    assert_eq!(
        row,
        [
            server.as_str(),
            "0",
            "3",
            "1",
            "1",
            "1",
            "0",
            "0",
            "0",
            "Active"
        ]
    );

    let full = d.ok("qstat", &["-B", "-f"]);
    for line in [
        format!("Server: {server}\n"),
        "    server_state = Active\n".to_string(),
        "    scheduling = True\n".to_string(),
        "    total_jobs = 3\n".to_string(),
        "    default_queue = batch\n".to_string(),
        "    resources_assigned.nodect = 1\n".to_string(),
    ] {
        assert!(full.contains(&line), "no {line:?} in:\n{full}");
    }
    let doc: serde_json::Value =
        serde_json::from_str(&d.ok("qstat", &["-B", "-F", "json"])).expect("JSON");
    assert_eq!(doc["Server"][&server]["total_jobs"], 3, "{doc:#}");

    d.ok("qmgr", &["-c", "set server scheduling = false"]);
    assert!(d.ok("qstat", &["-B", &server]).contains(" Idle"));
    d.ok("qmgr", &["-c", "set server scheduling = true"]);
    let out = d.run("qstat", &["-B", "elsewhere"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("cannot connect to server elsewhere"),
        "{}",
        stderr(&out)
    );

    d.ok("qmgr", &["-c", "set queue batch resources_max.nodes = 16"]);
    let out = d.ok("qstat", &["-q"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[1], format!("server: {server}"));
    assert_eq!(
        lines[3],
        "Queue            Memory CPU Time Walltime Node   Run   Que   Lm  State"
    );
    let batch: Vec<&str> = lines
        .iter()
        .find(|l| l.starts_with("batch "))
        .expect("batch's line")
        .split_whitespace()
        .collect();
    assert_eq!(
        batch,
        [
            "batch", "--", "--", "24:00:00", "16", "1", "2", "--", "E", "R"
        ]
    );
    assert_eq!(
        lines.last().unwrap().split_whitespace().collect::<Vec<_>>(),
        ["1", "2"]
    );

    let out = d.run("qstat", &["-Q", "batch", "nosuch"]);
    assert_eq!(out.status.code(), Some(170));
    assert_eq!(stderr(&out), "qstat: Unknown queue nosuch\n");
    assert!(String::from_utf8_lossy(&out.stdout).contains("\nbatch "));

    let out = d.run("qstat", &["-a", "-i"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("qstat: conflicting options: -a and -i"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("usage:"));
    j.finish();
    // Nothing left to list: nothing printed.
    assert_eq!(d.ok("qstat", &[]), "");
}

/// printjob: a job's state (PBS's number), its attributes as qstat -f
/// names them and its script as submitted; -s the script alone, -a no
/// script, --json the same; another user is refused the script.
#[test]
fn printjob_shows_a_jobs_state_attributes_and_script() {
    let d = Daemon::start();
    let script = "#!/bin/sh\n#PBS -N printme\necho from-the-script\n";
    d.script("held.sh", script);
    let id = d.qsub(&["-h", "held.sh"]);
    let text = d.ok("printjob", &[&id]);
    assert!(text.contains(&format!("jobid:\t\t{id}\n")), "{text}");
    assert!(text.contains("state:\t\t0x2 (H)\n"), "{text}");
    assert!(text.contains("\nJob_Name = printme\n"), "{text}");
    assert!(text.contains(&format!("--script--\n{script}")), "{text}");
    assert_eq!(d.ok("printjob", &["-s", &id]), script);
    assert!(!d.ok("printjob", &["-a", &id]).contains("--script--"));
    let doc: serde_json::Value =
        serde_json::from_str(&d.ok("printjob", &["--json", &id])).expect("JSON");
    assert_eq!(doc["Jobs"][&id]["attributes"]["Job_Name"], "printme");
    assert_eq!(doc["Jobs"][&id]["script"], script);
    // A sub-job not yet started shows its array's script.
    let array = d.qsub(&["-J", "1-2", "-h", "held.sh"]);
    assert!(array.contains("[]"), "{array}");
    assert_eq!(
        d.ok("printjob", &["-s", &array.replacen("[]", "[2]", 1)]),
        script
    );

    let out = d.run_as(crate::harness::NOBODY, "printjob", &[&id]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("shown only to"), "{}", stderr(&out));
    let out = d.run("printjob", &["999"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("999"), "{}", stderr(&out));
}

/// The job ids `qstat --json` lists.
fn listed(d: &Daemon) -> Vec<String> {
    let out = d.ok("qstat", &["--json"]);
    let doc: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    doc["Jobs"]
        .as_object()
        .map(|jobs| jobs.keys().cloned().collect())
        .unwrap_or_default()
}

/// Callers asking the same thing at once share one listing (the daemon's
/// `listings.rs`), but never one older than what they were told: while
/// eight other callers list without pause, the qstat after a qsub lists
/// its job, and the qstat after a qdel no longer does.
#[test]
fn a_shared_listing_is_never_older_than_the_last_answer() {
    let d = Daemon::start();
    d.script("job.sh", "#!/bin/sh\ntrue\n");
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    listed(&d);
                }
            });
        }
        // The others stop however this ends, a failed assertion too.
        let _stop = StopOnDrop(&stop);
        for _ in 0..10 {
            let id = d.qsub(&["-h", "job.sh"]);
            assert!(
                listed(&d).contains(&id),
                "{id} is not listed after its qsub"
            );
            d.ok("qdel", &[&id]);
            assert!(!listed(&d).contains(&id), "{id} is listed after its qdel");
        }
    });
}

struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}
