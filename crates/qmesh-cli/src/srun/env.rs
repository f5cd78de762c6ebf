//! The `SLURM_*` variables of an allocation and of a step's tasks, with
//! Slurm 22.05's names. A job's own (`SLURM_JOB_ID`, `SLURM_JOB_NODELIST`
//! ...) come from the daemon for jobs sbatch submitted; srun adds them
//! where they are missing (a qsub job, salloc's command on the submitting
//! host) from what the daemon says of the job. Each task then gets its
//! step's and its own (`SLURM_PROCID`, `SLURM_LOCALID`, `SLURM_NODEID`,
//! `SLURM_STEP_*` ...).

use qmesh_core::job::slurm::compressed;
use qmesh_proto::v1;

use super::layout::{JobNode, Layout, counts_text};

/// The job's nodes with their CPUs, from `exec_host` (`n1/0*8+n2/0*8`);
/// a node it does not name has one CPU.
pub fn job_nodes(info: &v1::JobInfo) -> Vec<JobNode> {
    let cpus_of = |name: &str| {
        info.exec_host
            .split('+')
            .find_map(|part| {
                let (node, rest) = part.split_once('/')?;
                (node == name).then(|| rest.rsplit_once('*').and_then(|(_, c)| c.parse().ok()))?
            })
            .unwrap_or(1u32)
    };
    info.exec_nodes
        .iter()
        .enumerate()
        .map(|(i, name)| JobNode {
            index: i as u32,
            name: name.clone(),
            cpus: cpus_of(name),
        })
        .collect()
}

/// The job's number as Slurm names it: `12` of `12.server`.
pub fn number(job_id: &str) -> &str {
    crate::sbatch::slurm_number(job_id)
}

/// What Slurm sets for an allocation (salloc's command sees these): the
/// job's own variables. `ntasks`, `cpus_per_task`: as asked (absent: not
/// set, as Slurm). `PBS_JOBID` too, for qmesh's own commands.
pub fn job_vars(
    info: &v1::JobInfo,
    ntasks: Option<u32>,
    cpus_per_task: Option<u32>,
) -> Vec<(String, String)> {
    let nodes = job_nodes(info);
    let names: Vec<String> = nodes.iter().map(|n| n.name.clone()).collect();
    let list = compressed(&names);
    let count = names.len().max(1) as u32;
    let id = number(&info.id).to_string();
    let user = user_of(info);
    let mut env: Vec<(String, String)> = Vec::new();
    let mut put = |name: &str, value: String| env.push((name.to_string(), value));
    put("SLURM_JOB_ID", id.clone());
    put("SLURM_JOBID", id);
    put("SLURM_JOB_NAME", info.name.clone());
    put("SLURM_JOB_PARTITION", info.queue.clone());
    put(
        "SLURM_JOB_ACCOUNT",
        if info.account.is_empty() {
            user.to_string()
        } else {
            info.account.clone()
        },
    );
    let qos = info.resource_list.get("qos").cloned();
    put("SLURM_JOB_QOS", qos.unwrap_or_else(|| "normal".into()));
    let server = info.id.split_once('.').map_or("", |(_, s)| s);
    put("SLURM_CLUSTER_NAME", server.to_string());
    put("SLURM_SUBMIT_DIR", info.workdir.clone());
    put("SLURM_SUBMIT_HOST", info.submit_host.clone());
    put("SLURM_JOB_NODELIST", list.clone());
    put("SLURM_NODELIST", list);
    put("SLURM_JOB_NUM_NODES", count.to_string());
    put("SLURM_NNODES", count.to_string());
    put("SLURM_NODE_ALIASES", "(null)".into());
    let cpus: Vec<u32> = nodes.iter().map(|n| n.cpus).collect();
    put("SLURM_JOB_CPUS_PER_NODE", counts_text(&cpus));
    let tasks = ntasks.unwrap_or(count);
    if let Some(n) = ntasks {
        put("SLURM_NTASKS", n.to_string());
        put("SLURM_NPROCS", n.to_string());
    }
    let base = tasks / count;
    let more = tasks % count;
    let per_node: Vec<u32> = (0..count).map(|i| base + u32::from(i < more)).collect();
    put("SLURM_TASKS_PER_NODE", counts_text(&per_node));
    if let Some(c) = cpus_per_task {
        put("SLURM_CPUS_PER_TASK", c.to_string());
    }
    put("PBS_JOBID", info.id.clone());
    env
}

/// The job's owner: `ann` of `ann@host`.
fn user_of(info: &v1::JobInfo) -> &str {
    info.owner.split('@').next().unwrap_or(&info.owner)
}

/// What one task of a step sees besides the job's variables.
pub struct Step<'a> {
    pub id: u32,
    pub layout: &'a Layout,
    pub cpus_per_task: Option<u32>,
    pub ntasks_per_node: Option<u32>,
    /// The address of the host srun runs on.
    pub launch_host: String,
    /// `-l`: the tasks are told (`SLURM_LABELIO`).
    pub label: bool,
    /// The job's owner, who runs the tasks.
    pub user: String,
}

