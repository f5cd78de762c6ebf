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
//! The writer does not wait to gather more changes before a flush: while it
//! flushes, the next batch gathers by itself. (A deliberate delay, like
//! PostgreSQL's commit_delay, was measured here and only lowered the rate.)
//! Applying changes on this one thread matters more: with every caller
//! inserting into sled itself, the callers and the flush contended and the
//! rate was half.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use crate::{Change, OnDurable, StoreError};

use std::time::Instant;

struct Waiters {
    /// Each `write`'s changes, kept apart: an engine that must split a
    /// batch splits it between writes, not inside one.
    changes: Vec<Vec<Change>>,
    list: Vec<OnDurable>,
    closed: bool,
}

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
    ) -> Result<Writer, StoreError> {
        let shared = Arc::new((
            Mutex::new(Waiters {
                changes: Vec::new(),
                list: Vec::new(),
                closed: false,
            }),
            Condvar::new(),
        ));
        let worker = Arc::clone(&shared);
        let watching = observer;
        let thread = std::thread::Builder::new()
            .name("qmesh-writer".into())
            .spawn(move || writer(&worker, apply, flush, &watching))
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
        // The writer sleeps only on an empty queue: wake it only then, so a
        // burst of writes during a flush costs no wake-ups.
        if was_idle {
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
) {
    let (lock, cv) = shared;
    // Whether the last batch failed: a failing disk is logged when it
    // starts failing and when it works again, not at every batch.
    let mut failing = false;
    loop {
        let (changes, batch) = {
            let mut waiters = relock(lock.lock());
            while waiters.list.is_empty() && waiters.changes.is_empty() && !waiters.closed {
                waiters = relock(cv.wait(waiters));
            }
            if waiters.list.is_empty() && waiters.changes.is_empty() && waiters.closed {
                return;
            }
            (
                std::mem::take(&mut waiters.changes),
                std::mem::take(&mut waiters.list),
            )
        };
        let started = Instant::now();
        let count: usize = changes.iter().map(Vec::len).sum();
        let result = apply(changes).and_then(|()| flush());
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
