//! qmesh's squeue against what the real one printed
//! (`fixtures/squeue.txt`, a running job `waiter` in partition `debug`):
//! the same header, and a running job's row with its columns ending where
//! Slurm's end; then a pending one's reason in parentheses.

use crate::harness::Daemon;

fn fixture(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/slurm/fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Where each whitespace-separated column ends.
fn column_ends(line: &str) -> Vec<usize> {
    let mut ends = Vec::new();
    let bytes = line.as_bytes();
    for i in 0..bytes.len() {
        if bytes[i] != b' ' && (i + 1 == bytes.len() || bytes[i + 1] == b' ') {
            ends.push(i);
        }
    }
    ends
}

#[test]
fn squeue_prints_slurms_table_for_qmeshs_jobs() {
    let d = Daemon::start();
    d.ok(
        "qmgr",
        &[
            "-c",
            "create queue debug queue_type = e, enabled = t, started = t",
        ],
    );
    let started = d.fifo("started");
    d.script(
        "waiter.sh",
        "#!/bin/bash\n#SBATCH -J waiter\n#SBATCH -p debug\necho running > started\nsleep 30\n",
    );
    let id = d
        .ok("sbatch", &["--parsable", "waiter.sh"])
        .trim()
        .to_string();
    d.read_fifo(&started);
    // A second one that cannot start: held.
    let held = d
        .ok("sbatch", &["--parsable", "-H", "-p", "debug", "waiter.sh"])
        .trim()
        .to_string();

    let slurm = fixture("squeue.txt");
    let theirs: Vec<&str> = slurm.lines().collect();
    let table = d.ok("squeue", &["-p", "debug"]);
    let ours: Vec<&str> = table.lines().collect();
    assert_eq!(ours[0], theirs[0], "the header");
    let row = ours
        .iter()
        .find(|l| l.split_whitespace().next() == Some(id.as_str()))
        .unwrap_or_else(|| panic!("no row for {id}:\n{table}"));
    assert_eq!(
        column_ends(row)[..7],
        column_ends(theirs[1])[..7],
        "columns end where Slurm's do:\n{row}\n{}",
        theirs[1]
    );
    let words: Vec<&str> = row.split_whitespace().collect();
    let slurm_words: Vec<&str> = theirs[1].split_whitespace().collect();
    assert_eq!(
        words[1..5],
        slurm_words[1..5],
        "partition, name, user, state"
    );

    let pending = ours
        .iter()
        .find(|l| l.split_whitespace().next() == Some(held.as_str()))
        .unwrap_or_else(|| panic!("no row for {held}:\n{table}"));
    assert!(
        pending.contains(" PD ") && pending.ends_with("(JobHeldUser)"),
        "{pending}"
    );

    // -h -o as scripts write it, and the filters.
    let brief = d.ok("squeue", &["-h", "-o", "%i %j %T", "-j", &id]);
    assert_eq!(brief, format!("{id} waiter RUNNING\n"));
    assert_eq!(
        d.ok("squeue", &["-h", "-t", "PD", "-o", "%i"]),
        format!("{held}\n")
    );
    // --name, as Snakemake asks for its run's jobs.
    assert_eq!(
        d.ok(
            "squeue",
            &[
                "-h",
                "--states=all",
                "--name",
                "waiter",
                "-o",
                "%i|%T",
                "-S",
                "i"
            ]
        ),
        format!("{id}|RUNNING\n{held}|PENDING\n")
    );
    assert_eq!(d.ok("squeue", &["-h", "-n", "nobody", "-o", "%i"]), "");
    let refused = d.run("squeue", &["-o", "%y"]);
    assert_eq!(refused.status.code(), Some(1));
    d.ok("qdel", &[&d.full_id(&id), &d.full_id(&held)]);
}

/// The first line of a command's output.
fn header(text: &str) -> String {
    text.lines().next().unwrap_or_default().to_string()
}

/// A JSON object's keys.
fn keys(v: &serde_json::Value) -> std::collections::BTreeSet<String> {
    v.as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// `-O`, `--start`, `-S` and `--json`, each run on both: a running and a
/// held job in each, the headers equal, the JSON records with the same
/// keys for each state (a pending job has no `job_resources`), the same
/// refusals, and the same row order for the same sort.
#[test]
fn squeue_long_formats_start_sort_and_json_as_slurms() {
    if crate::rig::skipped() {
        return;
    }
    let s = crate::rig::slurm();
    let dir = s.workdir("squeue-formats");
    let dir = dir.to_str().expect("a UTF-8 directory");
    let slurm_run = s
        .ok(
            "sbatch",
            &[
                "--parsable",
                "-D",
                dir,
                "-J",
                "runner",
                "-t",
                "10",
                "--wrap",
                "sleep 120",
            ],
        )
        .trim()
        .to_string();
    let slurm_held = s
        .ok(
            "sbatch",
            &[
                "--parsable",
                "-D",
                dir,
                "-J",
                "held",
                "-H",
                "--wrap",
                "sleep 120",
            ],
        )
        .trim()
        .to_string();
    s.await_state(&slurm_run, "RUNNING", std::time::Duration::from_secs(60));

    let d = Daemon::start();
    d.ok(
        "qmgr",
        &[
            "-c",
            "create queue debug queue_type = e, enabled = t, started = t",
        ],
    );
    let started = d.fifo("started");
    d.script(
        "runner.sh",
        "#!/bin/bash\n#SBATCH -J runner\n#SBATCH -p debug\n#SBATCH -t 10\necho running > started\nsleep 120\n",
    );
    let run = d
        .ok("sbatch", &["--parsable", "runner.sh"])
        .trim()
        .to_string();
    d.read_fifo(&started);
    let held = d
        .ok(
            "sbatch",
            &["--parsable", "-H", "-J", "held", "-p", "debug", "runner.sh"],
        )
        .trim()
        .to_string();

    for spec in [
        vec![
            "-O",
            "JobID,Partition,Name,UserName,StateCompact,TimeUsed,NumNodes,ReasonList",
        ],
        vec!["-O", "jobid:10,name:.12,state"],
        vec![
            "-O",
            "ArrayJobID,ArrayTaskID,STATE,TimeLimit,TimeLeft,NumCPUs,PriorityLong,SubmitTime,StartTime,EndTime,WorkDir,Account,QOS,Reason,Nodelist,MinMemory,Dependency,Comment,STDOUT,STDERR,Exit_Code",
        ],
        vec!["-O", "jobid:|"],
        vec!["--start"],
        vec!["-o", "%.18i %.2t %Q %A %F %K"],
    ] {
        assert_eq!(
            header(&d.ok("squeue", &spec)),
            header(&s.ok("squeue", &spec)),
            "squeue {spec:?}: the header"
        );
    }
    // -l begins with the date, as Slurm's does: the header is the second line.
    let ours = d.ok("squeue", &["-l"]);
    let theirs = s.ok("squeue", &["-l"]);
    assert_eq!(ours.lines().nth(1), theirs.lines().nth(1), "squeue -l");
    assert_eq!(
        ours.lines().next().map(|l| l.split_whitespace().count()),
        Some(5),
        "a ctime date first:\n{ours}"
    );

    // The rig is shared with the other tests of this binary: each side
    // lists only this test's two jobs.
    let ours_ids = format!("{run},{held}");
    let theirs_ids = format!("{slurm_run},{slurm_held}");
    let (ours_ids, theirs_ids) = (ours_ids.as_str(), theirs_ids.as_str());

    // --start: pending jobs only, on both.
    let rows = |text: &str| -> Vec<String> {
        text.lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().next().map(String::from))
            .collect()
    };
    assert_eq!(
        rows(&d.ok("squeue", &["--start", "-j", ours_ids])),
        std::slice::from_ref(&held)
    );
    assert_eq!(
        rows(&s.ok("squeue", &["--start", "-j", theirs_ids])),
        std::slice::from_ref(&slurm_held)
    );

    // The same sorts give the same order of (held, running) on both.
    let order =
        |text: &str, held: &str| -> Vec<bool> { rows(text).iter().map(|id| id == held).collect() };
    for sort in ["i", "-i", "t,-i", "P,t,-p"] {
        assert_eq!(
            order(&d.ok("squeue", &["-S", sort, "-j", ours_ids]), &held),
            order(
                &s.ok("squeue", &["-S", sort, "-j", theirs_ids]),
                &slurm_held
            ),
            "squeue -S {sort}"
        );
    }
    // Without -S: Slurm's P,t,-p, pending first.
    assert_eq!(
        order(&d.ok("squeue", &["-j", ours_ids]), &held),
        [true, false]
    );

    // Refusals: both fail on a bad sort and print Slurm's words.
    for bad in [vec!["-S", "bogus"], vec!["-O", "bogus"]] {
        let out = d.run("squeue", &bad);
        let theirs = s.run("squeue", &bad);
        let said = crate::harness::stderr(&out);
        let slurm_said = String::from_utf8_lossy(&theirs.stderr).to_string();
        assert_eq!(out.status.code(), Some(1), "{said}");
        let words = |t: &str| t.split(':').take(3).collect::<Vec<_>>().join(":");
        assert_eq!(
            words(&said).split_whitespace().take(4).collect::<Vec<_>>(),
            words(&slurm_said)
                .split_whitespace()
                .take(4)
                .collect::<Vec<_>>(),
            "squeue {bad:?}: ours {said:?}, Slurm's {slurm_said:?}"
        );
    }

    // --json: the same keys, per state.
    let theirs: serde_json::Value =
        serde_json::from_str(&s.ok("squeue", &["--json"])).expect("Slurm's JSON");
    let ours: serde_json::Value =
        serde_json::from_str(&d.ok("squeue", &["--json"])).expect("qmesh's JSON");
    assert_eq!(keys(&ours), keys(&theirs), "top-level keys");
    assert_eq!(ours["meta"], theirs["meta"], "the version tools read");
    let record = |doc: &serde_json::Value, state: &str| -> serde_json::Value {
        doc["jobs"]
            .as_array()
            .and_then(|jobs| jobs.iter().find(|j| j["job_state"] == state).cloned())
            .unwrap_or_else(|| panic!("no {state} job in {doc}"))
    };
    for state in ["RUNNING", "PENDING"] {
        let (a, b) = (record(&ours, state), record(&theirs, state));
        assert_eq!(keys(&a), keys(&b), "the keys of a {state} job");
        for key in keys(&b) {
            let kind = |v: &serde_json::Value| match v {
                serde_json::Value::Null => "null",
                serde_json::Value::Bool(_) => "bool",
                serde_json::Value::Number(_) => "number",
                serde_json::Value::String(_) => "string",
                serde_json::Value::Array(_) => "array",
                serde_json::Value::Object(_) => "object",
            };
            // A null where Slurm has a number (or the reverse) is a value
            // qmesh has or lacks; any other kind must be Slurm's.
            let (ka, kb) = (kind(&a[&key]), kind(&b[&key]));
            assert!(
                ka == kb || ka == "null" || kb == "null",
                "{state} job's {key}: ours {} ({ka}), Slurm's {} ({kb})",
                a[&key],
                b[&key]
            );
        }
    }
    let ran = record(&ours, "RUNNING");
    assert_eq!(
        ran["job_id"].as_u64().map(|n| n.to_string()),
        Some(run.clone())
    );
    assert_eq!(ran["name"], "runner");
    assert_eq!(ran["partition"], "debug");
    assert_eq!(ran["time_limit"], 10);
    assert_eq!(record(&ours, "PENDING")["state_reason"], "JobHeldUser");

    d.ok("qdel", &[&d.full_id(&run), &d.full_id(&held)]);
    s.run("scancel", &[&slurm_run, &slurm_held]);
}
