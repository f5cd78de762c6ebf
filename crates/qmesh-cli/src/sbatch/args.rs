//! sbatch's options, as Slurm 22.05 spells them: long options with `=` or a
//! space, short ones glued or not. One clap parser reads the command line
//! and each `#SBATCH` line, so both mean the same; every value is an
//! `Option`, so a source that does not give an option leaves what an
//! earlier one gave (see `sbatch.rs`).

use std::path::PathBuf;

use clap::Parser;

/// Submit a batch script (Slurm's sbatch, to qmesh).
///
/// Options may also be written at the top of the script as `#SBATCH`
/// lines; the command line wins over them, and SBATCH_* variables over
/// the lines. Prints "Submitted batch job ID".
#[derive(Parser, Debug, Default, Clone)]
#[command(name = "sbatch", disable_help_flag = true, disable_version_flag = true)]
pub struct Args {
    #[arg(short = 'J', long = "job-name", value_name = "NAME")]
    pub job_name: Option<String>,
    /// The partition: a qmesh queue.
    #[arg(short = 'p', long = "partition", value_name = "PARTITION")]
    pub partition: Option<String>,
    #[arg(short = 'A', long = "account", value_name = "ACCOUNT")]
    pub account: Option<String>,
    /// Recorded (qstat's Resource_List.qos); qmesh has no QOS of its own.
    #[arg(short = 'q', long = "qos", value_name = "QOS")]
    pub qos: Option<String>,
    /// MINUTES, MINUTES:SECONDS, HOURS:MINUTES:SECONDS, DAYS-HOURS,
    /// DAYS-HOURS:MINUTES, DAYS-HOURS:MINUTES:SECONDS, or UNLIMITED.
    #[arg(short = 't', long = "time", value_name = "TIME")]
    pub time: Option<String>,
    /// Nodes: N, or MIN-MAX (qmesh gives MIN).
    #[arg(short = 'N', long = "nodes", value_name = "N[-M]")]
    pub nodes: Option<String>,
    #[arg(short = 'n', long = "ntasks", value_name = "N")]
    pub ntasks: Option<u32>,
    #[arg(long = "ntasks-per-node", value_name = "N")]
    pub ntasks_per_node: Option<u32>,
    #[arg(short = 'c', long = "cpus-per-task", value_name = "N")]
    pub cpus_per_task: Option<u32>,
    /// Memory per node: SIZE[K|M|G|T], megabytes by default.
    #[arg(long = "mem", value_name = "SIZE")]
    pub mem: Option<String>,
    #[arg(long = "mem-per-cpu", value_name = "SIZE")]
    pub mem_per_cpu: Option<String>,
    /// gpu:N or gpu:TYPE:N (per node).
    #[arg(long = "gres", value_name = "LIST")]
    pub gres: Option<String>,
    /// GPUs for the whole job.
    #[arg(short = 'G', long = "gpus", value_name = "[TYPE:]N")]
    pub gpus: Option<String>,
    #[arg(long = "gpus-per-node", value_name = "[TYPE:]N")]
    pub gpus_per_node: Option<String>,
    /// Node features: FEATURE[&FEATURE...].
    #[arg(short = 'C', long = "constraint", value_name = "LIST")]
    pub constraint: Option<String>,
    /// The job's nodes to itself.
    #[arg(long = "exclusive", num_args = 0..=1, default_missing_value = "", value_name = "user|mcs")]
    pub exclusive: Option<String>,
    /// Nodes to run on, as a hostlist: n[1-4],n7.
    #[arg(short = 'w', long = "nodelist", value_name = "HOSTLIST")]
    pub nodelist: Option<String>,
    #[arg(short = 'x', long = "exclude", value_name = "HOSTLIST")]
    pub exclude: Option<String>,
    /// Standard output: a path, with %j %x %u %A %a %N %%.
    #[arg(short = 'o', long = "output", value_name = "PATTERN")]
    pub output: Option<String>,
    #[arg(short = 'e', long = "error", value_name = "PATTERN")]
    pub error: Option<String>,
    #[arg(short = 'i', long = "input", value_name = "PATTERN")]
    pub input: Option<String>,
    /// The directory the job runs in (default: this one).
    #[arg(short = 'D', long = "chdir", value_name = "DIR")]
    pub chdir: Option<String>,
    /// A job array: 0-15, 1,3,5-7, 0-20:2, with %N for at most N at once.
    #[arg(short = 'a', long = "array", value_name = "INDEXES")]
    pub array: Option<String>,
    /// after, afterok, afternotok, afterany: TYPE:ID[:ID...][,TYPE:ID...].
    #[arg(short = 'd', long = "dependency", value_name = "LIST")]
    pub dependency: Option<String>,
    /// NONE, BEGIN, END, FAIL, REQUEUE, ALL, ... (comma list).
    #[arg(long = "mail-type", value_name = "TYPES")]
    pub mail_type: Option<String>,
    #[arg(long = "mail-user", value_name = "USER")]
    pub mail_user: Option<String>,
    /// ALL (the default), NONE, or [ALL,]VAR[=VALUE][,...].
    #[arg(long = "export", value_name = "LIST")]
    pub export: Option<String>,
    /// A command line to run in a sh script of its own.
    #[arg(long = "wrap", value_name = "COMMAND")]
    pub wrap: Option<String>,
    /// Print only the job's id.
    #[arg(long = "parsable", num_args = 0, default_missing_value = "true")]
    pub parsable: Option<bool>,
    /// Wait for the job to end; exit with its status.
    #[arg(
        short = 'W',
        long = "wait",
        num_args = 0,
        default_missing_value = "true"
    )]
    pub wait: Option<bool>,
    /// Submit held (scontrol release, or qrls, lets it go).
    #[arg(
        short = 'H',
        long = "hold",
        num_args = 0,
        default_missing_value = "true"
    )]
    pub hold: Option<bool>,
    /// Not before: now+N[units], HH:MM[:SS], YYYY-MM-DD[THH:MM[:SS]],
    /// midnight, noon, teatime, today, tomorrow.
    #[arg(short = 'b', long = "begin", value_name = "TIME")]
    pub begin: Option<String>,
    #[arg(long = "requeue", num_args = 0, default_missing_value = "true")]
    pub requeue: Option<bool>,
    #[arg(long = "no-requeue", num_args = 0, default_missing_value = "true")]
    pub no_requeue: Option<bool>,
    /// append or truncate (qmesh opens output for writing anew).
    #[arg(long = "open-mode", value_name = "append|truncate")]
    pub open_mode: Option<String>,
    /// [B:]SIGNAL[@SECONDS]: not sent by qmesh (use a queue's warning signal).
    #[arg(long = "signal", value_name = "[B:]SIG[@TIME]")]
    pub signal: Option<String>,
    #[arg(long = "comment", value_name = "TEXT")]
    pub comment: Option<String>,
    /// Slurm's workload characterization key: not kept.
    #[arg(long = "wckey", value_name = "KEY")]
    pub wckey: Option<String>,
    /// Clusters: qmesh's server is the one cluster.
    #[arg(short = 'M', long = "clusters", value_name = "CLUSTERS")]
    pub clusters: Option<String>,
    #[arg(long = "nice", value_name = "N", num_args = 0..=1, default_missing_value = "100", allow_negative_numbers = true)]
    pub nice: Option<i32>,
    /// Say nothing but errors.
    #[arg(
        short = 'Q',
        long = "quiet",
        num_args = 0,
        default_missing_value = "true"
    )]
    pub quiet: Option<bool>,
    #[arg(
        short = 'v',
        long = "verbose",
        num_args = 0,
        default_missing_value = "true"
    )]
    pub verbose: Option<bool>,
    #[arg(long = "help", action = clap::ArgAction::Help)]
    pub help: Option<bool>,
    /// The script (default: standard input) and its arguments.
    #[arg(value_name = "SCRIPT", trailing_var_arg = true, num_args = 0..)]
    pub script: Vec<String>,
}

impl Args {
    /// The script named, if any.
    pub fn script_path(&self) -> Option<PathBuf> {
        self.script.first().map(PathBuf::from)
    }
}