impl Step<'_> {
    /// The variables of task `rank`.
    pub fn task_vars(&self, rank: u32) -> Vec<(String, String)> {
        let l = self.layout;
        let (node, local) = l.placement()[rank as usize];
        let names: Vec<String> = l.nodes.iter().map(|n| n.name.clone()).collect();
        let list = compressed(&names);
        let ntasks = l.ntasks().to_string();
        let nnodes = l.nodes.len().to_string();
        let per_node = l.tasks_per_node();
        let here = &l.nodes[node];
        let gtids: Vec<String> = l.ranks[node].iter().map(u32::to_string).collect();
        let mut env: Vec<(String, String)> = Vec::new();
        let mut put = |name: &str, value: String| env.push((name.to_string(), value));
        put("SLURM_STEP_ID", self.id.to_string());
        put("SLURM_STEPID", self.id.to_string());
        put("SLURM_STEP_NUM_TASKS", ntasks.clone());
        put("SLURM_STEP_NUM_NODES", nnodes.clone());
        put("SLURM_STEP_NODELIST", list.clone());
        put("SLURM_STEP_TASKS_PER_NODE", per_node.clone());
        put("SLURM_NTASKS", ntasks.clone());
        put("SLURM_NPROCS", ntasks);
        put("SLURM_NNODES", nnodes);
        put("SLURM_NODELIST", list);
        put("SLURM_TASKS_PER_NODE", per_node);
        put("SLURM_PROCID", rank.to_string());
        put("SLURM_LOCALID", local.to_string());
        put("SLURM_NODEID", node.to_string());
        put("SLURM_GTIDS", gtids.join(","));
        put("SLURM_CPUS_ON_NODE", here.cpus.to_string());
        put("SLURMD_NODENAME", here.name.clone());
        put("SLURM_TOPOLOGY_ADDR", here.name.clone());
        put("SLURM_TOPOLOGY_ADDR_PATTERN", "node".into());
        put("SLURM_PRIO_PROCESS", "0".into());
        put("SLURM_LAUNCH_NODE_IPADDR", self.launch_host.clone());
        put("SLURM_SRUN_COMM_HOST", self.launch_host.clone());
        put("SLURM_UMASK", format!("{:04o}", umask()));
        put("SLURM_JOB_USER", self.user.clone());
        put("SLURM_JOB_UID", nix::unistd::getuid().to_string());
        put("SLURM_JOB_GID", nix::unistd::getgid().to_string());
        if self.label {
            put("SLURM_LABELIO", "1".into());
        }
        if let Some(c) = self.cpus_per_task {
            put("SLURM_CPUS_PER_TASK", c.to_string());
        }
        if let Some(p) = self.ntasks_per_node {
            put("SLURM_NTASKS_PER_NODE", p.to_string());
        }
        env
    }
}

/// This host's address as the nodes would reach it (its name resolved),
/// else its name.
pub fn launch_address() -> String {
    use std::net::ToSocketAddrs;
    let host = crate::client::hostname();
    (host.as_str(), 0)
        .to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.find(|a| a.is_ipv4()))
        .map_or(host, |a| a.ip().to_string())
}

/// This process's umask (read by setting it and back).
fn umask() -> u32 {
    use nix::sys::stat::{Mode, umask};
    let old = umask(Mode::from_bits_truncate(0o022));
    umask(old);
    old.bits()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::srun::layout::{Request, layout};

    fn info() -> v1::JobInfo {
        v1::JobInfo {
            id: "12.srv".into(),
            name: "sim".into(),
            owner: "ann@h0".into(),
            queue: "batch".into(),
            exec_nodes: vec!["n1".into(), "n2".into()],
            exec_host: "n1/0*2+n2/0*2".into(),
            ..Default::default()
        }
    }

    fn get<'a>(env: &'a [(String, String)], name: &str) -> &'a str {
        env.iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("{name} missing: {env:?}"))
    }

    #[test]
    fn an_allocation_has_the_jobs_variables() {
        let env = job_vars(&info(), Some(4), None);
        assert_eq!(get(&env, "SLURM_JOB_ID"), "12");
        assert_eq!(get(&env, "SLURM_JOB_NODELIST"), "n[1-2]");
        assert_eq!(get(&env, "SLURM_NNODES"), "2");
        assert_eq!(get(&env, "SLURM_JOB_CPUS_PER_NODE"), "2(x2)");
        assert_eq!(get(&env, "SLURM_TASKS_PER_NODE"), "2(x2)");
        assert_eq!(get(&env, "SLURM_JOB_ACCOUNT"), "ann");
        assert_eq!(get(&env, "PBS_JOBID"), "12.srv");
    }

    #[test]
    fn each_task_knows_its_rank_node_and_step() {
        let nodes = job_nodes(&info());
        assert_eq!(nodes[1].cpus, 2);
        let req = Request {
            ntasks: Some(3),
            ..Request::default()
        };
        let l = layout(&req, &nodes, "12").unwrap();
        let step = Step {
            id: 4,
            layout: &l,
            cpus_per_task: None,
            ntasks_per_node: None,
            launch_host: "10.0.0.1".into(),
            label: true,
            user: "ann".into(),
        };
        let env = step.task_vars(2);
        assert_eq!(get(&env, "SLURM_PROCID"), "2");
        assert_eq!(get(&env, "SLURM_NODEID"), "1");
        assert_eq!(get(&env, "SLURM_LOCALID"), "0");
        assert_eq!(get(&env, "SLURM_GTIDS"), "2");
        assert_eq!(get(&env, "SLURM_STEP_ID"), "4");
        assert_eq!(get(&env, "SLURM_STEP_TASKS_PER_NODE"), "2,1");
        assert_eq!(get(&env, "SLURMD_NODENAME"), "n2");
        let env = step.task_vars(1);
        assert_eq!(get(&env, "SLURM_LOCALID"), "1");
        assert_eq!(get(&env, "SLURM_GTIDS"), "0,1");
    }
}
