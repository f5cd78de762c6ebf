//! pbsdsh: run a program on the nodes of the current job, through the
//! agents (no ssh, no rsh), as PBS Pro and Torque have it. Run inside a
//! job: PBS_JOBID names it. Each task runs as the job's owner with the
//! job's environment, PBS_NODENUM, PBS_VNODENUM and PBS_TASKNUM set; it
//! belongs to the job (signalled with qsig, killed when the job ends).
//! The tasks' output comes back here; pbsdsh ends when they all have,
//! with 0 if every one exited 0, else the first other status.
//!
//!   pbsdsh [-c copies | -n node | -u] [-s] [-o] [-v] [--] program [args]
//!
//! `pbs_tmrsh HOST command...` is the same for one host, in the form of
//! rsh and ssh (the words are a command line for /bin/sh there), for MPI
//! launchers (Open MPI's `plm_rsh_agent`, MPICH
//! Hydra's `-launcher-exec`): it runs the program on the job's first node
//! on HOST (a host or a node name of the job), so they need no ssh.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use qmesh_proto::v1;

use crate::client::{self, CliError};
use crate::job_tasks::{self, Event, JobsClient, environment, job_nodes};

/// Run a program on the nodes of the current job (inside a job only).
#[derive(Debug, Parser)]
#[command(name = "pbsdsh", version, disable_help_flag = true)]
pub struct Args {
    /// Run this many copies, spread over the job's nodes in turn.
    #[arg(short = 'c', value_name = "COPIES", conflicts_with_all = ["node", "unique"])]
    pub copies: Option<u32>,
    /// Run on this node only: its place in the job's node list, from 0.
    #[arg(short = 'n', value_name = "NODE")]
    pub node: Option<u32>,
    /// Run once on each host of the job (Torque).
    #[arg(short = 'u', conflicts_with = "node")]
    pub unique: bool,
    /// One task at a time, in order.
    #[arg(short = 's')]
    pub serial: bool,
    /// Do not show the tasks' output.
    #[arg(short = 'o')]
    pub no_output: bool,
    /// Say which task starts where and how each ended, on standard error.
    #[arg(short = 'v')]
    pub verbose: bool,
    /// Print help.
    #[arg(long = "help", action = clap::ArgAction::Help)]
    pub help: Option<bool>,
    /// The program and its arguments.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    match run(args) {
        Ok(code) => code,
        Err(err) => client::fail("pbsdsh", &err),
    }
}

/// The job this runs in, from its environment.
fn current_job(cmd: &str) -> Result<String, CliError> {
    std::env::var("PBS_JOBID").map_err(|_| {
        CliError::msg(format!(
            "PBS_JOBID is not set: {cmd} runs inside a job, to start programs on the job's nodes"
        ))
    })
}

/// `pbs_tmrsh [-n] [-l user] HOST [-n] [-l user] program [args]`.
pub fn tmrsh_main() -> ExitCode {
    client::restore_sigpipe();
    let words: Vec<String> = std::env::args().skip(1).collect();
    let Some((host, command)) = rsh_words(&words) else {
        eprintln!("usage: pbs_tmrsh [-n] [-l user] HOST program [args]");
        return ExitCode::from(2);
    };
    match tmrsh(&host, command) {
        Ok(code) => code,
        Err(err) => client::fail("pbs_tmrsh", &err),
    }
}

/// The host and the command of an rsh-style command line; `-n` (no
/// input: tasks never get any) and `-l user` (always the job's owner) are
/// taken and dropped, before and after the host.
fn rsh_words(words: &[String]) -> Option<(String, Vec<String>)> {
    let mut rest = words.iter();
    let mut host = None;
    let mut command = Vec::new();
    while let Some(word) = rest.next() {
        if !command.is_empty() {
            command.push(word.clone());
            continue;
        }
        match word.as_str() {
            "-n" => {}
            "-l" => {
                rest.next()?;
            }
            _ if host.is_none() => host = Some(word.clone()),
            _ => command.push(word.clone()),
        }
    }
    Some((host?, command)).filter(|(_, c)| !c.is_empty())
}

fn tmrsh(host: &str, command: Vec<String>) -> Result<ExitCode, CliError> {
    let job_id = current_job("pbs_tmrsh")?;
    let env = environment();
    let host = host.to_string();
    client::block_on(async move {
        let mut jobs = client::jobs().await?;
        let nodes = job_nodes(&mut jobs, &job_id).await?;
        let info = jobs
            .nodes(v1::NodesRequest {
                names: nodes.clone(),
                ..Default::default()
            })
            .await?
            .into_inner();
        let short = |name: &str| name.split('.').next().unwrap_or(name).to_string();
        let index = nodes.iter().position(|node| {
            short(node) == short(&host)
                || info
                    .nodes
                    .iter()
                    .any(|n| &n.name == node && short(&n.host) == short(&host))
        });
        let Some(index) = index else {
            return Err(CliError::msg(format!(
                "{host} is not a host of job {job_id} (its nodes: {})",
                nodes.join(", ")
            )));
        };
        // As rsh and ssh do, the words are one command line for the
        // shell there: launchers quote their arguments for it.
        let args = Args {
            copies: None,
            node: None,
            unique: false,
            serial: false,
            no_output: false,
            verbose: false,
            help: None,
            command: vec!["/bin/sh".into(), "-c".into(), command.join(" ")],
        };
        let code = one(&mut jobs, &job_id, index as u32, &args, &env, 0).await?;
        Ok(ExitCode::from(
            u8::try_from(code.clamp(0, 255)).unwrap_or(1),
        ))
    })
}

