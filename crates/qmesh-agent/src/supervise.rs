//! The agent's side of jobs: turn a launch order into a spool directory and
//! a shepherd, watch shepherds until they leave a result, pass kill and
//! signal orders on, forget acknowledged jobs, and, after a restart, adopt the shepherds
//! a previous agent left running.
//!
//! Watching happens in tasks that outlive sessions: a job that ends while
//! the daemon is unreachable still gets its result checked, and the next
//! Hello reports it. Watchers send [`Event`]s; the session in progress, if
//! any, forwards them. The spool, not the events, is the truth: a session
//! starts by reading it.

use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::Signal;
use qmesh_proto::v1::{self, FinishCause, JobFinished};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader, Interest};
use tokio::sync::mpsc::UnboundedSender;
use tracing::{Instrument, debug, error, info, info_span, warn};

use crate::error::{AgentError, Result};
use crate::hooks::Hooks;
use crate::procfs::{self, SHEPHERD_ARG0, SHEPHERD_COMMAND};
use crate::record::{
    Additions, Cgroups, JOB_PID_FILE, KILL_REASON_FILE, Launch, SHEPHERD_LOG, SHEPHERD_PID_FILE,
    finish, write_atomic,
};
use crate::shepherd::{self, now};
use crate::spool::{JobDir, Spool};
use crate::zygote::{Forked, Zygote};

/// How often an adopted shepherd (not our child) is looked at.
const ADOPTED_POLL: Duration = Duration::from_millis(500);

/// What watchers tell the session.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    Started {
        job: u64,
        pid: i32,
        time: i64,
    },
    Finished(JobFinished),
    /// A job launched elsewhere joined here (see `joined`).
    Joined(v1::JobJoined),
}

/// What the spool says, for a Hello.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SpoolState {
    pub running: Vec<u64>,
    pub finished: Vec<JobFinished>,
}

pub struct Supervisor {
    spool: Spool,
    events: UnboundedSender<Event>,
    /// Forks shepherds; without it (or when it fails) they are exec'd.
    zygote: Option<Zygote>,
    /// What every launch here gets: the site's prologue and epilogue,
    /// where TMPDIRs and cgroups go, the commands' socket, the host's name
    /// (its GPUs are chosen per job).
    additions: Additions,
    /// GPUs this host has, to give out.
    host_gpus: u32,
    /// pbsdsh's tasks and interactive terminals of jobs here.
    pub tasks: crate::tasks::Tasks,
    /// The site's checkpoint program (`--checkpoint`).
    checkpoint: Option<PathBuf>,
}

impl Supervisor {
    pub fn new(spool: Spool, events: UnboundedSender<Event>) -> Self {
        Supervisor {
            tasks: crate::tasks::Tasks::new(spool.root()),
            spool,
            events,
            zygote: None,
            additions: Additions::default(),
            host_gpus: 0,
            checkpoint: None,
        }
    }

    /// Jobs launched here run the site's prologue and epilogue.
    pub fn with_hooks(mut self, hooks: Hooks) -> Self {
        self.additions.prologue = hooks.prologue;
        self.additions.epilogue = hooks.epilogue;
        self.checkpoint = hooks.checkpoint;
        self
    }

    /// Jobs launched here reach the daemon's commands through `socket`.
    pub fn with_commands_socket(mut self, socket: Option<PathBuf>) -> Self {
        self.additions.commands_socket = socket;
        self
    }

    /// Jobs launched here, and pbsdsh's tasks, run in cgroups under
    /// `cgroups` (`None`: uncontained).
    pub fn with_cgroups(mut self, cgroups: Option<Cgroups>) -> Self {
        self.tasks = self.tasks.clone().with_cgroups(cgroups.clone());
        self.additions.cgroups = cgroups;
        self
    }

    /// Jobs launched here get a TMPDIR under `tmpdir_base`, and GPUs of
    /// this host's `gpus`, which is called `host`.
    pub fn with_host(mut self, host: &str, tmpdir_base: PathBuf, gpus: u32) -> Self {
        self.additions.host = host.to_string();
        self.additions.tmpdir_base = Some(tmpdir_base);
        self.host_gpus = gpus;
        self
    }

