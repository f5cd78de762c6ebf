//! Site-defined resources against the real daemon: a licence consumed per
//! server (flag q) makes a job wait while others hold it, and says so in
//! qstat and spwhen; resources of the configuration file's node sets
//! (flag h) choose the nodes, and with flag n the jobs of a shared node
//! share what it has; a job that could never get what it asks is
//! refused with the resource and the figures.

use crate::harness::{Daemon, stderr};

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).expect("JSON")
}

#[test]
fn a_job_waits_for_licences_another_job_holds() {
    let d = Daemon::start();
    d.ok(
        "qmgr",
        &[
            "-c",
            "create resource matlab type = long, flag = q\n\
             set server resources_available.matlab = 3",
        ],
    );
    let started = [d.fifo("started1"), d.fifo("started2")];
    let release = d.fifo("release1");
    d.script(
        "first.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho go > started1\ncat release1 > /dev/null\n",
    );
    d.script(
        "second.sh",
        "#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho go > started2\n",
    );
    let first = d.qsub(&["-l", "matlab=2", "first.sh"]);
    d.read_fifo(&started[0]);
    let second = d.qsub(&["-l", "matlab=2", "second.sh"]);

    // Nodes are free; the licences are not.
    let job = d.job_json(&second);
    assert_eq!(job["job_state"], "Q", "{job}");
    assert_eq!(job["Resource_List"]["matlab"], "2", "{job}");
    let comment = job["comment"].as_str().unwrap_or_default();
    assert!(
        comment.contains("waits for matlab: 2 of 3 in use (resources_available.matlab = 3)"),
        "{comment}"
    );
    let when = json(&d.ok("spwhen", &["--json", &second]));
    assert_eq!(when["reason"], "Consumable", "{when:#}");
    assert!(
        when["explanation"]
            .as_str()
            .is_some_and(|e| e.contains("2 of 3 in use")),
        "{when:#}"
    );
    let server = d.ok("qstat", &["-B", "-f"]);
    assert!(
        server.contains("    resources_available.matlab = 3\n")
            && server.contains("    resources_assigned.matlab = 2\n"),
        "{server}"
    );

    // The first gives its licences back: the second starts.
    d.write_fifo(&release, "done\n");
    assert_eq!(d.wait_job(&first).exit_status, Some(0));
    d.read_fifo(&started[1]);
    assert_eq!(d.wait_job(&second).exit_status, Some(0));

    // More than there will ever be, and a resource nobody made.
    let out = d.run("qsub", &["-l", "matlab=4", "second.sh"]);
    assert_eq!(out.status.code(), Some(1));
    let msg = stderr(&out);
    assert!(
        msg.contains("bad value \"4\" for resource matlab")
            && msg.contains("the server has resources_available.matlab = 3")
            && msg.contains("ask for at most 3"),
        "{msg}"
    );
    let out = d.run("qsub", &["-l", "select=1:fluent=2", "second.sh"]);
    assert_eq!(out.status.code(), Some(1));
    let msg = stderr(&out);
    assert!(
        msg.contains("unknown resource \"fluent\"") && msg.contains("defined here: matlab"),
        "{msg}"
    );
}

/// Three sets on the local host: a small node with 100 GB of scratch,
/// three big ones with 400 GB, and a node four jobs share, with one MIC
/// card. Without the resources, a one-node job would go to the small
/// node first (the exclusive set with the fewest free nodes).
const SETS: &str = "\
[agents]
local = true
local_host = \"localhost\"

[server]
default_queue = \"batch\"

[[queue]]
name = \"batch\"

