//! What the real Slurm prints, checked by its shape: the header lines
//! exactly, the columns, the names of the variables a batch job sees,
//! the fields `scontrol show job` and `squeue --json` give, and what
//! `sacct` reads back from slurmdbd. Values that depend on the machine or
//! the run (ids, times, the host) are not compared.
//!
//! Each test writes what it saw to `target/tmp/slurm-oracle/` (the
//! latest run's record) and holds the headers and names against
//! `tests/slurm/fixtures/`, what Slurm 22.05.8 printed when the fixtures
//! were made (their README says how).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::rig::{self, NODE, PARTITION, Slurm, skipped, slurm};

/// How long a job has to start or end on the idle private node.
const JOB_WITHIN: Duration = Duration::from_secs(60);

/// A fixture's text.
fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/slurm/fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// Keeps what Slurm printed in `target/tmp/slurm-oracle/NAME`.
fn record(name: &str, text: &str) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("slurm-oracle");
    std::fs::create_dir_all(&dir).expect("the record's directory");
    std::fs::write(dir.join(name), text).expect("write the record");
}

/// Writes an executable job script.
fn script(dir: &Path, name: &str, text: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write the job script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

/// `sbatch --parsable SCRIPT` in `dir`; the job's id (checked to be all
/// the output there is).
fn submit(s: &Slurm, dir: &Path, script: &Path) -> String {
    let out = s
        .cmd("sbatch")
        .arg("--parsable")
        .arg(script)
        .current_dir(dir)
        .output()
        .expect("run sbatch");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "sbatch --parsable {}:\n{}\n{}",
        script.display(),
        rig::output_text(&out),
        s.logs()
    );
    let id = stdout.strip_suffix('\n').unwrap_or(&stdout);
    assert!(
        !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()),
        "sbatch --parsable printed {stdout:?}, not a job id and a newline"
    );
    id.to_string()
}

/// Cancels a job when a test fails before it ended, so that it does not
/// keep a CPU of the shared node.
struct Cancel<'a>(&'a Slurm, String);

impl Drop for Cancel<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _ = self.0.run("scancel", &[&self.1]);
        }
    }
}

/// Runs `f` in a thread (it may block on a FIFO); fails with the logs if
/// it has not returned within `within`.
fn within<T: Send + 'static>(
    s: &Slurm,
    within: Duration,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(within)
        .unwrap_or_else(|_| panic!("{what} did not happen within {within:?}\n{}", s.logs()))
}

fn mkfifo(path: &Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
}

/// The first line of a text.
fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

/// Where each whitespace-separated word of a line ends (its byte
/// offset), to hold right-aligned columns against their header.
fn word_ends(line: &str) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut in_word = false;
    for (i, c) in line.char_indices() {
        if c.is_whitespace() {
            if in_word {
                ends.push(i);
            }
            in_word = false;
        } else {
            in_word = true;
        }
    }
    if in_word {
        ends.push(line.len());
    }
    ends
}

/// The keys of `scontrol show job`'s `Key=value` words, in order.
fn scontrol_keys(text: &str) -> Vec<String> {
    text.split_whitespace()
        .filter_map(|w| w.split_once('=').map(|(k, _)| k.to_string()))
        .collect()
}

/// The names of `NAME=value` lines.
fn names(env: &str) -> BTreeSet<String> {
    env.lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k.to_string()))
        .collect()
}

/// The job script the sbatch, scontrol and sacct tests submit: the
/// options of issue 30's example and the job's Slurm variables dumped.
const ENV_SCRIPT: &str = "#!/bin/bash
#SBATCH -J oracle-env
#SBATCH -t 5
#SBATCH -N 1
#SBATCH -o %x-%j.out
env | grep ^SLURM_ | sort > env-$SLURM_JOB_ID.txt
echo done
";

/// Submits [`ENV_SCRIPT`] in a directory of `test`'s and waits for the
/// job to complete: its directory and id.
fn run_env_job(s: &Slurm, test: &str) -> (PathBuf, String) {
    let dir = s.workdir(test);
    let path = script(&dir, "env.sh", ENV_SCRIPT);
    let id = submit(s, &dir, &path);
    let _cancel = Cancel(s, id.clone());
    s.await_state(&id, "COMPLETED", JOB_WITHIN);
    (dir, id)
}