    /// Shepherds are forked by a zygote (see [`crate::zygote`]) started
    /// now.
    pub fn with_zygote(mut self) -> Self {
        let spool = self.spool.root().to_path_buf();
        self.zygote = Some(Zygote::start(shepherd_program(), spool));
        self
    }

    /// Jobs with a result are finished; the others run (every one of them
    /// has a watcher, from [`Self::adopt_all`] or [`Self::launch`]).
    pub fn state(&self) -> Result<SpoolState> {
        let mut state = SpoolState::default();
        for dir in self.spool.scan()? {
            match dir.read_result() {
                Ok(Some(result)) => state.finished.push(result),
                Ok(None) => state.running.push(dir.seq),
                Err(e) => {
                    error!(job = dir.seq, "{e}");
                    let result = unknown_end(&dir, format!("its result is unreadable: {e}"));
                    state.finished.push(result);
                }
            }
        }
        Ok(state)
    }

    /// What each running job launched here has used so far, from its
    /// cgroup, for the heartbeat (qstat -f's resources_used while it runs).
    pub fn used_so_far(&self) -> Vec<v1::JobUse> {
        let Ok(dirs) = self.spool.scan() else {
            return Vec::new();
        };
        dirs.into_iter()
            .filter(|dir| !dir.has_result())
            .filter_map(|dir| {
                let launch = dir.read_launch().ok()?;
                let cgroups = launch.added.cgroups.as_ref()?;
                let cgroup = crate::cgroup::job::JobCgroup::of(cgroups, &launch.order.job_id);
                if !cgroup.exists() {
                    return None;
                }
                let used = cgroup.usage();
                Some(v1::JobUse {
                    job: launch.order.job,
                    cput: used.cpu_micros.map(|us| (us + 500_000) / 1_000_000),
                    mem: used.mem_peak,
                    vmem: used.vmem_peak,
                })
            })
            .collect()
    }

    /// At startup: watch the shepherds a previous agent left, and settle
    /// the jobs whose shepherd is gone without a result.
    pub fn adopt_all(&self) -> Result<()> {
        self.spool.remove_partial()?;
        for dir in self.spool.scan()? {
            let _span = info_span!("job", job = dir.seq).entered();
            if dir.has_result() {
                debug!("finished, waiting for the daemon's acknowledgement");
                continue;
            }
            let pid = shepherd_of(&dir);
            match pid {
                Some(pid) => {
                    info!(shepherd = pid, "adopting the running shepherd");
                    crate::signals::ring_if_pending(&dir, pid);
                    let events = self.events.clone();
                    let span = info_span!(parent: None, "job", job = dir.seq);
                    tokio::spawn(watch_adopted(dir, pid, events).instrument(span));
                }
                None => {
                    let result = vanished(&dir);
                    warn!("{}", result.message);
                    persist(&dir, &result);
                }
            }
        }
        Ok(())
    }

