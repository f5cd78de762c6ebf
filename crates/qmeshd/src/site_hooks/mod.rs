//! Site hooks run (PBS Pro's hooks, Torque's submit_filter, Slurm's
//! job_submit): the executables qmgr imported, run off the scheduler task.
//!
//! The task publishes the configuration's hooks ([`Publisher`]) whenever
//! qmgr changes them; the services read the table and run the hooks of
//! their request before it becomes an event, so a slow hook holds up its
//! own caller and nobody else. The content is written once per version to
//! `STATE_DIR/hooks/NAME-HASH` (mode 0700) and run from there.
//!
//! * `queuejob`: qsub's submission, before it is queued ([`SiteHooks::queuejob`]);
//! * `modifyjob`: a qalter, per job, before it is applied;
//! * `runjob`: a job chosen to start, before it is launched (the task asks
//!   [`SiteHooks::runjob`] and hears the verdict as an event);
//! * `periodic`: every `freq` seconds ([`periodic`]).
//!
//! The document each reads and the answers it may give: `doc.rs`.

pub mod doc;
pub mod periodic;
mod resident;
mod run;

use std::collections::HashMap;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use qmesh_core::Submission;
use qmesh_core::hook::{Hook, HookEvent, running_at};
use qmesh_core::job::JobPayload;
use qmesh_core::qalter::Alteration;
use serde_json::Value;
use tokio::sync::watch;
use tracing::{debug, warn};

use crate::identity::Peer;
pub use run::HookFailure;

/// What the task publishes: the server's name and every hook.
#[derive(Debug, Default)]
pub struct Table {
    pub server: String,
    pub hooks: Vec<Hook>,
}

/// The task's end of the table.
pub type Publisher = watch::Sender<Arc<Table>>;

/// A hook's verdict on a request, as the service answers it.
#[derive(Debug)]
pub struct Refusal {
    pub hook: String,
    pub failure: HookFailure,
}

impl Refusal {
    /// The gRPC status: a rejection is the site saying no; a fault is
    /// the site's hook broken. Neither is worth a retry.
    pub fn status(&self) -> tonic::Status {
        let text = self.failure.explain(&self.hook);
        if self.failure.is_rejection() {
            tonic::Status::permission_denied(text)
        } else {
            tonic::Status::failed_precondition(text)
        }
    }
}

/// Persistent hooks' processes by name: the content's hash and its slot.
type Residents = HashMap<String, (u64, Arc<resident::Resident>)>;

/// The services' end: the table and where hooks' files are written.
#[derive(Clone)]
pub struct SiteHooks {
    table: watch::Receiver<Arc<Table>>,
    dir: Arc<PathBuf>,
    /// Each hook's file written for its current content: (hash, path).
    files: Arc<Mutex<HashMap<String, (u64, PathBuf)>>>,
    /// Persistent hooks' processes, by name, for the content they run.
    residents: Arc<Mutex<Residents>>,
}

