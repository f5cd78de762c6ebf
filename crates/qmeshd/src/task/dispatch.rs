//! The task's edge of [`crate::dispatch`]: events go in with the time
//! of the event being handled, and the orders that come out are carried
//! out here, where the sockets, the store and the logs are. Daemon
//! messages become wire messages only here (a launch order needs the
//! job's script from the store; a join, the job's share of each host).

use std::collections::HashMap;

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
        let mut shares = HostShares::default();
        for order in orders {
            match order {
                Order::Send { host, message } => self.send_to(&host, message, now, &mut shares),
                Order::Ended(ended) => self.ended(ended, now),
            }
        }
    }

    fn send_to(&mut self, host: &str, message: ToAgent, now: Now, shares: &mut HostShares) {
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
                let Some(order) = self.join_order(host, id, shares) else {
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
    fn join_order(&self, host: &str, id: JobId, shares: &mut HostShares) -> Option<v1::JoinJob> {
        let job = self.state.job(id)?;
        let share = shares.of(&self.state, job).remove(host).unwrap_or_default();
        Some(v1::JoinJob {
            job: id.0,
            job_id: job.id.full(self.state.server_name()),
            user: job.owner.user.clone(),
            uid: job.owner.uid,
            gid: job.owner.gid,
            group: job.owner.group.clone(),
            // What it may use here: its nodes' here together.
            mem: share.mem.filter(|_| !share.nodes.is_empty()),
            cpus: if share.shared { share.cpus } else { 0 },
            nodes: share.nodes,
            launched_on: self.state.job_host(job).unwrap_or_default().to_string(),
            // Not sent: no agent reads it, and with one join per host it
            // would make a job's start O(hosts²) in bytes.
            all_nodes: Vec::new(),
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

/// One host's share of a job: its nodes there (in the job's order), their
/// memory together (none if any is unlimited), their CPUs, and whether
/// any is shared.
#[derive(Debug, Default)]
struct HostShare {
    nodes: Vec<String>,
    mem: Option<u64>,
    cpus: u32,
    shared: bool,
}

/// Per job, each host's share, read off the job once for all its hosts;
/// each host's share is taken as its join is made.
#[derive(Default)]
pub(super) struct HostShares(HashMap<JobId, HashMap<String, HostShare>>);

impl HostShares {
    fn of(
        &mut self,
        state: &qmesh_core::State,
        job: &qmesh_core::Job,
    ) -> &mut HashMap<String, HostShare> {
        self.0.entry(job.id).or_insert_with(|| {
            let mut by_host: HashMap<String, HostShare> = HashMap::new();
            for (name, share) in job.exec_nodes.iter().zip(job.node_shares()) {
                let Some(node) = state.node_by_name(name) else {
                    continue;
                };
                let here = by_host
                    .entry(node.host.clone())
                    .or_insert_with(|| HostShare {
                        mem: Some(0),
                        ..HostShare::default()
                    });
                here.nodes.push(name.to_string());
                here.mem = here.mem.zip(share.mem).map(|(a, b)| a + b);
                here.cpus += share.cpus;
                here.shared |= node.slots > 1;
            }
            by_host
        })
    }
}
