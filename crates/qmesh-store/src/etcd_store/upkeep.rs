//! The leader's upkeep of etcd, from the moment it fences the store:
//! - its requests go to etcd's raft leader, found again every half
//!   minute (a follower forwards every write to the leader, one more hop
//!   on each commit);
//! - etcd's history is compacted every interval, to the revision seen
//!   one interval before, as Kubernetes' API server does. Without it etcd
//!   keeps every value ever written until its quota is full, and its
//!   index every key ever deleted; a standby whose watch falls more than
//!   an interval behind reads the store again (`mirror.rs`).

use std::time::Duration;

use qmesh_etcd::Client;
use tokio::time::Instant;
use tracing::{debug, info, warn};

/// How often the raft leader is looked for again.
const FIND_LEADER_EVERY: Duration = Duration::from_secs(30);

pub async fn keep(client: Client, compact_every: Option<Duration>) {
    let found = client.prefer_raft_leader().await;
    debug!(found, "etcd's raft leader looked for");
    let tick = compact_every.map_or(FIND_LEADER_EVERY, |c| c.min(FIND_LEADER_EVERY));
    let mut next_leader_check = Instant::now() + FIND_LEADER_EVERY;
    let mut next_compaction = compact_every.map(|c| Instant::now() + c);
    // The revision at the last compaction's time: the next one goes to it.
    let mut seen: Option<i64> = None;
    loop {
        tokio::time::sleep(tick).await;
        let now = Instant::now();
        if now >= next_leader_check {
            client.prefer_raft_leader().await;
            next_leader_check = now + FIND_LEADER_EVERY;
        }
        let (Some(due), Some(every)) = (next_compaction, compact_every) else {
            continue;
        };
        if now < due {
            continue;
        }
        next_compaction = Some(now + every);
        let revision = match client.revision().await {
            Ok(r) => r,
            Err(e) => {
                warn!(error = %e, "could not read etcd's revision to compact its history; tried again in {every:?}");
                continue;
            }
        };
        if let Some(upto) = seen {
            match client.compact(upto).await {
                Ok(()) => info!(revision = upto, "etcd's history compacted"),
                Err(e) => {
                    warn!(error = %e, revision = upto, "could not compact etcd's history; tried again in {every:?}")
                }
            }
        }
        seen = Some(revision);
    }
}
