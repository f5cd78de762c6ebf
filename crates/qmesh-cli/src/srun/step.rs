//! One step in a running job: its tasks laid out over the job's nodes
//! ([`super::layout`]), each started through the agents as pbsdsh starts
//! its own ([`crate::job_tasks`]), with its `SLURM_*` variables, its
//! output shown as it comes ([`super::output`]). The step's status is the
//! highest of its tasks'; each node whose tasks failed is named as Slurm
//! names it: `srun: error: NODE: tasks 0-1: Exited with exit code 3`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use qmesh_proto::v1;
use tokio::sync::watch;

use super::args::Args;
use super::env::{Step, job_nodes, job_vars, number};
use super::layout::{self, JobNode, Request};
use super::multi_prog;
use super::output::{Names, Output, STDERR, STDOUT, Sink};
use crate::client::CliError;
use crate::job_tasks::{self, Event, JobsClient};

/// Runs the step to its end in `info`'s job; its status. `env`: what the
/// tasks inherit (already `--export`ed), `step_id` its number.
pub async fn run(
    jobs: &mut JobsClient,
    info: &v1::JobInfo,
    opts: &Args,
    env: Vec<(String, String)>,
    step_id: u32,
) -> Result<i32, CliError> {
    let job = number(&info.id).to_string();
    let nodes = chosen_nodes(info, opts).map_err(CliError::Msg)?;
    let request = Request {
        ntasks: opts.alloc.ntasks,
        nodes: opts
            .alloc
            .nodes
            .as_deref()
            .map(|n| {
                n.split('-')
                    .next()
                    .and_then(|m| m.trim().parse().ok())
                    .ok_or_else(|| format!("--nodes={n}: write a count of nodes, N or MIN-MAX"))
            })
            .transpose()
            .map_err(CliError::Msg)?,
        nodes_explicit: opts.alloc.nodes.is_some(),
        ntasks_per_node: opts.alloc.ntasks_per_node,
        cpus_per_task: opts.alloc.cpus_per_task,
        overcommit: opts.overcommit == Some(true),
    };
    let layout = layout::layout(&request, &nodes, &job).map_err(CliError::Msg)?;
    for warning in &layout.warnings {
        eprintln!("srun: Warning: {warning}");
    }
    let ntasks = layout.ntasks();
    let programs = programs(opts, ntasks)?;
    let here = std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    let workdir = match &opts.chdir {
        Some(dir) if dir.starts_with('/') => dir.clone(),
        Some(dir) => format!("{here}/{dir}"),
        None => here,
    };
    let step = Step {
        id: step_id,
        layout: &layout,
        cpus_per_task: opts.alloc.cpus_per_task,
        ntasks_per_node: opts.alloc.ntasks_per_node,
        launch_host: super::env::launch_address(),
        label: opts.label == Some(true),
        user: info.owner.split('@').next().unwrap_or("").to_string(),
    };
    // The job's own variables where the caller lacks them (a qsub job);
    // not SLURM_NODE_ALIASES, which Slurm gives an allocation, not a step.
    let mut base = env;
    for (name, value) in job_vars(info, None, None) {
        if name != "SLURM_NODE_ALIASES" && !base.iter().any(|(n, _)| *n == name) {
            base.push((name, value));
        }
    }
    let placement = layout.placement();
    let in_dir = |p: &String| {
        if p.starts_with('/') {
            p.clone()
        } else {
            format!("{workdir}/{p}")
        }
    };
    let sinks = match (&opts.output, &opts.error) {
        (None, None) => [Sink::Terminal, Sink::Terminal],
        (Some(o), None) => [Sink::File(in_dir(o)), Sink::File(in_dir(o))],
        (None, Some(e)) => [Sink::Terminal, Sink::File(in_dir(e))],
        (Some(o), Some(e)) => [Sink::File(in_dir(o)), Sink::File(in_dir(e))],
    };
    let names = Names {
        job: job.clone(),
        step: step_id,
        user: info.owner.split('@').next().unwrap_or("").to_string(),
        job_name: info.name.clone(),
        node_of: placement
            .iter()
            .map(|&(node, _)| (node, layout.nodes[node].name.clone()))
            .collect(),
    };
    let output = Arc::new(Mutex::new(Output::new(
        ntasks,
        opts.label == Some(true),
        opts.unbuffered == Some(true),
        sinks,
        names,
    )));
    let (signal_tx, signals) = watch::channel(0);
    let signal_tx = Arc::new(signal_tx);
    let forwarder = tokio::spawn(forward_signals(signal_tx.clone()));
    let kill_on_bad_exit = opts.kill_on_bad_exit.unwrap_or(0) > 0;
    let mut running = tokio::task::JoinSet::new();
    for rank in 0..ntasks {
        let (node, _) = placement[rank as usize];
        let node = layout.nodes[node].clone();
        let mut task_env = base.clone();
        for (name, value) in step.task_vars(rank) {
            match task_env.iter_mut().find(|(n, _)| *n == name) {
                Some(slot) => slot.1 = value,
                None => task_env.push((name, value)),
            }
        }
        let task = job_tasks::Task {
            job_id: info.id.clone(),
            node_index: node.index,
            argv: programs(rank),
            env: task_env
                .into_iter()
                .map(|(name, value)| v1::EnvVar { name, value })
                .collect(),
            workdir: workdir.clone(),
        };
        let mut jobs = jobs.clone();
        let output = output.clone();
        let signals = signals.clone();
        running.spawn(async move {
            let what = format!("task {rank} on {}", node.name);
            let result = job_tasks::run(&mut jobs, task, &what, Some(signals), |event| {
                let mut out = output.lock().unwrap_or_else(|p| p.into_inner());
                match event {
                    Event::Stdout(bytes) => out.write(rank, STDOUT, bytes),
                    Event::Stderr(bytes) => out.write(rank, STDERR, bytes),
                    Event::Started(_) => {}
                }
            })
            .await;
            output
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .finish(rank);
            (rank, node, result)
        });
    }
    // Nodes and the ranks that ended with each status there.
    let mut failed: BTreeMap<(u32, i32), (String, Vec<u32>)> = BTreeMap::new();
    let mut highest = 0;
    while let Some(done) = running.join_next().await {
        let (rank, node, result) =
            done.map_err(|e| CliError::msg(format!("a task's watcher failed: {e}")))?;
        let code = match result {
            Ok(code) => code,
            Err(err) => {
                eprintln!("srun: error: {err}");
                1
            }
        };
        if code != 0 {
            failed
                .entry((node.index, code))
                .or_insert_with(|| (node.name.clone(), Vec::new()))
                .1
                .push(rank);
            if kill_on_bad_exit {
                let _ = signal_tx.send(nix::libc::SIGKILL);
            }
        }
        highest = highest.max(code);
    }
    forwarder.abort();
    for ((_, code), (node, mut ranks)) in failed {
        ranks.sort_unstable();
        let which = if ranks.len() == 1 {
            format!("task {}", ranks[0])
        } else {
            format!("tasks {}", rank_ranges(&ranks))
        };
        eprintln!("srun: error: {node}: {which}: Exited with exit code {code}");
    }
    for error in &output.lock().unwrap_or_else(|p| p.into_inner()).errors {
        eprintln!("srun: error: {error}");
    }
    Ok(highest)
}

