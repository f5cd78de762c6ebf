//! The scheduler task in memory: events in with the time passed in by
//! hand, answers read from their channels, messages to agents read from
//! the outboxes a test gives them. No runtime, no socket: the store is a
//! real sled store in a temporary directory, whose writer thread says
//! when a turn is durable.

use std::sync::Arc;
use std::time::{Duration, Instant};

use qmesh_core::job::JobPayload;
use qmesh_core::{Config, JobState, Submission};
use qmesh_proto::v1;
use qmesh_store::{SledStore, Store};
use tokio::sync::{mpsc, oneshot};

use super::{SchedulerTask, TaskSettings};
use crate::dispatch::Now;
use crate::error::TaskError;
use crate::event::{AfterDurable, Event, Reply, StatusQuery};
use crate::identity::Peer;

/// A machine of one node per host (each node named as its host), one
/// queue `batch`, a task over it, and the time it started.
struct Bench {
    task: SchedulerTask,
    after: mpsc::UnboundedReceiver<Vec<AfterDurable>>,
    store: Arc<SledStore>,
    t0: Now,
    dir: tempfile::TempDir,
}

fn settings(dir: &std::path::Path) -> TaskSettings {
    TaskSettings {
        heartbeat_secs: 10,
        lost_after: Duration::from_secs(300),
        pass_interval: Duration::from_millis(20),
        daemon_uid: 0,
        jobs: qmesh_config::JobSettings::default(),
        file_config: Config::default(),
        store_name: format!("in {}", dir.join("store").display()),
        term: 0,
    }
}

fn alice() -> Peer {
    Peer {
        uid: 1000,
        gid: 1000,
        user: "alice".into(),
        group: "users".into(),
        host: None,
    }
}

fn job(nodes: u32) -> (Box<Submission>, JobPayload) {
    let submission = Submission {
        script_name: "job.sh".into(),
        workdir: "/tmp".into(),
        resources: vec![("nodes".into(), nodes.to_string())],
        ..Submission::default()
    };
    let payload = JobPayload {
        script: b"#!/bin/sh\ntrue\n".to_vec(),
        env: Vec::new(),
    };
    (Box::new(submission), payload)
}

impl Bench {
    fn new(hosts: &[&str]) -> Bench {
        Bench::with(hosts, |_| {})
    }

    fn with(hosts: &[&str], adjust: impl FnOnce(&mut TaskSettings)) -> Bench {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let store = Arc::new(SledStore::open(&dir.path().join("store")).expect("a store"));
        let (tx, after) = mpsc::unbounded_channel();
        let t0 = Now {
            wall: chrono::DateTime::from_timestamp(1_767_225_600, 0).expect("a time"),
            mono: Instant::now(),
        };
        let mut settings = settings(dir.path());
        adjust(&mut settings);
        let task = SchedulerTask::new(
            crate::test_machine::machine(hosts),
            store.clone() as Arc<dyn Store>,
            settings,
            tx,
            t0,
        );
        Bench {
            task,
            after,
            store,
            t0,
            dir,
        }
    }

    /// `secs` seconds after the start.
    fn at(&self, secs: u64) -> Now {
        Now {
            wall: self.t0.wall + chrono::Duration::seconds(secs as i64),
            mono: self.t0.mono + Duration::from_secs(secs),
        }
    }

    /// Hands `event` to the task at `secs` and ends the turn.
    fn handle(&mut self, event: Event, secs: u64) {
        self.task.handle(event, self.at(secs));
        self.task.end_turn();
    }

    /// Waits for the store, then gives the task back what waited for it
    /// (launches, acknowledgements), until nothing more waits.
    fn settle(&mut self, secs: u64) {
        loop {
            self.store.sync().expect("the store syncs");
            let Ok(after) = self.after.try_recv() else {
                return;
            };
            self.task.after_durable(after, self.at(secs));
            self.task.end_turn();
        }
    }

    /// Asks the task (the event `make` builds) at `secs`; its answer once
    /// what it changed is durable.
    fn ask<T>(&mut self, secs: u64, make: impl FnOnce(Reply<T>) -> Event) -> Result<T, TaskError> {
        let (tx, mut rx) = oneshot::channel();
        self.handle(make(tx), secs);
        self.settle(secs);
        rx.try_recv().expect("answered once durable")
    }

    fn submit(&mut self, secs: u64, nodes: u32) -> Result<String, TaskError> {
        let (submission, payload) = job(nodes);
        self.ask(secs, |reply| Event::Submit {
            peer: alice(),
            submission,
            payload,
            reply,
        })
    }

