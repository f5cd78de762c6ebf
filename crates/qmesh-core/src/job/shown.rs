//! A job's resources as PBS shows them and as its nodes receive them:
//! `Resource_List`, `resources_used`, `exec_host`, `exec_vnode`, and each
//! node's share (node-file lines, CPUs, threads, GPUs) for the agent.
//!
//! Node `i` of `exec_nodes` serves the `i`-th chunk of the job's layout
//! (chunks in order, each repeated `count` times); the scheduler keeps
//! that order for jobs whose chunks are pinned or differ.

use std::collections::BTreeMap;

use super::{Job, JobState};
use crate::depend::{self, DependKind};
use crate::resources::{Chunk, ResourceRequest, format_size};
use crate::time::Time;
use crate::time::format_hms;

/// What a job has of one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeShare {
    /// Lines in the node file (processes).
    pub procs: u32,
    pub cpus: u32,
    /// `OMP_NUM_THREADS`.
    pub threads: u32,
    pub gpus: u32,
    /// Memory in bytes, as asked (a chunk's `mem`, else the job's `mem`,
    /// which holds `pmem` times a node's processes); `None`: not asked.
    /// Its agent's cgroup holds the job to it.
    pub mem: Option<u64>,
}

impl NodeShare {
    fn of(chunk: &Chunk) -> NodeShare {
        NodeShare {
            procs: chunk.procs(),
            cpus: chunk.cpus(),
            threads: chunk.threads(),
            gpus: chunk.gpus.unwrap_or(0),
            mem: chunk.mem,
        }
    }
}

impl Job {
    /// Each of its nodes' share, one per node of `nodes` (or of
    /// `exec_nodes` once it runs).
    pub fn node_shares(&self) -> Vec<NodeShare> {
        let n = if self.exec_nodes.is_empty() {
            self.nodes as usize
        } else {
            self.exec_nodes.len()
        };
        let plain = NodeShare {
            procs: 1,
            cpus: self.ncpus.unwrap_or(1),
            threads: self.ncpus.unwrap_or(1),
            gpus: self.gpus.unwrap_or(0),
            mem: self.mem,
        };
        let mut shares: Vec<NodeShare> = match &self.layout {
            Some(layout) if !layout.chunks.is_empty() => {
                layout.per_node().map(NodeShare::of).take(n).collect()
            }
            _ => Vec::new(),
        };
        shares.resize(n, plain);
        shares
    }

    /// PBS `Resource_List`: as recorded at submission; for a plain job
    /// (nodes, wall time, what each node must have), which records none,
    /// or one stored before lists were, worked out from its fields.
    pub fn shown_resource_list(&self) -> BTreeMap<String, String> {
        if !self.resource_list.is_empty() {
            return self.resource_list.clone();
        }
        let req = ResourceRequest {
            nodes: Some(self.nodes),
            mem: self.mem,
            ncpus: self.ncpus,
            gpus: self.gpus,
            features: self.features.clone(),
            ..ResourceRequest::default()
        };
        let mut list = req.resource_list(self.nodes, self.walltime);
        list.insert("nodes".into(), self.nodes.to_string());
        if let Some(mem) = self.mem {
            list.insert("mem".into(), format_size(mem));
        }
        if !self.features.is_empty() {
            list.insert("feature".into(), self.features.join(":"));
        }
        list
    }