/// The job's nodes the step may use: all, or those `-w` names, less
/// those `-x` names.
fn chosen_nodes(info: &v1::JobInfo, opts: &Args) -> Result<Vec<JobNode>, String> {
    let mut nodes = job_nodes(info);
    let expand = |list: &str| qmesh_core::job::slurm::expanded(list);
    if let Some(list) = &opts.nodelist {
        let wanted = expand(list)?;
        if let Some(stranger) = wanted.iter().find(|w| !nodes.iter().any(|n| &n.name == *w)) {
            return Err(format!(
                "--nodelist={list}: {stranger} is not a node of job {} (its nodes: {})",
                number(&info.id),
                info.exec_nodes.join(",")
            ));
        }
        nodes.retain(|n| wanted.contains(&n.name));
    }
    if let Some(list) = &opts.exclude {
        let unwanted = expand(list)?;
        nodes.retain(|n| !unwanted.contains(&n.name));
    }
    Ok(nodes)
}

/// Each rank's program and arguments: the command, or `--multi-prog`'s
/// line for it.
fn programs(opts: &Args, ntasks: u32) -> Result<impl Fn(u32) -> Vec<String>, CliError> {
    let Some(first) = opts.command.first() else {
        return Err(CliError::msg(
            "no command to run; write srun [OPTIONS] PROGRAM [ARGS...]",
        ));
    };
    let conf = if opts.multi_prog == Some(true) {
        let text =
            crate::client::read_named_file(std::path::Path::new(first), "--multi-prog file")?;
        let conf = multi_prog::parse(&String::from_utf8_lossy(&text))
            .map_err(|e| CliError::msg(format!("--multi-prog {first}: {e}")))?;
        conf.check(ntasks, first).map_err(CliError::Msg)?;
        Some(conf)
    } else {
        None
    };
    let command = opts.command.clone();
    Ok(move |rank| match &conf {
        Some(conf) => conf.argv(rank).unwrap_or_default(),
        None => command.clone(),
    })
}

/// Ranks as Slurm lists them: `0-2,5`.
fn rank_ranges(ranks: &[u32]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < ranks.len() {
        let mut j = i;
        while j + 1 < ranks.len() && ranks[j + 1] == ranks[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            ranks[i].to_string()
        } else {
            format!("{}-{}", ranks[i], ranks[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// Signals srun gets, passed on to every task (as Slurm forwards them).
async fn forward_signals(to: Arc<watch::Sender<i32>>) {
    use tokio::signal::unix::{SignalKind, signal};
    let kinds = [
        (SignalKind::interrupt(), nix::libc::SIGINT),
        (SignalKind::terminate(), nix::libc::SIGTERM),
        (SignalKind::hangup(), nix::libc::SIGHUP),
        (SignalKind::quit(), nix::libc::SIGQUIT),
        (SignalKind::user_defined1(), nix::libc::SIGUSR1),
        (SignalKind::user_defined2(), nix::libc::SIGUSR2),
    ];
    let (tx, mut rx) = tokio::sync::mpsc::channel(8);
    for (kind, number) in kinds {
        let Ok(mut stream) = signal(kind) else {
            continue;
        };
        let tx = tx.clone();
        tokio::spawn(async move {
            while stream.recv().await.is_some() {
                if tx.send(number).await.is_err() {
                    return;
                }
            }
        });
    }
    drop(tx);
    while let Some(number) = rx.recv().await {
        // The same signal twice must still reach the tasks: watch only
        // wakes on a change, so it passes through 0 first.
        to.send_replace(0);
        let _ = to.send(number);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_list_as_ranges() {
        assert_eq!(rank_ranges(&[0, 1, 2, 5]), "0-2,5");
        assert_eq!(rank_ranges(&[3]), "3");
        assert_eq!(rank_ranges(&[1, 3]), "1,3");
    }
}