    /// `host`'s agent says hello (running nothing); what the daemon sends
    /// it, welcome first.
    fn connect(
        &mut self,
        secs: u64,
        host: &str,
        session: u64,
    ) -> mpsc::Receiver<v1::DaemonMessage> {
        self.connect_running(secs, host, session, Vec::new())
    }

    /// `host`'s agent says hello, running the jobs `running`.
    fn connect_running(
        &mut self,
        secs: u64,
        host: &str,
        session: u64,
        running: Vec<u64>,
    ) -> mpsc::Receiver<v1::DaemonMessage> {
        let (outbox, inbox) = mpsc::channel(64);
        let hello = v1::AgentHello {
            host: host.into(),
            running,
            ..Default::default()
        };
        self.ask(secs, |reply| Event::AgentHello {
            session,
            hello,
            outbox,
            reply,
        })
        .expect("the agent is welcome");
        inbox
    }

    /// A pass at `secs`, and what waited for its starts.
    fn pass(&mut self, secs: u64) {
        self.task.schedule(self.at(secs));
        self.task.end_turn();
        self.settle(secs);
    }

    fn status(&mut self, secs: u64) -> v1::StatusReply {
        self.ask(secs, |reply| Event::Status {
            peer: alice(),
            query: Box::default(),
            reply,
        })
        .expect("qstat answers")
    }
}

/// The kinds of the messages waiting in an agent's inbox.
fn kinds(inbox: &mut mpsc::Receiver<v1::DaemonMessage>) -> Vec<v1::daemon_message::Kind> {
    std::iter::from_fn(|| inbox.try_recv().ok())
        .filter_map(|m| m.kind)
        .collect()
}

#[test]
fn a_submission_is_answered_once_durable_and_stamped_with_the_events_time() {
    let mut b = Bench::new(&["n1"]);
    let (submission, payload) = job(1);
    let (tx, mut rx) = oneshot::channel();
    b.task.handle(
        Event::Submit {
            peer: alice(),
            submission,
            payload,
            reply: tx,
        },
        b.at(5),
    );
    assert!(
        matches!(rx.try_recv(), Err(oneshot::error::TryRecvError::Empty)),
        "no answer before the turn is durable"
    );
    b.task.end_turn();
    b.settle(5);
    assert_eq!(rx.try_recv().expect("answered").expect("queued"), "1.srv");
    let stored = b.store.load().expect("the store loads");
    assert_eq!(stored.jobs.len(), 1, "what was acknowledged is on disk");
    assert_eq!(
        stored.jobs[0].qtime,
        b.at(5).wall,
        "the event's time, read once"
    );
    let listing = b.status(7);
    assert_eq!(listing.server_time, b.at(7).wall.timestamp());
    assert_eq!(listing.jobs.len(), 1);
}

#[test]
fn a_launch_leaves_only_once_its_start_is_durable() {
    let mut b = Bench::new(&["n1"]);
    let mut inbox = b.connect(0, "n1", 1);
    assert!(matches!(
        kinds(&mut inbox).as_slice(),
        [v1::daemon_message::Kind::Welcome(_)]
    ));
    b.submit(1, 1).expect("queued");
    b.task.schedule(b.at(2));
    b.task.end_turn();
    assert!(kinds(&mut inbox).is_empty(), "the start is not durable yet");
    b.settle(2);
    match kinds(&mut inbox).as_slice() {
        [v1::daemon_message::Kind::Launch(launch)] => {
            assert_eq!(launch.job_id, "1.srv");
            assert_eq!(launch.script, b"#!/bin/sh\ntrue\n");
        }
        other => panic!("expected one launch, got {other:?}"),
    }
    let job = &b.store.load().expect("loads").jobs[0];
    assert_eq!(job.state, JobState::Running);
    assert_eq!(job.stime, Some(b.at(2).wall));
}

#[test]
fn spwait_is_answered_when_the_agent_reports_the_end_and_the_end_is_acknowledged() {
    let mut b = Bench::new(&["n1"]);
    let mut inbox = b.connect(0, "n1", 1);
    b.submit(1, 1).expect("queued");
    b.pass(2);
    kinds(&mut inbox);
    let (tx, mut waiting) = oneshot::channel();
    b.handle(
        Event::Wait {
            job_id: "1".into(),
            reply: tx,
        },
        3,
    );
    assert!(waiting.try_recv().is_err(), "the job still runs");
    let finished = v1::JobFinished {
        job: 1,
        exit_code: Some(0),
        cause: v1::FinishCause::Exited as i32,
        start_time: b.at(2).wall.timestamp(),
        end_time: b.at(4).wall.timestamp(),
        ..Default::default()
    };
    b.handle(
        Event::AgentSaid {
            session: 1,
            message: v1::agent_message::Kind::Finished(finished),
        },
        4,
    );
    let snapshot = waiting.try_recv().expect("answered").expect("the job");
    assert_eq!(snapshot.job.state, JobState::Finished);
    assert_eq!(snapshot.at, b.at(4).wall);
    assert!(
        kinds(&mut inbox).is_empty(),
        "no ack before the end is durable"
    );
    b.settle(4);
    assert!(matches!(
        kinds(&mut inbox).as_slice(),
        [v1::daemon_message::Kind::Ack(v1::AckFinished { job: 1 })]
    ));
}

