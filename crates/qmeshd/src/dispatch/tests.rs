//! Dispatch in memory: events in, the orders recorded and the state
//! looked at, with the time passed in by hand.

use std::time::{Duration, Instant};

use qmesh_core::job::{ExitCause, JobExit};
use qmesh_core::state::Finished;
use qmesh_core::{Caller, JobId, JobState, Role, State, Submission, Time};

use super::{Dispatch, DispatchEvent, EndReport, Ended, Launch, Now, Order, ToAgent};

const GRACE: Duration = Duration::from_secs(300);

fn t(secs: i64) -> Time {
    chrono::DateTime::from_timestamp(1_700_000_000 + secs, 0).expect("a valid time")
}

/// A machine of one node per host, each node named as its host; the
/// dispatch state and the orders each event gave.
struct Bench {
    d: Dispatch,
    state: State,
    start: Instant,
}

impl Bench {
    fn new(hosts: &[&str]) -> Bench {
        Bench {
            d: Dispatch::new(GRACE),
            state: crate::test_machine::machine(hosts),
            start: Instant::now(),
        }
    }

    /// Feeds `event` at `secs` seconds in; the orders it gave.
    fn at(&mut self, secs: u64, event: DispatchEvent) -> Vec<Order> {
        let now = Now {
            wall: t(secs as i64),
            mono: self.start + Duration::from_secs(secs),
        };
        self.d.on_event(&mut self.state, event, now)
    }

    fn connect(&mut self, secs: u64, host: &str) -> Vec<Order> {
        self.at(
            secs,
            DispatchEvent::AgentConnected {
                host: host.into(),
                running: Vec::new(),
                finished: Vec::new(),
                joined: Vec::new(),
            },
        )
    }

    /// A job of `nodes` nodes submitted and started on the first `nodes`
    /// nodes, its start durable: what that ordered.
    fn start_job(&mut self, nodes: u32) -> (JobId, Vec<Order>) {
        let sub = Submission {
            script_name: "job.sh".into(),
            workdir: "/tmp".into(),
            resources: vec![("nodes".into(), nodes.to_string())],
            ..Submission::default()
        };
        let user = Caller {
            uid: 1000,
            gid: 1000,
            user: "u".into(),
            group: "g".into(),
            role: Role::User,
        };
        let id = self.state.submit(sub, &user, t(0)).expect("submitted").id;
        let on: Vec<usize> = (0..nodes as usize).collect();
        self.state.start(id, &on, t(1)).expect("started");
        assert!(self.at(1, DispatchEvent::Started { job: id }).is_empty());
        assert_eq!(self.d.launch_of(id), Some(Launch::AwaitingDurable));
        (id, self.at(1, DispatchEvent::StartDurable { job: id }))
    }

    fn report(&mut self, secs: u64, host: &str, id: JobId, exit: JobExit) -> Vec<Order> {
        let report = EndReport {
            job: id,
            exit,
            end: Some(t(secs as i64)),
        };
        self.at(
            secs,
            DispatchEvent::JobEnd {
                host: host.into(),
                report,
            },
        )
    }
}

fn exited(code: i32) -> JobExit {
    JobExit {
        code: Some(code),
        signal: None,
        cause: ExitCause::Exited,
        message: String::new(),
        cput: None,
        max_rss: None,
        vmem: None,
    }
}

/// A host's answer to a join: joined, or its prologue failed (`message`).
fn joined(host: &str, job: JobId, ok: bool, message: &str) -> DispatchEvent {
    DispatchEvent::Joined {
        host: host.into(),
        job,
        ok,
        message: message.into(),
    }
}

fn send(host: &str, message: ToAgent) -> (String, ToAgent) {
    (host.to_string(), message)
}

/// The messages among `orders`, in order.
fn sends(orders: &[Order]) -> Vec<(String, ToAgent)> {
    orders
        .iter()
        .filter_map(|o| match o {
            Order::Send { host, message } => Some((host.clone(), message.clone())),
            Order::Ended(_) => None,
        })
        .collect()
}

/// The ends among `orders`.
fn ends(orders: &[Order]) -> Vec<Ended> {
    orders
        .iter()
        .filter_map(|o| match o {
            Order::Ended(e) => Some(e.clone()),
            Order::Send { .. } => None,
        })
        .collect()
}

#[test]
fn a_single_host_job_is_launched_once_its_start_is_durable() {
    let mut b = Bench::new(&["a", "b"]);
    assert!(b.connect(0, "a").is_empty());
    let (id, orders) = b.start_job(1);
    assert_eq!(sends(&orders), [send("a", ToAgent::Launch(id))]);
    assert!(ends(&orders).is_empty());
    assert_eq!(b.d.launch_of(id), Some(Launch::Sent));

    // Its end: recorded, to be acknowledged once durable.
    let orders = b.report(9, "a", id, exited(0));
    assert!(sends(&orders).is_empty(), "the ack waits for the store");
    let ended = ends(&orders);
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0].how, Finished::Finished);
    assert_eq!(ended[0].ack.as_deref(), Some("a"));
    assert_eq!(ended[0].end, t(9));
    assert_eq!(b.state.job(id).map(|j| j.state), Some(JobState::Finished));
    assert_eq!(b.d.launch_of(id), None);
}

