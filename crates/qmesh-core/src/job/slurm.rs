//! A job sbatch submitted: what Slurm says of its tasks (which PBS's
//! resources do not keep), the patterns of its output paths, and the
//! `SLURM_*` variables it sees beside PBS's.
//!
//! Its output paths keep Slurm's patterns as written (`slurm-%j.out`):
//! they are filled in when it starts, once its id, array index and first
//! node are known (`expand_path`). The variables are Slurm 22.05's names
//! for a batch job; their values come from the job's record and its nodes.

pub mod hostlist;

use serde::{Deserialize, Serialize};

use super::Job;

/// What sbatch asked in Slurm's terms; `None`: not given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlurmJob {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ntasks: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus_per_task: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ntasks_per_node: Option<u32>,
    /// Megabytes, as Slurm counts `--mem`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_per_node_mb: Option<u64>,
    /// Megabytes, as Slurm counts `--mem-per-cpu`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_per_cpu_mb: Option<u64>,
}

/// What a path pattern's `%` letters stand for.
#[derive(Clone, Debug, Default)]
pub struct PathParts<'a> {
    /// `%j`: the job's number (a sub-job's own).
    pub job: u64,
    /// `%A`: the array's number (`%j` for a plain job).
    pub array_job: u64,
    /// `%a`: the array index (`4294967294` for a plain job, as Slurm).
    pub array_index: Option<u32>,
    /// `%x`, `%u`, `%N`.
    pub name: &'a str,
    pub user: &'a str,
    pub first_node: &'a str,
}

/// Slurm's filename pattern filled in: `%j %J %A %a %x %u %N %%`, with an
/// optional zero-padding width (`%4j`); an unknown letter is kept as
/// written, as Slurm keeps it.
pub fn expand_path(pattern: &str, parts: &PathParts) -> String {
    if !pattern.contains('%') {
        return pattern.to_string();
    }
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut width = String::new();
        while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
            width.push(*d);
            chars.next();
        }
        let pad = width.parse::<usize>().unwrap_or(0).min(10);
        let number = |n: u64| format!("{n:0pad$}");
        match chars.next() {
            Some('%') => out.push('%'),
            Some('j') | Some('J') => out.push_str(&number(parts.job)),
            Some('A') => out.push_str(&number(parts.array_job)),
            Some('a') => out.push_str(&number(u64::from(
                parts.array_index.unwrap_or(NO_ARRAY_INDEX),
            ))),
            Some('x') => out.push_str(parts.name),
            Some('u') => out.push_str(parts.user),
            Some('N') => out.push_str(parts.first_node),
            Some(other) => {
                out.push('%');
                out.push_str(&width);
                out.push(other);
            }
            None => {
                out.push('%');
                out.push_str(&width);
            }
        }
    }
    out
}

/// What Slurm writes for `%a` of a job that is not in an array.
pub const NO_ARRAY_INDEX: u32 = 4_294_967_294;

/// The nodes as Slurm writes a list of them, in their order:
/// `n[01-03,7]`.
pub fn compressed(nodes: &[String]) -> String {
    hostlist::compress(nodes)
}

/// A Slurm hostlist written out (`n[01-03]` to `n01 n02 n03`); the reason
/// when it is not one.
pub fn expanded(list: &str) -> Result<Vec<String>, String> {
    hostlist::expand(list).map_err(|e| format!("{e}; write e.g. n[1-4,7], n[01-16] or n1,n2"))
}

impl Job {
    /// What sbatch asked, for a job it submitted.
    pub fn slurm(&self) -> Option<&SlurmJob> {
        self.options.slurm.as_ref()
    }

