//! srun: Slurm's parallel launcher, on qmesh. Inside a job (PBS_JOBID or
//! SLURM_JOB_ID set, or `--jobid`) it runs a step: N tasks laid out over
//! the job's nodes in Slurm's block order, started through the agents as
//! pbsdsh's are (no ssh), each with its rank's `SLURM_*` variables; their
//! output comes back here as it arrives (`-l` labels it), and srun exits
//! with the highest task status. Outside a job it first gets an
//! allocation (sbatch's options, an interactive job held open: see
//! `srun/alloc.rs`), runs the step in it and gives it back, as Slurm's
//! srun does; `--pty` gives the shell of such a job on this terminal, as
//! `qsub -I`.
//!
//! Options come from the `SLURM_*` input variables, then the command line
//! over them (clap's `update_from_arg_matches`, as sbatch).

pub mod alloc;
pub mod args;
pub mod env;
pub mod layout;
pub mod multi_prog;
pub mod output;
pub mod step;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

use crate::client::{self, CliError};
use args::Args;

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let words: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let lookup = |name: &str| std::env::var(name).ok();
    let opts = match gather(words, &lookup) {
        Ok(opts) => opts,
        Err(err) => err.exit(),
    };
    match run(opts) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("srun: error: {err}");
            ExitCode::from(1)
        }
    }
}

/// The input variables, then the command line over them.
fn gather(
    words: Vec<String>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Args, clap::Error> {
    let parse = |words: Vec<String>| {
        Args::command().try_get_matches_from(std::iter::once("srun".to_string()).chain(words))
    };
    let from_env = parse(args::input_words(lookup))?;
    let mut opts = Args::from_arg_matches(&from_env)?;
    opts.update_from_arg_matches(&parse(words)?)?;
    // Outside a job, -w and -x shape the allocation.
    opts.alloc.nodelist = opts.nodelist.clone();
    opts.alloc.exclude = opts.exclude.clone();
    Ok(opts)
}

/// The job srun runs in, as the daemon names it: `--jobid` (Slurm's
/// number), else the job it runs inside.
pub fn current_job(opts: &Args, lookup: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let slurm = |id: &str| crate::scancel::qmesh_id(id).unwrap_or_else(|_| id.to_string());
    if let Some(id) = &opts.jobid {
        return Some(slurm(id));
    }
    let given = |name: &str| lookup(name).filter(|id| !id.is_empty());
    given("PBS_JOBID").or_else(|| given("SLURM_JOB_ID").map(|id| slurm(&id)))
}

/// The environment the tasks get: `--export` ALL (the default) is all of
/// srun's; NONE only its `SLURM_*` variables; a list those named too (all
/// of them with ALL).
pub fn exported(export: Option<&str>) -> Vec<(String, String)> {
    let all: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(n, v)| Some((n.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let Some(list) = export else {
        return all;
    };
    let mut out: Vec<(String, String)> = Vec::new();
    let mut everything = false;
    for item in list.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        match item {
            "ALL" => everything = true,
            "NONE" => {}
            _ => match item.split_once('=') {
                Some((name, value)) => out.push((name.to_string(), value.to_string())),
                None => {
                    if let Some((n, v)) = all.iter().find(|(n, _)| n == item) {
                        out.push((n.clone(), v.clone()));
                    }
                }
            },
        }
    }
    let base: Vec<(String, String)> = all
        .into_iter()
        .filter(|(n, _)| everything || n.starts_with("SLURM_"))
        .filter(|(n, _)| !out.iter().any(|(o, _)| o == n))
        .collect();
    base.into_iter().chain(out).collect()
}

/// The step's number in this job: the first free one, claimed by making
/// a file in `dir` (the job's TMPDIR on its first node, or the one salloc
/// made); 0 when there is nowhere to count.
pub fn next_step_id(dir: Option<&str>) -> u32 {
    let Some(dir) = dir.filter(|d| !d.is_empty()) else {
        return 0;
    };
    for n in 0..100_000u32 {
        let path = std::path::Path::new(dir).join(format!(".qmesh-srun-step-{n}"));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(_) => return n,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(_) => return 0,
        }
    }
    0
}

/// An exit status as srun's own.
fn exit_code(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code.clamp(0, 255)).unwrap_or(1))
}

