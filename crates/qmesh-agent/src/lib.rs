//! qmesh-agent, the node agent: one per host. It keeps one long session
//! with the daemon (`Agent.Session` in `proto/qmesh.proto`), starts each job
//! under a shepherd process, and reports starts and ends.
//!
//! Code map, bottom up, by floors: a module uses only modules on its own
//! floor or below, and no two modules of one floor use each other in a
//! circle.
//!
//! 1. Ground.
//!    - [`error`]: the agent's errors.
//!    - [`record`]: what the spool's files hold (the launch order as the
//!      wire's `LaunchJob`, the end as its `JobFinished`), their versions,
//!      the atomic write. It uses only `error`.
//! 2. The host: one mechanism each, knowing no job directory.
//!    - [`procfs`]: what /proc says about pids.
//!    - [`cgroup`]: each job's cgroup: its memory and CPUs held to what it
//!      asked, all its processes found, killed and measured.
//!    - [`limits`]: the job's process limits, and what it used.
//!    - [`tmpdir`]: the job's TMPDIR.
//!    - [`lock`]: one agent per spool.
//!    - [`tls`]: TLS to the daemon: the site's CA, or the cluster CA and
//!      this agent's certificate as its spool keeps them; the connector
//!      that keeps each connection's exporter for the proofs.
//!    - [`facts`]: CPUs, memory, load and GPUs, with every heartbeat.
//!    - [`qmsg`]: qmsg's line, written through a process's open files.
//! 3. The spool.
//!    - [`spool`]: the per-job directories, the agent's only memory.
//!    - [`gpus`]: the host's GPUs, and which of them a job gets.
//!    - [`signals`]: signals for a running job, through the spool to its
//!      shepherd.
//! 4. The job's start.
//!    - [`env`](mod@env): the job's environment.
//!    - [`hooks`]: the site's prologue and epilogue, on every host of a job.
//!    - [`plan`]: what the job will be: user, groups, program, output, env.
//!    - [`exec`]: how the shepherd starts it (the code between fork and exec).
//!    - [`pty_bridge`]: an interactive job's terminal and shell (`qsub -I`).
//! 5. The shepherd.
//!    - [`shepherd`]: the per-job process (`qmesh-agent shepherd JOBDIR`).
//!    - [`zygote`]: the small process that forks shepherds, so that none is
//!      exec'd per job.
//! 6. The agent's jobs.
//!    - [`supervise`]: launch, kill, acknowledge; watch and adopt shepherds.
//!    - [`joined`]: jobs launched on another host that hold nodes here.
//!    - [`tasks`]: pbsdsh's processes and interactive jobs' terminals.
//! 7. The agent.
//!    - [`cli`]: the command line.
//!    - [`agent`]: the process: logging, spool lock, sessions, stop on SIGTERM.
//!    - [`trust`]: the way to the daemon and the proofs of the cluster
//!      key (the key never travels); enrolment with the cluster CA.
//!    - [`session`]: one session with the daemon, and the reconnect loop.
//!    - [`relay`]: this host's commands to the daemon, with the callers'
//!      identity.
//!
//! A launch order's way: [`session`] hands the wire's `LaunchJob` to
//! [`supervise`], which moves it into a [`record::Launch`] beside what
//! this agent adds (its GPUs chosen by [`gpus`]); [`spool`] writes it as
//! `launch.json`; the [`shepherd`] reads it back, [`plan`] turns it into
//! the job's user, program, output and environment ([`env`](mod@env)), and
//! [`exec`] starts it. A field added to `LaunchJob` is in the launch with
//! no change here; only the code that uses it changes.
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
pub mod qmsg;
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
pub mod trust;
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