    /// Its output paths' parts, once it has started.
    pub fn path_parts(&self) -> PathParts<'_> {
        PathParts {
            job: self.id.seq(),
            array_job: self.id.array_parent().unwrap_or(self.id).seq(),
            array_index: self.id.array_index(),
            name: &self.name,
            user: &self.owner.user,
            first_node: self.exec_nodes.first().map_or("", |n| &**n),
        }
    }

    /// The `SLURM_*` variables a batch job of Slurm 22.05 sees, for a job
    /// sbatch submitted (none for the others). `server` is the cluster's
    /// name (`SLURM_CLUSTER_NAME`).
    pub fn slurm_env(&self, server: &str) -> Vec<(String, String)> {
        let Some(slurm) = self.slurm() else {
            return Vec::new();
        };
        let mut env: Vec<(String, String)> = Vec::new();
        let mut put = |name: &str, value: String| env.push((name.to_string(), value));
        let id = self.id.seq().to_string();
        put("SLURM_JOB_ID", id.clone());
        put("SLURM_JOBID", id);
        put("SLURM_JOB_NAME", self.name.clone());
        put("SLURM_JOB_USER", self.owner.user.clone());
        put("SLURM_JOB_UID", self.owner.uid.to_string());
        put("SLURM_JOB_GID", self.owner.gid.to_string());
        put("SLURM_JOB_PARTITION", self.queue.clone());
        put("SLURM_CLUSTER_NAME", server.to_string());
        put("SLURM_SUBMIT_DIR", self.workdir.clone());
        put("SLURM_SUBMIT_HOST", self.submit_host.clone());
        // Slurm always names one: the user's default association's when
        // none was asked; qmesh has none, so the user's name stands in.
        let account = self.account.clone();
        put(
            "SLURM_JOB_ACCOUNT",
            account.unwrap_or_else(|| self.owner.user.clone()),
        );
        let nodes: Vec<String> = self.exec_nodes.iter().map(|n| n.to_string()).collect();
        let list = compressed(&nodes);
        put("SLURM_JOB_NODELIST", list.clone());
        put("SLURM_NODELIST", list);
        let count = nodes.len().max(1) as u32;
        put("SLURM_JOB_NUM_NODES", count.to_string());
        put("SLURM_NNODES", count.to_string());
        let per_node = slurm
            .ntasks_per_node
            .or_else(|| slurm.ntasks.map(|n| n.div_ceil(count)));
        let ntasks = slurm
            .ntasks
            .or_else(|| slurm.ntasks_per_node.map(|p| p * count));
        if let Some(n) = ntasks {
            put("SLURM_NTASKS", n.to_string());
            put("SLURM_NPROCS", n.to_string());
        }
        if let Some(p) = slurm.ntasks_per_node {
            put("SLURM_NTASKS_PER_NODE", p.to_string());
        }
        // One task per node unless told (a batch job's own count).
        let tasks = ntasks.unwrap_or(per_node.unwrap_or(1) * count);
        put("SLURM_TASKS_PER_NODE", tasks_per_node(tasks, count));
        // The CPUs each node gives the job: its share, as the node file
        // counts them.
        let cpus = self.node_shares().first().map_or(1, |s| s.cpus.max(1));
        put("SLURM_CPUS_ON_NODE", cpus.to_string());
        put(
            "SLURM_JOB_CPUS_PER_NODE",
            tasks_per_node(cpus * count, count),
        );
        // The batch step's own: task 0 on the first node.
        for name in [
            "SLURM_NODEID",
            "SLURM_PROCID",
            "SLURM_LOCALID",
            "SLURM_GTIDS",
        ] {
            put(name, "0".into());
        }
        put("SLURM_PRIO_PROCESS", "0".into());
        let qos = self.resource_list.get("qos").cloned();
        put("SLURM_JOB_QOS", qos.unwrap_or_else(|| "normal".into()));
        let first = nodes.first().cloned().unwrap_or_default();
        put("SLURM_TOPOLOGY_ADDR", first);
        put("SLURM_TOPOLOGY_ADDR_PATTERN", "node".into());
        put("SLURM_NODE_ALIASES", "(null)".into());
        if let Some(c) = slurm.cpus_per_task {
            put("SLURM_CPUS_PER_TASK", c.to_string());
        }
        if let Some(m) = slurm.mem_per_node_mb {
            put("SLURM_MEM_PER_NODE", m.to_string());
        }
        if let Some(m) = slurm.mem_per_cpu_mb {
            put("SLURM_MEM_PER_CPU", m.to_string());
        }
        if let (Some(parent), Some(index)) = (self.id.array_parent(), self.id.array_index()) {
            put("SLURM_ARRAY_JOB_ID", parent.seq().to_string());
            put("SLURM_ARRAY_TASK_ID", index.to_string());
        }
        env
    }
}

/// Slurm's `SLURM_TASKS_PER_NODE`: `2(x3)` for 2 on each of 3 nodes,
/// `3(x2),2` when they do not divide evenly (the first nodes get more).
fn tasks_per_node(ntasks: u32, nodes: u32) -> String {
    let nodes = nodes.max(1);
    let base = ntasks / nodes;
    let more = ntasks % nodes;
    let group = |n: u32, k: u32| {
        if k == 1 {
            n.to_string()
        } else {
            format!("{n}(x{k})")
        }
    };
    match (more, base) {
        (0, _) => group(base, nodes),
        (_, 0) => group(1, more),
        _ => format!("{},{}", group(base + 1, more), group(base, nodes - more)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_patterns_are_filled_in_as_slurm_fills_them() {
        let parts = PathParts {
            job: 42,
            array_job: 40,
            array_index: Some(2),
            name: "sim",
            user: "ann",
            first_node: "h1a",
        };
        assert_eq!(expand_path("slurm-%j.out", &parts), "slurm-42.out");
        assert_eq!(expand_path("%x-%A_%a.%u.%N", &parts), "sim-40_2.ann.h1a");
        assert_eq!(expand_path("%5j%%%q", &parts), "00042%%q");
        assert_eq!(expand_path("plain.out", &parts), "plain.out");
        let plain = PathParts {
            array_index: None,
            ..parts
        };
        assert_eq!(expand_path("%a", &plain), "4294967294");
    }

    #[test]
    fn tasks_per_node_is_slurms_compressed_count() {
        assert_eq!(tasks_per_node(6, 3), "2(x3)");
        assert_eq!(tasks_per_node(8, 3), "3(x2),2");
        assert_eq!(tasks_per_node(4, 1), "4");
        assert_eq!(tasks_per_node(2, 3), "1(x2)");
    }

    #[test]
    fn node_lists_compress_and_expand() {
        let nodes: Vec<String> = ["n1", "n2", "n3", "n7"].map(String::from).to_vec();
        assert_eq!(compressed(&nodes), "n[1-3,7]");
        assert_eq!(expanded("n[1-3,7]").unwrap(), nodes);
        assert_eq!(
            expanded("n[1-").unwrap_err(),
            "Invalid hostlist: n[1-; write e.g. n[1-4,7], n[01-16] or n1,n2"
        );
        // Zero padding kept both ways, as SLURM_JOB_NODELIST needs it.
        let padded: Vec<String> = ["local03", "local04", "local05"].map(String::from).to_vec();
        assert_eq!(compressed(&padded), "local[03-05]");
        assert_eq!(expanded("local[03-05]").unwrap(), padded);
    }
}