#[test]
fn the_rig_runs_slurm_22_05_with_its_accounting() {
    if skipped() {
        return;
    }
    let s = slurm();
    let version = s.ok("sinfo", &["--version"]);
    record("sinfo-version.txt", &version);
    let words: Vec<&str> = version.split_whitespace().collect();
    assert!(
        words.len() == 2 && words[1].starts_with("22.05."),
        "not Slurm 22.05: {version:?}"
    );
    // "Slurmctld(primary) at HOST is UP", HOST this machine's name.
    let ping = s.ok("scontrol", &["ping"]);
    record("scontrol-ping.txt", &ping);
    assert!(
        ping.starts_with("Slurmctld(primary) at ") && ping.ends_with(" is UP\n"),
        "{ping:?}"
    );
    // The daemons run the private configuration.
    let config = s.ok("scontrol", &["show", "config"]);
    for (key, value) in [
        ("ClusterName", rig::CLUSTER),
        ("AccountingStorageType", "accounting_storage/slurmdbd"),
        ("JobCompType", "jobcomp/filetxt"),
        ("ProctrackType", "proctrack/linuxproc"),
        ("SLURM_CONF", s.conf.to_str().expect("a UTF-8 path")),
    ] {
        assert!(
            config.lines().any(|l| {
                l.split_once('=')
                    .is_some_and(|(k, v)| k.trim() == key && v.trim() == value)
            }),
            "scontrol show config has no {key} = {value}:\n{config}"
        );
    }
    // slurmdbd knows the cluster, registered by its slurmctld.
    let clusters = s.ok(
        "sacctmgr",
        &["-n", "-P", "list", "cluster", "format=cluster"],
    );
    assert_eq!(clusters.trim(), rig::CLUSTER);
}

#[test]
fn sbatch_parsable_prints_the_id_and_the_job_sees_its_slurm_variables() {
    if skipped() {
        return;
    }
    let s = slurm();
    let dir = s.workdir("sbatch");
    let path = script(&dir, "env.sh", ENV_SCRIPT);
    let out = s
        .cmd("sbatch")
        .arg("--parsable")
        .arg(&path)
        .current_dir(&dir)
        .output()
        .expect("run sbatch");
    assert!(out.status.success(), "{}", rig::output_text(&out));
    assert!(out.stderr.is_empty(), "{}", rig::output_text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    record("sbatch-parsable.txt", &stdout);
    let id = stdout.trim_end_matches('\n').to_string();
    assert!(
        stdout == format!("{id}\n") && id.bytes().all(|b| b.is_ascii_digit()),
        "{stdout:?}"
    );
    let _cancel = Cancel(s, id.clone());
    s.await_state(&id, "COMPLETED", JOB_WITHIN);

    // -o %x-%j.out: the job's name and id.
    let output = std::fs::read_to_string(dir.join(format!("oracle-env-{id}.out")))
        .unwrap_or_else(|e| panic!("the job's output oracle-env-{id}.out: {e}\n{}", s.logs()));
    assert_eq!(output, "done\n");

    let env = std::fs::read_to_string(dir.join(format!("env-{id}.txt"))).expect("the job's env");
    record("job-env.txt", &env);
    let value = |name: &str| {
        env.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("the job has no {name}:\n{env}"))
            .to_string()
    };
    assert_eq!(value("SLURM_JOB_ID"), id);
    assert_eq!(value("SLURM_JOBID"), id);
    assert_eq!(value("SLURM_JOB_NAME"), "oracle-env");
    assert_eq!(value("SLURM_JOB_NUM_NODES"), "1");
    assert_eq!(value("SLURM_NNODES"), "1");
    assert_eq!(value("SLURM_JOB_NODELIST"), NODE);
    assert_eq!(value("SLURM_JOB_PARTITION"), PARTITION);
    assert_eq!(value("SLURM_CLUSTER_NAME"), rig::CLUSTER);
    assert_eq!(value("SLURM_SUBMIT_DIR"), dir.display().to_string());
    assert_eq!(value("SLURM_JOB_USER"), rig::user());
    // The names are the fixture's, no more, no fewer.
    let seen = names(&env);
    let expected: BTreeSet<String> = fixture("job-env-names.txt")
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(
        seen,
        expected,
        "the SLURM_* variables differ from fixtures/job-env-names.txt: extra {:?}, missing {:?}",
        seen.difference(&expected).collect::<Vec<_>>(),
        expected.difference(&seen).collect::<Vec<_>>()
    );
}

