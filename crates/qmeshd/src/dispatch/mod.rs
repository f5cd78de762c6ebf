//! Dispatch: the state machine that takes a started job to its agents and
//! its end back to the state, kept out of the scheduler task.
//!
//! The task owns the sockets, the store and the clock; this module owns
//! what stands between a job's start and its end on the hosts: where each
//! launch order stands, which hosts a job spanning several still waits
//! for, which old runs a host has not confirmed ended (stale), which jobs
//! are being given up and why, and which hosts have been away since when.
//! [`Dispatch::on_event`] takes one [`DispatchEvent`] with the time passed
//! in and answers with [`Order`]s, plain data the task carries out: a
//! message to a host's agent (in daemon terms; the task builds the wire
//! message), or a job's end to store, log and mail. Nothing here reads the
//! clock, the store or a socket, so the whole launch, join, stale and
//! give-up cycle is tested in memory (`tests.rs`), the way HyperQueue's
//! tako tests its scheduler against a recording outbox.
//!
//! - `launch.rs`: a start becomes a launch order; ends from the daemon's
//!   side (kills, jobs ended before their launch, forced ends).
//! - `agents.rs`: an agent's hello reconciled, its end reports, stale runs.
//! - `hosts.rs`: jobs across hosts (joins, leaves) and hosts given up.

mod agents;
mod hosts;
mod launch;
#[cfg(test)]
mod tests;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::{Duration, Instant};

use qmesh_core::job::{ExitCause, JobExit};
use qmesh_core::joblog::EndedRun;
use qmesh_core::state::Finished;
use qmesh_core::{JobId, State, Time};

/// Where a job's launch order stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Launch {
    /// Started in a pass; the start is not yet durable.
    AwaitingDurable,
    /// Durable, but its agent was not connected: send when it comes.
    Ready,
    /// Waiting for the other hosts of the job to join it (prologues).
    Joining,
    /// Sent to the agent.
    Sent,
}

/// The time of an event: the wall clock for the state and the records,
/// a monotonic instant for how long hosts have been away.
#[derive(Clone, Copy, Debug)]
pub struct Now {
    pub wall: Time,
    pub mono: Instant,
}

/// An agent's report that a job ended there.
#[derive(Clone, Debug)]
pub struct EndReport {
    pub job: JobId,
    pub exit: JobExit,
    /// When it ended, if the agent said.
    pub end: Option<Time>,
}

/// What happened, as far as dispatch is concerned.
#[derive(Clone, Debug)]
pub enum DispatchEvent {
    /// A pass or qrun started the job; its start is not durable yet.
    Started { job: JobId },
    /// The job's start is durable: its launch is wanted.
    StartDurable { job: JobId },
    /// The launch order could not be handed to the agent (its session is
    /// closed or stuck): it waits for the agent's next hello.
    LaunchUndelivered { job: JobId },
    /// The launch order could not be made (`why`): the job fails.
    LaunchRefused { job: JobId, why: String },
    /// An agent said hello (accepted): the jobs it still runs, those it
    /// ran to their end, the jobs it has joined.
    AgentConnected {
        host: String,
        running: Vec<JobId>,
        finished: Vec<EndReport>,
        joined: Vec<JobId>,
    },
    /// The agent of `host` is gone (disconnected or silent).
    AgentGone { host: String },
    /// A host answered a join: joined, or its prologue failed (`message`).
    Joined {
        host: String,
        job: JobId,
        ok: bool,
        message: String,
    },
    /// An agent reports a job's end.
    JobEnd { host: String, report: EndReport },
    /// The state has just marked an active job exiting (qdel, qrerun, a
    /// period's end): kill it, or end it if its launch has not left.
    EndWanted {
        job: JobId,
        host: String,
        reason: String,
    },
    /// A job ended without its agent's word (qdel or qrerun -W force): its
    /// run on `host`, if launched, is stale there.
    EndWithoutAgent {
        job: JobId,
        host: String,
        exit: JobExit,
    },
    /// Time passes: hosts away for the grace are given up.
    Tick,
}

/// A message for a host's agent, in daemon terms (the task makes the wire
/// message).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToAgent {
    /// Run the job (the task reads its script and builds the order; it
    /// answers [`DispatchEvent::LaunchRefused`] if it cannot,
    /// [`DispatchEvent::LaunchUndelivered`] if the agent does not take it).
    Launch(JobId),
    /// Join the job on this host's nodes (its prologue).
    Join(JobId),
    /// The job ended: leave it (its epilogue).
    Leave { job: JobId, reason: String },
    /// Kill the job.
    Kill { job: JobId, reason: String },
    /// The job's end is recorded: the agent may forget it.
    Ack(JobId),
}

