//! The shepherd's side of a contained job (see [`crate::cgroup`]): it
//! makes the job's cgroup with what the job may use on this host, watches
//! it for the kernel's kills at the memory limit, and in the end kills
//! what is left in it, reads what the job used, and removes it.
//!
//! A cgroup that cannot be made does not stop the job: it runs as an
//! uncontained job would, and its comment says why.

use std::os::fd::OwnedFd;
use std::time::Duration;

use qmesh_proto::v1::{FinishCause, JobFinished};
use tracing::{info, warn};

use crate::cgroup::job::{Allowance, JobCgroup, Usage};
use crate::record::Launch;

/// How often a contained job's cgroup is looked at while it runs (for a
/// process the kernel killed at the memory limit: in v1 it kills one
/// process, and the shepherd ends the rest of the job).
pub const LOOK_EVERY: Duration = Duration::from_secs(2);

/// A job's cgroup, made.
pub struct Contained {
    pub cgroup: JobCgroup,
    pub allowance: Allowance,
    /// Its `cgroup.procs`, open until the job is started.
    pub procs: Vec<OwnedFd>,
}

/// What the job may use on this host: its nodes' here together. Memory
/// only if each of them says how much; CPUs only where its nodes are
/// shared with other jobs (on its own node it may use them all).
pub fn allowance(launch: &Launch) -> Allowance {
    let shares: Vec<_> = launch
        .local_indices()
        .into_iter()
        .map(|i| launch.share(i))
        .collect();
    let mem = shares.iter().map(|s| s.mem).sum::<Option<u64>>();
    let cpus = shares
        .iter()
        .any(|s| s.shared)
        .then(|| shares.iter().map(|s| s.cpus).sum());
    Allowance {
        mem: mem.filter(|_| !shares.is_empty()),
        cpus,
    }
}

/// Makes the job's cgroup, if the agent found where; `Err` says why not,
/// for the job's comment.
pub fn contain(launch: &Launch) -> Result<Option<Contained>, String> {
    let Some(cgroups) = &launch.added.cgroups else {
        return Ok(None);
    };
    let cgroup = JobCgroup::of(cgroups, &launch.order.job_id);
    let allowance = allowance(launch);
    let made = cgroup.create(allowance).and_then(|()| cgroup.procs_files());
    match made {
        Ok(procs) => {
            info!(cgroup = %cgroup.path().display(), mem = ?allowance.mem, cpus = ?allowance.cpus, "the job's cgroup is made");
            Ok(Some(Contained {
                cgroup,
                allowance,
                procs,
            }))
        }
        Err(e) => {
            let _ = cgroup.remove(Duration::from_secs(1));
            Err(format!("it ran without its cgroup ({e})"))
        }
    }
}

/// After the job and all its processes are gone: what they used, into
/// `result`; a kill at the memory limit makes the end the memory's, with
/// PBS's exit status for a job killed by a signal; then the cgroup goes.
pub fn settle(contained: &Contained, host: &str, result: &mut JobFinished) {
    let used = contained.cgroup.usage();
    record_use(&used, result);
    if used.oom_kills > 0 {
        result.set_cause(FinishCause::Memory);
        if result.exit_code.is_none() && result.signal.is_none() {
            result.signal = Some(nix::sys::signal::Signal::SIGKILL as i32);
        }
        let why = over_memory(contained.allowance.mem, host, used.oom_kills);
        result.message = if result.message.is_empty() {
            why
        } else {
            format!("{why}; {}", result.message)
        };
    }
    if let Err(e) = contained.cgroup.remove(Duration::from_secs(5)) {
        warn!("cannot remove the job's cgroup: {e}");
    }
}

/// The cgroup's figures replace rusage's: they count every process of
/// the job (pbsdsh's tasks, those that left its session), not only those
/// the shepherd reaped, and its memory is the peak of all of them at once.
fn record_use(used: &Usage, result: &mut JobFinished) {
    if let Some(micros) = used.cpu_micros {
        result.cput = Some((micros + 500_000) / 1_000_000);
    }
    if let Some(peak) = used.mem_peak.filter(|&p| p > 0) {
        result.max_rss = Some(peak);
    }
    if let Some(peak) = used.vmem_peak.filter(|&p| p > 0) {
        result.vmem = Some(peak);
    }
}

/// The comment of a job killed at its memory limit.
pub fn over_memory(limit: Option<u64>, host: &str, kills: u64) -> String {
    // In kb, as PBS's MOM writes it in the kill line and resources_used.
    let limit = limit.map_or_else(
        || "its memory".to_string(),
        |l| format!("mem={}kb", l.div_ceil(1024)),
    );
    let processes = if kills == 1 {
        "a process".to_string()
    } else {
        format!("{kills} processes")
    };
    format!(
        "it used more memory than it asked for ({limit} on {host}): the kernel killed \
         {processes} at the limit and the job was ended; ask for more with -l mem"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use qmesh_proto::v1::{LaunchJob, NodeShare};

    fn share(cpus: u32, mem: Option<u64>, shared: bool) -> NodeShare {
        NodeShare {
            procs: 1,
            cpus,
            threads: cpus,
            gpus: 0,
            mem,
            shared,
        }
    }

    #[test]
    fn the_allowance_is_the_jobs_nodes_on_this_host() {
        let order = LaunchJob {
            nodes: vec!["a".into(), "b".into(), "c".into()],
            local_nodes: vec!["a".into(), "c".into()],
            shares: vec![
                share(2, Some(1 << 30), true),
                share(4, Some(8 << 30), true),
                share(1, Some(1 << 30), false),
            ],
            ..LaunchJob::default()
        };
        let mut launch = Launch::new(order, Default::default());
        assert_eq!(
            allowance(&launch),
            Allowance {
                mem: Some(2 << 30),
                cpus: Some(3)
            }
        );
        // Exclusive nodes: all their CPUs; a node without mem: no limit.
        launch.order.shares[0] = share(2, None, false);
        assert_eq!(
            allowance(&launch),
            Allowance {
                mem: None,
                cpus: None
            }
        );
    }

    #[test]
    fn a_memory_kill_is_said_plainly() {
        assert_eq!(
            over_memory(Some(64 << 20), "h1", 1),
            "it used more memory than it asked for (mem=65536kb on h1): the kernel killed \
             a process at the limit and the job was ended; ask for more with -l mem"
        );
        assert!(
            over_memory(None, "h2", 3)
                .contains("(its memory on h2): the kernel killed 3 processes")
        );
    }
}
