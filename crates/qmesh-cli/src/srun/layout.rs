//! Where a step's tasks run, as Slurm lays them out by default (block
//! distribution): the step takes the job's first nodes, each node's
//! count of tasks is found by going round the nodes one task at a time,
//! each taking as many as its CPUs allow (then round again, when more
//! tasks were asked than CPUs and `--overcommit` allows it), and the ranks
//! are then numbered node by node: node 0 has ranks 0..k, node 1 the next.

/// What the step asks, after the command line and `SLURM_*` input
/// variables; `None`: not given.
#[derive(Clone, Debug, Default)]
pub struct Request {
    pub ntasks: Option<u32>,
    /// `-N`: the minimum of `MIN[-MAX]`.
    pub nodes: Option<u32>,
    /// Whether `-N` was written on the command line (Slurm then warns when
    /// it has to give fewer nodes).
    pub nodes_explicit: bool,
    pub ntasks_per_node: Option<u32>,
    pub cpus_per_task: Option<u32>,
    pub overcommit: bool,
}

/// A job node the step may use: its place in the job and its CPUs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobNode {
    pub index: u32,
    pub name: String,
    pub cpus: u32,
}

/// The step's tasks: its nodes, and the ranks on each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub nodes: Vec<JobNode>,
    /// Ranks on each of `nodes`, in order.
    pub ranks: Vec<Vec<u32>>,
    /// What Slurm would warn of (said on standard error as `srun:
    /// Warning: ...`).
    pub warnings: Vec<String>,
}

impl Layout {
    pub fn ntasks(&self) -> u32 {
        self.ranks.iter().map(|r| r.len() as u32).sum()
    }

    /// The node (its place among the step's) and local id of each rank.
    pub fn placement(&self) -> Vec<(usize, u32)> {
        let mut out = vec![(0, 0); self.ntasks() as usize];
        for (node, ranks) in self.ranks.iter().enumerate() {
            for (local, &rank) in ranks.iter().enumerate() {
                out[rank as usize] = (node, local as u32);
            }
        }
        out
    }

    /// Tasks per node as Slurm writes them: `2(x3),1`.
    pub fn tasks_per_node(&self) -> String {
        counts_text(
            &self
                .ranks
                .iter()
                .map(|r| r.len() as u32)
                .collect::<Vec<_>>(),
        )
    }
}

/// Counts as Slurm writes them, equal neighbours run together: `2(x3),1`.
pub fn counts_text(counts: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < counts.len() {
        let run = counts[i..].iter().take_while(|&&c| c == counts[i]).count();
        parts.push(if run == 1 {
            counts[i].to_string()
        } else {
            format!("{}(x{run})", counts[i])
        });
        i += run;
    }
    parts.join(",")
}

/// The step's layout on `job_nodes` (the job's nodes, or those `-w`/`-x`
/// left), or why it cannot run there. `job` names the job in refusals.
pub fn layout(req: &Request, job_nodes: &[JobNode], job: &str) -> Result<Layout, String> {
    let available = job_nodes.len() as u32;
    if available == 0 {
        return Err(format!("job {job} has no nodes for this step"));
    }
    let mut warnings = Vec::new();
    let cpus_per_task = req.cpus_per_task.unwrap_or(1).max(1);
    let mut nodes = match (req.nodes, req.ntasks, req.ntasks_per_node) {
        (Some(n), _, _) => n,
        (None, Some(t), Some(p)) if p > 0 => t.div_ceil(p).min(available),
        (None, Some(t), _) => t.min(available),
        (None, None, _) => available,
    };
    if nodes == 0 {
        return Err("--nodes=0: a step runs on at least one node".into());
    }
    if nodes > available {
        return Err(format!(
            "Unable to create step for job {job}: the job has {available} node(s), the step \
             asks {nodes} (-N); ask for fewer, or for more nodes when submitting"
        ));
    }
    let ntasks = match (req.ntasks, req.ntasks_per_node) {
        (Some(t), _) => t,
        (None, Some(p)) => p * nodes,
        (None, None) => nodes,
    };
    if ntasks == 0 {
        return Err("--ntasks=0: a step runs at least one task".into());
    }
    if ntasks < nodes {
        if req.nodes_explicit {
            warnings.push(format!(
                "can't run {ntasks} processes on {nodes} nodes, setting nnodes to {ntasks}"
            ));
        }
        nodes = ntasks;
    }
    let chosen: Vec<JobNode> = job_nodes[..nodes as usize].to_vec();
    let capacity: Vec<u32> = chosen
        .iter()
        .map(|n| match req.ntasks_per_node {
            Some(p) => p,
            None => n.cpus / cpus_per_task,
        })
        .collect();
    let room: u32 = chosen.iter().map(|n| n.cpus / cpus_per_task).sum();
    if ntasks > room && !req.overcommit {
        return Err(format!(
            "Unable to create step for job {job}: More processors requested than permitted \
             ({ntasks} task(s) of {cpus_per_task} CPU(s) on {nodes} node(s) with {} CPU(s); \
             ask for fewer tasks, or add -O/--overcommit)",
            chosen.iter().map(|n| n.cpus).sum::<u32>()
        ));
    }
    let counts = block_counts(ntasks, &capacity);
    let mut ranks = Vec::with_capacity(counts.len());
    let mut next = 0;
    for count in counts {
        ranks.push((next..next + count).collect());
        next += count;
    }
    Ok(Layout {
        nodes: chosen,
        ranks,
        warnings,
    })
}