fn run(args: Args) -> Result<ExitCode, CliError> {
    let job_id = current_job("pbsdsh")?;
    let env = environment();
    client::block_on(async move {
        let mut jobs = client::jobs().await?;
        let nodes = job_nodes(&mut jobs, &job_id).await?;
        let targets = targets(&args, &nodes, &mut jobs).await?;
        let mut first_failure = 0;
        if args.serial {
            for (task, node) in targets.iter().enumerate() {
                let code = one(&mut jobs, &job_id, *node, &args, &env, task).await?;
                if first_failure == 0 && code != 0 {
                    first_failure = code;
                }
            }
        } else {
            let mut running = tokio::task::JoinSet::new();
            for (task, &node) in targets.iter().enumerate() {
                let mut jobs = jobs.clone();
                let (job_id, env) = (job_id.clone(), env.clone());
                let args = Args {
                    command: args.command.clone(),
                    ..args.copy_flags()
                };
                running
                    .spawn(async move { one(&mut jobs, &job_id, node, &args, &env, task).await });
            }
            while let Some(done) = running.join_next().await {
                let code =
                    done.map_err(|e| CliError::msg(format!("a task's watcher failed: {e}")))??;
                if first_failure == 0 && code != 0 {
                    first_failure = code;
                }
            }
        }
        Ok(ExitCode::from(
            u8::try_from(first_failure.clamp(0, 255)).unwrap_or(1),
        ))
    })
}

impl Args {
    fn copy_flags(&self) -> Args {
        Args {
            copies: self.copies,
            node: self.node,
            unique: self.unique,
            serial: self.serial,
            no_output: self.no_output,
            verbose: self.verbose,
            help: None,
            command: Vec::new(),
        }
    }
}

/// Which node (by index) each task runs on.
async fn targets(
    args: &Args,
    nodes: &[String],
    jobs: &mut JobsClient,
) -> Result<Vec<u32>, CliError> {
    let count = nodes.len() as u32;
    if let Some(n) = args.node {
        if n >= count {
            return Err(CliError::msg(format!(
                "-n {n}: the job has {count} nodes, numbered 0 to {}",
                count - 1
            )));
        }
        return Ok(vec![n]);
    }
    if let Some(copies) = args.copies {
        return Ok((0..copies).map(|i| i % count).collect());
    }
    if args.unique {
        let info = jobs
            .nodes(v1::NodesRequest {
                names: nodes.to_vec(),
                ..Default::default()
            })
            .await?
            .into_inner();
        let host_of = |name: &str| {
            info.nodes
                .iter()
                .find(|n| n.name == name)
                .map(|n| n.host.clone())
                .unwrap_or_else(|| name.to_string())
        };
        let mut seen = std::collections::HashSet::new();
        return Ok((0..count)
            .filter(|&i| seen.insert(host_of(&nodes[i as usize])))
            .collect());
    }
    Ok((0..count).collect())
}

/// One task, to its end; its exit status.
async fn one(
    jobs: &mut JobsClient,
    job_id: &str,
    node: u32,
    args: &Args,
    env: &[v1::EnvVar],
    task: usize,
) -> Result<i32, CliError> {
    let spec = job_tasks::Task {
        job_id: job_id.to_string(),
        node_index: node,
        argv: args.command.clone(),
        env: env.to_vec(),
        workdir: String::new(),
    };
    let what = format!("task {task} on node {node}");
    let code = job_tasks::run(jobs, spec, &what, None, |event| match event {
        Event::Started(host) if args.verbose => {
            eprintln!("pbsdsh: task {task} started on node {node} (host {host})");
        }
        Event::Stdout(bytes) if !args.no_output => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(bytes);
            let _ = out.flush();
        }
        Event::Stderr(bytes) if !args.no_output => {
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(bytes);
            let _ = err.flush();
        }
        _ => {}
    })
    .await?;
    if args.verbose || code != 0 {
        eprintln!("pbsdsh: task {task} on node {node} exited with status {code}");
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn rsh_options_are_dropped_around_the_host() {
        let (host, cmd) = rsh_words(&words("-n h2 orted -mca x 1")).unwrap();
        assert_eq!(host, "h2");
        assert_eq!(cmd, words("orted -mca x 1"));
        let (host, cmd) = rsh_words(&words("-l alice h2 -n /bin/hostname -n")).unwrap();
        assert_eq!(host, "h2");
        assert_eq!(cmd, words("/bin/hostname -n"));
        assert!(rsh_words(&words("h2")).is_none());
        assert!(rsh_words(&words("-l")).is_none());
    }
}
