//! Taking events in batches: after a wake-up the task handles what has
//! queued up behind the first event too, but only so many, so that the
//! timers (passes, ticks, durable flushes) still get their turn. The one
//! rule: an event taken from the channel is handled, never dropped (an
//! agent's end report lost here is a job that never ends).

use std::ops::ControlFlow;

use tokio::sync::mpsc;

/// Handles `first`, then what is queued, `limit` events at most in all.
/// Stops early when `handle` breaks (a shutdown) and says so.
pub(super) fn drain<T>(
    first: T,
    events: &mut mpsc::Receiver<T>,
    limit: usize,
    mut handle: impl FnMut(T) -> ControlFlow<()>,
) -> ControlFlow<()> {
    handle(first)?;
    for _ in 1..limit {
        // Taken only when it will be handled.
        match events.try_recv() {
            Ok(event) => handle(event)?,
            Err(_) => break,
        }
    }
    ControlFlow::Continue(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_event_taken_is_handled_in_order() {
        let (tx, mut rx) = mpsc::channel(1000);
        for i in 0..600 {
            tx.send(i).await.unwrap();
        }
        let mut seen = Vec::new();
        let mut batches = 0;
        while let Ok(first) = rx.try_recv() {
            batches += 1;
            let flow = drain(first, &mut rx, 256, |e| {
                seen.push(e);
                ControlFlow::Continue(())
            });
            assert_eq!(flow, ControlFlow::Continue(()));
        }
        assert_eq!(seen, (0..600).collect::<Vec<_>>());
        assert_eq!(batches, 3, "256 + 256 + 88");
    }

    #[tokio::test]
    async fn a_break_stops_the_batch_and_leaves_the_rest_queued() {
        let (tx, mut rx) = mpsc::channel(10);
        for i in 1..5 {
            tx.send(i).await.unwrap();
        }
        let mut seen = Vec::new();
        let flow = drain(0, &mut rx, 256, |e| {
            seen.push(e);
            if e == 2 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        assert_eq!(flow, ControlFlow::Break(()));
        assert_eq!(seen, vec![0, 1, 2]);
        assert_eq!(rx.try_recv().ok(), Some(3));
    }
}
