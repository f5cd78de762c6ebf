//! The command line. The doc comments are the help text.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// The qmesh node agent: runs the jobs the daemon places on this host.
///
/// One agent serves one host. It keeps what it runs in a spool directory,
/// so jobs survive a restart of the agent or of the daemon; stopping the
/// agent (SIGTERM) leaves its jobs running, and the next agent takes them
/// over.
#[derive(Debug, Parser)]
#[command(
    name = "qmesh-agent",
    version,
    subcommand_negates_reqs = true,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    /// The daemon's agent address: https://host:port (TLS, the default on
    /// the daemon's side), http://host:port (a daemon with tls = false) or
    /// unix:///path/agent.sock (the daemon's own host). With standby daemons
    /// (docs/HA.md), every one, comma-separated: the agent finds the leader.
    #[arg(long, env = "QMESH_AGENT_SERVER", value_name = "URL", required = true)]
    pub server: Option<String>,

    /// The host this agent serves, as named in the daemon's node sets
    /// [default: this machine's host name].
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,

    /// The nodes offered, comma-separated [default: whatever the daemon
    /// configured for the host].
    #[arg(long, value_name = "NODE,...", value_delimiter = ',')]
    pub nodes: Vec<String>,

    /// The spool directory, created if missing [default: /var/spool/qmesh
    /// for root, else $XDG_STATE_HOME/qmesh/spool or ~/.local/state/qmesh/spool].
    #[arg(long, value_name = "DIR")]
    pub spool: Option<PathBuf>,

    /// A file holding the cluster key (readable by root alone). The agent
    /// proves it holds the key, never sends it; with an https:// server
    /// and no --tls-ca-file it enrols with the daemon's cluster CA at its
    /// first start, keeping its certificate in the spool's tls/.
    #[arg(long, value_name = "FILE")]
    pub cluster_key_file: Option<PathBuf>,

    /// The site's CA that signed the daemon's certificate (PEM), where the
    /// site brings its own PKI (the daemon's tls_cert_file); without it,
    /// an https:// server is checked by the cluster CA this agent got at
    /// enrolment.
    #[arg(long, value_name = "FILE")]
    pub tls_ca_file: Option<PathBuf>,

    /// This agent's client certificate from the site's CA (PEM), when the
    /// daemon requires one (its tls_client_ca_file); with --tls-key-file.
    #[arg(long, value_name = "FILE", requires = "tls_key_file")]
    pub tls_cert_file: Option<PathBuf>,

    /// The private key of --tls-cert-file (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert_file")]
    pub tls_key_file: Option<PathBuf>,

    /// CPUs to report for this host [default: the CPUs this process may
    /// use]. A host whose load reaches the server's max_load_factor times
    /// its CPUs takes no new job.
    #[arg(long, value_name = "N")]
    pub cpus: Option<u32>,

    /// GPUs to report for this host and give to jobs (indices 0 to N-1)
    /// [default: its /dev/nvidiaN devices].
    #[arg(long, value_name = "N")]
    pub gpus: Option<u32>,

    /// Where each job's TMPDIR is made (pbs.JOBID, owned by the job's
    /// user, removed when the job ends) [default: /var/tmp, else the
    /// system's temporary directory].
    #[arg(long, env = "QMESH_AGENT_TMPDIR_BASE", value_name = "DIR")]
    pub tmpdir_base: Option<PathBuf>,

    /// The socket through which commands on this host reach the daemon:
    /// jobs get it as QMESH_SOCKET, so a job's qsub and qstat work (a job
    /// may submit jobs) [default: the commands' own default].
    #[arg(long, value_name = "PATH")]
    pub commands_socket: Option<PathBuf>,

    /// Serve this host's commands (qsub, qstat, ... and jobs' own) on
    /// this socket, relaying them to the daemon with each caller's
    /// identity as the kernel tells it [default: /run/qmesh/qmeshd.sock,
    /// where the commands look, when the agent runs as root and reaches
    /// the daemon over TCP; else no relay].
    #[arg(long, value_name = "PATH", conflicts_with = "no_relay")]
    pub relay_socket: Option<PathBuf>,

    /// Relay no commands (the daemon runs on this host, or users may not
    /// submit from it).
    #[arg(long)]
    pub no_relay: bool,

    /// Run no jobs: only relay this host's commands (a login node). The
    /// host needs no nodes in the daemon's node sets; it must be in the
    /// server's submit_hosts.
    #[arg(long, conflicts_with = "no_relay")]
    pub submit_only: bool,

    /// What this host has that jobs may ask for with -l feature=NAME
    /// (licensed software such as imsl, or anything the site names),
    /// comma-separated. A node set whose every host reports a feature
    /// has it, besides those the configuration gives it.
    #[arg(long, value_name = "NAME,...", value_delimiter = ',')]
    pub features: Vec<String>,

    /// A shell command whose first word on stdout is the host's load
    /// [default: the run-queue length from /proc/stat].
    #[arg(long, value_name = "COMMAND")]
    pub load_command: Option<String>,

    /// The site's prologue: run as root, with the job id, user and group
    /// as arguments and the job's nodes here in QMESH_NODES, before a job
    /// starts on this host (on the host that launches it, before its
    /// script). A failure ends the job with the prologue's words.
    #[arg(long, value_name = "PROGRAM")]
    pub prologue: Option<PathBuf>,

    /// The site's epilogue: run like the prologue once the job has ended
    /// on this host. A failure is noted in the job's comment.
    #[arg(long, value_name = "PROGRAM")]
    pub epilogue: Option<PathBuf>,

    /// The site's checkpoint program (PBS's checkpoint_abort): run like
    /// the prologue, with the job's session in PBS_SID, when preemption
    /// checkpoints a job launched here (preempt_order C); the job is then
    /// killed and queued again, to restart from what it saved. A failure
    /// or five minutes' silence is logged and the job killed all the same.
    #[arg(long, value_name = "PROGRAM")]
    pub checkpoint: Option<PathBuf>,

    /// Run each job in its own cgroup, holding it to the memory it asked
    /// for and, on a shared node, to its CPUs: auto (v2 where it has the
    /// memory controller, else v1, else none, which the agent says at
    /// start), v2, v1, or off.
    #[arg(long, value_enum, value_name = "WHICH", default_value = "auto")]
    pub cgroups: crate::cgroup::Wanted,

    /// What to log, to stderr: error, warn, info, debug, trace, or a
    /// tracing filter such as "qmesh_agent=debug,info".
    #[arg(long, value_name = "FILTER", default_value = "info")]
    pub log_level: String,

    /// Start each job's shepherd by exec'ing this binary, instead of
    /// forking it from the zygote the agent starts once (slower: for
    /// comparison, or where the zygote cannot run).
    #[arg(long)]
    pub exec_shepherds: bool,

    #[command(subcommand)]
    pub mode: Option<Mode>,
}