#[test]
fn a_signal_for_a_job_whose_agent_is_away_says_to_try_again() {
    let mut b = Bench::new(&["n1"]);
    let mut inbox = b.connect(0, "n1", 1);
    b.submit(1, 1).expect("queued");
    b.pass(2);
    assert_eq!(kinds(&mut inbox).len(), 2, "welcome and launch");
    b.handle(Event::AgentGone { session: 1 }, 3);
    let outcomes = b
        .ask(4, |reply| Event::Signal {
            peer: alice(),
            signal: "USR1".into(),
            ids: vec!["1".into()],
            reply,
        })
        .expect("qsig answers per job");
    let refused = outcomes[0].refused.as_deref().expect("refused");
    assert!(
        refused.contains("whose agent is not connected") && refused.contains("try again"),
        "{refused}"
    );
}

#[test]
fn a_read_only_daemon_refuses_changes_naming_its_store_and_still_answers_queries() {
    let mut b = Bench::new(&["n1"]);
    b.submit(0, 1).expect("queued");
    b.task.after_durable(
        vec![AfterDurable::NotDurable {
            items: Vec::new(),
            why: "disk full".into(),
        }],
        b.at(1),
    );
    let refused = b.submit(2, 1).expect_err("refused");
    let store = b.dir.path().join("store");
    assert!(
        matches!(&refused, TaskError::Unavailable(m)
            if m.contains("disk full") && m.contains(&store.display().to_string())),
        "{refused}"
    );
    assert_eq!(b.status(3).jobs.len(), 1, "queries go on");
    // No pass starts a job while the store cannot write.
    b.connect(4, "n1", 1);
    b.pass(5);
    assert_eq!(b.status(6).jobs[0].state_letter, "Q");
}

#[test]
fn a_change_makes_a_pass_due_and_a_pass_makes_the_state_clean() {
    let mut b = Bench::new(&["n1"]);
    b.pass(0);
    assert_eq!(b.task.pacing.pass_due_at(), None);
    b.status(1);
    assert_eq!(b.task.pacing.pass_due_at(), None, "a query changes nothing");
    b.submit(2, 1).expect("queued");
    assert!(b.task.pacing.pass_due_at().is_some());
}

#[test]
fn qdel_of_a_queued_job_is_stored_and_what_waits_on_it_is_answered() {
    let mut b = Bench::new(&["n1"]);
    b.submit(0, 1).expect("queued");
    let (tx, mut waiting) = oneshot::channel();
    b.handle(
        Event::Wait {
            job_id: "1".into(),
            reply: tx,
        },
        1,
    );
    let outcomes = b
        .ask(2, |reply| Event::Delete {
            peer: alice(),
            ids: vec!["1".into()],
            force: false,
            purge_history: false,
            reply,
        })
        .expect("qdel answers");
    assert_eq!(outcomes[0].refused, None);
    let job = waiting.try_recv().expect("answered").expect("the job").job;
    assert_eq!(job.state, JobState::Finished);
    let stored = &b.store.load().expect("loads").jobs[0];
    assert_eq!(stored.state, JobState::Finished);
    assert_eq!(stored.end_time, Some(b.at(2).wall));
}

#[test]
fn qstat_names_a_job_it_cannot_list_with_a_refusal_of_its_own() {
    let mut b = Bench::new(&["n1"]);
    let answer = b.ask(0, |reply| Event::Status {
        peer: alice(),
        query: Box::new(StatusQuery {
            job_ids: vec!["9".into()],
            ..StatusQuery::default()
        }),
        reply,
    });
    assert!(
        matches!(&answer, Err(TaskError::NotFound(m)) if m.contains("9.srv")),
        "{answer:?}"
    );
}