#[test]
fn a_launch_waits_for_its_agent_and_for_a_session_that_takes_it() {
    let mut b = Bench::new(&["a"]);
    // Up as the daemon restarted, its agent not back yet.
    b.state.set_host_up("a", true);
    let (id, orders) = b.start_job(1);
    assert!(orders.is_empty(), "no agent yet");
    assert_eq!(b.d.launch_of(id), Some(Launch::Ready));
    let orders = b.connect(2, "a");
    assert_eq!(sends(&orders), [send("a", ToAgent::Launch(id))]);

    // The session did not take it: the next hello sends it again.
    assert!(
        b.at(2, DispatchEvent::LaunchUndelivered { job: id })
            .is_empty()
    );
    assert_eq!(b.d.launch_of(id), Some(Launch::Ready));
    assert!(
        b.at(3, DispatchEvent::AgentGone { host: "a".into() })
            .is_empty()
    );
    let orders = b.connect(4, "a");
    assert_eq!(sends(&orders), [send("a", ToAgent::Launch(id))]);
}

#[test]
fn a_job_across_hosts_waits_for_every_join_and_its_end_leaves_them() {
    let mut b = Bench::new(&["a", "b", "c"]);
    for host in ["a", "b", "c"] {
        b.connect(0, host);
    }
    let (id, orders) = b.start_job(3);
    assert_eq!(
        sends(&orders),
        [send("b", ToAgent::Join(id)), send("c", ToAgent::Join(id))]
    );
    assert_eq!(b.d.launch_of(id), Some(Launch::Joining));
    assert!(
        b.at(2, joined("b", id, true, "")).is_empty(),
        "c has not joined yet"
    );
    let orders = b.at(3, joined("c", id, true, ""));
    assert_eq!(sends(&orders), [send("a", ToAgent::Launch(id))]);
    assert_eq!(b.d.launch_of(id), Some(Launch::Sent));

    let orders = b.report(9, "a", id, exited(0));
    let reason = b
        .state
        .job(id)
        .map(|j| j.comment.clone())
        .unwrap_or_default();
    assert_eq!(
        sends(&orders),
        [
            send(
                "b",
                ToAgent::Leave {
                    job: id,
                    reason: reason.clone()
                }
            ),
            send("c", ToAgent::Leave { job: id, reason }),
        ]
    );
    assert_eq!(ends(&orders).len(), 1);
    assert!(b.d.awaiting_joins.is_empty());
}

#[test]
fn a_failed_prologue_kills_the_job_and_its_end_counts_as_a_failed_launch() {
    let mut b = Bench::new(&["a", "b"]);
    b.connect(0, "a");
    b.connect(0, "b");
    let (id, _) = b.start_job(2);
    b.at(2, joined("b", id, true, ""));
    let orders = b.at(3, joined("b", id, false, "exit 1"));
    let why = "the prologue on b failed: exit 1".to_string();
    assert_eq!(
        sends(&orders),
        [send(
            "a",
            ToAgent::Kill {
                job: id,
                reason: why.clone()
            }
        )]
    );
    let orders = b.report(4, "a", id, exited(0));
    assert_eq!(ends(&orders).len(), 1);
    let exit = b.state.job(id).and_then(|j| j.exit.clone());
    assert_eq!(
        exit.as_ref().map(|e| e.cause),
        Some(ExitCause::LaunchFailed)
    );
    assert_eq!(exit.map(|e| e.message), Some(why));
}

#[test]
fn a_host_away_beyond_the_grace_gives_up_its_jobs_with_the_cause() {
    let mut b = Bench::new(&["a", "b"]);
    b.connect(0, "a");
    b.connect(0, "b");
    let (id, _) = b.start_job(2);
    b.at(2, joined("b", id, true, ""));
    assert!(
        b.at(10, DispatchEvent::AgentGone { host: "b".into() })
            .is_empty()
    );
    assert!(b.at(11, DispatchEvent::Tick).is_empty(), "away since now");
    assert_eq!(
        b.d.away.get("b"),
        Some(&(b.start + Duration::from_secs(11)))
    );
    assert!(
        b.at(11 + 299, DispatchEvent::Tick).is_empty(),
        "within the grace"
    );

    // b only joined the job: it is killed where it was launched, and its
    // end there counts as the host's loss, whatever the agent saw.
    let orders = b.at(11 + 300, DispatchEvent::Tick);
    let why = "host b was lost: its agent was away for 300 s".to_string();
    assert_eq!(
        sends(&orders),
        [send(
            "a",
            ToAgent::Kill {
                job: id,
                reason: why.clone()
            }
        )]
    );
    assert!(ends(&orders).is_empty());
    assert!(b.d.giving_up.contains_key(&id));
    assert!(b.d.away.is_empty());
    let orders = b.report(320, "a", id, exited(0));
    assert_eq!(ends(&orders).len(), 1);
    let job = b.state.job(id).expect("the job");
    assert!(job.comment.contains(&why), "{}", job.comment);
    assert!(b.d.giving_up.is_empty());
}

