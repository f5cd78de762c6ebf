//! qstat storms: a thousand users' `watch qstat` asking the same thing
//! every second. Each listing used to be built by the scheduler task and
//! encoded by its caller's connection, so a thousand callers cost a
//! thousand builds and encodings, and changes waited behind them.
//!
//! Now the task counts its changes ([`Generation`]: one more before each
//! event, tick or pass that could change what a listing shows), and the services
//! keep, per question, the last listing built and encoded
//! ([`Listings`]). A caller is served that listing if it was built from
//! the state as it was when the caller asked, or later, within the same
//! second (a listing shows times to the second). Otherwise one caller
//! asks the task to build it again while the others asking the same
//! question wait for that one build: at most one build per question is
//! under way, so however many callers ask, the task builds a listing at
//! most once per change and per second, and it is encoded once.
//!
//! A listing is shared only when it would be the same for every caller:
//! the task says so as it builds it (`query_other_jobs`, no scripts).
//! Otherwise each caller's own is built, as before.
//!
//! Reading one's writes holds: the generation moves on before a change is
//! made, so its answer, sent after, is followed by a qstat asking for a
//! newer listing than any built before the change.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use qmesh_proto::served::EncodedStatusReply;
use tokio::sync::watch;
use tonic::Status;

use crate::event::{SharedListing, StatusQuery};

/// Questions whose listings are kept at once. A site's storm asks a
/// handful (qstat, qstat -x, qstat -u someone); past this many the
/// oldest idle ones go, and a caller finding no room is served alone.
const KEPT: usize = 64;

/// How many turns of the scheduler task could have changed what it shows.
#[derive(Debug, Default)]
pub struct Generation(AtomicU64);

impl Generation {
    pub fn current(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    /// Called by the task before anything that may change the state, the
    /// plan or the configuration.
    pub fn advance(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }
}

/// The listings kept, per question.
#[derive(Default)]
pub struct Listings {
    generation: Arc<Generation>,
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    slots: HashMap<StatusQuery, Slot>,
    /// Questions asked so far: the clock of `Slot::used`.
    asked: u64,
}

#[derive(Default)]
struct Slot {
    built: Option<Built>,
    /// A caller is building this question's listing now.
    building: bool,
    /// The generation at which the task last said this listing depends
    /// on who asks: until the state changes, callers are served alone.
    per_caller_at: Option<u64>,
    /// Counts the builds ended, for the callers waiting on one.
    ended: Option<watch::Sender<u64>>,
    /// When it was last asked for, in turns of [`Listings::shared`].
    used: u64,
}

struct Built {
    generation: u64,
    second: i64,
    /// The listing, or the task's refusal (`qstat 99` of a job that is
    /// not there), which is the same for every caller too.
    answer: Result<EncodedStatusReply, Status>,
}

/// What a caller does next.
enum Step {
    Serve(Result<EncodedStatusReply, Status>),
    Alone,
    Wait(watch::Receiver<u64>),
    Build,
}

impl Listings {
    pub fn generation(&self) -> Arc<Generation> {
        self.generation.clone()
    }

    /// The listing for `query` shared by every caller asking it now, or
    /// `None` when the caller's own must be built. `build` asks the task
    /// for it; `second` reads the wall clock's second.
    pub async fn shared<F, Fut>(
        &self,
        query: &StatusQuery,
        second: impl Fn() -> i64,
        build: F,
    ) -> Result<Option<EncodedStatusReply>, Status>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<Option<SharedListing>, Status>>,
    {
        // The state as it was when the caller asked: a listing built from
        // it or later shows every change answered before. Read once, so a
        // caller that waited for another's build is served by it even if
        // changes came in meanwhile (else, while changes stream in, each
        // build would serve only its builder).
        let wanted = self.generation.current();
        loop {
            let now = second();
            match self.next_step(query, wanted, now) {
                Step::Serve(answer) => return answer.map(Some),
                Step::Alone => return Ok(None),
                Step::Wait(mut ended) => {
                    // Ended or evicted: look again either way.
                    let _ = ended.changed().await;
                }
                Step::Build => {
                    let mut turn = BuildTurn {
                        listings: self,
                        query,
                        built: None,
                        per_caller_at: None,
                    };
                    let (generation, answer) = match build().await {
                        Ok(Some(listing)) => (
                            listing.generation,
                            Ok(EncodedStatusReply::encode_reply(&listing.reply)),
                        ),
                        Ok(None) => {
                            turn.per_caller_at = Some(wanted);
                            return Ok(None);
                        }
                        // Built from the state as it was when asked, or later.
                        Err(refused) => (wanted, Err(refused)),
                    };
                    turn.built = Some(Built {
                        generation,
                        second: now,
                        answer: answer.clone(),
                    });
                    return answer.map(Some);
                }
            }
        }
    }

    fn next_step(&self, query: &StatusQuery, wanted: u64, second: i64) -> Step {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.asked += 1;
        let asked = kept.asked;
        if !kept.slots.contains_key(query) && !make_room(&mut kept.slots, wanted) {
            return Step::Alone;
        }
        let slot = kept.slots.entry(query.clone()).or_default();
        slot.used = asked;
        if let Some(built) = &slot.built
            && built.generation >= wanted
            && built.second == second
        {
            return Step::Serve(built.answer.clone());
        }
        if slot.per_caller_at.is_some_and(|at| at >= wanted) {
            return Step::Alone;
        }
        if slot.building {
            let ended = slot.ended.get_or_insert_with(|| watch::channel(0).0);
            return Step::Wait(ended.subscribe());
        }
        slot.building = true;
        Step::Build
    }
}

/// Makes room for one more question: the idle ones built before
/// `generation` go. False if every kept one is in use.
fn make_room(slots: &mut HashMap<StatusQuery, Slot>, generation: u64) -> bool {
    if slots.len() < KEPT {
        return true;
    }
    slots.retain(|_, slot| {
        slot.building
            || slot
                .built
                .as_ref()
                .is_some_and(|b| b.generation >= generation)
    });
    if slots.len() < KEPT {
        return true;
    }
    // All current: the least recently asked idle one goes.
    let idle = slots
        .iter()
        .filter(|(_, slot)| !slot.building)
        .min_by_key(|(_, slot)| slot.used)
        .map(|(query, _)| query.clone());
    match idle {
        Some(query) => {
            slots.remove(&query);
            true
        }
        None => false,
    }
}

/// One caller's build. However it ends (built, refused, or its caller
/// gone mid-way), the slot is free again and the waiting callers look
/// again: one of them builds if this did not.
struct BuildTurn<'a> {
    listings: &'a Listings,
    query: &'a StatusQuery,
    built: Option<Built>,
    per_caller_at: Option<u64>,
}

impl Drop for BuildTurn<'_> {
    fn drop(&mut self) {
        let mut kept = self.listings.kept.lock().unwrap_or_else(|e| e.into_inner());
        let Some(slot) = kept.slots.get_mut(self.query) else {
            return;
        };
        slot.building = false;
        if let Some(built) = self.built.take() {
            slot.built = Some(built);
        }
        if self.per_caller_at.is_some() {
            slot.per_caller_at = self.per_caller_at;
        }
        if let Some(ended) = &slot.ended {
            ended.send_modify(|n| *n += 1);
        }
    }
}

#[cfg(test)]
mod tests;
