//! The local agent: in single-machine mode qmeshd starts a qmesh-agent for
//! its own host as a child and keeps it running.
//!
//! The child gets its own process group, so a Ctrl-C at the terminal reaches
//! only qmeshd, which then asks the agent to stop. An agent that stops
//! leaves its jobs running under their shepherds; the next agent adopts
//! them. If qmeshd itself dies, the agent lives on and reconnects to the
//! next qmeshd; that qmeshd's own child then finds the spool locked (exit
//! code 3) and waits, retrying, until the old agent is gone.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, bail};
use nix::sys::resource::{Resource, getrlimit, setrlimit};
use tokio::sync::watch;
use tracing::{info, warn};

/// The agent's exit code when another agent holds its spool.
const SPOOL_TAKEN: i32 = 3;

pub struct LocalAgent {
    pub bin: PathBuf,
    pub server_url: String,
    pub host: String,
    pub spool: PathBuf,
    pub log: PathBuf,
    pub log_level: String,
    /// The daemon's socket for commands: the agent's jobs run on the
    /// daemon's host, so their qsub and qstat reach it there.
    pub commands_socket: PathBuf,
    /// The soft limit on open files it starts with, when qmeshd raised its
    /// own: the one qmeshd started with, for the jobs' sake.
    pub open_files: Option<u64>,
}

/// The agent binary: the configured one, else `qmesh-agent` next to qmeshd.
pub fn find_agent_bin(configured: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(path) = configured {
        if path.is_file() {
            return Ok(path.to_path_buf());
        }
        bail!("the agent binary {} does not exist", path.display());
    }
    let exe = std::env::current_exe().context("find qmeshd's own path")?;
    let sibling = exe.with_file_name("qmesh-agent");
    if sibling.is_file() {
        return Ok(sibling);
    }
    bail!(
        "cannot find qmesh-agent next to qmeshd ({}); build the whole workspace (cargo build) or pass --agent-bin",
        sibling.display()
    )
}

impl LocalAgent {
    /// Runs the agent until `stop` turns true, restarting it when it dies.
    pub async fn supervise(self, mut stop: watch::Receiver<bool>) {
        let mut backoff = Duration::from_millis(500);
        loop {
            let mut child = match self.spawn() {
                Ok(child) => child,
                Err(e) => {
                    warn!(error = %e, "could not start the local agent");
                    if wait_or_stop(&mut stop, backoff).await {
                        return;
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(30));
                    continue;
                }
            };
            let pid = child.id();
            info!(pid, host = %self.host, "local agent started");
            tokio::select! {
                status = child.wait() => {
                    let code = status.ok().and_then(|s| s.code());
                    if code == Some(SPOOL_TAKEN) {
                        info!("an agent from an earlier qmeshd still serves the spool; it will reconnect");
                        backoff = Duration::from_secs(5);
                    } else {
                        warn!(?code, "the local agent exited; restarting it");
                        backoff = (backoff * 2).min(Duration::from_secs(30));
                    }
                    if wait_or_stop(&mut stop, backoff).await {
                        return;
                    }
                }
                _ = stop.changed() => {
                    stop_child(&mut child, pid).await;
                    return;
                }
            }
        }
    }

    fn spawn(&self) -> anyhow::Result<tokio::process::Child> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .with_context(|| format!("open the agent log {}", self.log.display()))?;
        let log_err = log.try_clone().context("duplicate the agent log handle")?;
        // No cluster key: the daemon's agent socket (mode 0600) is the
        // proof.
        let mut cmd = tokio::process::Command::new(&self.bin);
        cmd.arg("--server")
            .arg(&self.server_url)
            .arg("--host")
            .arg(&self.host)
            .arg("--spool")
            .arg(&self.spool)
            .arg("--log-level")
            .arg(&self.log_level)
            .arg("--commands-socket")
            .arg(&self.commands_socket)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log_err))
            .process_group(0)
            .kill_on_drop(false);
        if let Some(soft) = self.open_files {
            // SAFETY: getrlimit and setrlimit are async-signal-safe system
            // calls, run in the child between fork and exec.
            unsafe {
                cmd.pre_exec(move || {
                    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
                    setrlimit(Resource::RLIMIT_NOFILE, soft, hard)?;
                    Ok(())
                });
            }
        }
        cmd.spawn()
            .with_context(|| format!("run {}", self.bin.display()))
    }
}

/// Sleeps, unless told to stop first (then returns true).
async fn wait_or_stop(stop: &mut watch::Receiver<bool>, pause: Duration) -> bool {
    if *stop.borrow() {
        return true;
    }
    tokio::select! {
        _ = tokio::time::sleep(pause) => false,
        _ = stop.changed() => true,
    }
}

async fn stop_child(child: &mut tokio::process::Child, pid: Option<u32>) {
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    if tokio::time::timeout(Duration::from_secs(5), child.wait())
        .await
        .is_err()
    {
        warn!("the local agent did not stop in 5 s; killing it");
        let _ = child.kill().await;
    }
}