#[test]
fn a_change_and_its_accounting_record_reach_the_store_in_one_write() {
    let mut b = Bench::new(&["n1"]);
    let log = crate::joblog::JobLog::open(b.dir.path(), "srv").expect("the job logs");
    b.task = b.task.with_job_log(log, 7);
    b.submit(3, 1).expect("queued");
    let stored = b.store.load().expect("loads");
    assert_eq!(stored.jobs.len(), 1);
    let records: Vec<crate::joblog::Kept> = stored
        .outbox
        .iter()
        .map(|(_, bytes)| qmesh_store::decode("outbox", bytes).expect("a record"))
        .collect();
    assert_eq!(
        stored
            .outbox
            .iter()
            .map(|(seq, _)| *seq)
            .collect::<Vec<_>>(),
        [7],
        "numbered from where the store's outbox left off"
    );
    assert_eq!(
        (records[0].kind.as_str(), records[0].id.as_str()),
        ("Q", "1.srv")
    );
    assert_eq!(records[0].at, b.at(3).wall, "at the event's time");
}

#[test]
fn qmgr_changes_the_configuration_all_or_nothing() {
    let mut b = Bench::new(&["n1"]);
    let root = Peer {
        uid: 0,
        gid: 0,
        user: "root".into(),
        group: "root".into(),
        host: None,
    };
    let qmgr = |script: &str| {
        let (script, peer) = (script.to_string(), root.clone());
        move |reply| Event::Qmgr {
            peer,
            script,
            source: "-c".into(),
            check_only: false,
            reply,
        }
    };
    let refused = b
        .ask(1, qmgr("create queue q2\nset queue nosuch priority = 5"))
        .expect_err("the second command fails");
    assert!(
        matches!(&refused, TaskError::Invalid(m) if m.ends_with("nothing was changed")),
        "{refused}"
    );
    assert!(b.task.state.config().queue("q2").is_none(), "not even q2");
    let (_, applied) = b
        .ask(2, qmgr("create queue q2\nset queue q2 priority = 5"))
        .expect("applied");
    assert_eq!(applied, 2);
    let stored = b.store.load().expect("loads").config.expect("a config");
    assert_eq!(stored.queue("q2").map(|q| q.priority), Some(5), "durable");
    let alice_tries = b.ask(3, |reply| Event::Qmgr {
        peer: alice(),
        script: "delete queue q2".into(),
        source: "-c".into(),
        check_only: false,
        reply,
    });
    assert!(
        alice_tries.is_err(),
        "only managers change the configuration"
    );
    assert!(b.task.state.config().queue("q2").is_some());
}

#[test]
fn qalter_of_a_start_after_time_wakes_a_pass_at_that_time() {
    let mut b = Bench::new(&["n1"]);
    b.submit(0, 1).expect("queued");
    b.pass(1);
    let later = b.at(100).wall;
    let alteration = qmesh_core::qalter::Alteration {
        start_after: Some(later),
        workdir: "/tmp".into(),
        ..Default::default()
    };
    let outcomes = b
        .ask(2, |reply| Event::Alter {
            peer: alice(),
            ids: vec!["1".into()],
            alteration: Box::new(alteration),
            reply,
        })
        .expect("qalter answers");
    assert_eq!(outcomes[0].refused, None);
    assert!(!b.task.pacing.begin_time_came(b.at(99).wall));
    assert!(b.task.pacing.begin_time_came(later));
}

#[test]
fn an_agent_silent_for_three_heartbeats_is_taken_for_away_and_its_nodes_go_down() {
    let mut b = Bench::new(&["n1", "n2"]);
    let _n1 = b.connect(0, "n1", 1);
    let _n2 = b.connect(0, "n2", 2);
    b.handle(
        Event::AgentSaid {
            session: 2,
            message: v1::agent_message::Kind::Heartbeat(v1::Heartbeat::default()),
        },
        20,
    );
    b.task.tick(b.at(31));
    assert!(
        !b.task.links.is_connected("n1"),
        "three 10 s heartbeats missed"
    );
    assert!(b.task.links.is_connected("n2"), "heard from at 20 s");
    let up: Vec<bool> = b.task.state.nodes().iter().map(|n| n.up).collect();
    assert_eq!(up, [false, true]);
}

