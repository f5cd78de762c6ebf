//! Topology-aware placement through the real daemon: a mesh fragmented by
//! ended jobs still starts a job that needs several blocks (M2DB), and a
//! shapes torus does not start a job whose shape has no room although
//! enough nodes are free (the EPCC complaint), saying `Placement`.

use serde_json::Value;

use crate::harness::Daemon;

fn config(node_set: &str) -> String {
    format!(
        r#"
[agents]
local = true
local_host = "localhost"

[server]
default_queue = "batch"
scheduler_iteration = "1:00:00"

[[queue]]
name = "batch"
max_walltime = "24:00:00"

{node_set}
"#
    )
}

/// A job script that says it started through a FIFO, then sleeps.
fn sleeper(d: &Daemon, name: &str) -> std::path::PathBuf {
    let fifo = d.fifo(&format!("started-{name}"));
    d.script(
        &format!("{name}.sh"),
        &format!("#!/bin/sh\ncd \"$PBS_O_WORKDIR\"\necho go > started-{name}\nexec sleep 86400\n"),
    );
    fifo
}

/// Submits `name` for `nodes` × one hour and waits until it has started.
fn run(d: &Daemon, name: &str, nodes: u32) -> String {
    let fifo = sleeper(d, name);
    let id = d.qsub(&[
        "-N",
        name,
        "-l",
        &format!("nodes={nodes},walltime=1:00:00"),
        &format!("{name}.sh"),
    ]);
    d.read_fifo(&fifo);
    id
}

fn placement(d: &Daemon, id: &str) -> Vec<String> {
    let job = d.job_json(id);
    job["placement"]
        .as_str()
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// The upper-left corner of a block "x,y,w,h".
fn corner(block: &str) -> (u32, u32) {
    let v: Vec<u32> = block.split(',').filter_map(|p| p.parse().ok()).collect();
    (v[0], v[1])
}

#[test]
fn a_fragmented_mesh_still_starts_a_job_that_needs_several_blocks() {
    let d = Daemon::start_with(Some(&config(
        "[[node_set]]\nname = \"mesh\"\ntopology = \"mesh2d\"\ndims = [4, 4]\nhost = \"localhost\"\n",
    )));
    // Four 4-node jobs: M2DB gives each a 2x2 quarter of the 4x4 mesh.
    let jobs: Vec<String> = (0..4).map(|i| run(&d, &format!("q{i}"), 4)).collect();
    let corners: Vec<(u32, u32)> = jobs
        .iter()
        .map(|id| {
            let blocks = placement(&d, id);
            assert_eq!(blocks.len(), 1, "{id}: {blocks:?}");
            corner(&blocks[0])
        })
        .collect();
    // End the two diagonal quarters: 8 nodes free, no 8-node rectangle.
    for (id, c) in jobs.iter().zip(&corners) {
        if *c == (0, 0) || *c == (2, 2) {
            d.ok("qdel", &[id]);
            d.wait_job(id);
        }
    }
    let wide = run(&d, "wide", 8);
    let blocks = placement(&d, &wide);
    assert_eq!(blocks.len(), 2, "two blocks: {blocks:?}");
    let mut got: Vec<(u32, u32)> = blocks.iter().map(|b| corner(b)).collect();
    got.sort();
    assert_eq!(got, vec![(0, 0), (2, 2)]);
    let map = d.ok("spq", &["--map", "mesh"]);
    assert!(map.contains("16 nodes, 0 free"), "{map}");
}

#[test]
fn a_shape_without_room_does_not_start_and_says_placement() {
    let d = Daemon::start_with(Some(&config(
        "[[node_set]]\nname = \"t3d\"\ntopology = \"torus3d-shapes\"\ndims = [4, 4, 2]\n\
         host = \"localhost\"\nshapes = { 1 = [1, 1, 1], 8 = [2, 2, 2], 16 = [4, 4, 1] }\n",
    )));
    // Two 2x2x2 jobs take 4 nodes of each 4x4 layer: 16 nodes stay free,
    // but no whole 4x4x1 layer.
    run(&d, "a", 8);
    run(&d, "b", 8);
    d.script("big.sh", "#!/bin/sh\nexit 0\n");
    let big = d.qsub(&["-l", "nodes=16,walltime=1:00:00", "big.sh"]);
    // A later small job starts: the pass that looked at the big one is done.
    run(&d, "small", 1);
    let doc: Value = serde_json::from_str(&d.ok("spq", &["--json"])).expect("spq JSON");
    let entry = doc["queued"]
        .as_array()
        .and_then(|q| q.iter().find(|e| e["job_id"] == big.as_str()))
        .cloned()
        .unwrap_or_else(|| panic!("{big} is not queued: {doc:#}"));
    assert_eq!(entry["reason"], "Placement", "{entry:#}");
    let job = d.job_json(&big);
    assert_eq!(job["job_state"], "Q");
    let free: Value = serde_json::from_str(&d.ok("spfree", &["--json"])).expect("spfree JSON");
    assert_eq!(free["node_sets"][0]["free"], 15, "{free:#}");
}
