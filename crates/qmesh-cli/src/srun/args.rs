//! srun's and salloc's options, as Slurm 22.05 spells them. The
//! allocation's (`-N -n -c -t -p -J --mem` ...) mean what sbatch's mean
//! and are handed to sbatch's translation ([`Args::allocation`]); the
//! step's (`-l`, `--multi-prog`, `-o`, `-D` ...) are srun's own. Every
//! value is an `Option`, so the `SLURM_*` input variables can be laid
//! under the command line as sbatch lays its sources.

use clap::Parser;

/// Run a parallel job step (Slurm's srun, on qmesh).
///
/// Inside a job (SLURM_JOB_ID or PBS_JOBID set) it runs the tasks on the
/// job's nodes; elsewhere it first gets an allocation, runs the step in
/// it and gives it back.
#[derive(Parser, Debug, Default, Clone)]
#[command(name = "srun", disable_help_flag = true, disable_version_flag = true)]
pub struct Args {
    #[command(flatten)]
    pub alloc: AllocArgs,
    /// Each line of output after its task's rank: `3: ...`.
    #[arg(
        short = 'l',
        long = "label",
        num_args = 0,
        default_missing_value = "true"
    )]
    pub label: Option<bool>,
    /// Output as it comes, not a line at a time.
    #[arg(
        short = 'u',
        long = "unbuffered",
        num_args = 0,
        default_missing_value = "true"
    )]
    pub unbuffered: Option<bool>,
    /// The command is a file of RANKS PROGRAM [ARGS] lines.
    #[arg(long = "multi-prog", num_args = 0, default_missing_value = "true")]
    pub multi_prog: Option<bool>,
    /// More tasks than CPUs.
    #[arg(
        short = 'O',
        long = "overcommit",
        num_args = 0,
        default_missing_value = "true"
    )]
    pub overcommit: Option<bool>,
    /// End the other tasks when one exits with a status other than 0.
    #[arg(short = 'K', long = "kill-on-bad-exit", num_args = 0..=1, require_equals = true, default_missing_value = "1", value_name = "0|1")]
    pub kill_on_bad_exit: Option<u8>,
    /// The tasks' directory (default: this one).
    #[arg(short = 'D', long = "chdir", value_name = "DIR")]
    pub chdir: Option<String>,
    /// Standard output to a file: %j %J %s %t %n %N %u %x %%.
    #[arg(short = 'o', long = "output", value_name = "PATTERN")]
    pub output: Option<String>,
    #[arg(short = 'e', long = "error", value_name = "PATTERN")]
    pub error: Option<String>,
    #[arg(short = 'i', long = "input", value_name = "MODE")]
    pub input: Option<String>,
    /// Inside a job: only these of its nodes (a hostlist).
    #[arg(short = 'w', long = "nodelist", value_name = "HOSTLIST")]
    pub nodelist: Option<String>,
    /// Inside a job: not these of its nodes.
    #[arg(short = 'x', long = "exclude", value_name = "HOSTLIST")]
    pub exclude: Option<String>,
    /// Run in this job's allocation.
    #[arg(long = "jobid", value_name = "JOBID")]
    pub jobid: Option<String>,
    /// The first task on a terminal (an interactive shell).
    #[arg(long = "pty", num_args = 0, default_missing_value = "true")]
    pub pty: Option<bool>,

    // Accepted; what qmesh does instead is said in a warning.
    #[arg(long = "mpi", value_name = "TYPE")]
    pub mpi: Option<String>,
    #[arg(long = "cpu-bind", value_name = "TYPE")]
    pub cpu_bind: Option<String>,
    #[arg(long = "mem-bind", value_name = "TYPE")]
    pub mem_bind: Option<String>,
    #[arg(long = "gpus-per-task", value_name = "[TYPE:]N")]
    pub gpus_per_task: Option<String>,
    #[arg(long = "gpu-bind", value_name = "TYPE")]
    pub gpu_bind: Option<String>,
    #[arg(short = 'm', long = "distribution", value_name = "TYPE")]
    pub distribution: Option<String>,
    #[arg(long = "hint", value_name = "TYPE")]
    pub hint: Option<String>,
    #[arg(long = "cpu-freq", value_name = "FREQ")]
    pub cpu_freq: Option<String>,
    #[arg(long = "ntasks-per-core", value_name = "N")]
    pub ntasks_per_core: Option<String>,
    #[arg(long = "ntasks-per-socket", value_name = "N")]
    pub ntasks_per_socket: Option<String>,
    #[arg(long = "threads-per-core", value_name = "N")]
    pub threads_per_core: Option<String>,
    #[arg(long = "overlap", num_args = 0, default_missing_value = "true")]
    pub overlap: Option<bool>,
    #[arg(long = "exact", num_args = 0, default_missing_value = "true")]
    pub exact: Option<bool>,
    #[arg(
        short = 'X',
        long = "disable-status",
        num_args = 0,
        default_missing_value = "true"
    )]
    pub disable_status: Option<bool>,
    #[arg(long = "propagate", num_args = 0..=1, require_equals = true, default_missing_value = "ALL", value_name = "RLIMITS")]
    pub propagate: Option<String>,
    #[arg(short = 'W', long = "wait", value_name = "SECONDS")]
    pub wait: Option<String>,
    #[arg(long = "signal", value_name = "[B:]SIG[@TIME]")]
    pub signal: Option<String>,
    #[arg(long = "comment", value_name = "TEXT")]
    pub comment: Option<String>,

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
    /// The program and its arguments (with --multi-prog: the file).
    #[arg(value_name = "COMMAND", trailing_var_arg = true, num_args = 0..)]
    pub command: Vec<String>,
}

