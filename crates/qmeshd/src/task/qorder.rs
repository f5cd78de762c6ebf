//! The daemon's half of qorder: the two jobs exchange places through the
//! core's rule (`State::order`), both are stored, and the answer goes once
//! that is durable. The next pass reads the new order.

use qmesh_core::joblog::EventClass;
use tracing::info;

use super::SchedulerTask;
use crate::answer::JobOutcome;
use crate::dispatch::Now;
use crate::event::Reply;
use crate::identity::Peer;

impl SchedulerTask {
    pub(super) fn order(
        &mut self,
        peer: &Peer,
        (first, second): (&str, &str),
        reply: Reply<Vec<JobOutcome>>,
        now: Now,
    ) {
        let caller = self.caller(peer);
        let outcome = self
            .state
            .parse_id(first)
            .and_then(|a| Ok((a, self.state.parse_id(second)?)))
            .and_then(|(a, b)| {
                self.state
                    .order(a, b, &caller, now.wall)
                    .map(|changed| (a, b, changed))
            });
        let (a, b, changed) = match outcome {
            Ok(done) => done,
            Err(e) => {
                info!(first = %first, second = %second, user = %caller.user, error = %e, "qorder refused");
                let _ = reply.send(Err(e.into()));
                return;
            }
        };
        for id in changed {
            if let Some(job) = self.state.job(id) {
                self.durability.persist(job);
            }
        }
        let (fa, fb) = (self.state.full_id(a), self.state.full_id(b));
        info!(first = %fa, second = %fb, user = %caller.user, "jobs reordered");
        let server = self.state.server_name().to_string();
        for (id, other) in [(a, &fb), (b, &fa)] {
            let text = format!(
                "Job exchanged places with {other} at request of {}@{server}",
                caller.user
            );
            self.logs
                .event(&self.state, (id, EventClass::Job), text, now.wall);
        }
        let results = vec![JobOutcome {
            job_id: fa,
            refused: None,
        }];
        self.answer_when_durable(results, "the jobs were reordered".to_string(), reply);
    }
}
