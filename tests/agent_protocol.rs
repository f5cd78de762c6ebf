//! End-to-end tests of `qmesh-agent`: the real binary against a fake daemon
//! (a tonic `Agent` service on a Unix socket in a temporary directory).
//!
//! Every test waits for events (messages from the agent, on channels, with
//! generous timeouts), never sleeps to synchronise, and kills every process
//! group it started when it ends, even when it fails. The tests run as root
//! (one runs a job as `nobody`), so the temporary directory is made
//! world-writable.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use qmesh_proto::agent_server::{Agent, AgentServer};
use qmesh_proto::v1::{
    AckFinished, AgentHello, AgentMessage, DaemonMessage, EnvVar, FinishCause, JobFinished,
    JobStarted, KillJob, LaunchJob, SignalJob, Welcome, agent_message, daemon_message,
};
use tokio::sync::mpsc;
use tokio_stream::wrappers::{UnboundedReceiverStream, UnixListenerStream};
use tonic::{Request, Response, Status, Streaming};

const AGENT: &str = env!("CARGO_BIN_EXE_qmesh-agent");
/// How long any one expected event may take.
const PATIENCE: Duration = Duration::from_secs(30);

// ------------------------------------------------------------ fake daemon

/// One agent session as the fake daemon sees it.
struct Session {
    hello: AgentHello,
    inbound: mpsc::UnboundedReceiver<AgentMessage>,
    /// Dropping the session ends the stream to the agent.
    out: mpsc::UnboundedSender<Result<DaemonMessage, Status>>,
}

struct FakeDaemon {
    sessions: mpsc::UnboundedSender<Session>,
}

#[tonic::async_trait]
impl Agent for FakeDaemon {
    type SessionStream = UnboundedReceiverStream<Result<DaemonMessage, Status>>;
    type AttachStream = UnboundedReceiverStream<Result<qmesh_proto::v1::TaskFrame, Status>>;

    /// The protocol tests start no tasks.
    async fn attach(
        &self,
        _request: Request<Streaming<qmesh_proto::v1::TaskFrame>>,
    ) -> Result<Response<Self::AttachStream>, Status> {
        Err(Status::unimplemented("the fake daemon starts no tasks"))
    }

    /// The agent on the daemon's Unix socket proves nothing: it never asks.
    async fn challenge(
        &self,
        _request: Request<qmesh_proto::v1::ChallengeRequest>,
    ) -> Result<Response<qmesh_proto::v1::ChallengeGiven>, Status> {
        Err(Status::unimplemented(
            "the local agent asks for no challenge",
        ))
    }

    async fn enrol(
        &self,
        _request: Request<qmesh_proto::v1::EnrolRequest>,
    ) -> Result<Response<qmesh_proto::v1::Enrolled>, Status> {
        Err(Status::unimplemented("the local agent does not enrol"))
    }

    async fn session(
        &self,
        request: Request<Streaming<AgentMessage>>,
    ) -> Result<Response<Self::SessionStream>, Status> {
        let mut stream = request.into_inner();
        let (out, out_rx) = mpsc::unbounded_channel();
        let sessions = self.sessions.clone();
        tokio::spawn(async move {
            let hello = match stream.message().await {
                Ok(Some(AgentMessage {
                    kind: Some(agent_message::Kind::Hello(hello)),
                })) => hello,
                other => panic!("fake daemon: expected a Hello first, got {other:?}"),
            };
            let (tx, inbound) = mpsc::unbounded_channel();
            if sessions
                .send(Session {
                    hello,
                    inbound,
                    out,
                })
                .is_err()
            {
                return;
            }
            while let Ok(Some(msg)) = stream.message().await {
                if tx.send(msg).is_err() {
                    break;
                }
            }
        });
        Ok(Response::new(UnboundedReceiverStream::new(out_rx)))
    }
}

impl Session {
    fn send(&self, kind: daemon_message::Kind) {
        self.out
            .send(Ok(DaemonMessage { kind: Some(kind) }))
            .expect("the session's stream to the agent is open");
    }

    fn welcome(&self, heartbeat_secs: u32) {
        self.welcome_in_term(heartbeat_secs, 0);
    }

    /// A Welcome from a leader of `term` (docs/HA.md).
    fn welcome_in_term(&self, heartbeat_secs: u32, term: i64) {
        self.send(daemon_message::Kind::Welcome(Welcome {
            nodes: vec!["n1".into(), "n2".into()],
            heartbeat_secs,
            server: "testserver".into(),
            term,
        }));
    }

    fn launch(&self, launch: LaunchJob) {
        self.send(daemon_message::Kind::Launch(launch));
    }

    /// The next message from the agent, heartbeats included.
    async fn next_any(&mut self) -> agent_message::Kind {
        let msg = tokio::time::timeout(PATIENCE, self.inbound.recv())
            .await
            .expect("a message from the agent in time")
            .expect("the agent's stream is open");
        msg.kind.expect("a message with content")
    }

    /// The next message that is not a heartbeat.
    async fn next(&mut self) -> agent_message::Kind {
        loop {
            match self.next_any().await {
                agent_message::Kind::Heartbeat(_) => continue,
                other => return other,
            }
        }
    }

    async fn started(&mut self, job: u64) -> JobStarted {
        loop {
            match self.next().await {
                agent_message::Kind::Started(s) if s.job == job => return s,
                agent_message::Kind::Finished(f) if f.job == job => {
                    panic!("job {job} finished without starting: {f:?}")
                }
                other => eprintln!("(waiting for job {job} to start) {other:?}"),
            }
        }
    }

