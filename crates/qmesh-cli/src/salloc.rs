//! salloc: an allocation, and a command run in it on this host, as
//! Slurm's salloc does. The allocation is srun's (`srun/alloc.rs`: an
//! interactive job asked with sbatch's options, held open while the
//! command runs); the command (default: the user's shell) runs here with
//! the allocation's variables (`SLURM_JOB_ID`, `SLURM_JOB_NODELIST`,
//! `SLURM_NNODES`, `SLURM_NTASKS`... and `PBS_JOBID`), so that srun,
//! pbsdsh and qstat in it reach the allocation. The job ends with the
//! command, with its status.
//!
//!   salloc [-N N] [-n N] [-c N] [-t TIME] [-p PART] [-J NAME] ... [command [args]]

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser};

use crate::client::{self, CliError};
use crate::srun::args::AllocArgs;
use crate::srun::{alloc, env, exported};

/// Get an allocation and run a command in it (Slurm's salloc, on qmesh).
#[derive(Parser, Debug, Default, Clone)]
#[command(name = "salloc", disable_help_flag = true, disable_version_flag = true)]
pub struct Args {
    #[command(flatten)]
    pub alloc: AllocArgs,
    /// These nodes (a hostlist), one chunk pinned to each.
    #[arg(short = 'w', long = "nodelist", value_name = "HOSTLIST")]
    pub nodelist: Option<String>,
    /// Not these nodes or hosts (a hostlist).
    #[arg(short = 'x', long = "exclude", value_name = "HOSTLIST")]
    pub exclude: Option<String>,
    /// Slurm's allocation without a process: not in qmesh.
    #[arg(long = "no-shell", num_args = 0, default_missing_value = "true")]
    pub no_shell: Option<bool>,
    /// Give up unless the allocation is at once: accepted, waits.
    #[arg(short = 'I', long = "immediate", num_args = 0..=1, require_equals = true, default_missing_value = "0", value_name = "SECONDS")]
    pub immediate: Option<String>,
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
    /// The command and its arguments (default: your shell).
    #[arg(value_name = "COMMAND", trailing_var_arg = true, num_args = 0..)]
    pub command: Vec<String>,
}

/// The `SALLOC_*` input variables, and the option each stands for.
const INPUT_VARS: &[(&str, &str)] = &[
    ("SALLOC_ACCOUNT", "--account"),
    ("SALLOC_CONSTRAINT", "--constraint"),
    ("SALLOC_GPUS", "--gpus"),
    ("SALLOC_PARTITION", "--partition"),
    ("SALLOC_QOS", "--qos"),
    ("SALLOC_TIMELIMIT", "--time"),
];

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let words: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let parse = |words: Vec<String>| {
        Args::command().try_get_matches_from(std::iter::once("salloc".to_string()).chain(words))
    };
    let from_env: Vec<String> = INPUT_VARS
        .iter()
        .filter_map(|(var, option)| Some(format!("{option}={}", std::env::var(var).ok()?)))
        .collect();
    let opts = parse(from_env)
        .and_then(|m| Args::from_arg_matches(&m))
        .and_then(|mut opts| {
            opts.update_from_arg_matches(&parse(words)?)?;
            opts.alloc.nodelist = opts.nodelist.clone();
            opts.alloc.exclude = opts.exclude.clone();
            Ok(opts)
        });
    let opts = match opts {
        Ok(opts) => opts,
        Err(err) => err.exit(),
    };
    match run(opts) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("salloc: error: {err}");
            ExitCode::from(1)
        }
    }
}

/// The command to run: the one given, else the user's shell.
fn command(opts: &Args) -> Vec<String> {
    if !opts.command.is_empty() {
        return opts.command.clone();
    }
    vec![
        std::env::var("SHELL")
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "/bin/sh".into()),
    ]
}

fn run(opts: Args) -> Result<ExitCode, CliError> {
    if opts.no_shell == Some(true) {
        return Err(CliError::msg(
            "--no-shell: a qmesh allocation lives while a process holds it; run salloc with a \
             command, or submit with sbatch --wrap",
        ));
    }
    let quiet = opts.quiet == Some(true);
    if opts.immediate.is_some() && !quiet {
        eprintln!("salloc: warning: --immediate: qmesh waits for the allocation");
    }
    let command = command(&opts);
    // Slurm's name for an allocation, whatever its command.
    let name = "interactive";
    let lookup = |name: &str| std::env::var(name).ok();
    let runtime = client::runtime()?;
    let outcome = runtime.block_on(async {
        let mut jobs = client::jobs().await?;
        let pbs_env = crate::qsub::pbs_o_vars(&lookup);
        let allocation =
            alloc::allocate(&mut jobs, "salloc", &opts.alloc, name, pbs_env, quiet).await?;
        let number = env::number(&allocation.job_id).to_string();
        if !quiet {
            eprintln!("salloc: Granted job allocation {number}");
        }
        // Where srun in the command counts its steps.
        let steps =
            std::env::temp_dir().join(format!("qmesh-salloc-{number}-{}", std::process::id()));
        let _ = std::fs::create_dir(&steps);
        let mut vars = exported(opts.alloc.export.as_deref());
        vars.extend(env::job_vars(
            &allocation.info,
            opts.alloc.ntasks,
            opts.alloc.cpus_per_task,
        ));
        if let Some(p) = opts.alloc.ntasks_per_node {
            vars.push(("SLURM_NTASKS_PER_NODE".into(), p.to_string()));
        }
        vars.push(("QMESH_SRUN_STEPS".into(), steps.display().to_string()));
        let status = run_here(&command, vars).await;
        let _ = std::fs::remove_dir_all(&steps);
        let code = *status.as_ref().unwrap_or(&1);
        if !quiet {
            eprintln!("salloc: Relinquishing job allocation {number}");
        }
        if let Err(err) = allocation.release(code).await {
            eprintln!("salloc: error: giving job {number} back: {err}");
        }
        status
    });
    runtime.shutdown_timeout(std::time::Duration::from_millis(50));
    let code = outcome?;
    Ok(ExitCode::from(
        u8::try_from(code.clamp(0, 255)).unwrap_or(1),
    ))
}

/// Runs the command here with `vars` as its whole environment; its
/// status (128+N for a signal N). A ^C is the command's to take: salloc
/// itself keeps the allocation until the command ends.
async fn run_here(command: &[String], vars: Vec<(String, String)>) -> Result<i32, CliError> {
    use std::os::unix::process::ExitStatusExt;
    use tokio::signal::unix::{SignalKind, signal};
    let mut held = Vec::new();
    for kind in [SignalKind::interrupt(), SignalKind::quit()] {
        if let Ok(stream) = signal(kind) {
            held.push(stream);
        }
    }
    let mut child = tokio::process::Command::new(&command[0])
        .args(&command[1..])
        .env_clear()
        .envs(vars)
        .spawn()
        .map_err(|e| CliError::msg(format!("cannot run {}: {e}", command[0])))?;
    let status = child
        .wait()
        .await
        .map_err(|e| CliError::msg(format!("lost {}: {e}", command[0])))?;
    drop(held);
    Ok(status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_follows_the_options() {
        let opts =
            Args::try_parse_from(["salloc", "-N", "2", "-t", "5", "sh", "-c", "srun hostname"])
                .unwrap();
        assert_eq!(opts.alloc.nodes.as_deref(), Some("2"));
        assert_eq!(command(&opts), ["sh", "-c", "srun hostname"]);
    }
}