    /// PBS `Join_Path`.
    pub fn join_path(&self) -> &'static str {
        if self.join_output {
            "oe"
        } else if self.options.join_to_error {
            "eo"
        } else {
            "n"
        }
    }

    /// PBS `resources_used`: the wall time of its run so far (or of its
    /// last run), the CPUs it holds, and the CPU time, memory and virtual
    /// memory its agent measured once it ended, with `cpupercent`, its CPU
    /// time over its wall time (PBS Pro's, as a whole-run average).
    pub fn resources_used(&self, now: Time) -> BTreeMap<String, String> {
        let mut used = BTreeMap::new();
        let Some(elapsed) = self.elapsed(now) else {
            return used;
        };
        used.insert("walltime".into(), format_hms(elapsed));
        let cpus: u32 = self.node_shares().iter().map(|s| s.cpus).sum();
        used.insert("ncpus".into(), cpus.to_string());
        let measured = match self.state {
            JobState::Running | JobState::Suspended => self.used_so_far,
            JobState::Finished => self.exit.as_ref().map(|e| crate::job::UsedSoFar {
                cput: e.cput,
                mem: e.max_rss,
                vmem: e.vmem,
            }),
            _ => None,
        };
        if let Some(m) = measured {
            if let Some(cput) = m.cput {
                used.insert("cput".into(), format_hms(cput));
                used.insert("cpupercent".into(), cpupercent(cput, elapsed).to_string());
            }
            for (key, bytes) in [("mem", m.mem), ("vmem", m.vmem)] {
                if let Some(bytes) = bytes {
                    used.insert(key.into(), format_kb(bytes));
                }
            }
        }
        used
    }

    /// PBS `exec_host`: `n1/0*8+n2/0*8`, each node with the CPUs the job
    /// has there.
    pub fn exec_host(&self) -> String {
        self.exec_nodes
            .iter()
            .zip(self.node_shares())
            .map(|(node, share)| format!("{node}/0*{}", share.cpus))
            .collect::<Vec<_>>()
            .join("+")
    }

    /// PBS `exec_vnode`: `(n1:ncpus=8:mem=4gb)+(n2:ncpus=8:mem=4gb)`.
    pub fn exec_vnode(&self) -> String {
        let chunks: Vec<Option<&Chunk>> = match &self.layout {
            Some(layout) if !layout.chunks.is_empty() => layout.per_node().map(Some).collect(),
            _ => Vec::new(),
        };
        self.exec_nodes
            .iter()
            .zip(self.node_shares())
            .enumerate()
            .map(|(i, (node, share))| {
                let mut part = format!("({node}:ncpus={}", share.cpus);
                let mem = match chunks.get(i) {
                    Some(chunk) => chunk.and_then(|c| c.mem),
                    None => self.mem,
                };
                if let Some(mem) = mem {
                    part.push_str(&format!(":mem={}", format_size(mem)));
                }
                if share.gpus > 0 {
                    part.push_str(&format!(":ngpus={}", share.gpus));
                }
                part.push(')');
                part
            })
            .collect::<Vec<_>>()
            .join("+")
    }
}

/// PBS shows used memory in kilobytes: `123456kb`.
/// PBS's `resources_used.cpupercent`: CPU seconds per wall-clock second,
/// in percent (200 for two busy CPUs); 0 for a run of no length.
pub fn cpupercent(cput: u64, walltime: u64) -> u64 {
    (cput * 100).checked_div(walltime).unwrap_or(0)
}

fn format_kb(bytes: u64) -> String {
    format!("{}kb", bytes.div_ceil(1024))
}

