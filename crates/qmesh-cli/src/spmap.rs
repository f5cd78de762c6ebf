//! `spq --map SET`: a node set's occupancy as text, one cell per node, like
//! the layout pictures of the EPCC paper: a letter per job, `.` free, `x`
//! down, `o` out of service (offline or drained, no job on it), `b` busy
//! (its host's load is over the limit). A mesh is drawn as its rows; a torus as slices of its first two
//! dimensions, one slice per combination of the others.

use std::collections::BTreeMap;
use std::process::ExitCode;

use qmesh_proto::{NodeInfo, NodeSetInfo, NodesRequest};

use crate::client::{self, CliError};

/// Cell letters, in the order jobs first appear.
const LETTERS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// Prints the map of one node set.
pub fn run(set: &str) -> ExitCode {
    let reply = client::block_on(async {
        let mut jobs = client::jobs().await?;
        Ok(jobs.nodes(NodesRequest::default()).await?.into_inner())
    });
    let reply = match reply {
        Ok(reply) => reply,
        Err(err) => return client::fail("spq", &err),
    };
    let Some(info) = reply.sets.iter().find(|s| s.name == set) else {
        let known: Vec<&str> = reply.sets.iter().map(|s| s.name.as_str()).collect();
        return client::fail(
            "spq",
            &CliError::msg(format!(
                "node set \"{set}\" does not exist; the node sets are: {}",
                known.join(", ")
            )),
        );
    };
    let nodes: Vec<&NodeInfo> = reply.nodes.iter().filter(|n| n.node_set == set).collect();
    print!("{}", draw(info, &nodes));
    ExitCode::SUCCESS
}

/// The picture: the grid, then which job each letter stands for.
pub fn draw(set: &NodeSetInfo, nodes: &[&NodeInfo]) -> String {
    let mut letter_of: BTreeMap<&str, char> = BTreeMap::new();
    let mut legend: Vec<(char, &NodeInfo, usize)> = Vec::new();
    let cells: Vec<char> = nodes
        .iter()
        .map(|node| {
            if !node.up {
                return 'x';
            }
            if node.job_id.is_empty() {
                return match node.state.as_str() {
                    "offline" | "drained" | "draining" => 'o',
                    "busy" => 'b',
                    _ => '.',
                };
            }
            let next = LETTERS.get(letter_of.len()).map_or('#', |&b| b as char);
            let letter = *letter_of.entry(node.job_id.as_str()).or_insert(next);
            match legend
                .iter_mut()
                .find(|(l, n, _)| *l == letter && n.job_id == node.job_id)
            {
                Some(entry) => entry.2 += 1,
                None => legend.push((letter, node, 1)),
            }
            letter
        })
        .collect();
    let dims: Vec<usize> = set.dims.iter().map(|&d| d as usize).collect();
    let (width, height) = match dims.as_slice() {
        [] => (cells.len().max(1), 1),
        [w] => {
            // A flat set: rows of 32.
            let w = (*w).clamp(1, 32);
            (w, cells.len().div_ceil(w))
        }
        [w, h, ..] => (*w, *h),
    };
    let slice = (width * height).max(1);
    let slices = cells.len().div_ceil(slice).max(1);
    let count = |c: char| cells.iter().filter(|&&x| x == c).count();
    let mut out = format!(
        "node set {} ({}): {} nodes, {} free, {} down",
        set.name,
        set.topology,
        cells.len(),
        count('.'),
        count('x')
    );
    for (c, what) in [('o', "offline"), ('b', "busy")] {
        if count(c) > 0 {
            out.push_str(&format!(", {} {what}", count(c)));
        }
    }
    out.push('\n');
    for k in 0..slices {
        if slices > 1 && dims.len() > 2 {
            out.push_str(&format!("{}:\n", slice_label(&dims[2..], k)));
        }
        for y in 0..height {
            let row: String = (0..width)
                .filter_map(|x| cells.get(k * slice + y * width + x))
                .collect();
            if !row.is_empty() {
                out.push_str("  ");
                out.push_str(&row);
                out.push('\n');
            }
        }
    }
    for (letter, node, count) in legend {
        let unit = if count == 1 { "node" } else { "nodes" };
        out.push_str(&format!(
            "{letter} = {} ({}, {count} {unit})\n",
            node.job_id, node.job_owner
        ));
    }
    out
}

/// `z=1 w=3` for slice `k` of the dimensions after the first two.
fn slice_label(rest: &[usize], mut k: usize) -> String {
    let names = ["z", "w", "v", "u", "t", "s"];
    rest.iter()
        .enumerate()
        .map(|(i, &d)| {
            let c = k % d.max(1);
            k /= d.max(1);
            format!("{}={c}", names.get(i).copied().unwrap_or("d"))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(job: &str, up: bool) -> NodeInfo {
        NodeInfo {
            name: String::new(),
            node_set: "m".into(),
            host: "h".into(),
            up,
            job_id: job.into(),
            job_owner: if job.is_empty() { "" } else { "alice" }.into(),
            ..NodeInfo::default()
        }
    }

    #[test]
    fn a_mesh_is_drawn_row_by_row_with_a_legend() {
        let set = NodeSetInfo {
            name: "m".into(),
            topology: "mesh2d 4x2".into(),
            dims: vec![4, 2],
        };
        let nodes = [
            node("1.s", true),
            node("1.s", true),
            node("", true),
            node("", false),
            node("2.s", true),
            node("1.s", true),
            node("", true),
            node("", true),
        ];
        let refs: Vec<&NodeInfo> = nodes.iter().collect();
        assert_eq!(
            draw(&set, &refs),
            "node set m (mesh2d 4x2): 8 nodes, 3 free, 1 down\n  AA.x\n  BA..\n\
             A = 1.s (alice, 3 nodes)\nB = 2.s (alice, 1 node)\n"
        );
    }

    #[test]
    fn offline_and_busy_nodes_are_not_drawn_free() {
        let set = NodeSetInfo {
            name: "m".into(),
            topology: "flat".into(),
            dims: vec![4],
        };
        let with = |state: &str, job: &str| NodeInfo {
            state: state.into(),
            ..node(job, true)
        };
        let nodes = [
            with("offline", ""),
            with("draining", "3.s"),
            with("busy", ""),
            with("free", ""),
        ];
        let refs: Vec<&NodeInfo> = nodes.iter().collect();
        assert_eq!(
            draw(&set, &refs),
            "node set m (flat): 4 nodes, 1 free, 0 down, 1 offline, 1 busy\n  oAb.\n\
             A = 3.s (alice, 1 node)\n"
        );
    }

    #[test]
    fn a_torus_is_drawn_in_slices() {
        let set = NodeSetInfo {
            name: "t".into(),
            topology: "torus 2x2x2".into(),
            dims: vec![2, 2, 2],
        };
        let nodes: Vec<NodeInfo> = (0..8)
            .map(|i| node(if i < 4 { "7.s" } else { "" }, true))
            .collect();
        let refs: Vec<&NodeInfo> = nodes.iter().collect();
        let text = draw(&set, &refs);
        assert!(
            text.contains("z=0:\n  AA\n  AA\nz=1:\n  ..\n  ..\n"),
            "{text}"
        );
    }
}
