//! qmesh-agent, the node agent: one per host. It keeps one long session
//! with the daemon (`Agent.Session` in `proto/qmesh.proto`), starts each job
//! under a shepherd process, and reports starts and ends.
//!
//! Code map:
//! - [`cli`]: the command line.
//! - [`agent`]: the process: logging, spool lock, sessions, stop on SIGTERM.
//! - [`session`]: one session with the daemon, and the reconnect loop.
//! - [`supervise`]: launch, kill, acknowledge; watch and adopt shepherds.
//! - [`facts`]: CPUs, memory, load and GPUs, with every heartbeat.
//! - [`gpus`]: the host's GPUs, and which of them a job gets.
//! - [`joined`]: jobs launched on another host that hold nodes here.
//! - [`hooks`]: the site's prologue and epilogue, on every host of a job.
//! - [`signals`]: signals for a running job, through the spool to its shepherd.
//! - [`spool`]: the per-job directories, the agent's only memory.
//! - [`lock`]: one agent per spool.
//! - [`shepherd`]: the per-job process (`qmesh-agent shepherd JOBDIR`).
//! - [`zygote`]: the small process that forks shepherds, so that none is
//!   exec'd per job.
//! - [`plan`]: what the job will be: user, groups, program, output, env.
//! - [`exec`]: how the shepherd starts it (the code between fork and exec).
//! - [`env`](mod@env): the job's environment.
//! - [`limits`]: the job's process limits, and what it used.
//! - [`cgroup`]: each job's cgroup: its memory and CPUs held to what it
//!   asked, all its processes found, killed and measured.
//! - [`tmpdir`]: the job's TMPDIR.
//! - [`procfs`]: what /proc says about pids.
//! - [`tasks`]: pbsdsh's processes and interactive jobs' terminals.
//! - [`relay`]: this host's commands to the daemon, with the callers' identity.
//! - [`pty_bridge`]: an interactive job's terminal and shell (`qsub -I`).
//!
//! **Invariant:** jobs never depend on the agent process. The agent can be
//! stopped, killed or upgraded at any time; shepherds run on and a new
//! agent adopts them from the spool.

pub mod agent;
pub mod cgroup;
pub mod cli;
pub mod env;
pub mod error;
pub mod exec;
pub mod facts;
pub mod gpus;
pub mod hooks;
pub mod joined;
pub mod limits;
pub mod lock;
pub mod plan;
pub mod procfs;
pub mod pty_bridge;
pub mod record;
pub mod relay;
pub mod session;
pub mod shepherd;
pub mod signals;
pub mod spool;
pub mod supervise;
pub mod tasks;
pub mod tls;
pub mod tmpdir;
pub mod zygote;

use std::process::ExitCode;

use clap::Parser;

pub use error::AgentError;

/// The `qmesh-agent` binary.
pub fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match &cli.mode {
        Some(cli::Mode::Shepherd { jobdir }) => return shepherd::run(jobdir),
        Some(cli::Mode::Zygote { spool, .. }) => return zygote::run(spool),
        Some(cli::Mode::PtyBridge { name, agent_uid }) => return pty_bridge::run(name, *agent_uid),
        None => {}
    }
    match agent::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("qmesh-agent: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