/// What an allocation asks (srun outside a job, salloc), as sbatch's
/// options of the same names; `-n -N --ntasks-per-node -c` also shape
/// the step.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct AllocArgs {
    /// `-w` for a new allocation (salloc's own, or srun's outside a job).
    #[arg(skip)]
    pub nodelist: Option<String>,
    /// `-x` for a new allocation.
    #[arg(skip)]
    pub exclude: Option<String>,
    #[arg(short = 'n', long = "ntasks", value_name = "N")]
    pub ntasks: Option<u32>,
    /// Nodes: N, or MIN-MAX (qmesh gives MIN).
    #[arg(short = 'N', long = "nodes", value_name = "N[-M]")]
    pub nodes: Option<String>,
    #[arg(long = "ntasks-per-node", value_name = "N")]
    pub ntasks_per_node: Option<u32>,
    #[arg(short = 'c', long = "cpus-per-task", value_name = "N")]
    pub cpus_per_task: Option<u32>,
    #[arg(short = 'J', long = "job-name", value_name = "NAME")]
    pub job_name: Option<String>,
    #[arg(short = 'p', long = "partition", value_name = "PARTITION")]
    pub partition: Option<String>,
    #[arg(short = 'A', long = "account", value_name = "ACCOUNT")]
    pub account: Option<String>,
    #[arg(short = 'q', long = "qos", value_name = "QOS")]
    pub qos: Option<String>,
    #[arg(short = 't', long = "time", value_name = "TIME")]
    pub time: Option<String>,
    #[arg(long = "mem", value_name = "SIZE")]
    pub mem: Option<String>,
    #[arg(long = "mem-per-cpu", value_name = "SIZE")]
    pub mem_per_cpu: Option<String>,
    #[arg(long = "gres", value_name = "LIST")]
    pub gres: Option<String>,
    #[arg(short = 'G', long = "gpus", value_name = "[TYPE:]N")]
    pub gpus: Option<String>,
    #[arg(long = "gpus-per-node", value_name = "[TYPE:]N")]
    pub gpus_per_node: Option<String>,
    #[arg(short = 'C', long = "constraint", value_name = "LIST")]
    pub constraint: Option<String>,
    #[arg(long = "exclusive", num_args = 0..=1, require_equals = true, default_missing_value = "", value_name = "user|mcs")]
    pub exclusive: Option<String>,
    #[arg(short = 'd', long = "dependency", value_name = "LIST")]
    pub dependency: Option<String>,
    #[arg(short = 'b', long = "begin", value_name = "TIME")]
    pub begin: Option<String>,
    #[arg(long = "mail-type", value_name = "TYPES")]
    pub mail_type: Option<String>,
    #[arg(long = "mail-user", value_name = "USER")]
    pub mail_user: Option<String>,

    /// ALL (the default), NONE, or [ALL,]VAR[=VALUE][,...].
    #[arg(long = "export", value_name = "LIST")]
    pub export: Option<String>,
}

/// The `SLURM_*`/`SRUN_*` input variables srun reads, and the option
/// each stands for. (`SLURM_CPUS_PER_TASK` is not one: since 22.05 a step
/// takes `-c` from `SRUN_CPUS_PER_TASK` only.)
pub const INPUT_VARS: &[(&str, &str)] = &[
    ("SLURM_NTASKS", "--ntasks"),
    ("SLURM_NNODES", "--nodes"),
    ("SLURM_NTASKS_PER_NODE", "--ntasks-per-node"),
    ("SRUN_CPUS_PER_TASK", "--cpus-per-task"),
    ("SLURM_LABELIO", "--label"),
    ("SLURM_UNBUFFEREDIO", "--unbuffered"),
    ("SLURM_OVERCOMMIT", "--overcommit"),
    ("SLURM_EXPORT_ENV", "--export"),
    ("SLURM_WORKING_DIR", "--chdir"),
    ("SLURM_PARTITION", "--partition"),
    ("SLURM_TIMELIMIT", "--time"),
    ("SLURM_ACCOUNT", "--account"),
    ("SLURM_QOS", "--qos"),
];

/// The flags among [`INPUT_VARS`]: set by any value.
const FLAG_VARS: &[&str] = &["--label", "--unbuffered", "--overcommit"];

/// The words the input variables stand for.
pub fn input_words(lookup: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let mut words = Vec::new();
    for (var, option) in INPUT_VARS {
        let Some(value) = lookup(var).filter(|v| !v.is_empty()) else {
            continue;
        };
        if FLAG_VARS.contains(option) {
            words.push(option.to_string());
        } else {
            words.push(format!("{option}={value}"));
        }
    }
    words
}

