//! qmesh persistence.
//!
//! Write-through: the daemon writes every change here before it answers, and
//! answers only once the change is durable. Durability is batched (group
//! commit): a flusher thread flushes once for every change that arrived
//! while the previous flush ran, so many concurrent submissions share one
//! flush instead of paying one each.
//!
//! The engine is sled, behind the [`Store`] trait; [`suite`] is the test
//! suite any engine must pass, so a stronger one can be put under it.
//!
//! Durability note: sled's flush on Linux uses `sync_file_range`, not
//! `fsync`. A `kill -9` of the daemon loses nothing that was flushed; a power
//! cut may lose the last writes. See docs/ARCHITECTURE.md.

mod durability;
mod record;
mod sled_store;
pub mod suite;

pub use record::{SCHEMA_VERSION, decode, encode};
pub use sled_store::SledStore;

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
}

/// Everything the daemon needs at start.
#[derive(Clone, Debug, Default)]
pub struct Loaded {
    /// `None` on a new store: the daemon seeds it from its config file.
    pub config: Option<Config>,
    pub jobs: Vec<Job>,
    /// The next job id to hand out (never reused, even after purges).
    pub next_id: u64,
}

/// Called once the changes written before it was registered are durable.
pub type OnDurable = Box<dyn FnOnce(Result<(), StoreError>) + Send + 'static>;

pub trait Store: Send + Sync + 'static {
    /// Reads everything back (scripts excepted: see [`Store::payload`]).
    fn load(&self) -> Result<Loaded, StoreError>;
    /// A new job, its payload and the next id, atomically.
    fn put_new_job(&self, job: &Job, payload: &JobPayload, next_id: u64) -> Result<(), StoreError>;
    /// A changed job.
    fn put_job(&self, job: &Job) -> Result<(), StoreError>;
    /// The script and environment of a job.
    fn payload(&self, id: JobId) -> Result<Option<JobPayload>, StoreError>;
    /// Forgets jobs (history purge) with their payloads.
    fn remove_jobs(&self, ids: &[JobId]) -> Result<(), StoreError>;
    fn put_config(&self, config: &Config) -> Result<(), StoreError>;
    /// Registers `done` to run once every write made before this call is
    /// durable. Returns at once; `done` runs on the flusher thread.
    fn on_durable(&self, done: OnDurable);
    /// Makes everything written so far durable, and waits for it.
    fn sync(&self) -> Result<(), StoreError>;
}
