//! Group commit. Callers queue encoded changes (and, optionally, a callback);
//! one thread takes everything queued, applies it to the engine as one
//! batch, flushes once, then calls the callbacks.
//!
//! Ordering argument: the queue is FIFO and only this thread applies it, so
//! changes reach the engine in the order they were queued; a callback is
//! called after the flush that followed the application of every change
//! queued before it.
//!
//! The blocking `flush()` runs on this dedicated thread: sled's
//! `flush_async` can deadlock under concurrent callers (STACK.md).
//!
//! On sled the writer does not wait to gather more changes before a flush:
//! while it flushes, the next batch gathers by itself. (A deliberate delay,
//! like PostgreSQL's commit_delay, was measured here and only lowered the
//! rate.) On etcd a commit costs a raft round and three fsyncs whatever
//! it holds, and with no wait the callers split into two groups that take
//! turns, each commit carrying half of them; there the writer gathers
//! (`Gather::AsManyAsLastTime`): when fewer writes wait than the last
//! batch held, it waits for that many, at most half the last flush's
//! time. A lone caller never waits (its last batch held one write).
//! Applying changes on this one thread matters more: with every caller
//! inserting into sled itself, the callers and the flush contended and the
//! rate was half.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use crate::{Change, OnDurable, StoreError};

use std::time::{Duration, Instant};

struct Waiters {
    /// Each `write`'s changes, kept apart: an engine that must split a
    /// batch splits it between writes, not inside one.
    changes: Vec<Vec<Change>>,
    list: Vec<OnDurable>,
    closed: bool,
    /// The writer waits for more writes: every write wakes it.
    gathering: bool,
}

/// Whether the writer waits for more writes before a flush.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gather {
    /// Flush what is queued at once (a flush costs little: sled).
    No,
    /// Wait, at most half the last flush's time, until as many writes as
    /// the last batch held are queued (a flush costs a round trip: etcd).
    AsManyAsLastTime,
}

/// The longest a batch waits for more writes.
const MAX_GATHER: Duration = Duration::from_millis(5);

/// Told how long each batch took to apply and flush, and how many
/// changes it held (the daemon's metrics).
pub type FlushObserver = Box<dyn Fn(std::time::Duration, usize) + Send + Sync>;

/// The observer, kept by the store across reopens.
pub type SharedObserver = Arc<std::sync::OnceLock<FlushObserver>>;

