//! The scheduler task's writes, handed to the store a turn at a time.
//!
//! Within a turn (one event handled, one tick, one pass) the task changes
//! jobs and makes the accounting records of those changes. Both reach the
//! store's writer in one `write`, so they land in one batch, which sled
//! applies to the jobs tree atomically: after a crash the store holds a
//! change and its records, or neither (`joblog.rs` has the rest of the
//! argument). Before this, the writer woke at a turn's first change and
//! could flush it alone, the records following in the next batch.
//!
//! Nothing waits longer for the disk than before: a turn takes micro- to
//! milliseconds, and the changes of a turn would be in one group commit
//! anyway. Reads go straight to the store; the task reads only what is
//! durable (a job's script once its start is).

use std::sync::{Arc, Mutex};

use qmesh_core::JobId;
use qmesh_core::job::JobPayload;
use qmesh_store::{Change, Loaded, OnDurable, Store, StoreError};

pub struct TurnStore {
    inner: Arc<dyn Store>,
    turn: Mutex<Turn>,
}

#[derive(Default)]
struct Turn {
    changes: Vec<Change>,
    done: Vec<OnDurable>,
}

impl TurnStore {
    pub fn new(inner: Arc<dyn Store>) -> TurnStore {
        TurnStore {
            inner,
            turn: Mutex::new(Turn::default()),
        }
    }

    /// Hands the turn's changes, then `extra`, to the store as one write;
    /// `done` runs after every callback the turn registered, once all of
    /// it is durable.
    pub fn end_turn(&self, extra: Vec<Change>, done: Option<OnDurable>) {
        self.end_turn_watched(extra, done, None);
    }

    /// [`TurnStore::end_turn`], and `on_failure` runs (after the turn's
    /// callbacks) if the turn wrote changes that could not be made durable.
    pub fn end_turn_watched(
        &self,
        extra: Vec<Change>,
        done: Option<OnDurable>,
        on_failure: Option<Box<dyn FnOnce(StoreError) + Send>>,
    ) {
        let mut turn = std::mem::take(&mut *self.lock());
        turn.changes.extend(extra);
        turn.done.extend(done);
        if turn.changes.is_empty() && turn.done.is_empty() {
            return;
        }
        let on_failure = on_failure.filter(|_| !turn.changes.is_empty());
        let callbacks = turn.done;
        let done: Option<OnDurable> = (!callbacks.is_empty() || on_failure.is_some()).then(|| {
            Box::new(move |result: Result<(), StoreError>| {
                for callback in callbacks {
                    callback(result.clone());
                }
                if let (Err(e), Some(tell)) = (result, on_failure) {
                    tell(e);
                }
            }) as OnDurable
        });
        self.inner.write(turn.changes, done);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Turn> {
        match self.turn.lock() {
            Ok(t) => t,
            Err(poisoned) => poisoned.into_inner(),
        }
    }
}

impl Store for TurnStore {
    fn load(&self) -> Result<Loaded, StoreError> {
        self.inner.load()
    }

    fn payload(&self, id: JobId) -> Result<Option<JobPayload>, StoreError> {
        self.inner.payload(id)
    }

    /// Kept for the end of the turn.
    fn write(&self, changes: Vec<Change>, done: Option<OnDurable>) {
        let mut turn = self.lock();
        turn.changes.extend(changes);
        turn.done.extend(done);
    }

    fn reopen(&self) -> Result<(), StoreError> {
        self.inner.reopen()
    }

    /// Ends the turn here, then waits for the store.
    fn sync(&self) -> Result<(), StoreError> {
        self.end_turn(Vec::new(), None);
        self.inner.sync()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts the writes that reach it, and runs their callbacks at once.
    #[derive(Default)]
    struct Counting {
        writes: AtomicUsize,
        changes: AtomicUsize,
    }

    impl Store for Counting {
        fn load(&self) -> Result<Loaded, StoreError> {
            Ok(Loaded::default())
        }
        fn payload(&self, _: JobId) -> Result<Option<JobPayload>, StoreError> {
            Ok(None)
        }
        fn write(&self, changes: Vec<Change>, done: Option<OnDurable>) {
            self.writes.fetch_add(1, Ordering::SeqCst);
            self.changes.fetch_add(changes.len(), Ordering::SeqCst);
            if let Some(done) = done {
                done(Ok(()));
            }
        }
    }

    #[test]
    fn a_turn_reaches_the_store_as_one_write_and_its_callbacks_run_in_order() {
        let inner = Arc::new(Counting::default());
        let store = TurnStore::new(inner.clone());
        let order = Arc::new(Mutex::new(Vec::new()));
        store.write(vec![Change::OutboxWritten(1)], None);
        let o = order.clone();
        store.on_durable(Box::new(move |_| o.lock().unwrap().push("answer")));
        store.write(vec![Change::OutboxWritten(2)], None);
        assert_eq!(
            inner.writes.load(Ordering::SeqCst),
            0,
            "nothing before the turn ends"
        );
        let o = order.clone();
        store.end_turn(
            vec![Change::Outbox(vec![(1, Vec::new())])],
            Some(Box::new(move |_| o.lock().unwrap().push("records"))),
        );
        assert_eq!(inner.writes.load(Ordering::SeqCst), 1);
        assert_eq!(inner.changes.load(Ordering::SeqCst), 3);
        assert_eq!(*order.lock().unwrap(), ["answer", "records"]);
        store.end_turn(Vec::new(), None);
        assert_eq!(
            inner.writes.load(Ordering::SeqCst),
            1,
            "an empty turn writes nothing"
        );
        store.write(vec![Change::OutboxWritten(3)], None);
        store.sync().unwrap();
        assert_eq!(
            inner.writes.load(Ordering::SeqCst),
            3,
            "sync ends the turn, then waits"
        );
    }
}