#[test]
fn sbatch_says_submitted_batch_job() {
    if skipped() {
        return;
    }
    let s = slurm();
    let dir = s.workdir("sbatch-plain");
    let path = script(&dir, "true.sh", "#!/bin/sh\ntrue\n");
    let out = s
        .cmd("sbatch")
        .arg(&path)
        .current_dir(&dir)
        .output()
        .expect("run sbatch");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{}", rig::output_text(&out));
    record("sbatch.txt", &stdout);
    let id = stdout
        .strip_prefix("Submitted batch job ")
        .and_then(|rest| rest.strip_suffix('\n'))
        .unwrap_or_else(|| panic!("{stdout:?}"));
    assert!(id.bytes().all(|b| b.is_ascii_digit()), "{stdout:?}");
    assert_eq!(
        first_line(&fixture("sbatch.txt"))
            .rsplit_once(' ')
            .map(|p| p.0),
        Some("Submitted batch job")
    );
    let _cancel = Cancel(s, id.to_string());
    s.await_state(id, "COMPLETED", JOB_WITHIN);
    // Its output: slurm-%j.out in the submission directory.
    assert!(dir.join(format!("slurm-{id}.out")).exists());
}

#[test]
fn squeue_scontrol_and_json_show_a_running_job() {
    if skipped() {
        return;
    }
    let s = slurm();
    let dir = s.workdir("squeue");
    let started = dir.join("started");
    let release = dir.join("release");
    mkfifo(&started);
    mkfifo(&release);
    let path = script(
        &dir,
        "waiter.sh",
        "#!/bin/bash
#SBATCH -J waiter
#SBATCH -o waiter-%j.out
echo running > started
read -r _ < release
",
    );
    let id = submit(s, &dir, &path);
    let _cancel = Cancel(s, id.clone());
    let said = within(s, JOB_WITHIN, &format!("job {id} starting"), move || {
        std::fs::read_to_string(&started)
    });
    assert_eq!(said.expect("read the job's FIFO"), "running\n");

    // The default table: the fixture's header, the row's columns under it.
    let table = s.ok("squeue", &["-j", &id]);
    record("squeue.txt", &table);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 2, "{table}");
    assert_eq!(lines[0], first_line(&fixture("squeue.txt")));
    let row: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(row.len(), 8, "{table}");
    assert_eq!(row[0], id);
    assert_eq!(row[1], PARTITION);
    assert_eq!(row[2], "waiter");
    assert_eq!(row[3], rig::user());
    assert_eq!(row[4], "R");
    assert!(row[5].contains(':'), "TIME {}", row[5]);
    assert_eq!(row[6], "1");
    assert_eq!(row[7], NODE);
    // Right-aligned under the header, but NODELIST(REASON), at its left.
    let (head, cells) = (word_ends(lines[0]), word_ends(lines[1]));
    assert_eq!(head[..7], cells[..7], "columns misaligned:\n{table}");
    assert_eq!(
        lines[0].find("NODELIST"),
        lines[1].rfind(NODE),
        "NODELIST misaligned:\n{table}"
    );

    let custom = s.ok("squeue", &["-h", "-o", "%i %j %T", "-j", &id]);
    record("squeue-h-o-i-j-T.txt", &custom);
    assert_eq!(custom, format!("{id} waiter RUNNING\n"));

    let json = s.ok("squeue", &["--json", "-j", &id]);
    record("squeue.json", &json);
    let v: serde_json::Value =
        serde_json::from_str(&json).unwrap_or_else(|e| panic!("squeue --json: {e}\n{json}"));
    let release_name = v["meta"]["Slurm"]["release"].as_str().unwrap_or_default();
    assert!(release_name.starts_with("22.05."), "{}", v["meta"]);
    let jobs = v["jobs"].as_array().expect("jobs, an array");
    let job = jobs
        .iter()
        .find(|j| j["job_id"].as_u64().map(|n| n.to_string()) == Some(id.clone()))
        .unwrap_or_else(|| panic!("job {id} not in squeue --json:\n{json}"));
    assert_eq!(job["job_state"], "RUNNING");
    assert_eq!(job["name"], "waiter");
    assert_eq!(job["partition"], PARTITION);
    assert_eq!(job["nodes"], NODE);
    let keys = |j: &serde_json::Value| -> BTreeSet<String> {
        j.as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    };
    let fixed: serde_json::Value =
        serde_json::from_str(&fixture("squeue.json")).expect("fixtures/squeue.json");
    assert_eq!(keys(&v), keys(&fixed), "squeue --json's top-level keys");
    assert_eq!(
        keys(job),
        keys(&fixed["jobs"][0]),
        "squeue --json's job keys"
    );

    let shown = s.ok("scontrol", &["show", "job", &id]);
    record("scontrol-show-job-running.txt", &shown);
    assert!(
        shown.starts_with(&format!("JobId={id} JobName=waiter\n")),
        "{shown}"
    );
    assert!(shown.contains(" JobState=RUNNING "), "{shown}");
    assert_eq!(
        scontrol_keys(&shown),
        scontrol_keys(&fixture("scontrol-show-job-running.txt"))
    );

    within(
        s,
        JOB_WITHIN,
        &format!("job {id} reading its FIFO"),
        move || std::fs::write(&release, "go\n"),
    )
    .expect("write the job's FIFO");
    s.await_state(&id, "COMPLETED", JOB_WITHIN);
}

