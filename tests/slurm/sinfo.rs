//! qmesh's sinfo and `scontrol show node|partition` against what the real
//! Slurm printed for the same kind of machine: one idle node `n1` with the
//! host's CPUs, in partition `debug`, the default, with no time limit.
//!
//! The first test records the real ones (`sinfo -N`, `-l`, `-s`, `-N -l`,
//! `--json`, `scontrol show node n1` and `show partition debug`, each with
//! `-o`) into `target/tmp/slurm-oracle/` and holds them to the fixtures;
//! the second runs qmesh's commands on a qmesh daemon shaped like the rig
//! and holds them to the same fixtures: the tables to the character where
//! the machines agree, else their headers and column positions; scontrol's
//! keys, in order and line by line.

use std::path::{Path, PathBuf};

use crate::harness::Daemon;
use crate::rig::{NODE, PARTITION, skipped, slurm};

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

/// The keys of `Key=value` words, line by line (empty lines left out).
fn line_keys(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .map(|l| {
            l.split_whitespace()
                .filter_map(|w| w.split_once('=').map(|(k, _)| k.to_string()))
                .collect::<Vec<_>>()
        })
        .filter(|keys| !keys.is_empty())
        .collect()
}

/// Where each whitespace-separated word of a line ends.
fn word_ends(line: &str) -> Vec<usize> {
    let bytes = line.as_bytes();
    (0..bytes.len())
        .filter(|&i| bytes[i] != b' ' && (i + 1 == bytes.len() || bytes[i + 1] == b' '))
        .collect()
}

/// The line after `-l`'s date line (which is ctime's: `Fri Nov 27
/// 10:58:56 2026`).
fn after_date(text: &str) -> Vec<&str> {
    let mut lines = text.lines();
    let date = lines.next().unwrap_or_default();
    assert!(
        chrono::NaiveDateTime::parse_from_str(date, "%a %b %e %H:%M:%S %Y").is_ok(),
        "not a ctime date line: {date:?}\n{text}"
    );
    lines.collect()
}

/// The keys of the first node of a `sinfo --json` document.
fn json_node_keys(text: &str) -> Vec<String> {
    let doc: serde_json::Value = serde_json::from_str(text).expect("sinfo --json parses");
    doc["nodes"][0]
        .as_object()
        .expect("a node")
        .keys()
        .cloned()
        .collect()
}

/// The tables and views, by fixture name and the command that makes them.
const VIEWS: &[(&str, &str, &[&str])] = &[
    ("sinfo-N.txt", "sinfo", &["-N"]),
    ("sinfo-l.txt", "sinfo", &["-l"]),
    ("sinfo-s.txt", "sinfo", &["-s"]),
    ("sinfo-N-l.txt", "sinfo", &["-N", "-l"]),
    (
        "scontrol-show-node.txt",
        "scontrol",
        &["show", "node", NODE],
    ),
    (
        "scontrol-show-node-o.txt",
        "scontrol",
        &["-o", "show", "node", NODE],
    ),
    (
        "scontrol-show-partition.txt",
        "scontrol",
        &["show", "partition", PARTITION],
    ),
    (
        "scontrol-show-partition-o.txt",
        "scontrol",
        &["-o", "show", "partition", PARTITION],
    ),
];

#[test]
fn slurms_sinfo_and_scontrol_views_have_the_fixtures_shapes() {
    if skipped() {
        return;
    }
    let s = slurm();
    let json = s.ok("sinfo", &["--json"]);
    record("sinfo.json", &json);
    let seen: Vec<String> = VIEWS
        .iter()
        .map(|(name, command, args)| {
            let text = s.ok(command, args);
            record(name, &text);
            text
        })
        .collect();
    for ((name, command, args), text) in VIEWS.iter().zip(seen) {
        let fixed = fixture(name);
        if *command == "scontrol" {
            // Other tests' jobs may hold the node: its state's and its
            // allocations' values differ, and a Reason line may come.
            let keys: Vec<Vec<String>> = line_keys(&text)
                .into_iter()
                .filter(|k| k[0] != "Reason")
                .collect();
            assert_eq!(keys, line_keys(&fixed), "{name}:\n{text}");
        } else if args.contains(&"-l") {
            assert_eq!(after_date(&text)[0], after_date(&fixed)[0], "{text}");
        } else {
            assert_eq!(text.lines().next(), fixed.lines().next(), "{text}");
        }
    }
    assert_eq!(
        json_node_keys(&json),
        json_node_keys(&fixture("sinfo.json"))
    );
}

