//! The task's edge of [`crate::dispatch`]: events go in with the time
//! of the event being handled, and the orders that come out are carried
//! out here, where the sockets, the store and the logs are. Daemon
//! messages become wire messages only here (a launch order needs the
//! job's script from the store; a join, the job's share of each host).

use qmesh_core::JobId;
use qmesh_core::state::Finished;
use qmesh_proto::v1;
use qmesh_store::Store;
use tracing::{info, warn};

use super::SchedulerTask;
use crate::dispatch::{DispatchEvent, Ended, Now, Order, ToAgent};
use crate::event::AfterDurable;

impl SchedulerTask {
    /// Hands `event` to dispatch at `now` and carries out its orders.
    pub(super) fn dispatch_at(&mut self, event: DispatchEvent, now: Now) {
        let orders = self.dispatch.on_event(&mut self.state, event, now);
        for order in orders {
            self.carry_out(order, now);
        }
    }

    fn carry_out(&mut self, order: Order, now: Now) {
        match order {
            Order::Send { host, message } => self.send_to(&host, message, now),
            Order::Ended(ended) => self.ended(ended, now),
        }
    }

    fn send_to(&mut self, host: &str, message: ToAgent, now: Now) {
        use v1::daemon_message::Kind;
        match message {
            ToAgent::Launch(id) => match self.launch_order(id, host) {
                Ok(order) => {
                    if !self.links.send(host, Kind::Launch(order)) {
                        self.dispatch_at(DispatchEvent::LaunchUndelivered { job: id }, now);
                    }
                }
                Err(why) => self.dispatch_at(DispatchEvent::LaunchRefused { job: id, why }, now),
            },
            ToAgent::Join(id) => {
                let Some(order) = self.join_order(host, id) else {
                    return;
                };
                if !self.links.send(host, Kind::Join(order)) {
                    info!(job = %id, host, "agent not connected; the join is sent when it says hello");
                }
            }
            ToAgent::Leave { job, reason } => {
                self.links
                    .send(host, Kind::Leave(v1::LeaveJob { job: job.0, reason }));
            }
            ToAgent::Kill { job, reason } => {
                if !self
                    .links
                    .send(host, Kind::Kill(v1::KillJob { job: job.0, reason }))
                {
                    warn!(job = %job, host, "agent not connected; the kill is sent when it reconnects");
                }
            }
            ToAgent::Ack(job) => {
                self.links.ack(host, job);
            }
        }
    }

    /// The launch order of a running job for its agent on `host`; why not,
    /// if its script cannot be had.
    fn launch_order(&self, id: JobId, host: &str) -> Result<v1::LaunchJob, String> {
        let Some(job) = self.state.job(id) else {
            return Err("the job is gone".into());
        };
        // A sub-job runs its array's script.
        let payload = match self
            .durability
            .store()
            .payload(id.array_parent().unwrap_or(id))
        {
            Ok(Some(p)) => p,
            Ok(None) => return Err("its script is missing from the store".into()),
            Err(e) => return Err(format!("its script could not be read: {e}")),
        };
        let mut order = crate::convert::launch(
            job,
            payload,
            self.state.server_name(),
            self.state.config().server.kill_delay,
        );
        order.local_nodes = self.nodes_on(job, host);
        // On a shared node the agent holds the job to its CPUs there.
        for (share, node) in order.shares.iter_mut().zip(&job.exec_nodes) {
            share.shared = self.state.node_by_name(node).is_some_and(|n| n.slots > 1);
        }
        order.array_torque = self
            .state
            .array_of(id)
            .is_some_and(|a| a.spec.style == qmesh_core::array::ArrayStyle::Torque);
        order.shell = qmesh_core::job::options::shell_for(&job.options.shell, host)
            .unwrap_or_default()
            .to_string();
        if order.start_dir.is_empty() && self.settings.jobs.start_in_submit_dir {
            order.start_dir = job.workdir.clone();
        }
        Ok(order)
    }

    /// The nodes of `job` on `host`, in the job's order.
    pub(super) fn nodes_on(&self, job: &qmesh_core::Job, host: &str) -> Vec<String> {
        job.exec_nodes
            .iter()
            .filter(|n| {
                self.state
                    .node_by_name(n)
                    .is_some_and(|node| node.host == host)
            })
            .map(|n| n.to_string())
            .collect()
    }

    /// The JoinJob for one host of a job (sent again after a hello).
    fn join_order(&self, host: &str, id: JobId) -> Option<v1::JoinJob> {
        let job = self.state.job(id)?;
        let nodes = self.nodes_on(job, host);
        // What it may use here: its nodes' here together.
        let here: Vec<_> = job
            .exec_nodes
            .iter()
            .zip(job.node_shares())
            .filter(|(n, _)| nodes.iter().any(|m| *m == n.to_string()))
            .collect();
        let mem = here
            .iter()
            .map(|(_, s)| s.mem)
            .sum::<Option<u64>>()
            .filter(|_| !here.is_empty());
        let shared = here
            .iter()
            .any(|(n, _)| self.state.node_by_name(n).is_some_and(|n| n.slots > 1));
        let cpus = if shared {
            here.iter().map(|(_, s)| s.cpus).sum()
        } else {
            0
        };
        Some(v1::JoinJob {
            job: id.0,
            job_id: job.id.full(self.state.server_name()),
            user: job.owner.user.clone(),
            uid: job.owner.uid,
            gid: job.owner.gid,
            group: job.owner.group.clone(),
            nodes,
            launched_on: self.state.job_host(job).unwrap_or_default().to_string(),
            all_nodes: job.exec_nodes.iter().map(|n| n.to_string()).collect(),
            mem,
            cpus,
        })
    }

    /// A job's end, recorded in the state by dispatch: stored, logged,
    /// mailed; its waiters and dependents answered; its agent told once
    /// the end is durable.
    fn ended(&mut self, ended: Ended, now: Now) {
        let Ended {
            job: id,
            how,
            run,
            was_stopped,
            end,
            ack,
        } = ended;
        if let Some(run) = &run {
            self.logs.ended(&self.state, id, (run, how), now.wall);
        }
        let Some(job) = self.state.job(id) else {
            return;
        };
        info!(job = %id, outcome = ?how, comment = %job.comment, "job ended");
        self.durability.persist(job);
        if how == Finished::Finished {
            self.mail(id, crate::mail::MailEvent::of_end(job), now);
        }
        let charged = match how {
            Finished::Finished => qmesh_core::account::charge_of(job).is_some(),
            // Requeued at a period's end: its run so far was charged.
            Finished::Requeued => job.account.is_some() && was_stopped,
        };
        if charged {
            self.persist_usage();
        }
        self.pacing.mark_dirty();
        self.job_done(id, now);
        // What depended on it is resolved as of the end itself.
        self.end_dependents(id, end, now);
        self.settle_arrays_at(end, now);
        if how == Finished::Finished {
            self.purge_if_asked(id);
        }
        if let Some(host) = ack {
            self.durability
                .when_durable(vec![AfterDurable::Ack { host, job: id }]);
        }
    }
}