#[test]
fn an_agent_back_with_a_run_given_up_has_it_killed_and_its_end_counts_once() {
    let mut b = Bench::new(&["a"]);
    b.connect(0, "a");
    let (id, _) = b.start_job(1);
    b.at(5, DispatchEvent::AgentGone { host: "a".into() });
    b.at(6, DispatchEvent::Tick);
    let orders = b.at(306, DispatchEvent::Tick);
    let ended = ends(&orders);
    assert_eq!(ended.len(), 1, "lost with its host");
    assert!(ended[0].ack.is_none());
    let cause = b
        .state
        .job(id)
        .and_then(|j| j.exit.as_ref().map(|e| e.cause));
    let requeued = ended[0].how == Finished::Requeued;
    assert!(
        requeued || cause == Some(ExitCause::Lost),
        "{:?}",
        ended[0].how
    );
    assert!(b.d.stale_on("a", id));

    // The agent comes back still running it: killed, not launched again
    // before its end is in.
    let orders = b.at(
        400,
        DispatchEvent::AgentConnected {
            host: "a".into(),
            running: vec![id],
            finished: Vec::new(),
            joined: Vec::new(),
        },
    );
    assert_eq!(
        sends(&orders),
        [send(
            "a",
            ToAgent::Kill {
                job: id,
                reason: "the daemon does not run this job here".into()
            }
        )]
    );
    assert!(ends(&orders).is_empty());
    let orders = b.report(401, "a", id, exited(0));
    assert_eq!(
        sends(&orders),
        [send("a", ToAgent::Ack(id))],
        "only acknowledged"
    );
    assert!(ends(&orders).is_empty(), "its end was counted already");
    assert!(!b.d.stale_on("a", id));
}

#[test]
fn a_refused_launch_fails_the_job() {
    let mut b = Bench::new(&["a"]);
    b.connect(0, "a");
    let (id, _) = b.start_job(1);
    let why = "its script is missing from the store".to_string();
    let orders = b.at(
        2,
        DispatchEvent::LaunchRefused {
            job: id,
            why: why.clone(),
        },
    );
    assert!(sends(&orders).is_empty());
    let ended = ends(&orders);
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0].end, t(2));
    let exit = b.state.job(id).and_then(|j| j.exit.clone());
    assert_eq!(
        exit.as_ref().map(|e| e.cause),
        Some(ExitCause::LaunchFailed)
    );
    assert_eq!(exit.map(|e| e.message), Some(why));
    assert_eq!(b.d.launch_of(id), None);
}

#[test]
fn an_end_reported_for_a_job_already_finished_is_just_acknowledged() {
    let mut b = Bench::new(&["a"]);
    b.connect(0, "a");
    let (id, _) = b.start_job(1);
    assert_eq!(ends(&b.report(5, "a", id, exited(0))).len(), 1);

    // The daemon restarts (a new dispatch state) before the agent heard
    // the acknowledgement; it says hello with the end again.
    b.d = Dispatch::new(GRACE);
    let report = EndReport {
        job: id,
        exit: exited(0),
        end: Some(t(5)),
    };
    let orders = b.at(
        60,
        DispatchEvent::AgentConnected {
            host: "a".into(),
            running: Vec::new(),
            finished: vec![report],
            joined: Vec::new(),
        },
    );
    assert_eq!(sends(&orders), [send("a", ToAgent::Ack(id))]);
    assert!(ends(&orders).is_empty());
    let orders = b.report(61, "a", id, exited(0));
    assert_eq!(sends(&orders), [send("a", ToAgent::Ack(id))]);
    assert!(ends(&orders).is_empty());
}

#[test]
fn a_job_deleted_before_its_launch_left_ends_without_one() {
    let mut b = Bench::new(&["a"]);
    b.state.set_host_up("a", true);
    let (id, orders) = b.start_job(1);
    assert!(orders.is_empty(), "no agent: the launch waits");
    let orders = b.at(
        2,
        DispatchEvent::EndWanted {
            job: id,
            host: "a".into(),
            reason: "deleted by u".into(),
        },
    );
    assert!(sends(&orders).is_empty());
    assert_eq!(ends(&orders).len(), 1);
    let exit = b.state.job(id).and_then(|j| j.exit.clone());
    assert_eq!(exit.as_ref().map(|e| e.cause), Some(ExitCause::Deleted));
    assert_eq!(
        exit.map(|e| e.message),
        Some("deleted by u before it was launched".into())
    );
}
