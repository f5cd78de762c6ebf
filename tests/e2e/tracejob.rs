//! The accounting log and tracejob: the daemon writes PBS's records
//! (STATE/server_priv/accounting/YYYYMMDD) and job events
//! (STATE/server_logs/YYYYMMDD) as jobs are queued, run, end, are deleted
//! or aborted; tracejob shows a job's lines in PBS's layout.

use crate::harness::{Daemon, NOBODY, is_root, stderr};

/// Every accounting line the daemon wrote, all days.
fn accounting(d: &Daemon) -> Vec<String> {
    // The log is written off the scheduler; tracejob answers once all
    // queued before it is on disk, so its answer is the event to await.
    let _ = d.run("tracejob", &["1"]);
    let dir = d.state_dir.join("server_priv/accounting");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("no accounting directory {}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|p| {
            std::fs::read_to_string(p)
                .unwrap()
                .lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The records of one job: (type, text).
pub(crate) fn records(d: &Daemon, id: &str) -> Vec<(String, String)> {
    accounting(d)
        .iter()
        .filter_map(|line| {
            let mut f = line.splitn(4, ';');
            let (_date, kind, job, text) = (f.next()?, f.next()?, f.next()?, f.next()?);
            (job == id).then(|| (kind.to_string(), text.to_string()))
        })
        .collect()
}

#[test]
fn a_job_s_life_is_in_the_accounting_log_and_tracejob_shows_it() {
    let d = Daemon::start();
    d.script(
        "hello.sh",
        "#!/bin/sh\n#PBS -N hello\ncd \"$PBS_O_WORKDIR\"\nexit 3\n",
    );
    let id = d.qsub(&["-l", "nodes=2,walltime=0:10:00", "hello.sh"]);
    d.wait_job(&id);
    // One-line records in PBS's form: MM/DD/YYYY HH:MM:SS;TYPE;ID;keys.
    for line in accounting(&d) {
        let fields: Vec<&str> = line.splitn(4, ';').collect();
        assert_eq!(fields.len(), 4, "{line}");
        assert_eq!(fields[0].len(), "03/04/2026 05:06:07".len(), "{line}");
    }
    let recs = records(&d, &id);
    let kinds: Vec<&str> = recs.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(kinds, ["Q", "S", "E"], "{recs:?}");
    let (q, s, e) = (&recs[0].1, &recs[1].1, &recs[2].1);
    for key in [
        "user=root",
        "jobname=hello",
        "queue=batch",
        "Resource_List.nodes=2",
        "Resource_List.walltime=00:10:00",
    ] {
        assert!(q.split(' ').any(|k| k == key), "Q lacks {key}: {q}");
    }
    for key in ["start=", "exec_host=", "exec_vnode=("] {
        assert!(s.contains(key), "S lacks {key}: {s}");
    }
    for key in [
        "end=",
        "Exit_status=3",
        "resources_used.walltime=",
        "run_count=1",
    ] {
        assert!(e.contains(key), "E lacks {key}: {e}");
    }

    let out = d.ok("tracejob", &["-n", "2", &id]);
    assert!(out.starts_with(&format!("\nJob: {id}\n\n")), "{out}");
    let body: Vec<&str> = out.lines().skip(3).collect();
    // Date, two spaces, the source letter, four spaces, the message.
    for line in &body {
        assert_eq!(&line[19..21], "  ", "{line}");
        assert!(matches!(&line[21..26], "S    " | "A    "), "{line}");
    }
    let messages: Vec<&str> = body.iter().map(|l| &l[26..]).collect();
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("Job Queued at request of root@")),
        "{out}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("Job Run at request of Scheduler@")),
        "{out}"
    );
    assert!(
        messages.iter().any(|m| m.starts_with("user=root group=")),
        "{out}"
    );
    assert!(
        messages.iter().any(|m| m.contains("Exit_status=3 ")),
        "{out}"
    );
    // -a leaves the records out, -f job the job events (records stay).
    let no_records = d.ok("tracejob", &["-n", "2", "-a", &id]);
    assert!(!no_records.contains("  A    "), "{no_records}");
    let no_job_events = d.ok("tracejob", &["-n", "2", "-f", "job", &id]);
    assert!(
        !no_job_events.contains("Job Queued at request"),
        "{no_job_events}"
    );
    assert!(
        no_job_events.contains("  A    user=root"),
        "{no_job_events}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&d.ok("tracejob", &["-n", "2", "--json", &id])).unwrap();
    assert_eq!(json[0]["job_id"], id.as_str());
    let lines = json[0]["lines"].as_array().unwrap();
    assert_eq!(lines.len(), body.len());
    let first_record = lines.iter().find(|l| l["source"] == "A").unwrap();
    assert_eq!(first_record["record_type"], "Q", "{json}");

    // A job it has no line for: PBS's words, exit 1.
    let out = d.run("tracejob", &["999"]);
    assert_eq!(out.status.code(), Some(1));
    let words = stderr(&out);
    assert!(
        words.contains("tracejob: Couldn't find Job Id 999.")
            && words.contains("in logs of past 1 day"),
        "{words}"
    );
}

#[test]
fn deletions_and_aborts_have_their_records() {
    let d = Daemon::start();
    d.script("fail.sh", "exit 1\n");
    d.script("never.sh", "echo never\n");
    // Held, so its dependent is queued before it fails.
    let a = d.qsub(&["-h", "fail.sh"]);
    let b = d.qsub(&["-W", &format!("depend=afterok:{a}"), "never.sh"]);
    let held = d.qsub(&["-h", "never.sh"]);
    d.ok("qdel", &[&held]);
    d.ok("qrls", &[&a]);
    d.wait_job(&a);
    d.wait_job(&b);
    let deleted = records(&d, &held);
    assert_eq!(
        deleted.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
        ["Q", "D"],
        "a job deleted before it ran: no S or E"
    );
    assert!(deleted[1].1.starts_with("requestor=root@"), "{deleted:?}");
    let aborted = records(&d, &b);
    assert_eq!(aborted.last().unwrap().0, "A", "{aborted:?}");
    assert!(
        aborted.last().unwrap().1.contains("can never be satisfied"),
        "{aborted:?}"
    );
    let out = d.ok("tracejob", &["-n", "2", &held]);
    assert!(out.contains("Job deleted at request of root@"), "{out}");
}

#[test]
fn only_the_owner_or_an_operator_may_trace_a_job() {
    if !is_root() {
        eprintln!("not root: cannot run commands as two users");
        return;
    }
    let d = Daemon::start();
    d.script("quick.sh", "exit 0\n");
    let id = d.qsub(&["quick.sh"]);
    d.wait_job(&id);
    let out = d.run_as(NOBODY, "tracejob", &[&id]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!(
            "tracejob: job {id} belongs to root; only its owner, an operator or a manager may trace it\n"
        )
    );
    let out = d.run_as(NOBODY, "qsub", &["quick.sh"]);
    let mine = String::from_utf8(out.stdout).unwrap().trim().to_string();
    d.wait_job(&mine);
    let out = d.run_as(NOBODY, "tracejob", &["-n", "2", &mine]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// A real daemon's accounting log as a Standard Workload Format file
/// (`qmesh-sim --to-swf`), read back by the simulator and replayed, and
/// the what-if on it (`qmesh-sim --accounting DIR`).
#[test]
fn the_accounting_log_becomes_an_swf_trace_the_simulator_replays() {
    let d = Daemon::start();
    d.script("ok.sh", "#!/bin/sh\nexit 0\n");
    d.script("fails.sh", "#!/bin/sh\nexit 3\n");
    let first = d.qsub(&["-l", "nodes=2", "-l", "walltime=00:10:00", "ok.sh"]);
    let second = d.qsub(&["-l", "nodes=3", "fails.sh"]);
    let never = d.qsub(&["-h", "ok.sh"]);
    d.ok("qdel", &[&never]);
    d.wait_job(&first);
    d.wait_job(&second);
    d.wait_job(&never);
    let _ = accounting(&d); // everything written
    let dir = d.state_dir.join("server_priv/accounting");
    let swf = qmesh_sim::to_swf::from_accounting(&dir, None, None).unwrap();
    let lines: Vec<Vec<i64>> = swf
        .lines()
        .filter(|l| !l.starts_with(';'))
        .map(|l| l.split_whitespace().map(|f| f.parse().unwrap()).collect())
        .collect();
    // The deleted job never ran: left out, as the archive does.
    assert_eq!(lines.len(), 2, "{swf}");
    let (a, b) = (&lines[0], &lines[1]);
    assert_eq!(
        (a[4], a[7], a[8], a[10]),
        (2, 2, 600, 1),
        "nodes, asked, status: {swf}"
    );
    assert_eq!((b[4], b[10]), (3, 0), "a failed job: {swf}");
    assert!(a[2] >= 0 && a[3] >= 0, "wait and run known: {swf}");
    assert!(swf.contains("; Queue: 1 batch"), "{swf}");
    let trace = qmesh_sim::swf::read(swf.as_bytes(), "accounting").unwrap();
    let replay = qmesh_sim::replay::replay(&trace, &qmesh_sim::replay::Options::default()).unwrap();
    assert_eq!(replay.records.len(), 2, "{:?}", replay.skipped);
    // What-if on the daemon's own history: its 16 nodes, the same jobs.
    let options = qmesh_sim::replay::Options {
        machine: qmesh_sim::machine::Machine::Single {
            topology: qmesh_sim::machine::Alloc::Flat.topology(&[]).unwrap(),
            nodes: Some(16),
        },
        ..Default::default()
    };
    let w = qmesh_sim::whatif::what_if(&dir, None, None, &options).unwrap();
    assert_eq!((w.happened.jobs, w.replayed.jobs, w.nodes), (2, 2, 16));
    assert_eq!(
        w.replayed.mean_wait, 0.0,
        "nothing waits on an empty machine"
    );
    let table = qmesh_sim::whatif::table(&w);
    assert!(table.contains("queue batch (2 jobs)"), "{table}");
}

/// qhold and qrls leave PBS Pro's `H` and `RL` records, with who asked.
#[test]
fn holds_and_releases_have_their_records() {
    let d = Daemon::start();
    d.script("wait.sh", "#!/bin/sh\nsleep 600\n");
    // The whole machine taken: the next job stays queued.
    let blocker = d.qsub(&["-l", "nodes=16", "wait.sh"]);
    let id = d.qsub(&["wait.sh"]);
    d.ok("qhold", &[&id]);
    d.ok("qrls", &[&id]);
    let recs = records(&d, &id);
    let kinds: Vec<&str> = recs.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(kinds, ["Q", "H", "RL"], "{recs:?}");
    assert!(recs[1].1.starts_with("requestor=root@"), "{recs:?}");
    assert!(recs[1].1.ends_with("holdtype=u"), "{recs:?}");
    assert!(recs[2].1.starts_with("requestor=root@"), "{recs:?}");
    // tracejob shows them.
    let out = d.ok("tracejob", &[&id]);
    let holds = out.matches("A    requestor=root@").count();
    assert_eq!(holds, 2, "{out}");
    d.ok("qdel", &[&blocker, &id]);
}

/// qreport over a real daemon's accounting log: by queue and by user,
/// as a table, JSON and CSV.
#[test]
fn qreport_sums_up_the_log_by_queue_and_user() {
    let d = Daemon::start();
    d.script("ok.sh", "#!/bin/sh\nexit 0\n");
    let a = d.qsub(&["-l", "nodes=2", "ok.sh"]);
    let b = d.qsub(&["-l", "nodes=4", "ok.sh"]);
    d.wait_job(&a);
    d.wait_job(&b);
    let _ = accounting(&d);
    let dir = d.state_dir.join("server_priv/accounting");
    let dir = dir.to_str().unwrap();
    let json = d.ok("qreport", &["--dir", dir, "--nodes", "16", "--json"]);
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["total"]["jobs"], 2, "{json}");
    assert_eq!(doc["rows"][0]["key"], "batch", "{json}");
    assert!(doc["total"]["utilization"].as_f64().is_some(), "{json}");
    let text = d.ok("qreport", &["--dir", dir, "--by", "user"]);
    assert!(text.contains("NODE-HOURS"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("root ")), "{text}");
    assert!(text.lines().any(|l| l.starts_with("total ")), "{text}");
    let csv = d.ok("qreport", &["--dir", dir, "--by", "size", "--csv"]);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "size,jobs,users,node_hours,share,utilization,mean_wait_min,median_wait_min,mean_run_min,expansion,bounded_slowdown"
    );
    assert_eq!(lines.len(), 4, "two size classes and the total: {csv}");
    let out = d.run("qreport", &["--dir", "/nonexistent/acct"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("give --dir"), "{}", stderr(&out));
}

/// Two node sets, prime time all week and a named period on no day: the
/// site's configuration read by the daemon and by qreport.
const TWO_SETS: &str = r#"
[agents]
local = true
local_host = "localhost"

[server]
default_queue = "batch"

[calendar]
time_zone = "UTC"
prime_time = ["Mon-Sun 00:00-24:00"]

[calendar.periods]
NEVER_ON = ["Mon 00:00-00:01"]

[[queue]]
name = "batch"
default_walltime = "1:00:00"

[[node_set]]
name = "small"
nodes = [{ name = "s0", host = "localhost" }, { name = "s1", host = "localhost" }]

[[node_set]]
name = "large"
nodes = [{ name = "l0", host = "localhost" }, { name = "l1", host = "localhost" }, { name = "l2", host = "localhost" }, { name = "l3", host = "localhost" }]
"#;

/// qreport on the site's configuration: node sets (a job in the set it
/// ran on, the machine's size from the file), calendar periods, the seeds'
/// tables (SDSC's five, ANL's projects) and the charts.
#[test]
fn qreport_reads_node_sets_and_periods_from_the_configuration() {
    let d = Daemon::start_with(Some(TWO_SETS));
    d.script("ok.sh", "#!/bin/sh\nsleep 1\nexit 0\n");
    // Two nodes fill the small set (fewest free that holds it); four the
    // large one.
    let a = d.qsub(&["-l", "nodes=2", "-A", "proj1", "ok.sh"]);
    let b = d.qsub(&["-l", "nodes=4", "-A", "proj2", "ok.sh"]);
    d.wait_job(&a);
    d.wait_job(&b);
    let _ = accounting(&d);
    let dir = d.state_dir.join("server_priv/accounting");
    let dir = dir.to_str().unwrap();
    let config = d.config.clone().unwrap();
    let config = config.to_str().unwrap();
    let json = d.ok(
        "qreport",
        &[
            "--dir", dir, "--config", config, "--by", "node_set", "--json",
        ],
    );
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let rows: Vec<(String, u64)> = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["key"].as_str().unwrap().to_string(),
                r["jobs"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [("large".to_string(), 1), ("small".to_string(), 1)],
        "{json}"
    );
    // Each job filled its set for the same time: the same utilization,
    // and the whole machine's size (6 nodes) comes from the file.
    let large = doc["rows"][0]["utilization"].as_f64().unwrap();
    let small = doc["rows"][1]["utilization"].as_f64().unwrap();
    assert!(large > 0.0 && (large - small).abs() < 0.2, "{json}");
    assert_eq!(doc["total"]["jobs_by_set"]["small"], 1, "{json}");
    let periods = d.ok(
        "qreport",
        &["--dir", dir, "--config", config, "--by", "period", "--csv"],
    );
    let keys: Vec<(&str, &str)> = periods
        .lines()
        .skip(1)
        .map(|l| {
            let mut f = l.split(',');
            (f.next().unwrap(), f.next().unwrap())
        })
        .collect();
    assert_eq!(
        keys,
        [
            ("prime", "2"),
            ("non_prime", "0"),
            ("NEVER_ON", "0"),
            ("total", "2")
        ],
        "all week is prime time here: {periods}"
    );
    let sdsc = d.ok(
        "qreport",
        &["--dir", dir, "--config", config, "--tables", "sdsc"],
    );
    for title in [
        "Table 1 - Overall system performance and node utilization",
        "Table 2 - Monthly node utilization",
        "Table 3 - Usage distribution by request size",
        "Table 4 - Execution time distribution",
        "Table 5 - Scheduling throughput and Expansion factor",
        "Total number of jobs on small",
        "jobs on large",
    ] {
        assert!(sdsc.contains(title), "{title} in {sdsc}");
    }
    let anl = d.ok("qreport", &["--dir", dir, "--tables", "anl"]);
    assert!(anl.lines().any(|l| l.starts_with("proj1 ")), "{anl}");
    assert!(anl.lines().any(|l| l.starts_with("proj2 ")), "{anl}");
    let prefix = d.work.join("acct");
    let out = d.run(
        "qreport",
        &[
            "--dir",
            dir,
            "--config",
            config,
            "--plot",
            prefix.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    for chart in [
        "acct-utilization.svg",
        "acct-utilization.png",
        "acct-wait.svg",
        "acct-wait.png",
    ] {
        let bytes = std::fs::read(d.work.join(chart)).unwrap_or_default();
        assert!(bytes.len() > 1000, "{chart}: {} bytes", bytes.len());
    }
    let out = d.run(
        "qreport",
        &["--dir", dir, "--plot", prefix.to_str().unwrap()],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("give the machine's size"),
        "{}",
        stderr(&out)
    );
}

/// The count of each (type, job) record in the log.
fn record_counts(d: &Daemon) -> std::collections::BTreeMap<(String, String), usize> {
    let mut counts = std::collections::BTreeMap::new();
    for line in accounting(d) {
        let mut f = line.splitn(4, ';');
        let (_, kind, id) = (f.next(), f.next().unwrap_or(""), f.next().unwrap_or(""));
        *counts
            .entry((kind.to_string(), id.to_string()))
            .or_insert(0) += 1;
    }
    counts
}

/// A crash between the store's flush and the log's append loses the last
/// records (simulated here by taking them off the file while the daemon
/// is down): the next start writes them back, once, and a start with
/// nothing missing writes nothing.
#[test]
fn records_a_crash_kept_from_the_log_are_written_back_once() {
    let mut d = Daemon::start();
    d.script("ok.sh", "#!/bin/sh\nexit 0\n");
    let a = d.qsub(&["ok.sh"]);
    d.wait_job(&a);
    let b = d.qsub(&["ok.sh"]);
    d.wait_job(&b);
    let whole = record_counts(&d);
    assert_eq!(
        whole.get(&("E".to_string(), b.clone())),
        Some(&1),
        "{whole:?}"
    );
    d.kill9();
    // The crash: b's start and end never reached the file.
    let dir = d.state_dir.join("server_priv/accounting");
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap();
        let kept: String = text
            .lines()
            .filter(|l| {
                !(l.contains(&format!(";{b};")) && (l.contains(";S;") || l.contains(";E;")))
            })
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(entry.path(), kept).unwrap();
    }
    d.spawn();
    let after = record_counts(&d);
    assert_eq!(after, whole, "every record once, none twice");
    assert!(d.log().contains("written back"), "{}", d.log());
    d.stop();
    d.spawn();
    assert_eq!(
        record_counts(&d),
        whole,
        "a start with nothing missing writes nothing"
    );
}

/// kill -9 of qmeshd while jobs come and go: every job that ran has one
/// Q and one E record, none doubled.
#[test]
fn the_log_survives_kill_9_with_nothing_missing_or_doubled() {
    let mut d = Daemon::start();
    d.script("ok.sh", "#!/bin/sh\nexit 0\n");
    let mut ids = Vec::new();
    for round in 0..3 {
        for _ in 0..10 {
            ids.push(d.qsub(&["ok.sh"]));
        }
        if round < 2 {
            d.kill9();
            d.spawn();
        }
    }
    for id in &ids {
        d.wait_job(id);
    }
    let counts = record_counts(&d);
    for id in &ids {
        for kind in ["Q", "E"] {
            assert_eq!(
                counts.get(&(kind.to_string(), id.clone())),
                Some(&1),
                "{kind} of {id}: {counts:?}"
            );
        }
    }
    d.allowed_errors.push("ERROR".into());
}

/// Records the log could not take stay in the store with the changes they
/// record, and the next start writes them, each once: here today's file
/// is a directory while a job is altered, held, released and deleted, so
/// no record reaches the log; once it is a file again, a start writes
/// them all (the holds and the deletion too, which the store's jobs alone
/// could not say).
#[test]
fn records_the_log_could_not_take_are_written_at_the_next_start() {
    let mut d = Daemon::start();
    d.script("wait.sh", "#!/bin/sh\nsleep 60\n");
    let dir = d.state_dir.join("server_priv/accounting");
    let today = dir.join(chrono::Local::now().format("%Y%m%d").to_string());
    let _ = std::fs::remove_file(&today);
    std::fs::create_dir_all(&today).unwrap();
    // To start the day after tomorrow: held and released, it still waits.
    let later = (chrono::Local::now() + chrono::Duration::days(2))
        .format("%Y%m%d%H%M")
        .to_string();
    let a = d.qsub(&["-a", &later, "wait.sh"]);
    d.ok("qalter", &["-N", "renamed", &a]);
    d.ok("qhold", &[&a]);
    d.ok("qrls", &[&a]);
    d.ok("qdel", &[&a]);
    let _ = d.run("tracejob", &["1"]);
    assert!(
        std::fs::read_dir(&today).unwrap().next().is_none(),
        "nothing could be written"
    );
    d.stop();
    std::fs::remove_dir(&today).unwrap();
    d.spawn();
    let counts = record_counts(&d);
    let kinds: Vec<(&str, usize)> = counts
        .iter()
        .filter(|((_, id), _)| *id == a)
        .map(|((kind, _), n)| (kind.as_str(), *n))
        .collect();
    assert_eq!(
        kinds,
        [("D", 1), ("H", 1), ("Q", 1), ("RL", 1), ("a", 1)],
        "{counts:?}"
    );
    // In the order they happened.
    let order: Vec<String> = accounting(&d)
        .iter()
        .filter(|l| l.contains(&format!(";{a};")))
        .map(|l| l.split(';').nth(1).unwrap().to_string())
        .collect();
    assert_eq!(order, ["Q", "a", "H", "RL", "D"], "{order:?}");
    assert!(d.log().contains("written now"), "{}", d.log());
    d.stop();
    d.spawn();
    assert_eq!(record_counts(&d), counts, "the next start writes nothing");
    d.allowed_errors.push("ERROR".into());
}
