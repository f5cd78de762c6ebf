//! Where the job-count limits bite: a submission or a move that would pass
//! a queued limit is refused with PBS's "Maximum number of jobs already in
//! queue" and the figures; a job that would pass a run limit waits, with
//! the reason the scheduler and qstat give.

use crate::error::CoreError;
use crate::job::Job;
use crate::limits::{Applies, Entity, JobLimits, RunCounts};
use crate::queue::Queue;
use crate::reason::Reason;
use crate::server::Config;
use crate::state::State;

/// Where a limit is set: the server, or a queue.
#[derive(Clone, Copy)]
enum Place<'a> {
    Server,
    Queue(&'a str),
}

impl Place<'_> {
    fn describe(self) -> String {
        match self {
            Place::Server => "the server".to_string(),
            Place::Queue(q) => format!("queue \"{q}\""),
        }
    }

    fn qmgr(self) -> String {
        match self {
            Place::Server => "server".to_string(),
            Place::Queue(q) => format!("queue {q}"),
        }
    }
}

fn scope<'a>(place: Place<'a>) -> Option<&'a str> {
    match place {
        Place::Server => None,
        Place::Queue(q) => Some(q),
    }
}

/// "for user alice ", "for group staff ", "" (all jobs).
fn whose(a: &Applies) -> String {
    match a.entity {
        Entity::Overall => String::new(),
        e => format!("for {} {} ", e.word(), a.name),
    }
}

fn attr_of(written: &str) -> &str {
    written.split([' ', '=']).next().unwrap_or(written)
}

impl State {
    /// Refuses `job` if holding it in `queue` would pass a queued limit of
    /// the queue or (unless it is only moving between queues, and so is
    /// already counted there) of the server. Reads counters only.
    pub fn check_queued_limits(
        &self,
        job: &Job,
        queue: &Queue,
        moving: bool,
    ) -> Result<(), CoreError> {
        let server = &self.config().server.limits;
        if !moving && server.limits_queued() {
            self.check_place(job, server, Place::Server)?;
        }
        if queue.limits.limits_queued() {
            self.check_place(job, &queue.limits, Place::Queue(&queue.name))?;
        }
        Ok(())
    }

    fn check_place(&self, job: &Job, limits: &JobLimits, place: Place) -> Result<(), CoreError> {
        let counts = &self.accounting().tally.entities;
        for a in limits.queued_limits_for(job) {
            let count = counts.jobs(scope(place), a.entity, &a.name);
            if count >= a.max {
                return Err(CoreError::MaxJobsQueued {
                    whose: whose(&a),
                    place: place.describe(),
                    count,
                    limit: a.written.clone(),
                    raise: format!("qmgr -c \"set {} {}\"", place.qmgr(), attr_of(&a.written)),
                });
            }
        }
        Ok(())
    }
}

/// The reason a run limit holds `job` back, given what runs (`counts`,
/// this pass's starts included): the first limit of the server, then of
/// its queue, that it would pass.
pub fn run_reason(config: &Config, counts: &RunCounts, job: &Job) -> Option<Reason> {
    first_passed(config, counts, job).map(|(_, a)| reason_of(a.entity))
}

fn reason_of(entity: Entity) -> Reason {
    match entity {
        Entity::User => Reason::UserLimit,
        Entity::Group => Reason::GroupLimit,
        Entity::Overall | Entity::Project => Reason::QueueLimit,
    }
}

fn first_passed<'a>(
    config: &'a Config,
    counts: &RunCounts,
    job: &Job,
) -> Option<(Place<'a>, Applies)> {
    let server = &config.server.limits;
    let queue = config.queue(&job.queue)?;
    let places = [
        (Place::Server, server),
        (Place::Queue(queue.name.as_str()), &queue.limits),
    ];
    for (place, limits) in places {
        if !limits.limits_running() {
            continue;
        }
        for a in limits.run_limits_for(job) {
            if counts.running(scope(place), a.entity, &a.name) >= a.max {
                return Some((place, a));
            }
        }
    }
    None
}

/// A sentence naming the run limit that holds `job` back and the jobs
/// running against it, for qstat's comment and spwhen; `None` if none
/// does. Reads the state's counters: a few lookups.
pub fn describe_run_limit(state: &State, job: &Job) -> Option<String> {
    let config = state.config();
    let counts = state.accounting().tally.entities.running();
    let (place, a) = first_passed(config, counts, job)?;
    let running = counts.running(scope(place), a.entity, &a.name);
    let who = match a.entity {
        Entity::Overall => format!("{} already runs", place.describe()),
        Entity::Project => format!("project {} already runs", a.name),
        e => format!("{} {} already runs", e.word(), a.name),
    };
    let inside = match (a.entity, place) {
        (Entity::Overall, _) => String::new(),
        (_, Place::Server) => " on the server".to_string(),
        (_, Place::Queue(q)) => format!(" in queue {q}"),
    };
    Some(format!(
        "{who} {running} job{}{inside}, as many as {} allows; it starts when one ends",
        if running == 1 { "" } else { "s" },
        a.written
    ))
}