#[derive(Debug, Subcommand)]
pub enum Mode {
    /// Runs one job (started by the agent itself; not for people).
    #[command(hide = true)]
    Shepherd {
        /// The job's spool directory, SPOOL/jobs/SEQ.
        jobdir: PathBuf,
    },
    /// Forks shepherds for the agent (started by the agent itself).
    #[command(hide = true)]
    Zygote {
        /// The agent's spool: only its job directories are served.
        spool: PathBuf,
        /// Room in the command line for the shepherds' own.
        #[arg(default_value = "")]
        pad: String,
    },
    /// Runs an interactive job's terminal (started as the job itself; not for people).
    #[command(hide = true, name = "pty-bridge")]
    PtyBridge {
        /// The abstract Unix socket to serve the terminal on, unique per job.
        name: String,
        /// The agent's uid: besides root, the only one served.
        #[arg(long)]
        agent_uid: u32,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn nodes_are_comma_separated() {
        let cli = Cli::parse_from([
            "qmesh-agent",
            "--server",
            "unix:///a.sock",
            "--nodes",
            "n1,n2",
        ]);
        assert_eq!(cli.nodes, vec!["n1", "n2"]);
        assert_eq!(cli.server.as_deref(), Some("unix:///a.sock"));
        assert_eq!(cli.log_level, "info");
    }

    #[test]
    fn the_shepherd_needs_no_server() {
        let cli = Cli::parse_from(["qmesh-agent", "shepherd", "/var/spool/qmesh/jobs/3"]);
        assert!(matches!(cli.mode, Some(Mode::Shepherd { .. })));
    }
}
