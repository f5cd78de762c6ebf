//! The etcd engine: the store kept by an etcd cluster, so that it outlives
//! any one host and a standby qmeshd can take over (docs/HA.md).
//!
//! Keys, under the site's prefix (several clusters can share one etcd):
//! `schema`, `config`, `usage`, `next` (the next job id after a purge),
//! `jobs/<id>` (a job's record), `scripts/<id>` (its script and
//! environment, apart: a job's changes do not carry its script again),
//! `outbox/<seq>` (accounting records waiting for the log), and `leader`
//! (the election key, `qmeshd`'s). Ids are 16 hex digits, so key order is
//! id order.
//!
//! Group commit maps onto transactions: a batch of the writer is as few
//! transactions as etcd's limits allow (`--max-txn-ops`, 128 by default,
//! and `--max-request-bytes`, 1.5 MiB), sent one after the other; a write
//! (one turn of the scheduler task: a change and its accounting records)
//! is never split between two unless it alone is over the limits, and
//! then its changes go before its records: a crash between them leaves a
//! change without its record, which the start-up check of the log writes
//! back, never a record of a change that did not happen. A batch is
//! durable when etcd answers: its quorum has it on disk.
//!
//! Fencing: once [`EtcdStore::fence`] is given the leader's term, every
//! transaction compares the election key's creation revision with it. A
//! deposed leader's write is refused whole ([`StoreError::Fenced`]) and
//! the daemon is told at once ([`EtcdStore::on_fenced`]).
//!
//! A standby keeps a warm copy of the prefix ([`EtcdStore::mirror`],
//! `mirror.rs`): on takeover, [`Store::load`] reads it from memory.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use qmesh_core::account::Usage;
use qmesh_core::job::{Job, JobId, JobPayload};
use qmesh_core::server::Config;
use qmesh_etcd::{Client, EtcdError, Options, Term, pb};

use crate::record::{SCHEMA_VERSION, decode, encode};
use crate::writer::{SharedObserver, Writer};
use crate::{Change, Loaded, OnDurable, Store, StoreError};

mod mirror;
mod upkeep;
pub use mirror::Mirror;

/// How to reach the etcd that keeps the store.
#[derive(Clone, Debug)]
pub struct EtcdSettings {
    pub client: Options,
    /// Every key qmesh writes starts with this (`/qmesh/<cluster>/`).
    pub prefix: String,
    /// Operations per transaction (etcd's `--max-txn-ops`).
    pub max_txn_ops: usize,
    /// Bytes per transaction, with room under etcd's `--max-request-bytes`.
    pub max_txn_bytes: usize,
    /// How often the leader compacts etcd's history; `None`: never.
    pub compact_every: Option<Duration>,
}

impl EtcdSettings {
    pub fn new(endpoints: Vec<String>, prefix: &str) -> EtcdSettings {
        EtcdSettings {
            client: Options::new(endpoints),
            prefix: prefix.to_string(),
            max_txn_ops: 128,
            max_txn_bytes: 1024 * 1024,
            compact_every: None,
        }
    }
}

/// The keys of one cluster's store.
#[derive(Clone, Debug)]
pub struct Keys {
    prefix: Vec<u8>,
}

impl Keys {
    fn under(&self, rest: &str) -> Vec<u8> {
        let mut k = self.prefix.clone();
        k.extend_from_slice(rest.as_bytes());
        k
    }
    pub fn prefix(&self) -> &[u8] {
        &self.prefix
    }
    pub fn leader(&self) -> Vec<u8> {
        self.under("leader")
    }
    fn schema(&self) -> Vec<u8> {
        self.under("schema")
    }
    fn config(&self) -> Vec<u8> {
        self.under("config")
    }
    fn usage(&self) -> Vec<u8> {
        self.under("usage")
    }
    fn next(&self) -> Vec<u8> {
        self.under("next")
    }
    fn job(&self, id: JobId) -> Vec<u8> {
        self.under(&format!("jobs/{:016x}", id.0))
    }
    fn script(&self, id: JobId) -> Vec<u8> {
        self.under(&format!("scripts/{:016x}", id.0))
    }
    fn outbox(&self, seq: u64) -> Vec<u8> {
        self.under(&format!("outbox/{seq:016x}"))
    }
    /// What a key under the prefix is.
    fn kind<'a>(&self, key: &'a [u8]) -> Option<(&'a str, Option<u64>)> {
        let rest = std::str::from_utf8(key.strip_prefix(self.prefix.as_slice())?).ok()?;
        match rest.split_once('/') {
            Some((kind, hex)) => Some((kind, u64::from_str_radix(hex, 16).ok())),
            None => Some((rest, None)),
        }
    }
}