    /// Starts a job. A job already in the spool is left alone. `Err` only
    /// when not even a spool directory could be written: the finish to send
    /// is then not persisted.
    pub async fn launch(
        &self,
        mut order: v1::LaunchJob,
    ) -> std::result::Result<(), v1::JobFinished> {
        let seq = order.job;
        let script = if order.interactive {
            crate::tasks::interactive_script(self.spool.root(), seq)
        } else {
            std::mem::take(&mut order.script)
        };
        let mut launch = Launch::new(order, self.additions.clone());
        let spool = self.spool.clone();
        let host_gpus = self.host_gpus;
        let prepared = tokio::task::spawn_blocking(move || {
            if spool.job(seq).exists() {
                return (Ok(None), None);
            }
            // Launches come one at a time: no other job chooses meanwhile.
            let wanted = launch.local_gpus();
            let refused = if wanted == 0 {
                None
            } else {
                match crate::gpus::choose(host_gpus, &crate::gpus::held(&spool), wanted) {
                    Ok(gpus) => {
                        launch.added.gpus = gpus;
                        None
                    }
                    Err(why) => Some(why),
                }
            };
            (spool.prepare(&launch, &script), refused)
        })
        .await
        .unwrap_or_else(|e| {
            let e = AgentError::Config(format!("launch task failed: {e}"));
            (Err(e), None)
        });
        let dir = match prepared {
            (Ok(Some(dir)), Some(refused)) => {
                warn!("job not started: {refused}");
                let result = finish(seq, FinishCause::LaunchFailed, refused, now());
                persist(&dir, &result);
                let _ = self.events.send(Event::Finished(result));
                return Ok(());
            }
            (Ok(Some(dir)), None) => dir,
            (Ok(None), _) => {
                debug!("already in the spool; repeated launch ignored");
                return Ok(());
            }
            (Err(e), _) => {
                error!("{e}");
                let message = format!("cannot write the job to the agent's spool: {e}");
                return Err(finish(seq, FinishCause::LaunchFailed, message, now()));
            }
        };
        if let Some((forked, out)) = self.fork_shepherd(&dir).await {
            debug!(shepherd = forked.pid, "shepherd forked");
            if let Err(e) = dir.write_pid(SHEPHERD_PID_FILE, forked.pid) {
                error!("{e}; a restarted agent will look for the shepherd by its command line");
            }
            let events = self.events.clone();
            let span = info_span!(parent: None, "job", job = seq);
            tokio::spawn(watch_forked(dir, forked, out, events).instrument(span));
            return Ok(());
        }
        match spawn_shepherd(&dir) {
            Ok(child) => {
                let pid = child.id().map_or(0, |p| p as i32);
                info!(shepherd = pid, "shepherd started");
                if let Err(e) = dir.write_pid(SHEPHERD_PID_FILE, pid) {
                    error!("{e}; a restarted agent will look for the shepherd by its command line");
                }
                let events = self.events.clone();
                let span = info_span!(parent: None, "job", job = seq);
                tokio::spawn(watch_child(dir, child, events).instrument(span));
            }
            Err(e) => {
                error!("{e}");
                let message = format!("cannot start the shepherd: {e}");
                let result = finish(seq, FinishCause::LaunchFailed, message, now());
                persist(&dir, &result);
                let _ = self.events.send(Event::Finished(result));
            }
        }
        Ok(())
    }

    /// A shepherd for `dir` from the zygote, with the read end of the pipe
    /// it announces the job's start on; `None` when there is no zygote or
    /// it failed (its thread says so), and the shepherd is to be exec'd.
    async fn fork_shepherd(&self, dir: &JobDir) -> Option<(Forked, OwnedFd)> {
        let zygote = self.zygote.as_ref()?;
        let pipe = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
            .map_err(|e| AgentError::io("make the start pipe for", &dir.path, e.into()));
        let opened = open_log(dir).and_then(|log| pipe.map(|(read, write)| (read, write, log)));
        let (read, write, log) = match opened {
            Ok(fds) => fds,
            Err(e) => {
                warn!("{e}; the shepherd is exec'd");
                return None;
            }
        };
        match zygote.fork(&dir.path, write, log.into()).await {
            Ok(forked) => Some((forked, read)),
            Err(e) => {
                debug!("{e}; the shepherd is exec'd");
                None
            }
        }
    }

    /// Passes a kill order to the job's shepherd (SIGTERM), which performs
    /// the kill sequence.
    pub fn kill(&self, seq: u64, reason: &str) {
        kill_job(&self.spool, seq, reason);
    }

