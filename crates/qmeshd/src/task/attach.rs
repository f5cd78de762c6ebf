//! The task's half of `Jobs.Attach`: whether the caller may start a
//! process in a running job (pbsdsh) or attach to an interactive job's
//! terminal (qsub -I), and the StartTask order to the agent of the host
//! that runs it. The bytes never pass through here: the service wires the
//! caller's stream to the one the agent opens (`crate::service::attach`).
//!
//! An attach to an interactive job that has not started waits here until
//! the agent says the job runs; a job that ends first answers it with
//! why.

use qmesh_core::{JobId, JobState};
use qmesh_proto::v1;
use tracing::info;

use super::SchedulerTask;
use super::links::Parked;
use crate::error::TaskError;
use crate::event::Reply;
use crate::identity::Peer;

impl SchedulerTask {
    pub(super) fn open_task(
        &mut self,
        peer: &Peer,
        open: v1::TaskOpen,
        token: String,
        reply: Reply<String>,
    ) {
        let caller = self.caller(peer);
        let id = match self.existing_job(&open.job_id) {
            Ok(id) => id,
            Err(refused) => {
                let _ = reply.send(Err(refused));
                return;
            }
        };
        let Some(job) = self.state.job(id) else {
            return;
        };
        let full = self.state.full_id(id);
        if !caller.may_act_on(job) {
            let _ = reply.send(Err(TaskError::Denied(format!(
                "job {full} belongs to {}; only its owner, an operator or a manager may run \
                 processes in it",
                job.owner.user
            ))));
            return;
        }
        if open.interactive && !job.options.interactive {
            let _ = reply.send(Err(TaskError::NotNow(format!(
                "job {full} is a batch job, not an interactive one (qsub -I); \
                 use pbsdsh inside it to run commands on its nodes"
            ))));
            return;
        }
        match job.state {
            JobState::Running => {}
            state if open.interactive && state.is_pending() => {
                info!(job = %full, "qsub -I waits for the job to start");
                self.links.park(id, Parked { open, token, reply });
                return;
            }
            JobState::Finished | JobState::Exiting => {
                let _ = reply.send(Err(TaskError::NotNow(format!(
                    "job {full} has ended; see qstat -x -f {full}"
                ))));
                return;
            }
            _ => {
                let _ = reply.send(Err(TaskError::NotNow(format!(
                    "job {full} is not running; pbsdsh runs commands in a running job \
                     (see qstat {full})"
                ))));
                return;
            }
        }
        let result = self.start_task(id, &open, &token);
        let _ = reply.send(result);
    }

    /// Sends the StartTask for `open`; the host it runs on.
    fn start_task(
        &mut self,
        id: JobId,
        open: &v1::TaskOpen,
        token: &str,
    ) -> Result<String, TaskError> {
        let Some(job) = self.state.job(id) else {
            return Err(TaskError::NotFound("the job is gone".into()));
        };
        let full = self.state.full_id(id);
        let index = if open.interactive {
            0
        } else {
            open.node_index as usize
        };
        let Some(node) = job.exec_nodes.get(index).map(|n| n.to_string()) else {
            return Err(TaskError::Invalid(format!(
                "job {full} has {} nodes (0 to {}); there is no node {index}",
                job.exec_nodes.len(),
                job.exec_nodes.len().saturating_sub(1)
            )));
        };
        let host = match self.state.node_by_name(&node) {
            Some(n) => n.host.to_string(),
            None => {
                return Err(TaskError::Internal(format!(
                    "node {node} of job {full} is not known"
                )));
            }
        };
        let order = v1::StartTask {
            token: token.to_string(),
            job: id.0,
            job_id: full.clone(),
            interactive: open.interactive,
            argv: open.argv.clone(),
            user: job.owner.user.clone(),
            uid: job.owner.uid,
            gid: job.owner.gid,
            group: job.owner.group.clone(),
            node_index: index as u32,
            task_number: self.links.next_task_number(id),
            node: node.clone(),
            all_nodes: job.exec_nodes.iter().map(|n| n.to_string()).collect(),
            workdir: job.workdir.clone(),
            env: open.env.clone(),
            window: open.window,
            cwd: open.workdir.clone(),
        };
        if !self
            .links
            .send(&host, v1::daemon_message::Kind::Task(order))
        {
            return Err(TaskError::Unavailable(format!(
                "the agent of host {host} (node {node} of job {full}) is not connected; \
                 try again when pbsnodes shows it up"
            )));
        }
        info!(job = %full, host, node = %node, interactive = open.interactive, "task started");
        Ok(host)
    }

    /// The job runs: what waited to attach to it goes on.
    pub(super) fn unpark(&mut self, id: JobId) {
        for p in self.links.unpark(id) {
            let result = self.start_task(id, &p.open, &p.token);
            let _ = p.reply.send(result);
        }
    }

    /// The job ended before it ran: those waiting hear why.
    pub(super) fn unpark_ended(&mut self, id: JobId) {
        self.links.job_ended(id);
        let parked = self.links.unpark(id);
        if parked.is_empty() {
            return;
        }
        let full = self.state.full_id(id);
        let comment = self
            .state
            .job(id)
            .map(|j| j.comment.clone())
            .unwrap_or_default();
        for p in parked {
            let _ = p.reply.send(Err(TaskError::NotNow(format!(
                "job {full} ended before it started: {comment}"
            ))));
        }
    }
}
