//! Jobs launched on another host that hold nodes of this one (the hosts a
//! job spans after its first). The agent of the first host runs the
//! script, with every node in `QMESH_NODEFILE`; the agents of the others
//! mark their nodes busy, run the site's prologue when the job joins and
//! its epilogue when it leaves, and report.
//!
//! Each joined job is a small record in `SPOOL/joined/SEQ.json`
//! ([`crate::record::JoinedRecord`]), written before the prologue runs
//! and removed after the epilogue, so an agent that restarts still knows
//! what it holds (its Hello lists them) and a join the daemon sends again
//! after a reconnection runs nothing twice.
//! Prologue and epilogue follow PBS (see [`crate::hooks`]): a failed
//! prologue fails the join, and the daemon ends the job.
//!
//! Where the agent has cgroups, a joined job gets its cgroup here too,
//! with what it may use on this host; pbsdsh's tasks for it join it, and
//! whatever is in it is killed when the job leaves.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use qmesh_proto::v1;
use tokio::sync::mpsc::UnboundedSender;
use tracing::{info, warn};

use crate::cgroup::job::{Allowance, JobCgroup};
use crate::error::{AgentError, Result};
use crate::hooks::{self, HOOK_TIMEOUT, HookJob, Hooks};
use crate::record::{Cgroups, JoinedRecord as Record, write_atomic};
use crate::supervise::Event;

/// The joined jobs of this agent.
#[derive(Clone)]
pub struct Joined {
    inner: Arc<Inner>,
}

struct Inner {
    dir: PathBuf,
    hooks: Hooks,
    cgroups: Option<Cgroups>,
    events: UnboundedSender<Event>,
    /// Joins and leaves run one at a time, in the order they came.
    busy: tokio::sync::Mutex<()>,
}

impl Joined {
    pub fn open(
        spool_root: &Path,
        hooks: Hooks,
        cgroups: Option<Cgroups>,
        events: UnboundedSender<Event>,
    ) -> Result<Joined> {
        let dir = spool_root.join("joined");
        std::fs::create_dir_all(&dir).map_err(|e| AgentError::io("create", &dir, e))?;
        Ok(Joined {
            inner: Arc::new(Inner {
                dir,
                hooks,
                cgroups,
                events,
                busy: tokio::sync::Mutex::new(()),
            }),
        })
    }

    fn path(&self, job: u64) -> PathBuf {
        self.inner.dir.join(format!("{job}.json"))
    }

    fn read(&self, job: u64) -> Option<Record> {
        let text = std::fs::read(self.path(job)).ok()?;
        serde_json::from_slice(&text).ok()
    }

    fn write(&self, record: &Record) -> Result<()> {
        let path = self.path(record.job);
        let bytes = serde_json::to_vec(record).map_err(|source| AgentError::Json {
            path: path.clone(),
            source,
        })?;
        write_atomic(&path, &bytes, 0o600)
    }