#[test]
fn a_submission_sent_again_with_its_id_gets_the_same_job_even_from_a_new_leader() {
    let mut b = Bench::new(&["n1"]);
    let send = |b: &mut Bench, sid: &str, secs| {
        let (mut submission, payload) = job(1);
        submission.submission_id = Some(sid.to_string());
        b.ask(secs, |reply| Event::Submit {
            peer: alice(),
            submission,
            payload,
            reply,
        })
    };
    let first = send(&mut b, "6f1c", 1).expect("queued");
    assert_eq!(send(&mut b, "6f1c", 2).expect("answered"), first, "a retry");
    assert_ne!(
        send(&mut b, "77aa", 3).expect("queued"),
        first,
        "another submission"
    );
    assert_eq!(b.store.load().expect("loads").jobs.len(), 2);

    // A leader taking over loads the id with the job.
    let loaded = b.store.load().expect("loads");
    let mut state = crate::test_machine::machine(&["n1"]);
    state.restore(loaded.jobs, loaded.next_id);
    assert_eq!(
        state.job_by_submission("6f1c").map(|j| j.full_id("srv")),
        Some(first)
    );
}

#[test]
fn a_reconnected_agent_is_told_again_whether_its_jobs_are_suspended() {
    let mut b = Bench::new(&["n1"]);
    let mut first = b.connect(0, "n1", 1);
    b.submit(1, 1).expect("queued");
    b.pass(2);
    kinds(&mut first);
    let root = Peer {
        uid: 0,
        gid: 0,
        user: "root".into(),
        group: "root".into(),
        host: None,
    };
    let signal = |b: &mut Bench, word: &str, secs: u64| {
        let outcomes = b
            .ask(secs, |reply| Event::Signal {
                peer: root.clone(),
                signal: word.into(),
                ids: vec!["1".into()],
                reply,
            })
            .expect("qsig answers");
        assert!(outcomes.iter().all(|o| o.refused.is_none()), "{outcomes:?}");
    };
    let reconnect = |b: &mut Bench, secs: u64, session: u64| {
        let mut inbox = b.connect_running(secs, "n1", session, vec![1]);
        kinds(&mut inbox)
            .into_iter()
            .filter_map(|k| match k {
                v1::daemon_message::Kind::Signal(s) => Some(s.signal),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    signal(&mut b, "suspend", 3);
    // The session breaks: the word may not have arrived. Told again.
    assert_eq!(reconnect(&mut b, 5, 2), ["suspend"]);
    signal(&mut b, "resume", 10);
    assert_eq!(reconnect(&mut b, 12, 3), ["resume"]);
}

#[test]
fn the_start_of_a_job_waited_for_with_a_delay_wakes_a_pass_when_it_ends() {
    let mut b = Bench::new(&["n1", "n2"]);
    let _n1 = b.connect(0, "n1", 1);
    let _n2 = b.connect(0, "n2", 2);
    b.submit(1, 1).expect("queued");
    let (mut submission, payload) = job(1);
    submission.depend = "after:1+2".into();
    b.ask(1, |reply| Event::Submit {
        peer: alice(),
        submission,
        payload,
        reply,
    })
    .expect("queued");
    b.pass(2);
    assert!(!b.task.pacing.begin_time_came(b.at(121).wall));
    assert!(
        b.task.pacing.begin_time_came(b.at(122).wall),
        "two minutes after job 1 started"
    );
}

/// The agent of `session` reports job `id` ended, run from `start` to
/// `end` (seconds after the start), and the end is made durable.
fn finished(b: &mut Bench, session: u64, id: u64, start: u64, end: u64) {
    let finished = v1::JobFinished {
        job: id,
        exit_code: Some(0),
        cause: v1::FinishCause::Exited as i32,
        start_time: b.at(start).wall.timestamp(),
        end_time: b.at(end).wall.timestamp(),
        ..Default::default()
    };
    b.handle(
        Event::AgentSaid {
            session,
            message: v1::agent_message::Kind::Finished(finished),
        },
        end,
    );
    b.settle(end);
}

#[test]
fn the_daemon_learns_run_times_from_job_ends_and_spwhen_gets_both_estimates() {
    let mut b = Bench::new(&["n1"]);
    let _inbox = b.connect(0, "n1", 1);
    // Alice's first two jobs ask an hour (the default) and run 100 s.
    for (id, start) in [(1, 1), (2, 200)] {
        b.submit(start, 1).expect("queued");
        b.pass(start);
        finished(&mut b, 1, id, start, start + 100);
    }
    b.submit(400, 1).expect("queued");
    b.pass(400);
    b.submit(401, 1).expect("queued");
    b.pass(401);
    let when = b
        .ask(402, |reply| Event::When {
            peer: alice(),
            job_id: "4".into(),
            reply,
        })
        .expect("spwhen answers");
    assert_eq!(when.job.predicted_run, Some(100), "her last two ran 100 s");
    assert_eq!(when.start, Some(b.at(400 + 3600).wall), "job 3's wall time");
    assert_eq!(
        when.predicted_start,
        Some(b.at(400 + 100).wall),
        "job 3 predicted to run 100 s"
    );
}