/// How many tasks each node gets: round the nodes one at a time, each
/// while it has room, then round all of them once none has.
fn block_counts(ntasks: u32, capacity: &[u32]) -> Vec<u32> {
    let mut counts = vec![0u32; capacity.len()];
    let mut placed = 0;
    let mut over = false;
    let mut pass = 0;
    while placed < ntasks {
        let mut room_left = false;
        for (i, &cap) in capacity.iter().enumerate() {
            if placed == ntasks {
                break;
            }
            if pass < cap || over {
                counts[i] += 1;
                placed += 1;
                if pass + 1 < cap {
                    room_left = true;
                }
            }
        }
        if !room_left {
            over = true;
        }
        pass += 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(cpus: &[u32]) -> Vec<JobNode> {
        cpus.iter()
            .enumerate()
            .map(|(i, &c)| JobNode {
                index: i as u32,
                name: format!("n{}", i + 1),
                cpus: c,
            })
            .collect()
    }

    fn req(ntasks: Option<u32>, nodes: Option<u32>) -> Request {
        Request {
            ntasks,
            nodes,
            nodes_explicit: nodes.is_some(),
            ..Request::default()
        }
    }

    #[test]
    fn ranks_fill_nodes_in_blocks_as_slurm_numbers_them() {
        let l = layout(&req(Some(4), None), &nodes(&[2, 2]), "7").unwrap();
        assert_eq!(l.ranks, [vec![0, 1], vec![2, 3]]);
        assert_eq!(l.tasks_per_node(), "2(x2)");
        assert_eq!(l.placement(), [(0, 0), (0, 1), (1, 0), (1, 1)]);
        // Three on two nodes of four CPUs: round the nodes, then in blocks.
        let l = layout(&req(Some(3), None), &nodes(&[4, 4]), "7").unwrap();
        assert_eq!(l.ranks, [vec![0, 1], vec![2]]);
        // Unequal nodes: the bigger one takes what the smaller cannot.
        let l = layout(&req(Some(5), None), &nodes(&[1, 4]), "7").unwrap();
        assert_eq!(l.ranks, [vec![0], vec![1, 2, 3, 4]]);
        assert_eq!(l.tasks_per_node(), "1,4");
    }

    #[test]
    fn node_counts_follow_tasks_and_say_when_they_shrink() {
        // No -n: one task on each node.
        let l = layout(&req(None, None), &nodes(&[2, 2, 2]), "7").unwrap();
        assert_eq!(l.ranks, [vec![0], vec![1], vec![2]]);
        // -n 1 in a 2-node job: one node, quietly.
        let l = layout(&req(Some(1), None), &nodes(&[2, 2]), "7").unwrap();
        assert_eq!((l.nodes.len(), l.warnings.len()), (1, 0));
        // -n 1 -N 2: Slurm's warning.
        let l = layout(&req(Some(1), Some(2)), &nodes(&[2, 2]), "7").unwrap();
        assert_eq!(l.nodes.len(), 1);
        assert_eq!(
            l.warnings,
            ["can't run 1 processes on 2 nodes, setting nnodes to 1"]
        );
        let err = layout(&req(None, Some(3)), &nodes(&[2, 2]), "7").unwrap_err();
        assert!(err.contains("the job has 2 node(s)"), "{err}");
    }

    #[test]
    fn tasks_per_node_and_cpus_per_task_bound_each_node() {
        let r = Request {
            ntasks_per_node: Some(1),
            ..req(Some(2), None)
        };
        let l = layout(&r, &nodes(&[4, 4]), "7").unwrap();
        assert_eq!(l.ranks, [vec![0], vec![1]]);
        let r = Request {
            cpus_per_task: Some(2),
            ..req(Some(2), None)
        };
        let l = layout(&r, &nodes(&[4, 4]), "7").unwrap();
        assert_eq!(l.ranks, [vec![0], vec![1]]);
        let err = layout(&req(Some(5), None), &nodes(&[2, 2]), "7").unwrap_err();
        assert!(
            err.contains("More processors requested than permitted"),
            "{err}"
        );
        let r = Request {
            overcommit: true,
            ..req(Some(5), None)
        };
        let l = layout(&r, &nodes(&[2, 2]), "7").unwrap();
        assert_eq!(l.ranks, [vec![0, 1, 2], vec![3, 4]]);
    }

    #[test]
    fn counts_run_together() {
        assert_eq!(counts_text(&[2, 2, 2, 1]), "2(x3),1");
        assert_eq!(counts_text(&[1, 3]), "1,3");
        assert_eq!(counts_text(&[4]), "4");
    }
}