impl AllocArgs {
    /// The allocation's options in sbatch's terms, for its translation.
    pub fn sbatch(&self) -> crate::sbatch::args::Args {
        crate::sbatch::args::Args {
            job_name: self.job_name.clone(),
            partition: self.partition.clone(),
            account: self.account.clone(),
            qos: self.qos.clone(),
            time: self.time.clone(),
            nodes: self.nodes.clone(),
            ntasks: self.ntasks,
            ntasks_per_node: self.ntasks_per_node,
            cpus_per_task: self.cpus_per_task,
            mem: self.mem.clone(),
            mem_per_cpu: self.mem_per_cpu.clone(),
            gres: self.gres.clone(),
            gpus: self.gpus.clone(),
            gpus_per_node: self.gpus_per_node.clone(),
            constraint: self.constraint.clone(),
            exclusive: self.exclusive.clone(),
            dependency: self.dependency.clone(),
            begin: self.begin.clone(),
            mail_type: self.mail_type.clone(),
            mail_user: self.mail_user.clone(),
            export: self.export.clone(),
            nodelist: self.nodelist.clone(),
            exclude: self.exclude.clone(),
            ..Default::default()
        }
    }
}

impl Args {
    /// The options accepted and not done, each with what qmesh does.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut say = |given: &Option<String>, option: &str, instead: &str| {
            if let Some(v) = given {
                out.push(format!("{option}={v}: {instead}"));
            }
        };
        say(
            &self.mpi,
            "--mpi",
            "qmesh starts no PMI server; start MPI programs with mpiexec inside the job \
             (its ranks reach the nodes through pbs_tmrsh)",
        );
        say(&self.cpu_bind, "--cpu-bind", "tasks are not bound to CPUs");
        say(
            &self.mem_bind,
            "--mem-bind",
            "tasks are not bound to memory",
        );
        say(
            &self.gpus_per_task,
            "--gpus-per-task",
            "every task sees the GPUs its node gives the job",
        );
        say(&self.gpu_bind, "--gpu-bind", "tasks are not bound to GPUs");
        say(&self.hint, "--hint", "not applied");
        say(&self.cpu_freq, "--cpu-freq", "not applied");
        say(&self.ntasks_per_core, "--ntasks-per-core", "not applied");
        say(
            &self.ntasks_per_socket,
            "--ntasks-per-socket",
            "not applied",
        );
        say(&self.threads_per_core, "--threads-per-core", "not applied");
        say(
            &self.wait,
            "--wait",
            "srun waits for every task, however the others ended",
        );
        say(&self.signal, "--signal", "not sent");
        say(&self.comment, "--comment", "not kept");
        if let Some(d) = &self.distribution
            && !d.starts_with("block")
        {
            out.push(format!(
                "--distribution={d}: qmesh lays tasks out in blocks (ranks 0..k on the first node)"
            ));
        }
        if let Some(p) = &self.propagate {
            out.push(format!(
                "--propagate={p}: the tasks have the job's limits, not srun's"
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Args {
        Args::try_parse_from(std::iter::once("srun").chain(line.split_whitespace())).unwrap()
    }

    #[test]
    fn options_stop_at_the_command() {
        let a = parse("-n 4 -l --mpi=pmi2 hostname -n -l");
        assert_eq!(a.alloc.ntasks, Some(4));
        assert_eq!(a.label, Some(true));
        assert_eq!(a.command, ["hostname", "-n", "-l"]);
        assert_eq!(a.warnings().len(), 1);
        // Optional values only after `=`: the command is not taken for one.
        let a = parse("-K --exclusive hostname");
        assert_eq!(a.kill_on_bad_exit, Some(1));
        assert_eq!(a.alloc.exclusive.as_deref(), Some(""));
        assert_eq!(a.command, ["hostname"]);
        let a = parse("-N2 --ntasks-per-node=2 -c1 --multi-prog mp.conf");
        assert_eq!(a.alloc.nodes.as_deref(), Some("2"), "{a:?}");
        assert_eq!(a.multi_prog, Some(true));
        assert_eq!(a.command, ["mp.conf"]);
    }

    #[test]
    fn input_variables_stand_for_options() {
        let env = |name: &str| match name {
            "SLURM_NTASKS" => Some("4".to_string()),
            "SLURM_LABELIO" => Some("1".to_string()),
            "SLURM_CPUS_PER_TASK" => Some("2".to_string()),
            _ => None,
        };
        assert_eq!(input_words(&env), ["--ntasks=4", "--label"]);
    }

    #[test]
    fn the_allocation_goes_through_sbatchs_translation() {
        let a = parse("-N 2 --ntasks-per-node 2 -t 5 -p long true");
        let (resources, nodes) = crate::sbatch::translate::resources(&a.alloc.sbatch()).unwrap();
        assert_eq!(nodes, 2);
        assert_eq!(
            resources[0],
            ("select".into(), "2:ncpus=2:mpiprocs=2".into())
        );
    }
}