/// A job's end as the state has recorded it: the task stores the job,
/// writes its accounting record, mails, answers waiters and resolves
/// dependents.
#[derive(Clone, Debug)]
pub struct Ended {
    pub job: JobId,
    pub how: Finished,
    /// The run that ended, for the accounting log (none if the job was
    /// not active).
    pub run: Option<EndedRun>,
    /// Whether the job was stopped at a period's end before it ended.
    pub was_stopped: bool,
    pub end: Time,
    /// The agent to acknowledge the end to once it is durable.
    pub ack: Option<String>,
}

/// What the task is to do.
#[derive(Clone, Debug)]
pub enum Order {
    /// Queue a message for the agent of `host` (dropped if it is away).
    Send { host: String, message: ToAgent },
    /// A job has ended in the state.
    Ended(Ended),
}

/// The dispatch state (see the module comment).
#[derive(Debug, Default)]
pub struct Dispatch {
    launches: HashMap<JobId, Launch>,
    /// Jobs being ended from outside (a lost host they joined, a failed
    /// prologue): killed where they were launched; the end report counts
    /// as this cause and reason.
    giving_up: HashMap<JobId, (ExitCause, String)>,
    /// Per host, jobs whose old run there has not confirmed its end.
    stale: HashMap<String, HashSet<JobId>>,
    /// Per job spanning hosts, the hosts that have not joined it yet; the
    /// launch leaves when none is left.
    awaiting_joins: HashMap<JobId, BTreeSet<String>>,
    /// Hosts holding active jobs whose agent is away, and since when.
    away: HashMap<String, Instant>,
    /// Hosts whose agent is connected.
    connected: HashSet<String>,
    /// How long a host's agent may be away before its jobs are lost.
    lost_after: Duration,
}

impl Dispatch {
    pub fn new(lost_after: Duration) -> Dispatch {
        Dispatch {
            lost_after,
            ..Dispatch::default()
        }
    }

    /// Takes one event; what the task is to do, in order.
    pub fn on_event(&mut self, state: &mut State, event: DispatchEvent, now: Now) -> Vec<Order> {
        let mut step = Step {
            d: self,
            state,
            now,
            out: Vec::new(),
        };
        step.event(event);
        step.out
    }

    /// Where the job's launch stands, if it is being launched or runs.
    pub fn launch_of(&self, id: JobId) -> Option<Launch> {
        self.launches.get(&id).copied()
    }

    /// Whether the job's old run on `host` has not yet confirmed its end.
    pub fn stale_on(&self, host: &str, id: JobId) -> bool {
        self.stale.get(host).is_some_and(|jobs| jobs.contains(&id))
    }
}

/// One event being handled: the dispatch state, the scheduler's state,
/// the time, and the orders so far.
struct Step<'a> {
    d: &'a mut Dispatch,
    state: &'a mut State,
    now: Now,
    out: Vec<Order>,
}

impl Step<'_> {
    fn event(&mut self, event: DispatchEvent) {
        match event {
            DispatchEvent::Started { job } => {
                self.d.launches.insert(job, Launch::AwaitingDurable);
            }
            DispatchEvent::StartDurable { job } => self.launch(job),
            DispatchEvent::LaunchUndelivered { job } => {
                if self.d.launches.get(&job) == Some(&Launch::Sent) {
                    self.d.launches.insert(job, Launch::Ready);
                }
            }
            DispatchEvent::LaunchRefused { job, why } => self.finish_failed(job, &why),
            DispatchEvent::AgentConnected {
                host,
                running,
                finished,
                joined,
            } => self.agent_connected(&host, &running, &finished, &joined),
            DispatchEvent::AgentGone { host } => self.agent_gone(&host),
            DispatchEvent::Joined {
                host,
                job,
                ok,
                message,
            } => self.joined(&host, job, ok, &message),
            DispatchEvent::JobEnd { host, report } => self.job_end(&host, report),
            DispatchEvent::EndWanted { job, host, reason } => self.end_active(job, &host, &reason),
            DispatchEvent::EndWithoutAgent { job, host, exit } => {
                if self.d.launches.get(&job) == Some(&Launch::Sent) {
                    self.mark_stale(&host, job);
                }
                let end = self.now.wall;
                self.finish(job, exit, end, None);
            }
            DispatchEvent::Tick => self.give_up_lost_hosts(),
        }
    }

    fn send(&mut self, host: &str, message: ToAgent) {
        self.out.push(Order::Send {
            host: host.to_string(),
            message,
        });
    }
}

/// An exit the daemon decides (no code, no usage).
fn exit_of(cause: ExitCause, message: String) -> JobExit {
    JobExit {
        code: None,
        signal: None,
        cause,
        message,
        cput: None,
        max_rss: None,
        vmem: None,
    }
}
