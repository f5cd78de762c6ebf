//! A standby's warm copy of the store: every key under the prefix, read
//! once and then kept by a watch, so that a takeover loads from memory
//! instead of reading the whole store from etcd.
//!
//! The copy is whole or absent: a watch that breaks is started again from
//! the revision after the last applied; one whose history etcd compacted
//! meanwhile starts over with a full read.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use qmesh_etcd::{Client, EtcdError, pb, prefix_end};
use tokio::sync::watch;
use tracing::{debug, info};

use super::Snapshot;

/// A running warm copy; dropping it stops it.
pub struct Mirror {
    copy: Arc<Mutex<Option<Snapshot>>>,
    progress: watch::Receiver<i64>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Mirror {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Mirror {
    pub fn start(handle: &tokio::runtime::Handle, client: Client, prefix: Vec<u8>) -> Mirror {
        let copy = Arc::new(Mutex::new(None));
        let (tx, progress) = watch::channel(0);
        let task = handle.spawn(keep(client, prefix, copy.clone(), tx));
        Mirror {
            copy,
            progress,
            task,
        }
    }

    /// The copy, if it has been read whole.
    pub fn snapshot(&self) -> Option<Snapshot> {
        match self.copy.lock() {
            Ok(c) => c.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    pub fn progress(&self) -> watch::Receiver<i64> {
        self.progress.clone()
    }
}

async fn keep(
    client: Client,
    prefix: Vec<u8>,
    copy: Arc<Mutex<Option<Snapshot>>>,
    progress: watch::Sender<i64>,
) {
    let end = prefix_end(&prefix);
    let mut revision = 0;
    loop {
        if revision == 0 {
            match client.range_prefix(&prefix).await {
                Ok((kvs, at)) => {
                    let map: Snapshot = kvs.into_iter().map(|kv| (kv.key, kv.value)).collect();
                    info!(
                        keys = map.len(),
                        revision = at,
                        "warm copy of the store read"
                    );
                    set(&copy, Some(map));
                    revision = at;
                    let _ = progress.send(at);
                }
                Err(e) => {
                    debug!(error = %e, "the warm copy cannot read the store yet");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
            }
        }
        match follow(&client, &prefix, &end, &copy, &progress, &mut revision).await {
            Err(EtcdError::Compacted { .. }) => {
                info!(
                    "the store's history was compacted past the warm copy; reading it whole again"
                );
                set(&copy, None);
                revision = 0;
            }
            Err(e) => {
                debug!(error = %e, "the warm copy's watch broke; watching again");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Ok(()) => {}
        }
    }
}

/// Applies the watch's events from `revision + 1` on, until it breaks.
async fn follow(
    client: &Client,
    prefix: &[u8],
    end: &[u8],
    copy: &Mutex<Option<Snapshot>>,
    progress: &watch::Sender<i64>,
    revision: &mut i64,
) -> Result<(), EtcdError> {
    let mut watch = client.watch(prefix, end, *revision + 1).await?;
    loop {
        let batch = watch.next().await?;
        {
            let mut guard = match copy.lock() {
                Ok(g) => g,
                Err(poisoned) => poisoned.into_inner(),
            };
            if let Some(map) = guard.as_mut() {
                for event in batch.events {
                    let Some(kv) = event.kv else { continue };
                    if event.r#type == pb::event::EventType::Delete as i32 {
                        map.remove(&kv.key);
                    } else {
                        map.insert(kv.key, kv.value);
                    }
                }
            }
        }
        *revision = batch.revision.max(*revision);
        let _ = progress.send(*revision);
    }
}

fn set(copy: &Mutex<Option<Snapshot>>, value: Option<Snapshot>) {
    match copy.lock() {
        Ok(mut c) => *c = value,
        Err(poisoned) => *poisoned.into_inner() = value,
    }
}