    /// Preemption's C: the site's checkpoint program runs for the job
    /// (as the prologue does, with the job's session in `PBS_SID`), then
    /// the job is killed, to be queued again by the daemon. It runs on a
    /// task of its own: other orders go on meanwhile. Without a program,
    /// or when it fails, the job is killed all the same.
    pub fn checkpoint(&self, seq: u64, reason: &str) {
        let spool = self.spool.clone();
        let program = self.checkpoint.clone();
        let reason = reason.to_string();
        tokio::spawn(async move {
            let said = match program {
                Some(program) => run_checkpoint(&spool, seq, &program).await,
                None => "no checkpoint program on this host (qmesh-agent --checkpoint)".into(),
            };
            info!(job = seq, "{said}");
            kill_job(&spool, seq, &format!("{reason}: {said}"));
        });
    }

    /// Passes a signal for the job to its shepherd, which sends it to the
    /// job's process group. A job that has ended is ignored.
    pub fn signal(&self, seq: u64, signal: &str, reason: &str) {
        let dir = self.spool.job(seq);
        if !dir.exists() || dir.has_result() {
            debug!(
                signal,
                "signal for a job that has ended or is not here; ignored"
            );
            return;
        }
        let Some(pid) = shepherd_of(&dir) else {
            debug!(
                signal,
                "signal for a job whose shepherd has just ended; ignored"
            );
            return;
        };
        crate::signals::deliver(&dir, pid, signal, reason);
    }

    /// qmsg: a line for the job's error or output file, written to the
    /// files its first process has open. A job that has ended is ignored.
    pub fn message(&self, seq: u64, text: &str, to_output: bool, to_error: bool) {
        let dir = self.spool.job(seq);
        if !dir.exists() || dir.has_result() {
            debug!("message for a job that has ended or is not here; ignored");
            return;
        }
        let Some(shepherd) = shepherd_of(&dir) else {
            debug!("message for a job whose shepherd has just ended; ignored");
            return;
        };
        // The job's pid is its shepherd's child: a pid in a file proves
        // nothing by itself (pids are reused).
        let Some(job) = dir
            .read_pid(JOB_PID_FILE)
            .filter(|&pid| procfs::stat(pid).is_some_and(|s| s.ppid == shepherd && s.state != 'Z'))
        else {
            warn!("message for a job whose process is not found; not written");
            return;
        };
        crate::qmsg::write(job, text, to_output, to_error);
    }

    /// The daemon has recorded the job's end: forget the job.
    pub fn ack(&self, seq: u64) {
        let dir = self.spool.job(seq);
        if !dir.exists() {
            debug!("acknowledgement for a job not in the spool; ignored");
            return;
        }
        if !dir.has_result() {
            warn!("acknowledgement for a job that has not ended; ignored");
            return;
        }
        match dir.remove() {
            Ok(()) => debug!("acknowledged; removed from the spool"),
            Err(e) => error!("{e}"),
        }
    }
}

/// The checkpoint program's run for job `seq`, in words for the job's
/// comment.
async fn run_checkpoint(spool: &Spool, seq: u64, program: &std::path::Path) -> String {
    let dir = spool.job(seq);
    let launch = match dir.read_launch() {
        Ok(launch) => launch,
        Err(e) => return format!("not checkpointed ({e})"),
    };
    let order = &launch.order;
    let job = crate::hooks::HookJob {
        job_id: &order.job_id,
        user: &order.user,
        group: &order.group,
        nodes: launch.local_nodes(),
    };
    let mut cmd = tokio::process::Command::from(crate::hooks::command(program, &job));
    if let Some(pid) = dir.read_pid(crate::record::JOB_PID_FILE) {
        cmd.env("PBS_SID", pid.to_string());
    }
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let run = async {
        let out = cmd.output().await?;
        Ok::<_, std::io::Error>((out.status, out.stderr))
    };
    match tokio::time::timeout(crate::hooks::HOOK_TIMEOUT, run).await {
        Ok(Ok((status, stderr))) => {
            match crate::hooks::failure("checkpoint program", program, status, &stderr) {
                None => format!("checkpointed by {}", program.display()),
                Some(why) => format!("{why}; not checkpointed"),
            }
        }
        Ok(Err(e)) => crate::hooks::unstartable("checkpoint program", program, &e),
        Err(_) => crate::hooks::overran("checkpoint program", program),
    }
}