    /// The jobs held, for the Hello.
    pub fn jobs(&self) -> Vec<u64> {
        let mut jobs: Vec<u64> = std::fs::read_dir(&self.inner.dir)
            .map(|entries| {
                entries
                    .flatten()
                    .filter_map(|e| e.file_name().to_str()?.strip_suffix(".json")?.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        jobs.sort_unstable();
        jobs
    }

    /// The ids of the jobs held (`12.srv`); `None` if a record cannot be
    /// read, so that a caller removing what no job owns removes nothing.
    pub fn job_ids(&self) -> Option<Vec<String>> {
        self.jobs()
            .into_iter()
            .map(|job| self.read(job).map(|r| r.job_id))
            .collect()
    }

    /// The nodes held by joined jobs, for refusing a launch onto them.
    pub fn held_nodes(&self) -> Vec<String> {
        self.jobs()
            .into_iter()
            .filter_map(|job| self.read(job))
            .flat_map(|r| r.nodes)
            .collect()
    }

    /// A JoinJob: keep the record, run the prologue once, answer. Runs in
    /// its own task so a slow prologue holds up no other order.
    pub fn join(&self, order: v1::JoinJob) {
        let this = self.clone();
        tokio::spawn(async move {
            let answer = this.join_now(order).await;
            let _ = this.inner.events.send(Event::Joined(answer));
        });
    }

    async fn join_now(&self, order: v1::JoinJob) -> v1::JobJoined {
        let _one = self.inner.busy.lock().await;
        let answer = |ok: bool, message: String| v1::JobJoined {
            job: order.job,
            ok,
            message,
        };
        if let Some(Record {
            outcome: Some((ok, message)),
            ..
        }) = self.read(order.job)
        {
            return answer(ok, message);
        }
        let mut record = Record {
            job: order.job,
            job_id: order.job_id.clone(),
            user: order.user.clone(),
            group: order.group.clone(),
            nodes: order.nodes.clone(),
            launched_on: order.launched_on.clone(),
            outcome: None,
        };
        if let Err(e) = self.write(&record) {
            return answer(false, format!("cannot keep the job in the spool: {e}"));
        }
        info!(job = order.job, job_id = %order.job_id, nodes = ?order.nodes,
            launched_on = %order.launched_on, "joined a job launched on another host");
        if let Some(cgroups) = &self.inner.cgroups {
            let allowance = Allowance {
                mem: order.mem,
                cpus: Some(order.cpus).filter(|&n| n > 0),
            };
            let cgroup = JobCgroup::of(cgroups, &order.job_id);
            if let Err(e) = cgroup.create(allowance) {
                warn!(job = order.job, "the job runs here without its cgroup: {e}");
            }
        }
        let outcome = match &self.inner.hooks.prologue {
            Some(prologue) => run_hook("prologue", prologue, &record).await,
            None => Ok(()),
        };
        let (ok, message) = match outcome {
            Ok(()) => (true, String::new()),
            Err(why) => {
                warn!(job = order.job, "{why}");
                (false, why)
            }
        };
        record.outcome = Some((ok, message.clone()));
        if let Err(e) = self.write(&record) {
            warn!(job = order.job, error = %e, "cannot record the prologue's outcome");
        }
        answer(ok, message)
    }

    /// A LeaveJob: run the epilogue, forget the job. Leaving a job not
    /// held does nothing.
    pub fn leave(&self, job: u64, reason: String) {
        let this = self.clone();
        tokio::spawn(async move {
            let _one = this.inner.busy.lock().await;
            let Some(record) = this.read(job) else {
                return;
            };
            if let Some(epilogue) = &this.inner.hooks.epilogue
                && let Err(why) = run_hook("epilogue", epilogue, &record).await
            {
                warn!(job, "{why}");
            }
            if let Some(cgroups) = &this.inner.cgroups {
                let cgroup = JobCgroup::of(cgroups, &record.job_id);
                let removed = tokio::task::spawn_blocking(move || {
                    cgroup.remove(std::time::Duration::from_secs(5))
                })
                .await;
                if let Ok(Err(e)) = removed {
                    warn!(job, "cannot remove the job's cgroup: {e}");
                }
            }
            let _ = std::fs::remove_file(this.path(job));
            info!(job, reason = %reason, "left the job; its nodes here are free");
        });
    }
}

impl Joined {
    /// `qsig -s suspend|resume` of a job held here: its cgroup here is
    /// frozen or thawed (its pbsdsh tasks are also sent SIGSTOP or SIGCONT
    /// by the caller, for hosts without a freezer). Other orders, and jobs
    /// not held here, do nothing.
    pub fn pause(&self, job: u64, order: crate::signals::Order) {
        use crate::signals::Order;
        if !matches!(order, Order::Suspend | Order::Resume) {
            return;
        }
        let (Some(cgroups), Some(record)) = (&self.inner.cgroups, self.read(job)) else {
            return;
        };
        let cgroup = JobCgroup::of(cgroups, &record.job_id);
        tokio::task::spawn_blocking(move || {
            let done = match order {
                Order::Suspend => cgroup.freeze(std::time::Duration::from_secs(2)),
                _ => cgroup.thaw(),
            };
            match done {
                Ok(()) => info!(job, order = order.name(), "the job's cgroup here: done"),
                Err(e) => warn!(job, order = order.name(), "the job's cgroup here: {e}"),
            }
        });
    }
}

/// Runs a prologue or epilogue (see [`crate::hooks`]), with the host
/// that launched the job in `QMESH_LAUNCHED_ON`.
async fn run_hook(what: &str, program: &Path, record: &Record) -> std::result::Result<(), String> {
    let job = HookJob {
        job_id: &record.job_id,
        user: &record.user,
        group: &record.group,
        nodes: &record.nodes,
    };
    let mut cmd = tokio::process::Command::from(hooks::command(program, &job));
    cmd.env("QMESH_LAUNCHED_ON", &record.launched_on)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = cmd
        .spawn()
        .map_err(|e| hooks::unstartable(what, program, &e))?;
    let output = tokio::time::timeout(HOOK_TIMEOUT, child.wait_with_output())
        .await
        .map_err(|_| hooks::overran(what, program))?
        .map_err(|e| {
            format!(
                "the {what} {} could not be waited for: {e}",
                program.display()
            )
        })?;
    match hooks::failure(what, program, output.status, &output.stderr) {
        None => Ok(()),
        Some(why) => Err(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn order(job: u64) -> v1::JoinJob {
        v1::JoinJob {
            job,
            job_id: format!("{job}.srv"),
            user: "alice".into(),
            group: "users".into(),
            nodes: vec!["b0".into(), "b1".into()],
            launched_on: "a".into(),
            ..Default::default()
        }
    }

    fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[tokio::test]
    async fn a_join_runs_the_prologue_once_and_a_leave_the_epilogue() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        let hooks = Hooks {
            prologue: Some(script(
                dir.path(),
                "prologue",
                &format!("echo \"pro $1 $2 $3 $QMESH_NODES\" >> {}", log.display()),
            )),
            epilogue: Some(script(
                dir.path(),
                "epilogue",
                &format!("echo \"epi $1\" >> {}", log.display()),
            )),
            checkpoint: None,
        };
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let joined = Joined::open(dir.path(), hooks, None, tx).unwrap();
        joined.join(order(7));
        let Some(Event::Joined(answer)) = rx.recv().await else {
            panic!("no answer")
        };
        assert!(answer.ok, "{answer:?}");
        assert_eq!(joined.jobs(), [7]);
        assert_eq!(joined.held_nodes(), ["b0", "b1"]);
        // Sent again after a reconnection: answered, not run again.
        joined.join(order(7));
        let Some(Event::Joined(again)) = rx.recv().await else {
            panic!("no answer")
        };
        assert!(again.ok);
        joined.leave(7, "ended".into());
        // The leave runs in its own task; a join of another job after it
        // waits for it (one at a time).
        joined.join(order(8));
        rx.recv().await.unwrap();
        assert_eq!(joined.jobs(), [8]);
        let text = std::fs::read_to_string(&log).unwrap();
        assert_eq!(
            text,
            "pro 7.srv alice users b0,b1\nepi 7.srv\npro 8.srv alice users b0,b1\n"
        );
    }

    #[tokio::test]
    async fn a_failing_prologue_fails_the_join_with_its_words() {
        let dir = tempfile::tempdir().unwrap();
        let hooks = Hooks {
            prologue: Some(script(
                dir.path(),
                "prologue",
                "echo 'scratch not mounted' >&2; exit 3",
            )),
            epilogue: None,
            checkpoint: None,
        };
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let joined = Joined::open(dir.path(), hooks, None, tx).unwrap();
        joined.join(order(9));
        let Some(Event::Joined(answer)) = rx.recv().await else {
            panic!("no answer")
        };
        assert!(!answer.ok);
        assert!(
            answer
                .message
                .contains("failed (exit status: 3): scratch not mounted"),
            "{}",
            answer.message
        );
    }
}
