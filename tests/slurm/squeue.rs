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
    let refused = d.run("squeue", &["-o", "%y"]);
    assert_eq!(refused.status.code(), Some(1));
    d.ok("qdel", &[&d.full_id(&id), &d.full_id(&held)]);
}
