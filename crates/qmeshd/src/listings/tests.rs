//! The sharing rules, with a build that counts its calls in place of the
//! task.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Notify;

use qmesh_proto::v1;

use super::*;

fn query(users: &[&str]) -> StatusQuery {
    StatusQuery {
        users: users.iter().map(|u| u.to_string()).collect(),
        brief: true,
        ..Default::default()
    }
}

/// A task stand-in: each build lists `jobs` jobs named after the build's
/// number, once `open` lets it through (if given).
#[derive(Clone, Default)]
struct Builder {
    builds: Arc<AtomicUsize>,
    open: Option<Arc<Notify>>,
    for_anyone: bool,
    /// A change comes in just after each build, as while submissions stream.
    changes_after: bool,
    /// Only the first build waits for `open`.
    only_first_waits: bool,
}

impl Builder {
    fn shared() -> Builder {
        Builder {
            for_anyone: true,
            ..Default::default()
        }
    }

    fn gated() -> (Builder, Arc<Notify>) {
        let open = Arc::new(Notify::new());
        let builder = Builder {
            open: Some(open.clone()),
            ..Builder::shared()
        };
        (builder, open)
    }

    fn builds(&self) -> usize {
        self.builds.load(Ordering::SeqCst)
    }

    async fn build(&self, generation: &Generation) -> Result<Option<SharedListing>, Status> {
        if let Some(open) = &self.open
            && !(self.only_first_waits && self.builds() > 0)
        {
            open.notified().await;
        }
        let n = self.builds.fetch_add(1, Ordering::SeqCst) + 1;
        if !self.for_anyone {
            return Ok(None);
        }
        let built = generation.current();
        if self.changes_after {
            generation.advance();
        }
        Ok(Some(SharedListing {
            reply: v1::StatusReply {
                server: format!("build {n}"),
                ..Default::default()
            },
            generation: built,
        }))
    }
}

async fn ask(listings: &Listings, q: &StatusQuery, builder: &Builder, second: i64) -> String {
    let generation = listings.generation();
    let got = listings
        .shared(q, || second, || builder.build(&generation))
        .await
        .unwrap();
    match got {
        Some(encoded) => encoded.decode_reply().unwrap().server,
        None => "alone".into(),
    }
}

/// One caller asking on a task of its own.
fn spawn_ask(
    listings: &Arc<Listings>,
    q: &StatusQuery,
    builder: &Builder,
) -> tokio::task::JoinHandle<String> {
    let (listings, builder, q) = (listings.clone(), builder.clone(), q.clone());
    tokio::spawn(async move { ask(&listings, &q, &builder, 7).await })
}

/// `n` callers ask at once; once all have asked, the gated build may end,
/// and every one of them is served by it.
async fn all_served_by_the_first_build(
    listings: &Arc<Listings>,
    builder: &Builder,
    open: &Notify,
    n: u64,
) {
    let q = query(&[]);
    let callers: Vec<_> = (0..n).map(|_| spawn_ask(listings, &q, builder)).collect();
    // Every caller has asked before the one build may end.
    while listings.kept.lock().unwrap().asked < n {
        tokio::task::yield_now().await;
    }
    open.notify_one();
    for caller in callers {
        assert_eq!(caller.await.unwrap(), "build 1");
    }
    assert_eq!(builder.builds(), 1);
}

#[tokio::test]
async fn callers_asking_at_once_share_one_build() {
    let listings = Arc::new(Listings::default());
    let (builder, open) = Builder::gated();
    all_served_by_the_first_build(&listings, &builder, &open, 100).await;
}

#[tokio::test]
async fn callers_waiting_on_a_build_are_served_by_it_though_changes_came_after() {
    let listings = Arc::new(Listings::default());
    let (builder, open) = Builder::gated();
    let builder = Builder {
        changes_after: true,
        only_first_waits: true,
        ..builder
    };
    all_served_by_the_first_build(&listings, &builder, &open, 10).await;
    // A caller asking after the change is not served the older listing.
    let fresh = spawn_ask(&listings, &query(&[]), &builder);
    assert_eq!(fresh.await.unwrap(), "build 2");
}

#[tokio::test]
async fn a_change_or_a_new_second_builds_again_and_nothing_else_does() {
    let listings = Listings::default();
    let builder = Builder::shared();
    let q = query(&[]);
    assert_eq!(ask(&listings, &q, &builder, 7).await, "build 1");
    assert_eq!(ask(&listings, &q, &builder, 7).await, "build 1");
    listings.generation().advance();
    assert_eq!(ask(&listings, &q, &builder, 7).await, "build 2");
    assert_eq!(ask(&listings, &q, &builder, 8).await, "build 3");
    assert_eq!(ask(&listings, &q, &builder, 8).await, "build 3");
    // Another question has its own listing.
    assert_eq!(
        ask(&listings, &query(&["ann"]), &builder, 8).await,
        "build 4"
    );
    assert_eq!(builder.builds(), 4);
}

#[tokio::test]
async fn a_listing_for_one_caller_is_not_shared_until_the_state_changes() {
    let listings = Listings::default();
    let builder = Builder::default();
    let q = query(&[]);
    assert_eq!(ask(&listings, &q, &builder, 7).await, "alone");
    // Not asked of the task again: the answer would be the same.
    assert_eq!(ask(&listings, &q, &builder, 7).await, "alone");
    assert_eq!(builder.builds(), 1);
    listings.generation().advance();
    assert_eq!(ask(&listings, &q, &builder, 7).await, "alone");
    assert_eq!(builder.builds(), 2);
}

#[tokio::test]
async fn when_the_building_caller_goes_a_waiting_one_builds() {
    let listings = Arc::new(Listings::default());
    let (builder, open) = Builder::gated();
    let q = query(&[]);
    let first = spawn_ask(&listings, &q, &builder);
    while listings.kept.lock().unwrap().asked < 1 {
        tokio::task::yield_now().await;
    }
    let second = spawn_ask(&listings, &q, &builder);
    while listings.kept.lock().unwrap().asked < 2 {
        tokio::task::yield_now().await;
    }
    // The first caller's connection closes mid-build.
    first.abort();
    assert!(first.await.unwrap_err().is_cancelled());
    open.notify_one();
    assert_eq!(second.await.unwrap(), "build 1");
}

#[tokio::test]
async fn the_questions_kept_are_bounded() {
    let listings = Listings::default();
    let builder = Builder::shared();
    for n in 0..(KEPT + 10) {
        let user = format!("u{n}");
        ask(&listings, &query(&[&user]), &builder, 7).await;
        assert!(listings.kept.lock().unwrap().slots.len() <= KEPT);
    }
    // The most recent question is still kept.
    let last = format!("u{}", KEPT + 9);
    let before = builder.builds();
    ask(&listings, &query(&[&last]), &builder, 7).await;
    assert_eq!(builder.builds(), before);
}