/// Called when a write is fenced off: another qmeshd leads.
pub type OnFenced = Box<dyn Fn(&str) + Send + Sync>;

/// The etcd store.
pub struct EtcdStore {
    /// Its own runtime: the store is called from plain threads (the
    /// writer) and from the daemon's tasks alike. Taken only at drop.
    runtime: Option<tokio::runtime::Runtime>,
    handle: tokio::runtime::Handle,
    client: Client,
    keys: Keys,
    settings: EtcdSettings,
    term: Arc<RwLock<Option<Term>>>,
    on_fenced: Arc<OnceLock<OnFenced>>,
    mirror: Mutex<Option<Mirror>>,
    writer: Writer,
    observer: SharedObserver,
    outbox_low: OutboxLow,
    /// The leader's upkeep of etcd (`upkeep`), from its fence on.
    upkeep: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// The lowest outbox sequence that may still be stored; `None` when not
/// known (never loaded, or a commit failed), and the log's confirmation
/// then deletes from the first. etcd keeps a deleted key in its index
/// until a compaction, so a range delete from 0 visits every record ever
/// written: with it, each confirmation cost more than the last (the rate
/// of submissions halved over 12,000 jobs).
type OutboxLow = Arc<Mutex<Option<u64>>>;

impl EtcdStore {
    /// A store on the etcd of `settings`; connects on first use. Writes are
    /// refused until [`EtcdStore::fence`] (or [`EtcdStore::unfenced`]).
    pub fn open(settings: EtcdSettings) -> Result<EtcdStore, StoreError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("qmesh-etcd")
            .enable_all()
            .build()
            .map_err(|e| StoreError::Io {
                what: "start the etcd client's runtime".into(),
                message: e.to_string(),
            })?;
        let client = {
            let _in = runtime.enter();
            Client::new(settings.client.clone()).map_err(unavailable)?
        };
        let keys = Keys {
            prefix: settings.prefix.as_bytes().to_vec(),
        };
        let term: Arc<RwLock<Option<Term>>> = Arc::new(RwLock::new(None));
        let on_fenced: Arc<OnceLock<OnFenced>> = Arc::new(OnceLock::new());
        let observer = SharedObserver::default();
        let outbox_low: OutboxLow = Arc::new(Mutex::new(None));
        let committer = Committer {
            outbox_low: outbox_low.clone(),
            client: client.clone(),
            keys: keys.clone(),
            term: term.clone(),
            on_fenced: on_fenced.clone(),
            handle: runtime.handle().clone(),
            fenced: std::sync::atomic::AtomicBool::new(false),
            next: Mutex::new(None),
            max_ops: settings.max_txn_ops.max(4),
            max_bytes: settings.max_txn_bytes.max(4096),
        };
        let writer = Writer::start(
            move |writes| committer.commit(writes),
            || Ok(()),
            observer.clone(),
            crate::writer::Gather::AsManyAsLastTime,
        )?;
        Ok(EtcdStore {
            handle: runtime.handle().clone(),
            runtime: Some(runtime),
            client,
            keys,
            settings,
            term,
            on_fenced,
            mirror: Mutex::new(None),
            writer,
            observer,
            outbox_low,
            upkeep: Mutex::new(None),
        })
    }

    /// The keys of this store (the election key among them).
    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// The client, for the election.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Where the store is, for messages.
    pub fn describe(&self) -> String {
        format!(
            "etcd at {} under {}",
            self.client.endpoints(),
            self.settings.prefix
        )
    }