#[test]
fn sinfo_prints_its_default_table() {
    if skipped() {
        return;
    }
    let s = slurm();
    let table = s.ok("sinfo", &[]);
    record("sinfo.txt", &table);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines[0], first_line(&fixture("sinfo.txt")), "{table}");
    assert_eq!(lines.len(), 2, "{table}");
    let row: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(row.len(), 6, "{table}");
    assert_eq!(row[0], format!("{PARTITION}*"), "the default partition");
    assert_eq!(row[1], "up");
    assert_eq!(row[2], "infinite");
    assert_eq!(row[3], "1");
    // Other tests' jobs may run or be ending on the node meanwhile.
    assert!(
        ["idle", "mix", "alloc", "comp"].contains(&row[4]),
        "{table}"
    );
    assert_eq!(row[5], NODE);
    let (head, cells) = (word_ends(lines[0]), word_ends(lines[1]));
    // PARTITION and NODELIST are left-aligned; the rest right-aligned.
    assert_eq!(head[1..5], cells[1..5], "columns misaligned:\n{table}");

    let nodes = s.ok("sinfo", &["-N", "-h", "-o", "%N %c %m %T"]);
    record("sinfo-N-h-o-N-c-m-T.txt", &nodes);
    let node: Vec<&str> = nodes.split_whitespace().collect();
    assert_eq!(node.len(), 4, "{nodes}");
    assert_eq!(node[0], NODE);
    assert!(node[1].parse::<u32>().is_ok_and(|c| c >= 1), "{nodes}");
    assert!(node[2].parse::<u64>().is_ok_and(|m| m >= 1), "{nodes}");
}

#[test]
fn scontrol_show_job_of_a_finished_job_has_the_fixtures_fields() {
    if skipped() {
        return;
    }
    let s = slurm();
    let (dir, id) = run_env_job(s, "scontrol");
    let shown = s.ok("scontrol", &["show", "job", &id]);
    record("scontrol-show-job.txt", &shown);
    assert!(
        shown.starts_with(&format!("JobId={id} JobName=oracle-env\n")),
        "{shown}"
    );
    for word in [
        "JobState=COMPLETED".to_string(),
        "ExitCode=0:0".to_string(),
        "TimeLimit=00:05:00".to_string(),
        format!("Partition={PARTITION}"),
        format!("NodeList={NODE}"),
        format!("WorkDir={}", dir.display()),
        format!("StdOut={}/oracle-env-{id}.out", dir.display()),
    ] {
        assert!(
            shown.split_whitespace().any(|w| w == word),
            "no {word}:\n{shown}"
        );
    }
    // The same fields, in the same order and on the same lines.
    let fixed = fixture("scontrol-show-job.txt");
    assert_eq!(scontrol_keys(&shown), scontrol_keys(&fixed), "{shown}");
    let line_keys = |t: &str| -> Vec<Vec<String>> { t.lines().map(scontrol_keys).collect() };
    assert_eq!(line_keys(&shown), line_keys(&fixed), "{shown}");

    // -o: the same fields on one line.
    let one = s.ok("scontrol", &["show", "job", "-o", &id]);
    record("scontrol-show-job-o.txt", &one);
    assert_eq!(one.lines().count(), 1, "{one}");
    assert_eq!(scontrol_keys(&one), scontrol_keys(&shown));
}