/// A qmesh machine like the rig's: node `n1` on this host, partition
/// `debug` the default, no time limit.
const MACHINE: &str = r#"
[agents]
local = true
local_host = "localhost"

[server]
default_queue = "debug"

[[queue]]
name = "debug"

[[node_set]]
name = "cpu"
topology = "flat"
nodes = [{ name = "n1", host = "localhost" }]
"#;

#[test]
fn qmesh_sinfo_and_scontrol_print_slurms_views() {
    let d = Daemon::start_with(Some(MACHINE));
    d.await_node_state(NODE, "free");
    // The CPUs are the agent's report: wait for its first.
    for _ in 0..600 {
        if d.ok("sinfo", &["-h", "-N", "-o", "%c"]).trim() != "0" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }

    // Same machine, same table, to the character.
    assert_eq!(d.ok("sinfo", &[]), fixture("sinfo.txt"));
    assert_eq!(d.ok("sinfo", &["-N"]), fixture("sinfo-N.txt"));
    assert_eq!(d.ok("sinfo", &["-s"]), fixture("sinfo-s.txt"));

    // -l: the date, the header; the row's columns where Slurm's are (its
    // values differ: qmesh's node set is exclusive, OVERSUBSCRIBE).
    let long = d.ok("sinfo", &["-l"]);
    let slurm_long = fixture("sinfo-l.txt");
    let (ours, theirs) = (after_date(&long), after_date(&slurm_long));
    assert_eq!(ours[0], theirs[0], "the header");
    assert_eq!(word_ends(ours[1]), word_ends(theirs[1]), "{long}");
    let words: Vec<&str> = ours[1].split_whitespace().collect();
    assert_eq!(words[..5], ["debug*", "up", "infinite", "1-infinite", "no"]);
    assert_eq!(words[5], "EXCLUSIV", "{long}");

    // -N -l: the header; the row's words end where Slurm's do, but for
    // the memory, which is this host's as its agent reads it.
    let node_long = d.ok("sinfo", &["-N", "-l"]);
    let slurm_node_long = fixture("sinfo-N-l.txt");
    let (ours, theirs) = (after_date(&node_long), after_date(&slurm_node_long));
    assert_eq!(ours[0], theirs[0], "the header");
    let words: Vec<&str> = ours[1].split_whitespace().collect();
    let slurm_words: Vec<&str> = theirs[1].split_whitespace().collect();
    assert_eq!(words.len(), slurm_words.len(), "{node_long}");
    for i in [0, 1, 2, 3, 4, 5, 7, 8, 9, 10] {
        assert_eq!(words[i], slurm_words[i], "column {i}:\n{node_long}");
    }
    assert_eq!(
        word_ends(ours[1])[6],
        word_ends(theirs[1])[6],
        "MEMORY ends"
    );

    // --json: 22.05's keys for each node.
    let json = d.ok("sinfo", &["--json"]);
    assert_eq!(
        json_node_keys(&json),
        json_node_keys(&fixture("sinfo.json"))
    );

    // scontrol: Slurm's keys in Slurm's order, line by line; qmesh knows
    // no node's Arch or OS, whose lines Slurm too leaves out when unknown.
    for (name, command, args) in VIEWS.iter().filter(|(_, c, _)| *c == "scontrol") {
        let text = d.ok(command, args);
        let slurm_keys: Vec<Vec<String>> = line_keys(&fixture(name))
            .into_iter()
            .map(|line| {
                line.into_iter()
                    .filter(|k| k != "Arch" && k != "OS")
                    .collect::<Vec<_>>()
            })
            .filter(|line| !line.is_empty())
            .collect();
        assert_eq!(line_keys(&text), slurm_keys, "{name}:\n{text}");
        if name.ends_with("-o.txt") {
            assert_eq!(text.lines().count(), 1, "{text}");
        } else {
            assert!(text.ends_with("\n\n") && text.contains("\n   "), "{text}");
        }
    }
    let shown = d.ok("scontrol", &["show", "partition", PARTITION]);
    assert!(shown.contains("\n   State=UP TotalCPUs=") && shown.contains(" Default=YES "));
    assert!(
        d.ok("scontrol", &["show", "node", NODE])
            .contains("\n   State=IDLE ThreadsPerCore=1 ")
    );
}