/// Passes a kill order to job `seq`'s shepherd (SIGTERM), which performs
/// the kill sequence; `reason` goes into its end's message.
fn kill_job(spool: &Spool, seq: u64, reason: &str) {
    let dir = spool.job(seq);
    if !dir.exists() {
        debug!("kill for a job not in the spool; ignored");
        return;
    }
    if dir.has_result() {
        debug!("kill for a job that has ended; ignored");
        return;
    }
    let Some(pid) = shepherd_of(&dir) else {
        info!("kill for a job whose shepherd has just ended; its watcher reports the end");
        return;
    };
    if !reason.is_empty() {
        let path = dir.file(KILL_REASON_FILE);
        if let Err(e) = write_atomic(&path, reason.as_bytes(), 0o644) {
            warn!("{e}; the kill goes on without its reason");
        }
    }
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGTERM) {
        Ok(()) => info!(shepherd = pid, reason, "kill passed to the shepherd"),
        Err(e) => warn!(shepherd = pid, "cannot signal the shepherd ({e})"),
    }
}

/// The running shepherd of a job's directory: the one its pid file
/// names, if that is still it, else one found by its working directory.
fn shepherd_of(dir: &crate::spool::JobDir) -> Option<i32> {
    dir.read_pid(SHEPHERD_PID_FILE)
        .filter(|&pid| procfs::is_shepherd(pid, &dir.path))
        .or_else(|| procfs::find_shepherd(&dir.path))
}

/// The program that runs shepherds: this very binary. When it was replaced
/// on disk (an upgrade), `/proc/self/exe` still runs the version that wrote
/// the spool files.
fn shepherd_program() -> PathBuf {
    match std::env::current_exe() {
        Ok(path) if path.exists() => path,
        _ => PathBuf::from("/proc/self/exe"),
    }
}

/// The shepherd's log, `shepherd.log` in its job directory.
fn open_log(dir: &JobDir) -> Result<std::fs::File> {
    let log_path = dir.file(SHEPHERD_LOG);
    std::fs::File::options()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(|e| AgentError::io("open", &log_path, e))
}

fn spawn_shepherd(dir: &JobDir) -> Result<tokio::process::Child> {
    let log = open_log(dir)?;
    let program = shepherd_program();
    let mut cmd = tokio::process::Command::new(&program);
    cmd.arg0(SHEPHERD_ARG0)
        .arg(SHEPHERD_COMMAND)
        .arg(&dir.path)
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log)
        .kill_on_drop(false);
    // SAFETY: setsid and sigprocmask are async-signal-safe system calls.
    unsafe {
        cmd.pre_exec(shepherd::own_session_signals_blocked());
    }
    cmd.spawn()
        .map_err(|e| AgentError::io("run shepherd", program, e))
}

/// Watches a shepherd we spawned: its start line, then its exit.
async fn watch_child(
    dir: JobDir,
    mut child: tokio::process::Child,
    events: UnboundedSender<Event>,
) {
    if let Some(out) = child.stdout.take() {
        read_start(&dir, out, &events).await;
    }
    let status = child.wait().await;
    report_end(&dir, &events, &status);
}

/// Watches a shepherd the zygote forked: its start line on `out`, then
/// its exit, through its pidfd (it is not our child to wait for), else
/// by looking at /proc now and then.
async fn watch_forked(dir: JobDir, forked: Forked, out: OwnedFd, events: UnboundedSender<Event>) {
    match tokio::net::unix::pipe::Receiver::from_owned_fd(out) {
        Ok(pipe) => read_start(&dir, pipe, &events).await,
        Err(e) => {
            warn!("cannot read the shepherd's start pipe ({e}); watching its spool instead");
            return watch_adopted(dir, forked.pid, events).await;
        }
    }
    // SAFETY: the pidfd is ours alone, and neither closed nor replaced
    // while the AsyncFd owns it.
    let ended = match forked
        .pidfd
        .map(|fd| unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) })
    {
        Some(Ok(fd)) => fd.readable().await.is_ok(),
        _ => false,
    };
    if !ended {
        while procfs::is_shepherd(forked.pid, &dir.path) {
            tokio::time::sleep(ADOPTED_POLL).await;
        }
    }
    report_end(&dir, &events, &"ended");
}

