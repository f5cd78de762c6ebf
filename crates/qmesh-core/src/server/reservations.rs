//! Reservations in the configuration: each with its queue `R{id}`, made
//! and removed together so that neither is ever found without the other.

use super::Config;
use crate::queue::Queue;
use crate::reservation::Reservation;

impl Config {
    /// The number a new reservation gets (from 1, never reused while the
    /// configuration lives).
    pub fn take_reservation_id(&mut self) -> u64 {
        self.next_reservation = self.next_reservation.max(1);
        while self.reservations.contains_key(&self.next_reservation)
            || self
                .queues
                .contains_key(&format!("R{}", self.next_reservation))
        {
            self.next_reservation += 1;
        }
        let id = self.next_reservation;
        self.next_reservation += 1;
        id
    }

    /// Adds `r` (or replaces it) with its queue: enabled, started, on the
    /// reservation's node set. A queue kept from before keeps its jobs'
    /// attributes (pbs_ralter changes the reservation, not the queue).
    pub fn put_reservation(&mut self, r: Reservation) {
        let name = r.queue_name();
        let queue = self.queues.entry(name.clone()).or_insert_with(|| {
            let mut q = Queue::new(&name);
            q.enabled = true;
            q.started = true;
            q
        });
        queue.reservation = Some(r.id);
        queue.node_sets = vec![r.node_set.clone()];
        queue.node_group = None;
        self.reservations.insert(r.id, r);
    }

    /// Removes reservation `id`, and its queue if `queue_empty`; a queue
    /// that still has jobs is closed (disabled, stopped) and outlives the
    /// reservation until its last job has ended (`orphan_queues`).
    pub fn remove_reservation(&mut self, id: u64, queue_empty: bool) -> Option<Reservation> {
        let r = self.reservations.remove(&id)?;
        let name = r.queue_name();
        if queue_empty {
            self.queues.remove(&name);
        } else if let Some(q) = self.queues.get_mut(&name) {
            q.enabled = false;
            q.started = false;
        }
        Some(r)
    }

    /// The queues of reservations that are gone (kept while jobs were in
    /// them).
    pub fn orphan_queues(&self) -> Vec<String> {
        self.queues
            .values()
            .filter(|q| {
                q.reservation
                    .is_some_and(|id| !self.reservations.contains_key(&id))
            })
            .map(|q| q.name.clone())
            .collect()
    }

    /// The reservation whose queue `queue` is.
    pub fn reservation_of_queue(&self, queue: &str) -> Option<&Reservation> {
        self.queue(queue)
            .and_then(|q| q.reservation)
            .and_then(|id| self.reservations.get(&id))
    }
}
