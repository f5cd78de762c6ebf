//! The sled engine. Trees: `meta` (schema version), `config` (the qmgr
//! configuration, one record), `jobs` (keys `J`+id for job records, `S`+id
//! for payloads, `N` for the next id). A job, its payload and the next id
//! share one tree so a submission is a single atomic batch.

use std::path::Path;

use qmesh_core::job::{Job, JobId, JobPayload};
use qmesh_core::server::Config;

use crate::durability::Durability;
use crate::record::{SCHEMA_VERSION, decode, encode};
use crate::{Loaded, OnDurable, Store, StoreError};

const JOB: u8 = b'J';
const PAYLOAD: u8 = b'S';
const NEXT_ID: &[u8] = b"N";
const CONFIG: &[u8] = b"server";
const SCHEMA: &[u8] = b"schema";

pub struct SledStore {
    db: sled::Db,
    meta: sled::Tree,
    config: sled::Tree,
    jobs: sled::Tree,
    durability: Durability,
}

fn io(what: &str) -> impl Fn(sled::Error) -> StoreError + '_ {
    move |e| StoreError::Io {
        what: what.to_string(),
        message: e.to_string(),
    }
}

fn key(kind: u8, id: JobId) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[0] = kind;
    k[1..].copy_from_slice(&id.0.to_be_bytes());
    k
}

impl SledStore {
    /// Opens (or creates) the store in `dir`.
    pub fn open(dir: &Path) -> Result<SledStore, StoreError> {
        let what = format!("open the store in {}", dir.display());
        let db = sled::Config::new()
            .path(dir)
            .cache_capacity(256 * 1024 * 1024)
            .flush_every_ms(Some(1000))
            .open()
            .map_err(io(&what))?;
        let meta = db.open_tree("meta").map_err(io(&what))?;
        let config = db.open_tree("config").map_err(io(&what))?;
        let jobs = db.open_tree("jobs").map_err(io(&what))?;
        match meta.get(SCHEMA).map_err(io(&what))? {
            Some(v) => {
                let found = std::str::from_utf8(&v)
                    .ok()
                    .and_then(|s| s.parse::<u32>().ok())
                    .ok_or_else(|| StoreError::Corrupt {
                        key: "meta/schema".into(),
                        message: "not a number".into(),
                    })?;
                if found > SCHEMA_VERSION {
                    return Err(StoreError::TooNew {
                        found,
                        supported: SCHEMA_VERSION,
                    });
                }
            }
            None => {
                meta.insert(SCHEMA, SCHEMA_VERSION.to_string().as_bytes())
                    .map_err(io(&what))?;
            }
        }
        let flush_db = db.clone();
        let durability =
            Durability::start(move || flush_db.flush().map(|_| ()).map_err(io("flush the store")))?;
        Ok(SledStore {
            db,
            meta,
            config,
            jobs,
            durability,
        })
    }

    /// Bytes the store takes on disk.
    pub fn size_on_disk(&self) -> u64 {
        self.db.size_on_disk().unwrap_or(0)
    }
}

impl Drop for SledStore {
    fn drop(&mut self) {
        self.durability.close();
        let _ = self.db.flush();
        let _ = &self.meta;
    }
}

impl Store for SledStore {
    fn load(&self) -> Result<Loaded, StoreError> {
        let config = match self
            .config
            .get(CONFIG)
            .map_err(io("read the configuration"))?
        {
            Some(bytes) => Some(decode::<Config>("config/server", &bytes)?),
            None => None,
        };
        let mut jobs = Vec::new();
        for entry in self.jobs.scan_prefix([JOB]) {
            let (k, v) = entry.map_err(io("read the jobs"))?;
            let label = match k.get(1..9).and_then(|b| <[u8; 8]>::try_from(b).ok()) {
                Some(b) => format!("job {}", u64::from_be_bytes(b)),
                None => "a job".to_string(),
            };
            jobs.push(decode::<Job>(&label, &v)?);
        }
        let next_id = match self.jobs.get(NEXT_ID).map_err(io("read the next job id"))? {
            Some(bytes) => decode::<u64>("jobs/N", &bytes)?,
            None => 1,
        };
        Ok(Loaded {
            config,
            jobs,
            next_id,
        })
    }

    fn put_new_job(&self, job: &Job, payload: &JobPayload, next_id: u64) -> Result<(), StoreError> {
        let mut batch = sled::Batch::default();
        batch.insert(&key(PAYLOAD, job.id), encode(payload)?);
        batch.insert(&key(JOB, job.id), encode(job)?);
        batch.insert(NEXT_ID, encode(&next_id)?);
        self.jobs
            .apply_batch(batch)
            .map_err(io(&format!("store new job {}", job.id)))
    }

    fn put_job(&self, job: &Job) -> Result<(), StoreError> {
        self.jobs
            .insert(key(JOB, job.id), encode(job)?)
            .map(|_| ())
            .map_err(io(&format!("store job {}", job.id)))
    }

    fn payload(&self, id: JobId) -> Result<Option<JobPayload>, StoreError> {
        match self
            .jobs
            .get(key(PAYLOAD, id))
            .map_err(io(&format!("read the script of job {id}")))?
        {
            Some(bytes) => Ok(Some(decode(&format!("script of job {id}"), &bytes)?)),
            None => Ok(None),
        }
    }

    fn remove_jobs(&self, ids: &[JobId]) -> Result<(), StoreError> {
        let mut batch = sled::Batch::default();
        for &id in ids {
            batch.remove(&key(JOB, id));
            batch.remove(&key(PAYLOAD, id));
        }
        self.jobs
            .apply_batch(batch)
            .map_err(io("remove finished jobs"))
    }

    fn put_config(&self, config: &Config) -> Result<(), StoreError> {
        self.config
            .insert(CONFIG, encode(config)?)
            .map(|_| ())
            .map_err(io("store the configuration"))
    }

    fn on_durable(&self, done: OnDurable) {
        self.durability.register(done);
    }

    fn sync(&self) -> Result<(), StoreError> {
        self.db.flush().map(|_| ()).map_err(io("flush the store"))
    }
}