    /// Runs `future` on the store's runtime and waits for it. Not to be
    /// called from that runtime.
    pub fn block<T: Send + 'static>(
        &self,
        future: impl std::future::Future<Output = T> + Send + 'static,
    ) -> Result<T, StoreError> {
        block_on(&self.handle, future)
    }

    /// The store's runtime, where the election can run too.
    pub fn handle(&self) -> &tokio::runtime::Handle {
        &self.handle
    }

    /// From now on every write is conditional on `term` still leading.
    pub fn fence(&self, term: Term) {
        *write_lock(&self.term) = Some(term);
        let mut upkeep = lock(&self.upkeep);
        if upkeep.is_none() {
            *upkeep = Some(self.handle.spawn(upkeep::keep(
                self.client.clone(),
                self.settings.compact_every,
            )));
        }
    }

    /// Writes without an election (tests, benchmarks and tools that own
    /// the prefix alone).
    pub fn unfenced(&self) {
        *write_lock(&self.term) = Some(Term {
            revision: 0,
            lease: 0,
        });
    }

    /// Called (once set, on the writer thread) when a write is refused
    /// because another qmeshd leads.
    pub fn on_fenced(&self, tell: OnFenced) {
        let _ = self.on_fenced.set(tell);
    }

    /// A record the cluster keeps beside its state, `<prefix>NAME` (the
    /// cluster CA: every head must use the same), if there is one.
    pub fn read_extra(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let key = self.keys.under(name);
        let client = self.client.clone();
        Ok(self
            .block(async move { client.get(&key).await })?
            .map_err(unavailable)?
            .map(|kv| kv.value))
    }

    /// Keeps `value` as `<prefix>NAME` unless one is kept already (the
    /// first one kept wins, whoever leads; `read_extra` then says which).
    pub fn keep_extra_once(&self, name: &str, value: Vec<u8>) -> Result<(), StoreError> {
        let key = self.keys.under(name);
        let txn = pb::TxnRequest {
            compare: vec![pb::Compare {
                result: pb::compare::CompareResult::Equal as i32,
                target: pb::compare::CompareTarget::Create as i32,
                key: key.clone(),
                target_union: Some(pb::compare::TargetUnion::CreateRevision(0)),
                range_end: Vec::new(),
            }],
            success: vec![Op::Put(key, value).request()],
            failure: Vec::new(),
        };
        let client = self.client.clone();
        self.block(async move { client.txn(txn).await })?
            .map_err(unavailable)?;
        Ok(())
    }

    /// Tells `observer` how long each batch took to commit.
    pub fn observe_flushes(&self, observer: crate::writer::FlushObserver) {
        let _ = self.observer.set(observer);
    }

    /// Starts keeping a warm copy of the store (a standby's).
    pub fn mirror(&self) {
        let mut slot = lock(&self.mirror);
        if slot.is_none() {
            *slot = Some(Mirror::start(
                self.handle(),
                self.client.clone(),
                self.keys.prefix.clone(),
            ));
        }
    }

    /// How far the warm copy has come (the revision it has every change
    /// up to), if one is kept.
    pub fn mirror_progress(&self) -> Option<tokio::sync::watch::Receiver<i64>> {
        lock(&self.mirror).as_ref().map(Mirror::progress)
    }

    /// Stops the warm copy (the leader reads etcd itself).
    pub fn stop_mirror(&self) {
        lock(&self.mirror).take();
    }

    fn loaded_from(
        &self,
        kvs: impl Iterator<Item = (Vec<u8>, Vec<u8>)>,
    ) -> Result<Loaded, StoreError> {
        let mut loaded = Loaded::default();
        let mut stored_next = 1;
        let mut schema_seen = false;
        for (key, value) in kvs {
            let Some((kind, id)) = self.keys.kind(&key) else {
                continue;
            };
            let label = String::from_utf8_lossy(&key).into_owned();
            match (kind, id) {
                ("schema", None) => {
                    schema_seen = true;
                    let found = std::str::from_utf8(&value)
                        .ok()
                        .and_then(|s| s.parse::<u32>().ok())
                        .ok_or_else(|| StoreError::Corrupt {
                            key: label.clone(),
                            message: "not a number".into(),
                        })?;
                    if found > SCHEMA_VERSION {
                        return Err(StoreError::TooNew {
                            found,
                            supported: SCHEMA_VERSION,
                        });
                    }
                }
                ("config", None) => loaded.config = Some(decode::<Config>(&label, &value)?),
                ("usage", None) => loaded.usage = Some(decode::<Usage>(&label, &value)?),
                ("next", None) => stored_next = decode::<u64>(&label, &value)?,
                ("jobs", Some(_)) => loaded.jobs.push(decode::<Job>(&label, &value)?),
                ("outbox", Some(seq)) => loaded.outbox.push((seq, value)),
                _ => {}
            }
        }
        // The schema is written with the configuration, which comes first.
        if !schema_seen && loaded.config.is_some() {
            return Err(StoreError::Corrupt {
                key: String::from_utf8_lossy(&self.keys.schema()).into_owned(),
                message: "the store has records but no schema version".into(),
            });
        }
        loaded.jobs.sort_by_key(|j| j.id);
        loaded.outbox.sort_by_key(|(seq, _)| *seq);
        loaded.next_id = loaded
            .jobs
            .iter()
            .map(|j| j.id.seq() + 1)
            .max()
            .unwrap_or(1)
            .max(stored_next);
        Ok(loaded)
    }
}

