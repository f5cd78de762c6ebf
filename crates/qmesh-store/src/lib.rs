//! qmesh persistence.
//!
//! Write-through: the daemon writes every change here before it answers, and
//! answers only once the change is durable. Writing is batched (group
//! commit): one writer thread applies every change queued while it was
//! busy as one batch and flushes once for all of them, so concurrent
//! submissions share the engine's work instead of paying it each (and do
//! not contend for the engine from many threads).
//!
//! The engine is sled, behind the [`Store`] trait; [`suite`] is the test
//! suite any engine must pass, so a stronger one can be put under it.
//!
//! Durability note: sled's flush on Linux uses `sync_file_range`, not
//! `fsync`. A `kill -9` of the daemon loses nothing that was flushed; a power
//! cut may lose the last writes. See docs/ARCHITECTURE.md.

mod durable;
mod etcd_store;
mod record;
mod sled_store;
pub mod suite;
mod writer;

pub use etcd_store::{EtcdSettings, EtcdStore};
pub use record::{SCHEMA_VERSION, decode, encode};
pub use sled_store::SledStore;
pub use writer::FlushObserver;

use qmesh_core::account::Usage;
use qmesh_core::job::{Job, JobId, JobPayload};
use qmesh_core::server::Config;

/// Why the store could not do what was asked. Cloneable, because one flush
/// error is reported to every change waiting on it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("store I/O failed while trying to {what}: {message}")]
    Io { what: String, message: String },
    #[error("store record {key} is corrupt: {message}")]
    Corrupt { key: String, message: String },
    #[error(
        "the store was written by a newer qmesh (schema {found}); this qmesh reads schema {supported} and older"
    )]
    TooNew { found: u32, supported: u32 },
    #[error("the store is closed")]
    Closed,
    /// The store's engine is out of reach or cannot commit (etcd without
    /// quorum): nothing was changed; trying again later may work.
    #[error("{message}")]
    Unavailable { message: String },
    /// This daemon no longer leads: another qmeshd holds the election, and
    /// the write was refused. It must step down.
    #[error("{message}")]
    Fenced { message: String },
}

/// Everything the daemon needs at start.
#[derive(Clone, Debug, Default)]
pub struct Loaded {
    /// `None` on a new store: the daemon seeds it from its config file.
    pub config: Option<Config>,
    pub jobs: Vec<Job>,
    /// Above every id the store ever held (purged jobs included): the
    /// next id is at least this, and above every loaded job's.
    pub next_id: u64,
    /// The node-hours charged to each group; `None` before the first charge.
    pub usage: Option<Usage>,
    /// Accounting records kept with the changes they record and not yet
    /// confirmed written to the log ([`Change::Outbox`]), by sequence.
    pub outbox: Vec<(u64, Vec<u8>)>,
}

/// Called once the changes queued before it are durable.
pub type OnDurable = Box<dyn FnOnce(Result<(), StoreError>) + Send + 'static>;

/// One change, already encoded, waiting for the writer.
#[derive(Clone, Debug)]
pub enum Change {
    NewJob {
        id: JobId,
        job: Vec<u8>,
        payload: Vec<u8>,
    },
    Job {
        id: JobId,
        record: Vec<u8>,
    },
    Remove(Vec<JobId>),
    Config(Vec<u8>),
    /// The whole usage map, replacing the stored one.
    Usage(Vec<u8>),
    /// Accounting records (encoded by the daemon), by sequence number,
    /// stored in the same atomic batch as the job changes queued with them:
    /// a crash keeps a change and its records, or neither.
    Outbox(Vec<(u64, Vec<u8>)>),
    /// The log has every record up to this sequence number: they leave
    /// the store.
    OutboxWritten(u64),
}

impl Change {
    pub fn new_job(job: &Job, payload: &JobPayload) -> Result<Change, StoreError> {
        Ok(Change::NewJob {
            id: job.id,
            job: encode(job)?,
            payload: encode(payload)?,
        })
    }

    pub fn job(job: &Job) -> Result<Change, StoreError> {
        Ok(Change::Job {
            id: job.id,
            record: encode(job)?,
        })
    }

    pub fn config(config: &Config) -> Result<Change, StoreError> {
        Ok(Change::Config(encode(config)?))
    }

    pub fn usage(usage: &Usage) -> Result<Change, StoreError> {
        Ok(Change::Usage(encode(usage)?))
    }
}

/// A store: reads at any time from any thread; changes go through one
/// writer, in the order they were queued, and are made durable in batches.
///
/// Writes return as soon as the change is queued. A read of a change not
/// yet applied does not see it; the daemon reads only what it knows is
/// durable (a job's script, once its start is).
pub trait Store: Send + Sync + 'static {
    /// Reads everything back (scripts excepted: see [`Store::payload`]).
    fn load(&self) -> Result<Loaded, StoreError>;
    /// The script and environment of a job.
    fn payload(&self, id: JobId) -> Result<Option<JobPayload>, StoreError>;
    /// Queues changes; `done`, if given, runs once they and every change
    /// queued before them are durable (on the writer thread).
    fn write(&self, changes: Vec<Change>, done: Option<OnDurable>);

    /// A new job and its payload, atomically.
    fn put_new_job(&self, job: &Job, payload: &JobPayload) -> Result<(), StoreError> {
        self.write(vec![Change::new_job(job, payload)?], None);
        Ok(())
    }
    /// A changed job.
    fn put_job(&self, job: &Job) -> Result<(), StoreError> {
        self.write(vec![Change::job(job)?], None);
        Ok(())
    }
    /// Forgets jobs (history purge) with their payloads. The store keeps
    /// the highest id it ever held, so ids are never handed out twice.
    fn remove_jobs(&self, ids: &[JobId]) -> Result<(), StoreError> {
        self.write(vec![Change::Remove(ids.to_vec())], None);
        Ok(())
    }
    fn put_config(&self, config: &Config) -> Result<(), StoreError> {
        self.write(vec![Change::config(config)?], None);
        Ok(())
    }
    /// The usage charged to the groups (written after a job's charge).
    fn put_usage(&self, usage: &Usage) -> Result<(), StoreError> {
        self.write(vec![Change::usage(usage)?], None);
        Ok(())
    }
    /// Closes and opens the engine again, after a failure that left it
    /// refusing writes; a store that needs nothing of the kind does nothing.
    fn reopen(&self) -> Result<(), StoreError> {
        Ok(())
    }
    /// Runs `done` once every change queued so far is durable.
    fn on_durable(&self, done: OnDurable) {
        self.write(Vec::new(), Some(done));
    }
    /// Makes everything queued so far durable, and waits for it.
    fn sync(&self) -> Result<(), StoreError> {
        let (tx, rx) = std::sync::mpsc::channel();
        self.on_durable(Box::new(move |r| {
            let _ = tx.send(r);
        }));
        rx.recv().unwrap_or(Err(StoreError::Closed))
    }
}