#[test]
fn sacct_reads_finished_jobs_back_from_slurmdbd() {
    if skipped() {
        return;
    }
    let s = slurm();
    let (_, ok) = run_env_job(s, "sacct");
    let dir = s.workdir("sacct");
    let failing = script(
        &dir,
        "fail.sh",
        "#!/bin/sh\n#SBATCH -J oracle-fail\nexit 3\n",
    );
    let failed = submit(s, &dir, &failing);
    s.await_state(&failed, "FAILED", JOB_WITHIN);
    let jobs = format!("{ok},{failed}");
    let account = if rig::user() == "root" { "root" } else { "" };
    let expected = [
        format!("{ok}|oracle-env|{PARTITION}|{account}|1|COMPLETED|0:0"),
        format!("{ok}.batch|batch||{account}|1|COMPLETED|0:0"),
        format!("{failed}|oracle-fail|{PARTITION}|{account}|1|FAILED|3:0"),
        format!("{failed}.batch|batch||{account}|1|FAILED|3:0"),
    ];
    // slurmctld sends the records to slurmdbd as they come: poll.
    let mut parsable = String::new();
    s.await_that(
        JOB_WITHIN,
        &format!("sacct showing jobs {jobs} and their steps ended"),
        || {
            parsable = s.ok("sacct", &["--parsable2", "-j", &jobs]);
            expected
                .iter()
                .all(|row| parsable.lines().any(|l| l == row))
        },
    );
    record("sacct-parsable2.txt", &parsable);
    let fixed = fixture("sacct-parsable2.txt");
    assert_eq!(first_line(&parsable), first_line(&fixed));
    assert_eq!(
        first_line(&parsable),
        "JobID|JobName|Partition|Account|AllocCPUS|State|ExitCode"
    );
    assert_eq!(parsable.lines().count(), 1 + expected.len(), "{parsable}");

    // The default table: two header lines, then the same rows.
    let table = s.ok("sacct", &["-j", &jobs]);
    record("sacct.txt", &table);
    let fixed = fixture("sacct.txt");
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[..2],
        fixed.lines().take(2).collect::<Vec<_>>()[..],
        "{table}"
    );
    assert_eq!(lines.len(), 2 + expected.len(), "{table}");
    // JobID at the left of its column, every other cell ending where its
    // column's dashes end (right-aligned; Partition is empty on a step).
    let dashes = word_ends(lines[1]);
    for line in &lines[2..] {
        let ends = word_ends(line);
        assert!(!line.starts_with(' '), "{table}");
        assert!(ends[1..].iter().all(|e| dashes[1..].contains(e)), "{table}");
    }

    // Without -j, today's jobs of the user: the same header.
    let today = s.ok("sacct", &[]);
    assert_eq!(today.lines().take(2).collect::<Vec<_>>(), lines[..2]);

    // The job completion log (JobCompType=jobcomp/filetxt): sacct -c.
    let mut completions = String::new();
    s.await_that(JOB_WITHIN, "sacct -c showing the jobs", || {
        completions = s.ok("sacct", &["-c", "--parsable2", "-j", &jobs]);
        completions.lines().count() == 3
    });
    record("sacct-c-parsable2.txt", &completions);
    assert_eq!(
        first_line(&completions),
        first_line(&fixture("sacct-c-parsable2.txt"))
    );
    assert_eq!(
        first_line(&completions),
        "JobID|UID|JobName|Partition|NNodes|NodeList|State|End"
    );
    let rows: Vec<Vec<&str>> = completions
        .lines()
        .skip(1)
        .map(|l| l.split('|').collect())
        .collect();
    assert!(
        rows.iter()
            .any(|r| r[0] == ok && r[2] == "oracle-env" && r[6] == "COMPLETED"),
        "{completions}"
    );
    assert!(
        rows.iter().any(|r| r[0] == failed && r[6] == "FAILED"),
        "{completions}"
    );
}