impl SiteHooks {
    /// A table no hook is in yet, its files to go under `dir` (emptied:
    /// what a past run left is stale).
    pub fn new(dir: PathBuf) -> (SiteHooks, Publisher) {
        let (tx, rx) = watch::channel(Arc::new(Table::default()));
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for entry in entries.flatten() {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        let hooks = SiteHooks {
            table: rx,
            dir: Arc::new(dir),
            files: Arc::default(),
            residents: Arc::default(),
        };
        (hooks, tx)
    }

    /// The hooks now, and the server's name.
    pub fn table(&self) -> Arc<Table> {
        self.table.borrow().clone()
    }

    /// A receiver that wakes when the table changes.
    pub fn watch(&self) -> watch::Receiver<Arc<Table>> {
        self.table.clone()
    }

    /// Whether any hook runs at `event` (a cheap look for the callers'
    /// fast path).
    pub fn any_at(&self, event: HookEvent) -> bool {
        self.table.borrow().hooks.iter().any(|h| h.runs_at(event))
    }

    /// Runs the queuejob hooks in order over a submission; each sees the
    /// one before's changes. Nothing to run costs a look at the table.
    pub async fn queuejob(
        &self,
        peer: &Peer,
        sub: &mut Submission,
        payload: &mut JobPayload,
    ) -> Result<(), Refusal> {
        let table = self.table();
        for hook in running_at(&table.hooks, HookEvent::QueueJob) {
            let asker = doc::Asker {
                peer,
                server: &table.server,
            };
            let mut d = doc::head("queuejob", &hook.name, &asker);
            d.insert("job".into(), doc::submission(sub, payload));
            if let Some(answer) = self.run(hook, HookEvent::QueueJob, d).await? {
                doc::apply_to_submission(answer, sub, payload).map_err(|why| Refusal {
                    hook: hook.name.clone(),
                    failure: HookFailure::Garbage(why),
                })?;
            }
        }
        Ok(())
    }

    /// Runs the modifyjob hooks over one job's alteration.
    pub async fn modifyjob(
        &self,
        peer: &Peer,
        job_id: &str,
        alt: &mut Alteration,
    ) -> Result<(), Refusal> {
        let table = self.table();
        for hook in running_at(&table.hooks, HookEvent::ModifyJob) {
            let asker = doc::Asker {
                peer,
                server: &table.server,
            };
            let mut d = doc::head("modifyjob", &hook.name, &asker);
            d.insert("job_id".into(), Value::String(job_id.to_string()));
            d.insert("job".into(), doc::alteration(alt));
            if let Some(answer) = self.run(hook, HookEvent::ModifyJob, d).await? {
                doc::apply_to_alteration(answer, alt).map_err(|why| Refusal {
                    hook: hook.name.clone(),
                    failure: HookFailure::Garbage(why),
                })?;
            }
        }
        Ok(())
    }

    /// Runs the runjob hooks over a job about to start: they accept or
    /// reject it (what they print is not read).
    pub async fn runjob(&self, job: Value) -> Result<(), Refusal> {
        let table = self.table();
        for hook in running_at(&table.hooks, HookEvent::RunJob) {
            let mut d = serde_json::Map::new();
            d.insert("event".into(), "runjob".into());
            d.insert("hook".into(), hook.name.clone().into());
            d.insert("server".into(), table.server.clone().into());
            d.insert("job".into(), job.clone());
            self.run(hook, HookEvent::RunJob, d).await?;
        }
        Ok(())
    }

    /// One hook's run over its document, logged.
    async fn run(
        &self,
        hook: &Hook,
        event: HookEvent,
        d: serde_json::Map<String, Value>,
    ) -> Result<Option<Value>, Refusal> {
        let refuse = |failure| Refusal {
            hook: hook.name.clone(),
            failure,
        };
        let file = self
            .file_for(hook)
            .map_err(|e| refuse(HookFailure::NotStarted(e)))?;
        let input = serde_json::to_vec(&Value::Object(d)).unwrap_or_default();
        let began = Instant::now();
        let how = run::Run {
            name: &hook.name,
            event: event.as_str(),
            file: &file,
            content: &hook.content,
            content_type: &hook.content_type,
            alarm: hook.alarm,
        };
        let result = if hook.persistent {
            self.resident(hook).ask(&how, &input).await
        } else {
            run::run(&how, &input).await
        };
        let took = began.elapsed();
        match &result {
            Ok(_) => debug!(hook = %hook.name, event = event.as_str(), ?took, "hook accepted"),
            Err(f) if f.is_rejection() => {
                debug!(hook = %hook.name, event = event.as_str(), ?took, "hook rejected")
            }
            Err(f) => warn!(
                hook = %hook.name, event = event.as_str(), ?took,
                "{}", f.explain(&hook.name)
            ),
        }
        result.map_err(refuse)
    }

    /// A persistent hook's process slot for its current content; one for
    /// an older content is dropped, which kills its process.
    fn resident(&self, hook: &Hook) -> Arc<resident::Resident> {
        let hash = fnv1a(&hook.content);
        let mut residents = self.residents.lock().unwrap_or_else(|p| p.into_inner());
        residents.retain(|name, _| self.table.borrow().hooks.iter().any(|h| &h.name == name));
        match residents.get(&hook.name) {
            Some((h, r)) if *h == hash => r.clone(),
            _ => {
                let r = Arc::new(resident::Resident::default());
                residents.insert(hook.name.clone(), (hash, r.clone()));
                r
            }
        }
    }

    /// The hook's file for its current content, written if it is not yet.
    fn file_for(&self, hook: &Hook) -> Result<PathBuf, String> {
        let hash = fnv1a(&hook.content);
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((h, path)) = files.get(&hook.name)
            && *h == hash
        {
            return Ok(path.clone());
        }
        let path = self.dir.join(format!("{}-{hash:016x}", hook.name));
        write_executable(&self.dir, &path, &hook.content)
            .map_err(|e| format!("writing {} failed: {e}", path.display()))?;
        if let Some((_, old)) = files.insert(hook.name.clone(), (hash, path.clone()))
            && old != path
        {
            let _ = std::fs::remove_file(old);
        }
        Ok(path)
    }
}

/// Writes `content` to `path` (mode 0700) through a temporary file, so a
/// run never sees half a hook.
fn write_executable(dir: &Path, path: &Path, content: &[u8]) -> std::io::Result<()> {
    crate::paths::ensure_dir(dir, 0o700).map_err(std::io::Error::other)?;
    let tmp = path.with_extension("new");
    {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o700)
            .open(&tmp)?;
        f.write_all(content)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}

/// FNV-1a: names a content's version in its file name.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Publishes the configuration's hooks to the services.
pub fn publish(
    publisher: &Publisher,
    server: &str,
    hooks: &std::collections::BTreeMap<String, Hook>,
) {
    let same = {
        let now = publisher.borrow();
        now.server == server
            && now.hooks.len() == hooks.len()
            && now.hooks.iter().eq(hooks.values())
    };
    if !same {
        publisher.send_replace(Arc::new(Table {
            server: server.to_string(),
            hooks: hooks.values().cloned().collect(),
        }));
    }
}

#[cfg(test)]
mod tests;
