//! What the agent tells the daemon of its host with every heartbeat: CPUs,
//! memory, load, GPUs and the features the site gives it (NCAR's machine
//! constraints, section 3.1 of the seed: licensed software).
//! The load is the run-queue length (`procs_running` of /proc/stat, less
//! the agent's own reading thread), as NQX measured it; a site that
//! measures busyness otherwise gives `--load-command`, whose first word
//! on stdout is the load.

use std::time::Duration;

use qmesh_proto::v1;
use tracing::warn;

/// How long a --load-command may take.
const LOAD_COMMAND_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Clone, Debug, Default)]
pub struct FactsConfig {
    /// CPUs to report instead of the ones found.
    pub cpus: Option<u32>,
    pub load_command: Option<String>,
    /// What the site says this host has (licensed software and the like).
    pub features: Vec<String>,
    /// GPUs (--gpus, else the /dev/nvidiaN devices found at start).
    pub gpus: u32,
}

/// The host's facts now.
pub async fn gather(cfg: &FactsConfig) -> v1::HostFacts {
    let cpus = cfg
        .cpus
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as u32));
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| mem_total(&text))
        .unwrap_or(0);
    let load = match &cfg.load_command {
        Some(command) => command_load(command).await,
        None => std::fs::read_to_string("/proc/stat")
            .ok()
            .and_then(|text| run_queue(&text)),
    }
    .unwrap_or(0.0);
    v1::HostFacts {
        cpus,
        mem,
        load,
        features: cfg.features.clone(),
        gpus: cfg.gpus,
    }
}

/// `MemTotal: N kB` in bytes.
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Runnable tasks, less the one reading.
fn run_queue(stat: &str) -> Option<f64> {
    let line = stat.lines().find(|l| l.starts_with("procs_running "))?;
    let n: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some((n - 1.0).max(0.0))
}

async fn command_load(command: &str) -> Option<f64> {
    let run = tokio::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = match tokio::time::timeout(LOAD_COMMAND_TIMEOUT, run).await {
        Ok(Ok(output)) if output.status.success() => output,
        Ok(Ok(output)) => {
            warn!(command, status = %output.status, "the load command failed; load 0 reported");
            return None;
        }
        Ok(Err(e)) => {
            warn!(command, error = %e, "the load command could not run; load 0 reported");
            return None;
        }
        Err(_) => {
            warn!(command, "the load command took over 5 s; load 0 reported");
            return None;
        }
    };
    let text = String::from_utf8_lossy(&output.stdout);
    let load = text.split_whitespace().next()?.parse().ok();
    if load.is_none() {
        warn!(command, said = %text.trim(), "the load command did not print a number first");
    }
    load
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_and_run_queue_from_proc() {
        assert_eq!(
            mem_total("MemTotal:       16384 kB\nMemFree: 1 kB\n"),
            Some(16384 * 1024)
        );
        assert_eq!(
            run_queue("cpu 1 2 3\nprocs_running 5\nprocs_blocked 0\n"),
            Some(4.0)
        );
        assert_eq!(run_queue("nothing here"), None);
    }

    #[tokio::test]
    async fn a_load_command_and_a_cpu_override() {
        let cfg = FactsConfig {
            cpus: Some(8),
            load_command: Some("echo 33.5 tasks".into()),
            features: vec!["imsl".into()],
            gpus: 2,
        };
        let facts = gather(&cfg).await;
        assert_eq!((facts.cpus, facts.load), (8, 33.5));
        assert_eq!(facts.features, ["imsl"]);
        assert_eq!(facts.gpus, 2);
        let bad = FactsConfig {
            cpus: None,
            load_command: Some("echo many".into()),
            features: Vec::new(),
            gpus: 0,
        };
        assert_eq!(gather(&bad).await.load, 0.0);
    }
}
