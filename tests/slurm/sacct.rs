//! qmesh's sacct beside the real one: the same four scripts (one that
//! completes, one that runs `exit 3`, one killed by a signal, one cancelled
//! while it runs) through Slurm and through qmesh, and sacct's words for
//! them compared: the default table's header and the columns its cells end
//! in, `--parsable2`'s field names, each job's and `.batch` step's state
//! and exit code, and `--json`'s keys. What Slurm printed is kept in
//! `target/tmp/slurm-oracle/` (`sacct-states.txt`, `sacct.json`), the
//! fixtures' source.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use crate::harness::Daemon;
use crate::rig::{Slurm, skipped, slurm};

const WITHIN: Duration = Duration::from_secs(60);

/// The scripts, by name: each job's own `-J`.
const SCRIPTS: [(&str, &str); 3] = [
    ("twin-ok", "#!/bin/sh\n#SBATCH -J twin-ok\ntrue\n"),
    ("twin-fail", "#!/bin/sh\n#SBATCH -J twin-fail\nexit 3\n"),
    ("twin-sig", "#!/bin/sh\n#SBATCH -J twin-sig\nkill -9 $$\n"),
];
/// Waits for the test to read the FIFO, then for ever: cancelled.
const WAITS: &str = "#!/bin/sh\n#SBATCH -J twin-cancel\necho up > started\nexec sleep 300\n";

fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/slurm/fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn record(name: &str, text: &str) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("slurm-oracle");
    std::fs::create_dir_all(&dir).expect("the record's directory");
    std::fs::write(dir.join(name), text).expect("write the record");
}

/// Where each cell of a table's line ends.
fn word_ends(line: &str) -> Vec<usize> {
    let b = line.as_bytes();
    (0..b.len())
        .filter(|&i| b[i] != b' ' && (i + 1 == b.len() || b[i + 1] == b' '))
        .collect()
}

/// The ids' rows of `sacct -P -o JobID,JobName,State,ExitCode`, with each
/// id made the script's name (`twin-ok`, `twin-ok.batch`) so that Slurm's
/// and qmesh's compare.
fn by_name(text: &str, ids: &[(String, &str)]) -> Vec<String> {
    text.lines()
        .skip(1)
        .map(|line| {
            let (id, rest) = line.split_once('|').unwrap_or((line, ""));
            let (number, step) = id.split_once('.').map_or((id, ""), |(n, s)| (n, s));
            let name = ids
                .iter()
                .find(|(i, _)| i == number)
                .map_or(number, |(_, n)| n);
            let id = if step.is_empty() {
                name.to_string()
            } else {
                format!("{name}.{step}")
            };
            format!("{id}|{rest}")
        })
        .collect()
}

/// Slurm's side: the jobs run, then sacct's answers once slurmdbd has
/// them all. Returns the ids by script name, the parsable2 rows, the
/// table and the JSON.
fn slurms(s: &Slurm) -> (Vec<(String, &'static str)>, String, String, String) {
    let dir = s.workdir("sacct-twin");
    let mut ids = Vec::new();
    for (name, text) in SCRIPTS {
        std::fs::write(dir.join(format!("{name}.sh")), text).unwrap();
        let out = s
            .cmd("sbatch")
            .args(["--parsable", &format!("{name}.sh")])
            .current_dir(&dir)
            .output()
            .expect("sbatch");
        ids.push((
            String::from_utf8_lossy(&out.stdout).trim().to_string(),
            name,
        ));
    }
    let started = dir.join("started");
    nix::unistd::mkfifo(&started, nix::sys::stat::Mode::from_bits_truncate(0o666)).unwrap();
    std::fs::write(dir.join("waits.sh"), WAITS).unwrap();
    let out = s
        .cmd("sbatch")
        .args(["--parsable", "waits.sh"])
        .current_dir(&dir)
        .output()
        .expect("sbatch");
    let cancel = String::from_utf8_lossy(&out.stdout).trim().to_string();
    std::fs::read_to_string(&started).expect("the job starts");
    s.ok("scancel", &[&cancel]);
    ids.push((cancel, "twin-cancel"));
    let list = ids
        .iter()
        .map(|(i, _)| i.as_str())
        .collect::<Vec<_>>()
        .join(",");
    // slurmctld sends the records as jobs go: poll until each job and
    // step has its end (the cancelled step's signal comes last: its state
    // is CANCELLED 0:0 until slurmstepd reports the 15).
    let mut parsable = String::new();
    s.await_that(WITHIN, "sacct showing the four jobs ended", || {
        parsable = s.ok(
            "sacct",
            &["-P", "-o", "JobID,JobName,State,ExitCode", "-j", &list],
        );
        parsable.lines().count() == 9
            && !parsable.contains("RUNNING")
            && !parsable.contains("PENDING")
            && parsable.contains("|batch|CANCELLED|0:15")
    });
    record("sacct-states.txt", &parsable);
    let table = s.ok("sacct", &["-j", &list]);
    let json = s.ok("sacct", &["--json", "-j", &list]);
    record("sacct.json", &json);
    (ids, parsable, table, json)
}

/// qmesh's side: the same scripts, the same questions.
fn qmeshs(d: &Daemon) -> (Vec<(String, &'static str)>, String, String, String) {
    d.ok(
        "qmgr",
        &[
            "-c",
            "create queue debug queue_type = e, enabled = t, started = t",
        ],
    );
    d.ok("qmgr", &["-c", "set server default_queue = debug"]);
    let mut ids = Vec::new();
    for (name, text) in SCRIPTS {
        d.script(&format!("{name}.sh"), text);
        let id = d
            .ok("sbatch", &["--parsable", &format!("{name}.sh")])
            .trim()
            .to_string();
        d.wait_job(&d.full_id(&id));
        ids.push((id, name));
    }
    let started = d.fifo("started");
    d.script("waits.sh", WAITS);
    let cancel = d
        .ok("sbatch", &["--parsable", "waits.sh"])
        .trim()
        .to_string();
    d.read_fifo(&started);
    d.ok("scancel", &[&cancel]);
    d.wait_job(&d.full_id(&cancel));
    ids.push((cancel, "twin-cancel"));
    let list = ids
        .iter()
        .map(|(i, _)| i.as_str())
        .collect::<Vec<_>>()
        .join(",");
    let parsable = d.ok(
        "sacct",
        &["-P", "-o", "JobID,JobName,State,ExitCode", "-j", &list],
    );
    let table = d.ok("sacct", &["-j", &list]);
    let json = d.ok("sacct", &["--json", "-j", &list]);
    (ids, parsable, table, json)
}

/// Every key path of a JSON job object (`state.current`, `steps[].step.id`).
fn keys(value: &serde_json::Value, prefix: &str, out: &mut BTreeSet<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                let path = format!("{prefix}{k}");
                out.insert(path.clone());
                keys(v, &format!("{path}."), out);
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                keys(item, &format!("{}[].", prefix.trim_end_matches('.')), out);
            }
        }
        _ => {}
    }
}