/// A job's whole `depend` attribute as PBS shows it: its `after*`
/// dependencies, the jobs it is `before*`, and `on:N` while it still waits
/// to be named by N more.
pub fn format_depend(job: &Job, server: &str) -> String {
    let mut parts = Vec::new();
    let after = if job.depend_how.any {
        depend::format_any(&job.depend, server)
    } else {
        depend::format(&job.depend, server)
    };
    if !after.is_empty() {
        parts.push(after);
    }
    let before = depend::format(&job.before, server);
    if !before.is_empty() {
        // Same grouping, written with the before words.
        let mut text = before;
        for kind in DependKind::ALL {
            let prefix = format!("{}:", kind.as_str());
            text = text
                .split(',')
                .map(|p| match p.strip_prefix(&prefix) {
                    Some(rest) => format!("{}:{rest}", kind.before_str()),
                    None => p.to_string(),
                })
                .collect::<Vec<_>>()
                .join(",");
        }
        parts.push(text);
    }
    if job.depend_on > 0 {
        parts.push(format!("on:{}", job.depend_on));
    }
    if job.depend_how.singleton {
        parts.push("singleton".into());
    }
    // `?` joins any-of items; singleton or before* cannot join them.
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::{Caller, Role};
    use crate::job::JobId;
    use crate::queue::Queue;
    use crate::server::Config;
    use crate::submit::{Reach, Submission};

    fn job(resources: &[(&str, &str)]) -> Job {
        let mut config = Config::default();
        config.queues.insert("batch".into(), Queue::open("batch"));
        let sub = Submission {
            script_name: "job.sh".into(),
            workdir: "/home/u".into(),
            resources: resources
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            ..Submission::default()
        };
        let caller = Caller {
            uid: 1,
            gid: 1,
            user: "u".into(),
            group: "g".into(),
            role: Role::User,
        };
        let now = chrono::DateTime::from_timestamp(1_000, 0).unwrap();
        sub.into_job(
            JobId(1),
            &caller,
            &config,
            |_, _| Reach {
                nodes: 64,
                sets: String::new(),
            },
            now,
        )
        .unwrap()
    }

    #[test]
    fn chunks_become_shares_in_order() {
        let mut j = job(&[("select", "2:ncpus=8:mpiprocs=8+1:ncpus=2:mem=1gb")]);
        j.exec_nodes = vec!["a".into(), "b".into(), "c".into()];
        let shares = j.node_shares();
        assert_eq!(shares.len(), 3);
        assert_eq!(
            (shares[0].procs, shares[0].cpus, shares[0].threads),
            (8, 8, 1)
        );
        assert_eq!(
            (shares[2].procs, shares[2].cpus, shares[2].threads),
            (1, 2, 2)
        );
        assert_eq!(j.exec_host(), "a/0*8+b/0*8+c/0*2");
        // What the agents hold each node's processes to.
        assert_eq!(
            shares.iter().map(|s| s.mem).collect::<Vec<_>>(),
            [None, None, Some(1 << 30)]
        );
        assert_eq!(
            j.exec_vnode(),
            "(a:ncpus=8)+(b:ncpus=8)+(c:ncpus=2:mem=1gb)"
        );
    }

    #[test]
    fn resources_used_shows_the_agents_figures_while_it_runs_and_at_its_end() {
        let mut j = job(&[("nodes", "1")]);
        let t0 = chrono::DateTime::from_timestamp(1_000_000, 0).unwrap();
        j.state = JobState::Running;
        j.stime = Some(t0);
        j.used_so_far = Some(crate::job::UsedSoFar {
            cput: Some(30),
            mem: Some(2 << 20),
            vmem: Some(3 << 20),
        });
        let now = t0 + chrono::Duration::seconds(60);
        let used = j.resources_used(now);
        assert_eq!(used["cput"], "00:00:30");
        assert_eq!(used["cpupercent"], "50");
        assert_eq!(used["mem"], "2048kb");
        assert_eq!(used["vmem"], "3072kb");
        assert_eq!(used["walltime"], "00:01:00");
        // At its end, what the agent measured then, not before.
        j.state = JobState::Finished;
        j.end_time = Some(t0 + chrono::Duration::seconds(100));
        j.exit = Some(crate::job::JobExit {
            code: Some(0),
            signal: None,
            cause: crate::job::ExitCause::Exited,
            message: String::new(),
            cput: Some(200),
            max_rss: Some(4 << 20),
            vmem: None,
        });
        let used = j.resources_used(now);
        assert_eq!(used["cput"], "00:03:20");
        assert_eq!(used["cpupercent"], "200", "two CPUs busy");
        assert_eq!(used["mem"], "4096kb");
        assert!(!used.contains_key("vmem"), "not measured");
    }

    #[test]
    fn plain_jobs_have_one_process_per_node() {
        let mut j = job(&[("nodes", "2"), ("ncpus", "4")]);
        j.exec_nodes = vec!["a".into(), "b".into()];
        let shares = j.node_shares();
        assert_eq!(
            shares[1],
            NodeShare {
                procs: 1,
                cpus: 4,
                threads: 4,
                gpus: 0,
                mem: None
            }
        );
        assert_eq!(j.shown_resource_list()["nodect"], "2");
        assert_eq!(j.join_path(), "n");
    }

    #[test]
    fn old_records_show_a_resource_list_too() {
        let mut j = job(&[("nodes", "3"), ("mem", "2gb")]);
        j.resource_list.clear();
        let list = j.shown_resource_list();
        assert_eq!(list["nodes"], "3");
        assert_eq!(list["nodect"], "3");
        assert_eq!(list["mem"], "2gb");
        assert_eq!(list["ncpus"], "3");
    }
}
