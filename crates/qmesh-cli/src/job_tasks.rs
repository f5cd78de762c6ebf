//! Processes started in a running job through the agents (no ssh): one
//! `Jobs.Attach` stream per process, which the daemon hands to the agent
//! of the node that runs it. What pbsdsh, pbs_tmrsh and srun share: the
//! job's nodes, the caller's environment for the tasks, and one task run
//! to its end, its output and start given to the caller as they come.

use qmesh_proto::v1;
use qmesh_proto::v1::task_frame::Kind;
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;

use crate::client::CliError;

pub type JobsClient = qmesh_proto::jobs_client::JobsClient<tonic::transport::Channel>;

/// This process's environment, for the tasks (as the job's own).
pub fn environment() -> Vec<v1::EnvVar> {
    std::env::vars_os()
        .filter_map(|(n, v)| {
            Some(v1::EnvVar {
                name: n.into_string().ok()?,
                value: v.into_string().ok()?,
            })
        })
        .collect()
}

/// A running job as the daemon shows it; an error if it holds no nodes.
pub async fn running_job(jobs: &mut JobsClient, job_id: &str) -> Result<v1::JobInfo, CliError> {
    let status = jobs
        .status(v1::StatusRequest {
            job_ids: vec![job_id.to_string()],
            ..Default::default()
        })
        .await?
        .into_inner();
    let Some(job) = status.jobs.into_iter().next() else {
        return Err(CliError::msg(format!(
            "job {job_id} is not known to the server"
        )));
    };
    if job.exec_nodes.is_empty() {
        return Err(CliError::msg(format!(
            "job {job_id} holds no nodes: is it running?"
        )));
    }
    Ok(job)
}

/// The nodes of a running job, in its order.
pub async fn job_nodes(jobs: &mut JobsClient, job_id: &str) -> Result<Vec<String>, CliError> {
    Ok(running_job(jobs, job_id).await?.exec_nodes)
}

/// One process to start in a job.
#[derive(Clone, Debug, Default)]
pub struct Task {
    pub job_id: String,
    /// Which of the job's nodes, by its place in the job's node list.
    pub node_index: u32,
    pub argv: Vec<String>,
    /// Its environment (the job's own variables come from the caller's).
    pub env: Vec<v1::EnvVar>,
    /// Its directory; empty: the job's.
    pub workdir: String,
}

/// What a task says before its end.
pub enum Event<'a> {
    /// It runs, on this host.
    Started(&'a str),
    Stdout(&'a [u8]),
    Stderr(&'a [u8]),
}

/// Runs `task` to its end; its exit status (128+N for signal N). Each
/// event goes to `on` as it comes; a signal number sent on `signals` is
/// passed to the task's process group. `what` names the task in errors
/// ("task 3 on node 1").
pub async fn run(
    jobs: &mut JobsClient,
    task: Task,
    what: &str,
    mut signals: Option<watch::Receiver<i32>>,
    mut on: impl FnMut(Event),
) -> Result<i32, CliError> {
    let (tx, rx) = mpsc::channel(4);
    let open = v1::TaskOpen {
        job_id: task.job_id,
        argv: task.argv,
        node_index: task.node_index,
        env: task.env,
        workdir: task.workdir,
        ..Default::default()
    };
    let _ = tx
        .send(v1::TaskFrame {
            kind: Some(Kind::Open(open)),
        })
        .await;
    let mut inbound = jobs.attach(ReceiverStream::new(rx)).await?.into_inner();
    loop {
        let frame = tokio::select! {
            frame = inbound.message() => frame?,
            changed = async {
                match signals.as_mut() {
                    Some(s) => s.changed().await.map(|_| *s.borrow()),
                    None => std::future::pending().await,
                }
            } => {
                match changed {
                    Ok(sig) if sig > 0 => {
                        let _ = tx.send(v1::TaskFrame { kind: Some(Kind::Signal(sig)) }).await;
                    }
                    Ok(_) => {}
                    Err(_) => signals = None,
                }
                continue;
            }
        };
        let Some(frame) = frame else {
            return Err(CliError::msg(format!(
                "{what}: the stream ended without an exit status"
            )));
        };
        match frame.kind {
            Some(Kind::Started(host)) => on(Event::Started(&host)),
            Some(Kind::Stdout(bytes)) => on(Event::Stdout(&bytes)),
            Some(Kind::Stderr(bytes)) => on(Event::Stderr(&bytes)),
            Some(Kind::Exit(code)) => return Ok(code),
            Some(Kind::Error(why)) => return Err(CliError::msg(format!("{what}: {why}"))),
            _ => {}
        }
    }
}