    async fn finished(&mut self, job: u64) -> JobFinished {
        loop {
            match self.next().await {
                agent_message::Kind::Finished(f) if f.job == job => return f,
                other => eprintln!("(waiting for job {job} to finish) {other:?}"),
            }
        }
    }
}

// ------------------------------------------------------------ harness

struct Harness {
    dir: tempfile::TempDir,
    socket: PathBuf,
    spool: PathBuf,
    /// The jobs' working directory, world-writable.
    work: PathBuf,
    sessions: mpsc::UnboundedReceiver<Session>,
    agents: Vec<Child>,
    server: tokio::task::JoinHandle<()>,
}

impl Harness {
    async fn new() -> Harness {
        let mut dir = tempfile::tempdir().expect("a temporary directory");
        // QMESH_TEST_KEEP=1 keeps the logs and the spool for a post-mortem.
        if std::env::var_os("QMESH_TEST_KEEP").is_some() {
            dir.disable_cleanup(true);
            eprintln!("keeping {}", dir.path().display());
        }
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o777)).expect("chmod 777");
        let work = dir.path().join("work");
        fs::create_dir(&work).expect("create work dir");
        fs::create_dir(dir.path().join("tmp")).expect("create the TMPDIR base");
        fs::set_permissions(&work, fs::Permissions::from_mode(0o777)).expect("chmod 777");
        let socket = dir.path().join("agent.sock");
        let listener = tokio::net::UnixListener::bind(&socket).expect("bind the agent socket");
        let (tx, sessions) = mpsc::unbounded_channel();
        let server = tokio::spawn(async move {
            tonic::transport::Server::builder()
                .add_service(AgentServer::new(FakeDaemon { sessions: tx }))
                .serve_with_incoming(UnixListenerStream::new(listener))
                .await
                .expect("the fake daemon serves");
        });
        Harness {
            spool: dir.path().join("spool"),
            dir,
            socket,
            work,
            sessions,
            agents: Vec::new(),
            server,
        }
    }

    /// Starts the agent in its own process group; its log goes to a file.
    fn start_agent(&mut self, extra: &[&str]) -> u32 {
        let n = self.agents.len();
        let log = fs::File::create(self.dir.path().join(format!("agent-{n}.log")))
            .expect("create the agent's log");
        let child = Command::new(AGENT)
            .arg("--server")
            .arg(format!("unix://{}", self.socket.display()))
            .args([
                "--host",
                "testhost",
                "--log-level",
                "qmesh_agent=debug,info",
            ])
            .arg("--spool")
            .arg(&self.spool)
            // Each test's own: job ids repeat across tests.
            .env("QMESH_AGENT_TMPDIR_BASE", self.dir.path().join("tmp"))
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .process_group(0)
            .spawn()
            .expect("start qmesh-agent");
        let pid = child.id();
        self.agents.push(child);
        pid
    }

    fn agent_log(&self, n: usize) -> String {
        fs::read_to_string(self.dir.path().join(format!("agent-{n}.log"))).unwrap_or_default()
    }

    /// Waits for the `n`th agent to exit.
    async fn agent_exit(&mut self, n: usize) -> ExitStatus {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.agents[n].try_wait().expect("wait for the agent") {
                return status;
            }
            assert!(Instant::now() < deadline, "agent {n} did not exit in time");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn session(&mut self) -> Session {
        tokio::time::timeout(PATIENCE, self.sessions.recv())
            .await
            .expect("the agent connects in time")
            .expect("the fake daemon runs")
    }

    fn job_dir(&self, seq: u64) -> PathBuf {
        self.spool.join("jobs").join(seq.to_string())
    }

    fn launch(&self, seq: u64, script: &str) -> LaunchJob {
        LaunchJob {
            job: seq,
            job_id: format!("{seq}.testserver"),
            name: "test.sh".into(),
            script: script.as_bytes().to_vec(),
            user: "root".into(),
            uid: 0,
            gid: 0,
            group: "root".into(),
            workdir: self.work.display().to_string(),
            // As the daemon sends qsub -d: PBS would start it at home.
            start_dir: self.work.display().to_string(),
            env: vec![EnvVar {
                name: "FOO".into(),
                value: "bar baz".into(),
            }],
            nodes: vec!["n1".into(), "n2".into()],
            kill_grace: 2,
            queue: "batch".into(),
            submit_host: "login1".into(),
            ..Default::default()
        }
    }

    /// Fails on an ERROR line in any agent or shepherd log.
    fn assert_no_error_logs(&self) {
        let mut logs: Vec<PathBuf> = (0..self.agents.len())
            .map(|n| self.dir.path().join(format!("agent-{n}.log")))
            .collect();
        if let Ok(jobs) = fs::read_dir(self.spool.join("jobs")) {
            logs.extend(jobs.flatten().map(|e| e.path().join("shepherd.log")));
        }
        for log in logs {
            let text = fs::read_to_string(&log).unwrap_or_default();
            let errors: Vec<&str> = text.lines().filter(|l| l.contains(" ERROR ")).collect();
            assert!(errors.is_empty(), "{}: {errors:#?}", log.display());
        }
    }
}

fn pid_in(path: &Path) -> Option<i32> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Whether `pid` exists and is not a zombie.
fn alive(pid: i32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !matches!(
            stat.rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().next()),
            Some("Z") | Some("X")
        ),
        Err(_) => false,
    }
}