#[test]
fn qmesh_sacct_says_what_slurms_says_of_the_same_jobs() {
    if skipped() {
        return;
    }
    let (slurm_ids, slurm_rows, slurm_table, slurm_json) = slurms(slurm());
    let d = Daemon::start();
    let (our_ids, our_rows, our_table, our_json) = qmeshs(&d);

    // --parsable2: the field names, and each line's words.
    assert_eq!(
        our_rows.lines().next(),
        Some("JobID|JobName|State|ExitCode")
    );
    assert_eq!(
        slurm_rows.lines().next(),
        fixture("sacct-states.txt").lines().next()
    );
    assert_eq!(
        by_name(&our_rows, &our_ids),
        by_name(&slurm_rows, &slurm_ids),
        "qmesh:\n{our_rows}\nSlurm:\n{slurm_rows}\n{}",
        d.log()
    );

    // The table: Slurm's header to the character, each cell ending where
    // Slurm's column does.
    let header: Vec<&str> = slurm_table.lines().take(2).collect();
    assert_eq!(
        header,
        fixture("sacct.txt").lines().take(2).collect::<Vec<_>>()
    );
    let ours: Vec<&str> = our_table.lines().collect();
    assert_eq!(ours[..2], header[..], "{our_table}");
    let dashes = word_ends(header[1]);
    for (ours, theirs) in ours[2..].iter().zip(slurm_table.lines().skip(2)) {
        assert_eq!(
            word_ends(ours)[1..],
            word_ends(theirs)[1..],
            "qmesh:\n{our_table}\nSlurm:\n{slurm_table}"
        );
        assert!(word_ends(ours)[1..].iter().all(|e| dashes.contains(e)));
    }

    // --json: the keys tools read, where Slurm has them; the same words.
    let theirs: serde_json::Value = serde_json::from_str(&slurm_json).expect("Slurm's JSON");
    let mine: serde_json::Value = serde_json::from_str(&our_json).expect("qmesh's JSON");
    let (mut their_keys, mut my_keys) = (BTreeSet::new(), BTreeSet::new());
    keys(&theirs["jobs"][0], "", &mut their_keys);
    keys(&mine["jobs"][0], "", &mut my_keys);
    let extra: Vec<&String> = my_keys.difference(&their_keys).collect();
    assert!(extra.is_empty(), "keys Slurm does not write: {extra:?}");
    for key in [
        "job_id",
        "name",
        "state.current",
        "exit_code.status",
        "exit_code.return_code",
        "array.job_id",
        "array.task_id",
        "steps[].step.id",
        "steps[].state",
        "time.start",
        "time.end",
        "nodes",
        "user",
        "account",
        "partition",
    ] {
        assert!(my_keys.contains(key), "qmesh's sacct --json lacks {key}");
    }
    let sig = |doc: &serde_json::Value, ids: &[(String, &str)]| {
        let id: u64 = ids[2].0.parse().unwrap();
        let jobs = doc["jobs"].as_array().cloned().unwrap_or_default();
        let job = jobs
            .into_iter()
            .find(|j| j["job_id"] == id)
            .expect("the signalled job");
        (
            job["state"]["current"].clone(),
            job["exit_code"].clone(),
            job["steps"][0]["state"].clone(),
        )
    };
    assert_eq!(sig(&mine, &our_ids), sig(&theirs, &slurm_ids));
}
