//! Group commit. Writers register a callback; one thread flushes the engine
//! for every callback that arrived while it was idle or busy with the
//! previous flush, then calls them all.
//!
//! Ordering argument: a writer writes, then registers. The flusher takes the
//! registered callbacks and only then flushes. So every write whose callback
//! is taken happened before the flush began, and the flush covers it.
//!
//! The blocking `flush()` runs on this dedicated thread: sled's
//! `flush_async` can deadlock under concurrent callers (STACK.md).

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use crate::{OnDurable, StoreError};

struct Waiters {
    list: Vec<OnDurable>,
    closed: bool,
}

pub struct Durability {
    shared: Arc<(Mutex<Waiters>, Condvar)>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Durability {
    pub fn start(
        flush: impl Fn() -> Result<(), StoreError> + Send + 'static,
    ) -> Result<Durability, StoreError> {
        let shared = Arc::new((
            Mutex::new(Waiters {
                list: Vec::new(),
                closed: false,
            }),
            Condvar::new(),
        ));
        let worker = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("qmesh-flush".into())
            .spawn(move || flusher(&worker, flush))
            .map_err(|e| StoreError::Io {
                what: "start the flusher thread".into(),
                message: e.to_string(),
            })?;
        Ok(Durability {
            shared,
            thread: Mutex::new(Some(thread)),
        })
    }

    pub fn register(&self, done: OnDurable) {
        let (lock, cv) = &*self.shared;
        let mut waiters = match lock.lock() {
            Ok(w) => w,
            Err(poisoned) => poisoned.into_inner(),
        };
        if waiters.closed {
            drop(waiters);
            done(Err(StoreError::Closed));
            return;
        }
        waiters.list.push(done);
        cv.notify_one();
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

impl Drop for Durability {
    fn drop(&mut self) {
        self.close();
    }
}

fn flusher(shared: &(Mutex<Waiters>, Condvar), flush: impl Fn() -> Result<(), StoreError>) {
    let (lock, cv) = shared;
    loop {
        let batch = {
            let mut waiters = match lock.lock() {
                Ok(w) => w,
                Err(poisoned) => poisoned.into_inner(),
            };
            while waiters.list.is_empty() && !waiters.closed {
                waiters = match cv.wait(waiters) {
                    Ok(w) => w,
                    Err(poisoned) => poisoned.into_inner(),
                };
            }
            if waiters.list.is_empty() && waiters.closed {
                return;
            }
            std::mem::take(&mut waiters.list)
        };
        let result = flush();
        if let Err(e) = &result {
            tracing::error!(error = %e, waiting = batch.len(), "store flush failed");
        }
        for done in batch {
            done(result.clone());
        }
    }
}