/// Waits until `check` holds (for things the agent does not report).
async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        for agent in &mut self.agents {
            let _ = killpg(Pid::from_raw(agent.id() as i32), Signal::SIGKILL);
            let _ = agent.wait();
        }
        // Shepherds and jobs lead their own process groups.
        if let Ok(jobs) = fs::read_dir(self.spool.join("jobs")) {
            for dir in jobs.flatten().map(|e| e.path()) {
                for file in ["shepherd.pid", "job.pid"] {
                    if let Some(pid) = pid_in(&dir.join(file)) {
                        let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
                    }
                }
            }
        }
        self.server.abort();
        // The agents' cgroups, once what ran in them is gone.
        for _ in 0..100 {
            if qmesh_agent::cgroup::remove_levels_under(self.dir.path()) == 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

// ------------------------------------------------------------ tests

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hello_welcome_heartbeat_and_one_agent_per_spool() {
    let mut h = Harness::new().await;
    let key = h.dir.path().join("cluster.key");
    fs::write(&key, "  s3cret\n").unwrap();
    let key_arg = key.display().to_string();
    h.start_agent(&["--nodes", "n1,n2", "--cluster-key-file", &key_arg]);
    let mut s = h.session().await;
    assert_eq!(s.hello.host, "testhost");
    assert_eq!(s.hello.nodes, vec!["n1", "n2"]);
    // On the daemon's own socket the key proves nothing and never travels.
    assert_eq!(s.hello.cluster_key, "");
    assert!(s.hello.proof.is_empty() && s.hello.nonce.is_empty());
    assert!(!s.hello.version.is_empty());
    assert!(s.hello.running.is_empty() && s.hello.finished.is_empty());
    s.welcome(1);
    assert!(matches!(
        s.next_any().await,
        agent_message::Kind::Heartbeat(_)
    ));

    // A second agent on the same spool refuses to start.
    let second = h.start_agent(&[]);
    let status = h.agent_exit(1).await;
    assert_eq!(status.code(), Some(3), "{}", h.agent_log(1));
    let log = h.agent_log(1);
    let first = h.agents[0].id();
    assert_eq!(
        log.trim(),
        format!(
            "qmesh-agent: another agent already serves spool {} (pid {first})",
            h.spool.display()
        ),
        "agent {second}"
    );
    assert_eq!(
        h.agents[0].try_wait().unwrap(),
        None,
        "the first agent runs on"
    );
    h.assert_no_error_logs();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_runs_as_its_user_with_the_batch_environment() {
    let mut h = Harness::new().await;
    h.start_agent(&[]);
    let mut s = h.session().await;
    s.welcome(30);
    let script = "#!/bin/sh\n\
        echo run >> \"$QMESH_O_WORKDIR/runs\"\n\
        echo \"JOBID=$QMESH_JOBID PBS_JOBID=$PBS_JOBID\"\n\
        echo \"NAME=$PBS_JOBNAME QUEUE=$PBS_QUEUE HOST=$PBS_O_HOST ENV=$PBS_ENVIRONMENT\"\n\
        echo \"NODEFILE=$PBS_NODEFILE SAME=$([ \"$PBS_NODEFILE\" = \"$QMESH_NODEFILE\" ] && echo yes)\"\n\
        echo \"NODES=$(tr '\\n' ' ' < \"$PBS_NODEFILE\")NNODES=$QMESH_NNODES\"\n\
        echo \"FOO=$FOO USER=$USER HOME=$HOME PWD=$(pwd)\"\n\
        echo oops >&2\n\
        exit 3\n";
    // A second user: nobody (uid 65534 on Debian and most others).
    let nobody = nix::unistd::User::from_name("nobody")
        .expect("look up nobody")
        .expect("a user nobody");
    let mut launch = h.launch(5, script);
    launch.user = "nobody".into();
    launch.uid = nobody.uid.as_raw();
    launch.gid = nobody.gid.as_raw();
    launch.group = String::new(); // the primary group
    // An existing directory: the output goes to DIR/NAME.oSEQ.
    launch.stdout_path = h.work.display().to_string();
    launch.stderr_path = h.work.display().to_string();
    s.launch(launch.clone());
    s.launch(launch); // repeated: ignored
    let started = s.started(5).await;
    assert!(started.pid > 0 && started.time > 0, "{started:?}");
    let f = s.finished(5).await;
    assert_eq!(f.cause, FinishCause::Exited as i32, "{f:?}");
    assert_eq!((f.exit_code, f.signal), (Some(3), None));
    assert!(f.start_time > 0 && f.end_time >= f.start_time, "{f:?}");

    let out_path = h.work.join("test.sh.o5");
    let out = fs::read_to_string(&out_path).expect("the job's output file");
    let nodefile = h.job_dir(5).join("nodefile");
    assert!(
        out.contains("JOBID=5.testserver PBS_JOBID=5.testserver"),
        "{out}"
    );
    assert!(
        out.contains("NAME=test.sh QUEUE=batch HOST=login1 ENV=PBS_BATCH"),
        "{out}"
    );
    assert!(
        out.contains(&format!("NODEFILE={} SAME=yes", nodefile.display())),
        "{out}"
    );
    assert!(out.contains("NODES=n1 n2 NNODES=2"), "{out}");
    assert!(
        out.contains(&format!(
            "FOO=bar baz USER=nobody HOME={} PWD={}",
            nobody.dir.display(),
            h.work.display()
        )),
        "{out}"
    );
    assert_eq!(
        fs::metadata(&out_path).unwrap().uid(),
        nobody.uid.as_raw(),
        "owned by the job user"
    );
    let err_path = h.work.join("test.sh.e5");
    assert_eq!(fs::read_to_string(&err_path).unwrap(), "oops\n");
    assert_eq!(fs::metadata(&err_path).unwrap().uid(), nobody.uid.as_raw());
    assert_eq!(
        fs::read_to_string(h.work.join("runs")).unwrap(),
        "run\n",
        "a repeated launch must not start the job twice"
    );
    h.assert_no_error_logs();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joined_output_and_exit_code_of_a_plain_script() {
    let mut h = Harness::new().await;
    h.start_agent(&[]);
    let mut s = h.session().await;
    s.welcome(30);
    // No #!: run by /bin/sh.
    let mut launch = h.launch(6, "echo out\necho err >&2\nexit 7\n");
    launch.join_output = true;
    launch.stdout_path = "joined.log".into(); // relative to the workdir
    s.launch(launch);
    let f = s.finished(6).await;
    assert_eq!(
        (f.cause, f.exit_code),
        (FinishCause::Exited as i32, Some(7)),
        "{f:?}"
    );
    assert_eq!(
        fs::read_to_string(h.work.join("joined.log")).unwrap(),
        "out\nerr\n"
    );
    assert!(!h.work.join("test.sh.e6").exists());
    h.assert_no_error_logs();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_over_its_walltime_gets_sigterm() {
    let mut h = Harness::new().await;
    h.start_agent(&[]);
    let mut s = h.session().await;
    s.welcome(30);
    let mut launch = h.launch(7, "sleep 30\n");
    launch.walltime = 1;
    launch.kill_grace = 1;
    let begin = Instant::now();
    s.launch(launch);
    let f = s.finished(7).await;
    assert_eq!(f.cause, FinishCause::Walltime as i32, "{f:?}");
    assert_eq!((f.exit_code, f.signal), (None, Some(15)), "{f:?}");
    assert!(
        begin.elapsed() < Duration::from_secs(10),
        "took {:?}",
        begin.elapsed()
    );
    h.assert_no_error_logs();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_ignores_sigterm_gets_sigkill_after_the_grace() {
    let mut h = Harness::new().await;
    h.start_agent(&[]);
    let mut s = h.session().await;
    s.welcome(30);
    // The ignore is inherited by the sleep: neither dies of SIGTERM.
    let mut launch = h.launch(14, "trap '' TERM\nsleep 30\n");
    launch.walltime = 1;
    launch.kill_grace = 1;
    let begin = Instant::now();
    s.launch(launch);
    let f = s.finished(14).await;
    assert_eq!(f.cause, FinishCause::Walltime as i32, "{f:?}");
    assert_eq!((f.exit_code, f.signal), (None, Some(9)), "{f:?}");
    assert!(f.message.contains("killed with SIGKILL"), "{f:?}");
    assert!(
        begin.elapsed() < Duration::from_secs(10),
        "took {:?}",
        begin.elapsed()
    );
    h.assert_no_error_logs();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_job_kills_the_whole_process_group() {
    let mut h = Harness::new().await;
    h.start_agent(&[]);
    let mut s = h.session().await;
    s.welcome(30);
    let bgpid = h.work.join("bgpid");
    let script = format!(
        "sleep 100 &\necho $! > {}.tmp && mv {0}.tmp {0}\nsleep 100\nwait\n",
        bgpid.display()
    );
    s.launch(h.launch(8, &script));
    s.started(8).await;
    eventually("the job wrote its background pid", || bgpid.exists()).await;
    let bg = pid_in(&bgpid).expect("a pid in bgpid");
    assert!(alive(bg));
    let begin = Instant::now();
    s.send(daemon_message::Kind::Kill(KillJob {
        job: 8,
        reason: "deleted by test".into(),
    }));
    let f = s.finished(8).await;
    assert_eq!(f.cause, FinishCause::Killed as i32, "{f:?}");
    assert_eq!(f.signal, Some(15), "{f:?}");
    assert!(f.message.contains("deleted by test"), "{f:?}");
    assert!(
        begin.elapsed() < Duration::from_secs(2),
        "took {:?}",
        begin.elapsed()
    );
    // The background sleep is gone, reaped by the shepherd: not even a zombie.
    assert_eq!(kill(Pid::from_raw(bg), None), Err(Errno::ESRCH));
    // A kill for an unknown job is ignored.
    s.send(daemon_message::Kind::Kill(KillJob {
        job: 999,
        reason: String::new(),
    }));
    h.assert_no_error_logs();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unacknowledged_finish_is_reported_again_after_reconnecting() {
    let mut h = Harness::new().await;
    h.start_agent(&[]);
    let mut s = h.session().await;
    s.welcome(30);
    s.launch(h.launch(9, "exit 4\n"));
    let f = s.finished(9).await;
    assert_eq!(f.exit_code, Some(4));
    drop(s); // the daemon goes away before acknowledging

    let s = h.session().await;
    assert!(s.hello.running.is_empty(), "{:?}", s.hello);
    assert_eq!(s.hello.finished.len(), 1, "{:?}", s.hello);
    assert_eq!(s.hello.finished[0], f, "the same finish, again");
    s.welcome(30);
    s.send(daemon_message::Kind::Ack(AckFinished { job: 9 }));
    drop(s);

    let s = h.session().await;
    assert!(s.hello.finished.is_empty(), "acknowledged: {:?}", s.hello);
    assert!(!h.job_dir(9).exists(), "removed from the spool");
    h.assert_no_error_logs();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_refuses_the_orders_of_a_daemon_of_an_older_term() {
    let mut h = Harness::new().await;
    h.start_agent(&[]);
    let s = h.session().await;
    s.welcome_in_term(30, 5);
    drop(s); // the leader of term 5 goes away

    // A deposed leader (term 3) woken up: its launch must not run.
    let deposed = h.session().await;
    deposed.welcome_in_term(30, 3);
    deposed.launch(h.launch(7, "exit 0\n"));
    let s = h.session().await;
    s.welcome_in_term(30, 5);
    assert!(!h.job_dir(7).exists(), "the deposed leader's launch ran");
    assert!(
        h.agent_log(0).contains("its term 3 is older than term 5"),
        "{}",
        h.agent_log(0)
    );
    drop(deposed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_job_survives_agent_restarts() {
    let mut h = Harness::new().await;
    h.start_agent(&[]);
    let mut s = h.session().await;
    s.welcome(30);
    let go = h.work.join("go");
    let script = format!(
        "while [ ! -e {} ]; do sleep 0.1; done\nexit 7\n",
        go.display()
    );
    s.launch(h.launch(10, &script));
    let started = s.started(10).await;
    let shepherd = pid_in(&h.job_dir(10).join("shepherd.pid")).expect("shepherd.pid");
    let tmpdir = h.dir.path().join("tmp/pbs.10.testserver");
    assert!(tmpdir.is_dir(), "made before the job started");

    // SIGTERM: the agent stops cleanly and leaves the job running.
    kill(Pid::from_raw(h.agents[0].id() as i32), Signal::SIGTERM).unwrap();
    assert_eq!(h.agent_exit(0).await.code(), Some(0), "{}", h.agent_log(0));
    assert!(alive(shepherd) && alive(started.pid), "the job runs on");
    drop(s);

    h.start_agent(&[]);
    let s = h.session().await;
    assert_eq!(s.hello.running, vec![10], "{:?}", s.hello);
    assert!(s.hello.finished.is_empty(), "{:?}", s.hello);
    s.welcome(30);

    // SIGKILL: the same.
    kill(Pid::from_raw(h.agents[1].id() as i32), Signal::SIGKILL).unwrap();
    h.agent_exit(1).await;
    assert!(alive(shepherd) && alive(started.pid), "the job runs on");
    drop(s);

    h.start_agent(&[]);
    let mut s = h.session().await;
    assert_eq!(s.hello.running, vec![10], "{:?}", s.hello);
    s.welcome(30);
    assert!(tmpdir.is_dir(), "the TMPDIR outlives agent restarts");
    fs::write(&go, "").unwrap();
    let f = s.finished(10).await;
    assert_eq!(
        (f.cause, f.exit_code),
        (FinishCause::Exited as i32, Some(7)),
        "{f:?}"
    );
    assert!(!tmpdir.exists(), "the adopted job's TMPDIR is removed");
    h.assert_no_error_logs();
}

/// The parent pid of `pid`, from /proc.
fn parent_of(pid: i32) -> Option<i32> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')')
        .next()?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shepherds_come_from_the_zygote_and_from_exec_when_it_is_gone() {
    let mut h = Harness::new().await;
    h.start_agent(&[]);
    let mut s = h.session().await;
    s.welcome(30);
    s.launch(h.launch(20, "sleep 100\n"));
    s.started(20).await;
    let dir = h.job_dir(20);
    let shepherd = pid_in(&dir.join("shepherd.pid")).expect("shepherd.pid");

    // Its command line is a shepherd's (ps shows it; a restarted agent
    // knows it by it), written over the zygote's, the rest zeroed.
    let cmdline = fs::read(format!("/proc/{shepherd}/cmdline")).unwrap();
    let want = format!("qmesh-agent\0shepherd\0{}\0", dir.display());
    assert!(
        cmdline.starts_with(want.as_bytes()) && cmdline[want.len()..].iter().all(|&b| b == 0),
        "{:?}",
        String::from_utf8_lossy(&cmdline)
    );
    // Its parent is the zygote, which the agent started with its spool.
    let zygote = parent_of(shepherd).expect("the shepherd's parent");
    let parent = fs::read(format!("/proc/{zygote}/cmdline")).unwrap();
    let want = format!("qmesh-agent\0zygote\0{}\0", h.spool.display());
    assert!(
        parent.starts_with(want.as_bytes()),
        "{:?}",
        String::from_utf8_lossy(&parent)
    );

    // Without the zygote, the agent execs the next shepherd itself, and
    // the first job runs on.
    kill(Pid::from_raw(zygote), Signal::SIGKILL).unwrap();
    let agent = h.agents[0].id() as i32;
    eventually("the zygote is gone", || !alive(zygote)).await;
    let go = h.work.join("go");
    let script = format!(
        "while [ ! -e {} ]; do sleep 0.05; done\nexit 3\n",
        go.display()
    );
    s.launch(h.launch(21, &script));
    s.started(21).await;
    let second = pid_in(&h.job_dir(21).join("shepherd.pid")).expect("shepherd.pid");
    assert_eq!(parent_of(second), Some(agent), "exec'd by the agent");
    fs::write(&go, "").unwrap();
    let f = s.finished(21).await;
    assert_eq!(f.exit_code, Some(3), "{f:?}");
    assert!(alive(shepherd), "the first job runs on");
    assert!(
        h.agent_log(0).contains("the zygote failed"),
        "{}",
        h.agent_log(0)
    );
    s.send(daemon_message::Kind::Kill(KillJob {
        job: 20,
        reason: String::new(),
    }));
    let f = s.finished(20).await;
    assert_eq!(f.cause, FinishCause::Killed as i32, "{f:?}");
    h.assert_no_error_logs();
}

/// A hook script in the work directory: it appends `line` (shell words)
/// to `hooks.log` there, then runs `then`.
fn hook(h: &Harness, name: &str, line: &str, then: &str) -> PathBuf {
    let path = h.work.join(name);
    let log = h.work.join("hooks.log");
    fs::write(
        &path,
        format!("#!/bin/sh\necho \"{line}\" >> {}\n{then}\n", log.display()),
    )
    .unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_launching_host_runs_the_prologue_before_the_job_and_the_epilogue_after() {
    let mut h = Harness::new().await;
    let pro = hook(
        &h,
        "prologue",
        "pro $1 $2 $3 $QMESH_NODES $(cat $QMESH_NODEFILE | wc -l)",
        "",
    );
    let epi = hook(
        &h,
        "epilogue",
        "epi $1",
        "echo 'scratch left behind' >&2; exit 2",
    );
    let (pro, epi) = (pro.display().to_string(), epi.display().to_string());
    h.start_agent(&["--prologue", &pro, "--epilogue", &epi]);
    let mut s = h.session().await;
    s.welcome(30);
    let log = h.work.join("hooks.log");
    let script = format!("echo job >> {}\nexit 5\n", log.display());
    s.launch(h.launch(30, &script));
    let f = s.finished(30).await;
    assert_eq!(
        (f.cause, f.exit_code),
        (FinishCause::Exited as i32, Some(5)),
        "the job's exit is kept: {f:?}"
    );
    assert!(
        f.message.contains("the epilogue") && f.message.contains("scratch left behind"),
        "a failed epilogue is noted: {f:?}"
    );
    assert_eq!(
        fs::read_to_string(&log).unwrap(),
        "pro 30.testserver root root n1,n2 2\njob\nepi 30.testserver\n"
    );

    // A failing prologue: the job fails with its words and never runs,
    // and there is no epilogue for it.
    fs::remove_file(&log).unwrap();
    hook(
        &h,
        "prologue",
        "pro $1",
        "echo 'scratch not mounted' >&2; exit 1",
    );
    s.launch(h.launch(31, &script));
    let f = s.finished(31).await;
    assert_eq!(f.cause, FinishCause::LaunchFailed as i32, "{f:?}");
    assert!(
        f.message.contains("the prologue") && f.message.contains("scratch not mounted"),
        "{f:?}"
    );
    assert_eq!(fs::read_to_string(&log).unwrap(), "pro 31.testserver\n");

    // A kill order while the prologue runs: it is killed, the job never
    // starts.
    let started = h.work.join("prologue-started");
    hook(
        &h,
        "prologue",
        "pro $1",
        &format!("touch {}; sleep 100", started.display()),
    );
    s.launch(h.launch(32, &script));
    eventually("the prologue runs", || started.exists()).await;
    s.send(daemon_message::Kind::Kill(KillJob {
        job: 32,
        reason: "deleted by test".into(),
    }));
    let f = s.finished(32).await;
    assert_eq!(f.cause, FinishCause::Killed as i32, "{f:?}");
    assert!(
        f.message.contains("deleted by test") && f.message.contains("during the prologue"),
        "{f:?}"
    );
    assert!(
        !fs::read_to_string(&log).unwrap().contains("job"),
        "never ran"
    );
    h.assert_no_error_logs();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn launch_failures_name_the_problem() {
    let mut h = Harness::new().await;
    h.start_agent(&[]);
    let mut s = h.session().await;
    s.welcome(30);

    let mut launch = h.launch(11, "echo never\n");
    launch.stdout_path = "/nonexistent-qmesh-dir/out".into();
    s.launch(launch);
    let f = s.finished(11).await;
    assert_eq!(f.cause, FinishCause::LaunchFailed as i32, "{f:?}");
    assert_eq!(
        f.message,
        "cannot open output file /nonexistent-qmesh-dir/out: No such file or directory (os error 2)"
    );

    let mut launch = h.launch(12, "echo never\n");
    launch.user = "no-such-user-qmesh".into();
    launch.uid = 54321;
    s.launch(launch);
    let f = s.finished(12).await;
    assert_eq!(f.cause, FinishCause::LaunchFailed as i32, "{f:?}");
    assert!(
        f.message.contains("user no-such-user-qmesh does not exist"),
        "{f:?}"
    );

    let mut launch = h.launch(13, "echo never\n");
    launch.workdir = "/nonexistent-qmesh-dir".into();
    launch.start_dir = "/nonexistent-qmesh-dir".into();
    launch.stdout_path = h.work.join("13.out").display().to_string();
    s.launch(launch);
    let f = s.finished(13).await;
    assert_eq!(f.cause, FinishCause::LaunchFailed as i32, "{f:?}");
    assert!(
        f.message
            .starts_with("cannot enter working directory /nonexistent-qmesh-dir as user root"),
        "{f:?}"
    );
    h.assert_no_error_logs();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_starts_at_home_with_its_tmpdir_shell_umask_limits_and_usage() {
    let mut h = Harness::new().await;
    let base = h.dir.path().join("tmp2");
    fs::create_dir(&base).unwrap();
    let base_arg = base.display().to_string();
    h.start_agent(&["--tmpdir-base", &base_arg]);
    let mut s = h.session().await;
    s.welcome(30);
    let seen = h.work.join("seen");
    // bash-only syntax: it runs only if -S's shell runs it.
    let script = format!(
        "[[ -n $BASH_VERSION ]] && echo shell=bash > {seen}\n\
         echo pwd=$(pwd) >> {seen}\n\
         echo tmpdir=$TMPDIR >> {seen}\n\
         [ -d \"$TMPDIR\" ] && stat -c tmpmode=%a \"$TMPDIR\" >> {seen}\n\
         touch \"$TMPDIR/scratch\"\n\
         echo cpu=$(ulimit -t) nice=$(cut -d' ' -f19 /proc/self/stat) >> {seen}\n\
         touch {made}\n\
         i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done\n\
         echo out; echo err >&2\n",
        seen = seen.display(),
        made = h.work.join("made").display(),
    );
    let mut launch = h.launch(40, &script);
    launch.start_dir = String::new();
    launch.shell = "/bin/bash".into();
    launch.umask = Some(0o027);
    launch.join_to_error = true;
    launch.limits = Some(qmesh_proto::v1::ProcessLimits {
        cpu_secs: Some(60),
        nice: Some(2),
        ..Default::default()
    });
    s.launch(launch);
    let f = s.finished(40).await;
    assert_eq!(
        (f.cause, f.exit_code),
        (FinishCause::Exited as i32, Some(0)),
        "{f:?}"
    );
    let home = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(0))
        .unwrap()
        .unwrap()
        .dir;
    let tmpdir = base.join("pbs.40.testserver");
    let seen = fs::read_to_string(&seen).expect("the job ran");
    assert!(seen.contains("shell=bash\n"), "{seen}");
    assert!(
        seen.contains(&format!("pwd={}\n", home.display())),
        "{seen}"
    );
    assert!(
        seen.contains(&format!("tmpdir={}\n", tmpdir.display())),
        "{seen}"
    );
    assert!(seen.contains("tmpmode=700\n"), "{seen}");
    let nice_here: i64 = fs::read_to_string("/proc/self/stat")
        .unwrap()
        .split(' ')
        .nth(18)
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        seen.contains(&format!("cpu=60 nice={}\n", (nice_here + 2).min(19))),
        "{seen}"
    );
    assert!(!tmpdir.exists(), "the TMPDIR goes with the job");
    let mode = fs::metadata(h.work.join("made"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o640, "umask 027 on what the job makes");
    // -j eo: both streams in the error file, made under the umask too.
    let err = h.work.join("test.sh.e40");
    assert_eq!(fs::read_to_string(&err).unwrap(), "out\nerr\n");
    assert_eq!(
        fs::metadata(&err).unwrap().permissions().mode() & 0o777,
        0o640
    );
    assert!(!h.work.join("test.sh.o40").exists());
    assert!(f.cput.is_some(), "{f:?}");
    assert!(f.max_rss.is_some_and(|rss| rss > 0), "{f:?}");
    h.assert_no_error_logs();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tmpdir_of_a_job_whose_shepherd_died_is_removed_by_the_agent() {
    let mut h = Harness::new().await;
    h.start_agent(&[]);
    let mut s = h.session().await;
    s.welcome(30);
    s.launch(h.launch(41, "while :; do sleep 0.1; done\n"));
    s.started(41).await;
    let tmpdir = h.dir.path().join("tmp/pbs.41.testserver");
    assert!(tmpdir.is_dir());
    let shepherd = pid_in(&h.job_dir(41).join("shepherd.pid")).expect("shepherd.pid");
    kill(Pid::from_raw(shepherd), Signal::SIGKILL).unwrap();
    let f = s.finished(41).await;
    assert_eq!(f.cause, FinishCause::Lost as i32, "{f:?}");
    assert!(
        !tmpdir.exists(),
        "removed when the agent found the shepherd gone"
    );
}

/// A job with `gpus` GPUs on each of its nodes (all on this host) that
/// writes what it was given to `gpus-SEQ`, then waits for `go`.
fn gpu_job(h: &Harness, seq: u64, gpus: &[u32]) -> LaunchJob {
    let script = format!(
        "echo \"$CUDA_VISIBLE_DEVICES $(tr '\\n' ' ' < $PBS_GPUFILE)\" > {0}/gpus-{seq}.tmp\n\
         mv {0}/gpus-{seq}.tmp {0}/gpus-{seq}\n\
         while [ ! -e {0}/go ]; do sleep 0.1; done\n",
        h.work.display(),
    );
    let mut launch = h.launch(seq, &script);
    launch.nodes = (0..gpus.len()).map(|i| format!("n{i}")).collect();
    launch.shares = gpus
        .iter()
        .map(|&g| qmesh_proto::v1::NodeShare {
            procs: 1,
            cpus: 1,
            threads: 1,
            gpus: g,
            ..Default::default()
        })
        .collect();
    launch
}

fn gpus_seen(h: &Harness, seq: u64) -> Option<String> {
    fs::read_to_string(h.work.join(format!("gpus-{seq}"))).ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_jobs_on_one_host_never_get_the_same_gpu_even_across_agent_restarts() {
    let mut h = Harness::new().await;
    h.start_agent(&["--gpus", "4"]);
    let mut s = h.session().await;
    assert_eq!(s.hello.facts.as_ref().map(|f| f.gpus), Some(4));
    s.welcome(30);
    let go = h.work.join("go");
    // Job 50: a GPU on each of its two nodes here; job 51: two on one.
    s.launch(gpu_job(&h, 50, &[1, 1]));
    s.started(50).await;
    s.launch(gpu_job(&h, 51, &[2, 0]));
    s.started(51).await;
    eventually("both jobs say their GPUs", || {
        gpus_seen(&h, 50).is_some() && gpus_seen(&h, 51).is_some()
    })
    .await;
    let read = |h: &Harness, seq| gpus_seen(h, seq).unwrap();
    assert_eq!(read(&h, 50), "0,1 testhost-gpu0 testhost-gpu1 \n");
    assert_eq!(read(&h, 51), "2,3 testhost-gpu2 testhost-gpu3 \n");

    // A restarted agent knows which GPUs the running jobs hold.
    kill(Pid::from_raw(h.agents[0].id() as i32), Signal::SIGKILL).unwrap();
    h.agent_exit(0).await;
    drop(s);
    h.start_agent(&["--gpus", "4"]);
    let mut s = h.session().await;
    s.welcome(30);
    s.launch(gpu_job(&h, 52, &[1]));
    let f = s.finished(52).await;
    assert_eq!(f.cause, FinishCause::LaunchFailed as i32, "{f:?}");
    assert!(f.message.contains("only 0 of its 4 are free"), "{f:?}");

    fs::write(&go, "").unwrap();
    let mut ended = Vec::new();
    while ended.len() < 2 {
        if let agent_message::Kind::Finished(f) = s.next().await {
            ended.push(f.job);
        }
    }
    ended.sort_unstable();
    assert_eq!(ended, vec![50, 51]);
    s.launch(gpu_job(&h, 53, &[2]));
    let f = s.finished(53).await;
    assert_eq!(f.exit_code, Some(0), "{f:?}");
    assert_eq!(
        read(&h, 53),
        "0,1 testhost-gpu0 testhost-gpu1 \n",
        "freed by the ends"
    );
    h.assert_no_error_logs();
}

/// A script that says it is ready, writes `got-SIG` for each signal of
/// `traps` it receives, and exits 0 on the last one.
fn trapping_script(work: &Path, traps: &[&str]) -> String {
    let mut script = String::new();
    for (i, sig) in traps.iter().enumerate() {
        let file = work.join(format!("got-{sig}"));
        let end = if i + 1 == traps.len() { "; exit 0" } else { "" };
        script.push_str(&format!(
            "trap 'echo {sig} > {0}.tmp && mv {0}.tmp {0}{end}' {sig}\n",
            file.display()
        ));
    }
    let ready = work.join("ready");
    script.push_str(&format!(
        "echo go > {0}.tmp && mv {0}.tmp {0}\nwhile :; do sleep 0.1; done\n",
        ready.display()
    ));
    script
}

fn signal(job: u64, signal: &str) -> daemon_message::Kind {
    daemon_message::Kind::Signal(SignalJob {
        job,
        signal: signal.into(),
        reason: "qsig by test".into(),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signal_job_reaches_the_job_which_handles_it_and_exits() {
    let mut h = Harness::new().await;
    h.start_agent(&[]);
    let mut s = h.session().await;
    s.welcome(30);
    s.launch(h.launch(14, &trapping_script(&h.work, &["USR1"])));
    s.started(14).await;
    let ready = h.work.join("ready");
    eventually("the job set its trap", || ready.exists()).await;
    s.send(signal(14, "SIGUSR1"));
    let f = s.finished(14).await;
    assert_eq!(
        (f.cause, f.exit_code, f.signal),
        (FinishCause::Exited as i32, Some(0), None),
        "the job handled the signal and was not killed: {f:?}"
    );
    assert!(h.work.join("got-USR1").exists());
    assert!(
        !h.job_dir(14)
            .join("signals")
            .read_dir()
            .unwrap()
            .any(|_| true),
        "the request was taken"
    );
    // A signal for a job that has ended, or that was never here, is ignored.
    s.send(signal(14, "SIGUSR1"));
    s.send(signal(999, "SIGUSR1"));
    s.send(daemon_message::Kind::Ack(AckFinished { job: 14 }));
    eventually("the job is forgotten", || !h.job_dir(14).exists()).await;
    h.assert_no_error_logs();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_request_survives_the_agent_dying_before_it_rang() {
    let mut h = Harness::new().await;
    h.start_agent(&[]);
    let mut s = h.session().await;
    s.welcome(30);
    s.launch(h.launch(15, &trapping_script(&h.work, &["USR1", "USR2"])));
    s.started(15).await;
    let ready = h.work.join("ready");
    eventually("the job set its traps", || ready.exists()).await;

    // The agent dies having written a request but before ringing the shepherd.
    kill(Pid::from_raw(h.agents[0].id() as i32), Signal::SIGKILL).unwrap();
    h.agent_exit(0).await;
    drop(s);
    let requests = h.job_dir(15).join("signals");
    fs::write(
        requests.join("00000000000000000001-000000.json"),
        r#"{"version": 1, "signal": "SIGUSR1", "reason": "qsig by test", "time": 1}"#,
    )
    .unwrap();

    // The next agent adopts the shepherd and rings it for the request.
    h.start_agent(&[]);
    let mut s = h.session().await;
    assert_eq!(s.hello.running, vec![15], "{:?}", s.hello);
    s.welcome(30);
    let got = h.work.join("got-USR1");
    eventually("the job got the waiting USR1", || got.exists()).await;
    // And the new agent passes new signals to the adopted shepherd.
    s.send(signal(15, "SIGUSR2"));
    let f = s.finished(15).await;
    assert_eq!(
        (f.cause, f.exit_code),
        (FinishCause::Exited as i32, Some(0)),
        "{f:?}"
    );
    assert!(h.work.join("got-USR2").exists());
    h.assert_no_error_logs();
}