pub struct Writer {
    shared: Arc<(Mutex<Waiters>, Condvar)>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Writer {
    /// `apply` puts a batch of changes into the engine; `flush` makes the
    /// engine durable.
    pub fn start(
        apply: impl Fn(Vec<Vec<Change>>) -> Result<(), StoreError> + Send + 'static,
        flush: impl Fn() -> Result<(), StoreError> + Send + 'static,
        observer: SharedObserver,
        gather: Gather,
    ) -> Result<Writer, StoreError> {
        let shared = Arc::new((
            Mutex::new(Waiters {
                changes: Vec::new(),
                list: Vec::new(),
                closed: false,
                gathering: false,
            }),
            Condvar::new(),
        ));
        let worker = Arc::clone(&shared);
        let watching = observer;
        let thread = std::thread::Builder::new()
            .name("qmesh-writer".into())
            .spawn(move || writer(&worker, apply, flush, &watching, gather))
            .map_err(|e| StoreError::Io {
                what: "start the store writer thread".into(),
                message: e.to_string(),
            })?;
        Ok(Writer {
            shared,
            thread: Mutex::new(Some(thread)),
        })
    }

    pub fn queue(&self, changes: Vec<Change>, done: Option<OnDurable>) {
        let (lock, cv) = &*self.shared;
        let mut waiters = relock(lock.lock());
        if waiters.closed {
            drop(waiters);
            if let Some(done) = done {
                done(Err(StoreError::Closed));
            }
            return;
        }
        let was_idle = waiters.list.is_empty() && waiters.changes.is_empty();
        if !changes.is_empty() {
            waiters.changes.push(changes);
        }
        if let Some(done) = done {
            waiters.list.push(done);
        }
        // The writer sleeps on an empty queue, or while it gathers: wake it
        // only then, so a burst of writes during a flush costs no wake-ups.
        if was_idle || waiters.gathering {
            cv.notify_one();
        }
    }

    /// Flushes what is pending, then stops the thread.
    pub fn close(&self) {
        {
            let (lock, cv) = &*self.shared;
            let mut waiters = match lock.lock() {
                Ok(w) => w,
                Err(poisoned) => poisoned.into_inner(),
            };
            waiters.closed = true;
            cv.notify_one();
        }
        let handle = match self.thread.lock() {
            Ok(mut t) => t.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let Some(handle) = handle {
            let _ = handle.join();
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.close();
    }
}

fn relock<'a>(
    r: std::sync::LockResult<std::sync::MutexGuard<'a, Waiters>>,
) -> std::sync::MutexGuard<'a, Waiters> {
    match r {
        Ok(w) => w,
        Err(poisoned) => poisoned.into_inner(),
    }
}

fn writer(
    shared: &(Mutex<Waiters>, Condvar),
    apply: impl Fn(Vec<Vec<Change>>) -> Result<(), StoreError>,
    flush: impl Fn() -> Result<(), StoreError>,
    observer: &std::sync::OnceLock<FlushObserver>,
    gather: Gather,
) {
    let (lock, cv) = shared;
    // Whether the last batch failed: a failing disk is logged when it
    // starts failing and when it works again, not at every batch.
    let mut failing = false;
    // The last batch: how many writes it held and how long it took.
    let mut last = (0usize, Duration::ZERO);
    loop {
        let (changes, batch) = {
            let mut waiters = relock(lock.lock());
            while waiters.list.is_empty() && waiters.changes.is_empty() && !waiters.closed {
                waiters = relock(cv.wait(waiters));
            }
            if waiters.list.is_empty() && waiters.changes.is_empty() && waiters.closed {
                return;
            }
            if gather == Gather::AsManyAsLastTime {
                let until = Instant::now() + (last.1 / 2).min(MAX_GATHER);
                waiters.gathering = true;
                while waiters.changes.len() < last.0 && !waiters.closed {
                    let left = until.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    waiters = match cv.wait_timeout(waiters, left) {
                        Ok((w, _)) => w,
                        Err(poisoned) => poisoned.into_inner().0,
                    };
                }
                waiters.gathering = false;
            }
            (
                std::mem::take(&mut waiters.changes),
                std::mem::take(&mut waiters.list),
            )
        };
        let started = Instant::now();
        let count: usize = changes.iter().map(Vec::len).sum();
        let writes = changes.len();
        let result = apply(changes).and_then(|()| flush());
        last = (writes, started.elapsed());
        if let Some(observe) = observer.get() {
            observe(started.elapsed(), count);
        }
        tracing::trace!(
            changes = count,
            waiting = batch.len(),
            ms = started.elapsed().as_secs_f64() * 1e3,
            "written"
        );
        match &result {
            Err(e) if !failing => {
                tracing::error!(error = %e, changes = count, waiting = batch.len(), "store write failed");
                failing = true;
            }
            Err(_) => {}
            Ok(()) if failing => {
                tracing::info!("store writes work again");
                failing = false;
            }
            Ok(()) => {}
        }
        for done in batch {
            done(result.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writers on many threads, with and without gathering: every change
    /// is applied once, each thread's in the order it queued them, and
    /// every callback is told once, after its change was applied.
    #[test]
    fn every_write_is_applied_once_in_order_and_answered() {
        for gather in [Gather::No, Gather::AsManyAsLastTime] {
            let applied: Arc<Mutex<Vec<u64>>> = Arc::default();
            let seen = applied.clone();
            let writer = Writer::start(
                move |writes| {
                    let mut seen = seen.lock().unwrap();
                    for change in writes.into_iter().flatten() {
                        if let Change::OutboxWritten(n) = change {
                            seen.push(n);
                        }
                    }
                    Ok(())
                },
                || Ok(()),
                SharedObserver::default(),
                gather,
            )
            .unwrap();
            let writer = Arc::new(writer);
            let (told_tx, told) = std::sync::mpsc::channel();
            let threads: Vec<_> = (0..8u64)
                .map(|t| {
                    let writer = writer.clone();
                    let told_tx = told_tx.clone();
                    let applied = applied.clone();
                    std::thread::spawn(move || {
                        for i in 0..200u64 {
                            let n = t * 1000 + i;
                            let told_tx = told_tx.clone();
                            let applied = applied.clone();
                            writer.queue(
                                vec![Change::OutboxWritten(n)],
                                Some(Box::new(move |r| {
                                    let was_applied = applied.lock().unwrap().contains(&n);
                                    let _ = told_tx.send((n, r.is_ok() && was_applied));
                                })),
                            );
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().unwrap();
            }
            drop(told_tx);
            let mut answers: Vec<(u64, bool)> = told.iter().collect();
            answers.sort();
            assert_eq!(answers.len(), 1600, "{gather:?}: every write answered once");
            assert!(
                answers.iter().all(|(_, ok)| *ok),
                "{gather:?}: answered after applied"
            );
            let applied = applied.lock().unwrap().clone();
            assert_eq!(applied.len(), 1600, "{gather:?}");
            for t in 0..8u64 {
                let mine: Vec<u64> = applied.iter().copied().filter(|n| n / 1000 == t).collect();
                assert_eq!(
                    mine,
                    (0..200).map(|i| t * 1000 + i).collect::<Vec<_>>(),
                    "{gather:?}"
                );
            }
        }
    }
}