[[node_set]]
name = \"small\"
count = 1
host = \"localhost\"
resources = { scratch = \"100gb\", model = \"icelake\" }

[[node_set]]
name = \"big\"
count = 3
host = \"localhost\"
resources = { scratch = \"400gb\", model = \"skylake\" }

[[node_set]]
name = \"mics\"
count = 1
host = \"localhost\"
jobs_per_node = 4
resources = { nmics = 1 }
";

#[test]
fn node_set_resources_from_the_file_choose_and_share_nodes() {
    let d = Daemon::start_with(Some(SETS));
    d.ok(
        "qmgr",
        &[
            "-c",
            "create resource scratch type = size, flag = nh\n\
             create resource model type = string, flag = h\n\
             create resource nmics type = long, flag = nh",
        ],
    );
    let listed = d.ok("qmgr", &["-c", "list node_set big"]);
    assert!(listed.contains("model=skylake, scratch=400gb"), "{listed}");
    let nodes = json(&d.ok("pbsnodes", &["-a", "-F", "json"]));
    let big = nodes["nodes"]
        .as_object()
        .and_then(|all| all.iter().find(|(name, _)| name.starts_with("big")))
        .map(|(_, node)| node.clone())
        .expect("a node of big");
    assert_eq!(big["resources_available"]["scratch"], "400gb", "{big:#}");
    let started = [d.fifo("s1"), d.fifo("s2"), d.fifo("s3"), d.fifo("s4")];
    let go = [d.fifo("g1"), d.fifo("g2"), d.fifo("g3"), d.fifo("g4")];
    for (i, name) in ["one.sh", "two.sh", "three.sh", "four.sh"]
        .iter()
        .enumerate()
    {
        let n = i + 1;
        d.script(
            name,
            &format!("#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho up > s{n}\nread x < g{n}\n"),
        );
    }
    // A chunk's scratch and a job-wide model choose the sets.
    let scratch = d.qsub(&["-l", "select=1:scratch=200gb", "one.sh"]);
    d.read_fifo(&started[0]);
    let icelake = d.qsub(&["-l", "model=icelake", "two.sh"]);
    d.read_fifo(&started[1]);
    let on = |id: &str| d.exec_nodes(id).join(",");
    assert!(on(&scratch).starts_with("big"), "{}", on(&scratch));
    assert!(on(&icelake).starts_with("small"), "{}", on(&icelake));
    let job = d.job_json(&scratch);
    let comment = job["comment"].as_str().unwrap_or_default();
    assert!(!comment.contains("recorded, not matched"), "{comment}");

    // The shared node has one MIC: the second job asking one waits,
    // though the node has room for more jobs.
    let mic = d.qsub(&["-l", "select=1:nmics=1", "three.sh"]);
    d.read_fifo(&started[2]);
    assert!(on(&mic).starts_with("mics"), "{}", on(&mic));
    let waiting = d.qsub(&["-l", "select=1:nmics=1", "four.sh"]);
    let job = d.job_json(&waiting);
    assert_eq!(job["job_state"], "Q", "{job}");
    let comment = job["comment"].as_str().unwrap_or_default();
    assert!(comment.contains("not with nmics=1 left"), "{comment}");

    // No node has 500 GB: refused at once, with what each set has.
    let out = d.run("qsub", &["-l", "select=1:scratch=500gb", "one.sh"]);
    assert_eq!(out.status.code(), Some(1));
    let msg = stderr(&out);
    assert!(
        msg.contains("scratch=500gb")
            && msg.contains("big: 3 nodes, ")
            && msg.contains("model=skylake, scratch=400gb, not enough")
            && msg.contains("could never run"),
        "{msg}"
    );

    // The MIC job ends: the fourth gets the card.
    d.write_fifo(&go[2], "go\n");
    assert_eq!(d.wait_job(&mic).exit_status, Some(0));
    d.read_fifo(&started[3]);
    assert!(on(&waiting).starts_with("mics"), "{}", on(&waiting));
    for (fifo, id) in [(&go[0], &scratch), (&go[1], &icelake), (&go[3], &waiting)] {
        d.write_fifo(fifo, "go\n");
        assert_eq!(d.wait_job(id).exit_status, Some(0));
    }
}
