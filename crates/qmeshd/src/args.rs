//! qmeshd's command line.

use std::path::PathBuf;

use clap::Parser;

/// qmeshd, the qmesh batch scheduler daemon.
///
/// With no --config it runs the embedded default: one node set "local" (a
/// 4x4 mesh of 16 nodes) served by a qmesh-agent it starts itself, and one
/// queue "batch". Submit with qsub, watch with qstat, shape with qmgr.
#[derive(Debug, Parser)]
#[command(name = "qmeshd", version)]
pub struct Args {
    /// Configuration file (TOML; see etc/qmesh.toml).
    #[arg(long, env = "QMESH_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Directory for the store, the local agent's spool and its socket.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,

    /// The clients' Unix socket (clients read QMESH_SOCKET too).
    #[arg(long, env = "QMESH_SOCKET", value_name = "PATH")]
    pub socket: Option<PathBuf>,

    /// TCP address where agents on other hosts connect, e.g. 0.0.0.0:15001.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,

    /// The qmesh-agent binary for the local agent (default: next to qmeshd).
    #[arg(long, value_name = "PATH")]
    pub agent_bin: Option<PathBuf>,

    /// Do not start a local agent even if the configuration asks for one.
    #[arg(long)]
    pub no_local_agent: bool,

    /// Log filter: error, warn, info, debug, trace, or a tracing directive.
    #[arg(long, env = "QMESH_LOG", default_value = "info", value_name = "FILTER")]
    pub log_level: String,

    /// Check the configuration, print what it describes, and exit.
    #[arg(long)]
    pub check_config: bool,

    /// Print the embedded default configuration and exit.
    #[arg(long)]
    pub print_default_config: bool,
}