impl Drop for EtcdStore {
    fn drop(&mut self) {
        self.writer.close();
        lock(&self.mirror).take();
        if let Some(task) = lock(&self.upkeep).take() {
            task.abort();
        }
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl Store for EtcdStore {
    fn load(&self) -> Result<Loaded, StoreError> {
        let from_mirror = lock(&self.mirror).as_ref().and_then(Mirror::snapshot);
        let kvs: Vec<(Vec<u8>, Vec<u8>)> = match from_mirror {
            Some(map) => map.into_iter().collect(),
            None => {
                let client = self.client.clone();
                let prefix = self.keys.prefix.clone();
                let (kvs, _) = self
                    .block(async move { client.range_prefix(&prefix).await })?
                    .map_err(unavailable)?;
                kvs.into_iter().map(|kv| (kv.key, kv.value)).collect()
            }
        };
        let loaded = self.loaded_from(kvs.into_iter())?;
        // Nothing stored: the first record put will be the lowest.
        *lock(&self.outbox_low) = Some(loaded.outbox.first().map_or(u64::MAX, |(seq, _)| *seq));
        Ok(loaded)
    }

    fn payload(&self, id: JobId) -> Result<Option<JobPayload>, StoreError> {
        let key = self.keys.script(id);
        let client = self.client.clone();
        let value = self
            .block(async move { client.get(&key).await })?
            .map_err(unavailable)?;
        match value {
            Some(kv) => Ok(Some(decode(&format!("script of job {id}"), &kv.value)?)),
            None => Ok(None),
        }
    }

    fn write(&self, changes: Vec<Change>, done: Option<OnDurable>) {
        self.writer.queue(changes, done);
    }
}

/// What the writer thread needs to commit batches.
struct Committer {
    client: Client,
    keys: Keys,
    term: Arc<RwLock<Option<Term>>>,
    on_fenced: Arc<OnceLock<OnFenced>>,
    handle: tokio::runtime::Handle,
    /// Once fenced, always: a deposed leader writes nothing more.
    fenced: std::sync::atomic::AtomicBool,
    /// The stored next id, once read: purges in one batch see each other.
    next: Mutex<Option<u64>>,
    outbox_low: OutboxLow,
    max_ops: usize,
    max_bytes: usize,
}

/// One operation of a transaction, with the key(s) it touches.
#[derive(Clone, Debug)]
enum Op {
    Put(Vec<u8>, Vec<u8>),
    /// `[from, to)`; `to` empty: the key alone.
    Delete(Vec<u8>, Vec<u8>),
}

impl Op {
    fn size(&self) -> usize {
        match self {
            Op::Put(k, v) => k.len() + v.len() + 8,
            Op::Delete(a, b) => a.len() + b.len() + 8,
        }
    }
    fn is_record(&self, keys: &Keys) -> bool {
        let outbox = keys.under("outbox/");
        match self {
            Op::Put(k, _) | Op::Delete(k, _) => k.starts_with(&outbox),
        }
    }
    fn request(self) -> pb::RequestOp {
        let request = match self {
            Op::Put(key, value) => pb::request_op::Request::RequestPut(pb::PutRequest {
                key,
                value,
                ..Default::default()
            }),
            Op::Delete(key, range_end) => {
                pb::request_op::Request::RequestDeleteRange(pb::DeleteRangeRequest {
                    key,
                    range_end,
                    prev_kv: false,
                })
            }
        };
        pb::RequestOp {
            request: Some(request),
        }
    }
}

/// The operations of one transaction: a key is put once (the last value
/// wins), and no put falls in a range deleted in the same transaction
/// (etcd refuses both).
#[derive(Default)]
struct Txn {
    ops: Vec<Op>,
    puts: HashMap<Vec<u8>, usize>,
    bytes: usize,
}

impl Txn {
    fn conflicts(&self, op: &Op) -> bool {
        match op {
            Op::Put(key, _) => self.ops.iter().any(|o| match o {
                Op::Delete(from, to) => in_range(key, from, to),
                Op::Put(..) => false,
            }),
            Op::Delete(from, to) => self.ops.iter().any(|o| match o {
                Op::Put(key, _) => in_range(key, from, to),
                Op::Delete(..) => false,
            }),
        }
    }
    /// Adds `op` (a put of a key already put replaces it).
    fn add(&mut self, op: Op) {
        self.bytes += op.size();
        if let Op::Put(key, _) = &op
            && let Some(&at) = self.puts.get(key)
        {
            self.ops[at] = op;
            return;
        }
        if let Op::Put(key, _) = &op {
            self.puts.insert(key.clone(), self.ops.len());
        }
        self.ops.push(op);
    }
}

fn in_range(key: &[u8], from: &[u8], to: &[u8]) -> bool {
    if to.is_empty() {
        key == from
    } else {
        key >= from && (key < to || to == [0])
    }
}

impl Committer {
    /// The operations of one write, changes before records.
    fn ops(&self, changes: Vec<Change>) -> Result<Vec<Op>, StoreError> {
        let mut ops = Vec::new();
        for change in changes {
            match change {
                Change::NewJob { id, job, payload } => {
                    ops.push(Op::Put(self.keys.job(id), job));
                    ops.push(Op::Put(self.keys.script(id), payload));
                }
                Change::Job { id, record } => ops.push(Op::Put(self.keys.job(id), record)),
                Change::Remove(ids) => {
                    let highest = ids.iter().map(|id| id.seq() + 1).max().unwrap_or(1);
                    // The next id only grows: a purge of lower jobs after
                    // a higher one must not lower it. Purges are rare: the
                    // stored one is read.
                    let stored = match *lock(&self.next) {
                        Some(n) => n,
                        None => self.stored_next()?,
                    };
                    if highest > stored {
                        ops.push(Op::Put(self.keys.next(), encode(&highest)?));
                    }
                    *lock(&self.next) = Some(stored.max(highest));
                    for id in ids {
                        ops.push(Op::Delete(self.keys.job(id), Vec::new()));
                        ops.push(Op::Delete(self.keys.script(id), Vec::new()));
                    }
                }
                Change::Outbox(records) => {
                    let mut low = lock(&self.outbox_low);
                    for (seq, record) in records {
                        if let Some(l) = low.as_mut() {
                            *l = (*l).min(seq);
                        }
                        ops.push(Op::Put(self.keys.outbox(seq), record));
                    }
                }
                Change::OutboxWritten(upto) => {
                    let mut low = lock(&self.outbox_low);
                    let from = low.unwrap_or(0);
                    if from <= upto {
                        ops.push(Op::Delete(
                            self.keys.outbox(from),
                            self.keys.outbox(upto.saturating_add(1)),
                        ));
                        *low = Some(upto.saturating_add(1));
                    }
                }
                Change::Config(record) => {
                    ops.push(Op::Put(self.keys.config(), record));
                    ops.push(Op::Put(
                        self.keys.schema(),
                        SCHEMA_VERSION.to_string().into_bytes(),
                    ));
                }
                Change::Usage(record) => ops.push(Op::Put(self.keys.usage(), record)),
            }
        }
        // Records after the changes they record (see the module's note).
        let (records, changes): (Vec<Op>, Vec<Op>) =
            ops.into_iter().partition(|op| op.is_record(&self.keys));
        Ok(changes.into_iter().chain(records).collect())
    }

    fn stored_next(&self) -> Result<u64, StoreError> {
        let client = self.client.clone();
        let key = self.keys.next();
        match block_on(&self.handle, async move { client.get(&key).await })?.map_err(unavailable)? {
            Some(kv) => decode::<u64>("next", &kv.value),
            None => Ok(1),
        }
    }

    /// Commits a batch of writes as few transactions as the limits allow.
    fn commit(&self, writes: Vec<Vec<Change>>) -> Result<(), StoreError> {
        let fenced_key = || String::from_utf8_lossy(&self.keys.leader()).into_owned();
        if self.fenced.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(StoreError::Fenced {
                message: EtcdError::Fenced { key: fenced_key() }.to_string(),
            });
        }
        let term = *read_lock(&self.term);
        let Some(term) = term else {
            return Err(StoreError::Fenced {
                message: "this qmeshd does not lead: it writes nothing to the store".into(),
            });
        };
        let mut txns: Vec<Txn> = vec![Txn::default()];
        for write in writes {
            let ops = self.ops(write)?;
            let size: usize = ops.iter().map(Op::size).sum();
            let fits_alone = ops.len() <= self.max_ops && size <= self.max_bytes;
            let current = txns.last().map_or(0, |t| t.ops.len());
            let current_bytes = txns.last().map_or(0, |t| t.bytes);
            if fits_alone
                && (current + ops.len() > self.max_ops || current_bytes + size > self.max_bytes)
            {
                txns.push(Txn::default());
            }
            for op in ops {
                let full = txns.last().is_some_and(|t| {
                    t.ops.len() >= self.max_ops
                        || (t.bytes + op.size() > self.max_bytes && !t.ops.is_empty())
                        || t.conflicts(&op)
                });
                if full {
                    txns.push(Txn::default());
                }
                if let Some(t) = txns.last_mut() {
                    t.add(op);
                }
            }
        }
        let fence = (term.revision > 0).then(|| term.fence(&self.keys.leader()));
        for txn in txns.into_iter().filter(|t| !t.ops.is_empty()) {
            let request = pb::TxnRequest {
                compare: fence.clone().into_iter().collect(),
                success: txn.ops.into_iter().map(Op::request).collect(),
                failure: Vec::new(),
            };
            let client = self.client.clone();
            let answer = block_on(&self.handle, async move { client.txn(request).await })?;
            match answer {
                Ok(a) if a.succeeded => {}
                Ok(_) => {
                    self.fenced.store(true, std::sync::atomic::Ordering::SeqCst);
                    // The next id read may be another leader's since.
                    lock(&self.next).take();
                    let e = EtcdError::Fenced { key: fenced_key() };
                    if let Some(tell) = self.on_fenced.get() {
                        tell(&e.to_string());
                    }
                    return Err(StoreError::Fenced {
                        message: e.to_string(),
                    });
                }
                Err(e) => {
                    // What the failed transaction would have deleted is
                    // still there: the next confirmation deletes from 0.
                    lock(&self.outbox_low).take();
                    return Err(unavailable(e));
                }
            }
        }
        Ok(())
    }
}

/// An etcd error as the store's.
fn unavailable(e: EtcdError) -> StoreError {
    match e {
        EtcdError::Fenced { .. } => StoreError::Fenced {
            message: e.to_string(),
        },
        e if e.is_transient() => StoreError::Unavailable {
            message: e.to_string(),
        },
        e => StoreError::Io {
            what: "use the etcd store".into(),
            message: e.to_string(),
        },
    }
}

/// Runs `future` on the store's runtime from a plain thread; `Closed` if
/// the runtime stopped under it (only at the store's drop).
fn block_on<T: Send + 'static>(
    handle: &tokio::runtime::Handle,
    future: impl std::future::Future<Output = T> + Send + 'static,
) -> Result<T, StoreError> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    handle.spawn(async move {
        let _ = tx.send(future.await);
    });
    rx.recv().map_err(|_| StoreError::Closed)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

fn read_lock<T>(m: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    match m.read() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

fn write_lock<T>(m: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    match m.write() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// The map a warm copy holds.
pub type Snapshot = BTreeMap<Vec<u8>, Vec<u8>>;