fn run(opts: Args) -> Result<ExitCode, CliError> {
    let lookup = |name: &str| std::env::var(name).ok();
    if opts.quiet != Some(true) {
        for warning in opts.warnings() {
            eprintln!("srun: warning: {warning}");
        }
    }
    if let Some(input) = opts
        .input
        .as_deref()
        .filter(|i| *i != "none" && *i != "/dev/null")
    {
        return Err(CliError::msg(format!(
            "--input={input}: qmesh's tasks read nothing (their input is /dev/null); read the \
             file in the program (< FILE)"
        )));
    }
    let Some(program) = opts.command.first().cloned() else {
        return Err(CliError::msg(
            "no command to run; write srun [OPTIONS] PROGRAM [ARGS...]",
        ));
    };
    let env = exported(opts.alloc.export.as_deref());
    if let Some(job) = current_job(&opts, &lookup) {
        if opts.pty == Some(true) {
            return Err(CliError::msg(
                "--pty inside a job is not supported: run the shell outside a job (srun --pty \
                 bash gets an allocation with a terminal), or run commands without --pty",
            ));
        }
        let step_dir = lookup("QMESH_SRUN_STEPS").or_else(|| lookup("TMPDIR"));
        let step_id = next_step_id(step_dir.as_deref());
        return client::block_on(async move {
            let mut jobs = client::jobs().await?;
            let info = crate::job_tasks::running_job(&mut jobs, &job).await?;
            step::run(&mut jobs, &info, &opts, env, step_id)
                .await
                .map(exit_code)
        });
    }
    let name = std::path::Path::new(&program)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or(program.clone());
    if opts.pty == Some(true) {
        return pty(&opts, &name);
    }
    let quiet = opts.quiet == Some(true);
    let runtime = client::runtime()?;
    let outcome = runtime.block_on(async {
        let mut jobs = client::jobs().await?;
        let pbs_env = crate::qsub::pbs_o_vars(&lookup);
        let allocation =
            alloc::allocate(&mut jobs, "srun", &opts.alloc, &name, pbs_env, quiet).await?;
        let mut task_env = env;
        let vars = env::job_vars(
            &allocation.info,
            opts.alloc.ntasks,
            opts.alloc.cpus_per_task,
        );
        task_env.retain(|(n, _)| !vars.iter().any(|(v, _)| v == n));
        task_env.extend(vars.into_iter().filter(|(n, _)| n != "SLURM_NODE_ALIASES"));
        let status = step::run(&mut jobs, &allocation.info, &opts, task_env, 0).await;
        let code = match &status {
            Ok(code) => *code,
            Err(_) => 1,
        };
        let job_id = allocation.job_id.clone();
        if let Err(err) = allocation.release(code).await {
            eprintln!("srun: error: giving job {job_id} back: {err}");
        }
        status
    });
    // A task's watcher may still block on nothing: do not wait for it.
    runtime.shutdown_timeout(std::time::Duration::from_millis(50));
    outcome.map(exit_code)
}

/// `srun --pty SHELL` outside a job: an allocation whose terminal is this
/// one, the shell given as the interactive job's (qsub -I's path).
fn pty(opts: &Args, name: &str) -> Result<ExitCode, CliError> {
    let extra: Vec<&String> = opts.command[1..]
        .iter()
        .filter(|w| !["-i", "-l", "--login"].contains(&w.as_str()))
        .collect();
    if !extra.is_empty() {
        return Err(CliError::msg(format!(
            "--pty runs a shell on the job's terminal; write srun --pty {name} (arguments such \
             as {} are not passed), or run the program without --pty",
            extra[0]
        )));
    }
    let shell = on_path(&opts.command[0]).ok_or_else(|| {
        CliError::msg(format!(
            "--pty {}: no such program on PATH",
            opts.command[0]
        ))
    })?;
    let lookup = |n: &str| std::env::var(n).ok();
    let runtime = client::runtime()?;
    let outcome = runtime.block_on(async {
        let mut jobs = client::jobs().await?;
        let mut env = crate::qsub::pbs_o_vars(&lookup);
        if let Ok(term) = std::env::var("TERM") {
            env.push(("TERM".into(), term));
        }
        let job_id = alloc::submit(&mut jobs, &opts.alloc, name, env, &shell).await?;
        crate::interactive::attach_as("srun", jobs, &job_id, Vec::new()).await
    });
    // The key reader blocks in a thread on the terminal: do not wait for it.
    runtime.shutdown_timeout(std::time::Duration::from_millis(50));
    outcome.map(exit_code)
}

/// A program's path: as written when it has a `/`, else found on PATH.
fn on_path(program: &str) -> Option<String> {
    if program.contains('/') {
        return Some(program.to_string());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
        .map(|p| p.display().to_string())
}