/// Reads a shepherd's start line (`started PID TIME`) until it lets go of
/// the pipe, and passes the start on.
async fn read_start(dir: &JobDir, out: impl AsyncRead + Unpin, events: &UnboundedSender<Event>) {
    let mut lines = BufReader::new(out).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Some((pid, time)) = shepherd::parse_started(&line) {
            debug!(pid, "job process spawned");
            let _ = events.send(Event::Started {
                job: dir.seq,
                pid,
                time,
            });
        }
    }
}

/// A shepherd has ended (`how`, for the log): its result, or a vanished
/// or unknown end when it left none, goes to the session.
fn report_end(dir: &JobDir, events: &UnboundedSender<Event>, how: &dyn std::fmt::Debug) {
    let result = match dir.read_result() {
        Ok(Some(result)) => result,
        Ok(None) => {
            let result = vanished(dir);
            warn!(status = ?how, "{}", result.message);
            persist(dir, &result);
            result
        }
        Err(e) => {
            error!("{e}");
            unknown_end(dir, format!("its result is unreadable: {e}"))
        }
    };
    log_finish(&result);
    let _ = events.send(Event::Finished(result));
}

/// Watches a shepherd a previous agent started: it is not our child, so we
/// look at the spool and at /proc now and then.
async fn watch_adopted(dir: JobDir, shepherd: i32, events: UnboundedSender<Event>) {
    let mut started = false;
    loop {
        if !started {
            if let Some(pid) = dir.read_pid(JOB_PID_FILE) {
                started = true;
                let time = dir.mtime(JOB_PID_FILE);
                let _ = events.send(Event::Started {
                    job: dir.seq,
                    pid,
                    time,
                });
            }
        }
        let alive = procfs::is_shepherd(shepherd, &dir.path);
        // Read after the liveness check: a shepherd writes, then exits.
        match dir.read_result() {
            Ok(Some(result)) => {
                log_finish(&result);
                let _ = events.send(Event::Finished(result));
                return;
            }
            Ok(None) if !alive => {
                let result = vanished(&dir);
                warn!("{}", result.message);
                persist(&dir, &result);
                let _ = events.send(Event::Finished(result));
                return;
            }
            Ok(None) => {}
            Err(e) => {
                error!("{e}");
                let result = unknown_end(&dir, format!("its result is unreadable: {e}"));
                let _ = events.send(Event::Finished(result));
                return;
            }
        }
        tokio::time::sleep(ADOPTED_POLL).await;
    }
}

fn log_finish(r: &JobFinished) {
    info!(
        cause = ?r.cause(),
        exit_code = ?r.exit_code,
        signal = ?r.signal,
        message = %r.message,
        "job finished"
    );
}

fn persist(dir: &JobDir, result: &JobFinished) {
    if let Err(e) = dir.write_result(result) {
        if !dir.path.exists() {
            // The daemon has acknowledged an end of this job already (a
            // report of it by another watcher, after a restart) and its
            // directory is gone: nothing is left to keep.
            tracing::debug!("{e}; the job's directory is gone: its end was acknowledged");
            return;
        }
        error!("{e}; the job's end is reported but will not survive an agent restart");
    }
}

/// The shepherd is gone and left no result. Without `job.pid` it never
/// started the job: a launch failure. With it, the job ran and how it ended
/// is unknown; what is left of it is killed, since nothing enforces its
/// limits any more and the daemon will give its nodes to others.
fn vanished(dir: &JobDir) -> JobFinished {
    remove_tmpdir_of(dir);
    let log = dir.file(SHEPHERD_LOG);
    let Some(job_pid) = dir.read_pid(JOB_PID_FILE) else {
        let message = format!(
            "the job never started: its shepherd is gone and left no result; see {}",
            log.display()
        );
        return finish(dir.seq, FinishCause::LaunchFailed, message, now());
    };
    // Only a process that still leads its own session is the job's leader.
    if procfs::stat(job_pid).is_some_and(|s| s.session == job_pid && s.pgrp == job_pid) {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(job_pid), Signal::SIGKILL);
    }
    let mut result = unknown_end(
        dir,
        format!(
            "the shepherd ended while the job (pid {job_pid}) ran; its exit status is unknown; see {}",
            log.display()
        ),
    );
    result.start_time = dir.mtime(JOB_PID_FILE);
    result
}

/// The job's TMPDIR and private directory (`-W sandbox=PRIVATE`), which
/// its vanished shepherd would have removed.
fn remove_tmpdir_of(dir: &JobDir) {
    let Ok(launch) = dir.read_launch() else {
        return;
    };
    let private = launch
        .order
        .sandbox_private
        .then(|| crate::plan::home_of(&launch.order))
        .flatten()
        .map(|home| crate::tmpdir::path(&home, &launch.order.job_id));
    for path in crate::tmpdir::of(&launch).into_iter().chain(private) {
        match crate::tmpdir::remove(&path) {
            Ok(()) => debug!(dir = %path.display(), "the job's directory is gone"),
            Err(e) => warn!("cannot remove the job's directory {}: {e}", path.display()),
        }
    }
}

fn unknown_end(dir: &JobDir, message: String) -> JobFinished {
    finish(dir.seq, FinishCause::Lost, message, now())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(seq: u64) -> v1::LaunchJob {
        v1::LaunchJob {
            job: seq,
            job_id: format!("{seq}.s"),
            script: b"exit 0\n".to_vec(),
            ..Default::default()
        }
    }

    #[test]
    fn state_splits_running_from_finished() {
        let tmp = tempfile::tempdir().unwrap();
        let spool = Spool::open(tmp.path()).unwrap();
        let a = spool
            .prepare_order(launch(1), Additions::default())
            .unwrap()
            .unwrap();
        spool
            .prepare_order(launch(2), Additions::default())
            .unwrap();
        let done = finish(1, FinishCause::LaunchFailed, "no".into(), 5);
        a.write_result(&done).unwrap();
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let sup = Supervisor::new(spool, tx);
        let state = sup.state().unwrap();
        assert_eq!(state.running, vec![2]);
        assert_eq!(state.finished, vec![done]);
    }

    #[test]
    fn a_vanished_shepherd_without_job_pid_is_a_launch_failure() {
        let tmp = tempfile::tempdir().unwrap();
        let spool = Spool::open(tmp.path()).unwrap();
        let dir = spool
            .prepare_order(launch(4), Additions::default())
            .unwrap()
            .unwrap();
        let r = vanished(&dir);
        assert_eq!(r.cause(), FinishCause::LaunchFailed);
        assert!(r.message.contains("shepherd.log"), "{}", r.message);
        // With a job pid (here one that cannot exist), the end is unknown.
        dir.write_pid(JOB_PID_FILE, i32::MAX).unwrap();
        let r = vanished(&dir);
        assert_eq!(r.cause(), FinishCause::Lost);
        assert_eq!((r.exit_code, r.signal), (None, None));
    }

    #[tokio::test]
    async fn adopt_all_settles_jobs_without_shepherd_and_ack_forgets_them() {
        let tmp = tempfile::tempdir().unwrap();
        let spool = Spool::open(tmp.path()).unwrap();
        spool
            .prepare_order(launch(9), Additions::default())
            .unwrap();
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let sup = Supervisor::new(spool.clone(), tx);
        sup.adopt_all().unwrap();
        let state = sup.state().unwrap();
        assert!(state.running.is_empty());
        assert_eq!(state.finished.len(), 1);
        assert_eq!(state.finished[0].cause(), FinishCause::LaunchFailed);
        sup.ack(9);
        assert!(!spool.job(9).exists());
        assert_eq!(sup.state().unwrap(), SpoolState::default());
    }
}
