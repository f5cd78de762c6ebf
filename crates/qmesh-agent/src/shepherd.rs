//! The shepherd (`qmesh-agent shepherd JOBDIR`): one small process per job
//! that makes the job's TMPDIR, starts the job, enforces its wall time,
//! performs kills, forwards signals to it (see [`crate::signals`]),
//! collects its exit status and what it used, removes the TMPDIR and
//! writes `result.json`. It outlives the agent (it runs in
//! its own session, and nothing ties it to the agent but a pipe it stops
//! using after the start), so agent restarts and upgrades never touch jobs.
//!
//! It is synchronous and single-threaded on purpose: all its signals are
//! blocked and taken one at a time with `sigwait`, so there are no signal
//! handlers and no races between "the job ended" and "kill it". It makes
//! itself a child subreaper, so processes the job leaves behind become its
//! children and are killed and reaped when the job ends, instead of
//! lingering as orphans (or zombies, on hosts whose init does not reap).

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{SigHandler, SigSet, Signal};
use nix::sys::wait::{WaitPidFlag, WaitStatus};
use nix::unistd::{Pid, alarm};
use tracing::{debug, error, info, warn};

use crate::cgroup::job::JobCgroup;
use crate::plan::{LaunchError, Plan};
use qmesh_proto::v1::{FinishCause, JobFinished};

use crate::record::{JOB_PID_FILE, KILL_REASON_FILE, Launch, NODE_FILE, finish};
use crate::signals::Order;
use crate::spool::JobDir;
use crate::{exec, hooks, limits, plan, signals, tmpdir};

mod contain;
mod killed_line;
mod pause;

/// How long the final cleanup waits for the job's leftovers to die.
const CLEANUP_LIMIT: Duration = Duration::from_secs(5);

/// The signals the shepherd takes with `sigwait`. The agent blocks them
/// already before exec, so that a kill sent at once is not lost.
pub fn signals() -> SigSet {
    let mut set = SigSet::empty();
    for sig in [
        Signal::SIGCHLD,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGALRM,
        signals::DOORBELL,
    ] {
        set.add(sig);
    }
    set
}

/// For a process the agent starts that is, or will fork, shepherds: the
/// child-side setup between fork and exec. Its own session, so that it
/// outlives the agent and no terminal's signals reach it; [`signals()`]
/// blocked, so that a kill sent at once waits for the shepherd's sigwait.
pub fn own_session_signals_blocked() -> impl FnMut() -> std::io::Result<()> + Send + Sync + 'static
{
    let set = signals();
    move || {
        nix::unistd::setsid()?;
        nix::sys::signal::sigprocmask(nix::sys::signal::SigmaskHow::SIG_SETMASK, Some(&set), None)?;
        Ok(())
    }
}

/// The line the shepherd writes to its stdout (a pipe to the agent that
/// spawned it) once the job runs: `started PID TIME`.
pub fn parse_started(line: &str) -> Option<(i32, i64)> {
    let mut words = line.split_ascii_whitespace();
    (words.next()? == "started").then_some(())?;
    let pid = words.next()?.parse().ok()?;
    let time = words.next()?.parse().ok()?;
    Some((pid, time))
}

pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// The shepherd's main.
pub fn run(jobdir: &Path) -> ExitCode {
    ExitCode::from(run_code(jobdir))
}

/// The shepherd's log: its stderr, which is the job directory's
/// `shepherd.log`. The zygote sets it up once, before it forks any
/// shepherd, so a forked shepherd finds it made (a shepherd made it anew,
/// filter and registry, every time); an exec'd shepherd makes its own.
pub fn init_logging() {
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .try_init();
}

/// The shepherd, to its exit code: for `run`, and for a shepherd the
/// zygote forked, which exits with it.
pub fn run_code(jobdir: &Path) -> u8 {
    init_logging();
    let set = signals();
    if let Err(e) = set.thread_block() {
        error!("cannot block signals ({e}); the shepherd cannot work without sigwait");
        return 1;
    }
    // An inherited "ignore" on SIGCHLD would make the kernel reap the job.
    // SAFETY: SIG_DFL installs no handler.
    if let Err(e) = unsafe { nix::sys::signal::signal(Signal::SIGCHLD, SigHandler::SigDfl) } {
        warn!("cannot reset SIGCHLD ({e})");
    }
    if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
        warn!("cannot become a child subreaper ({e}); the job's orphans may escape cleanup");
    }
    let Some(dir) = JobDir::from_path(jobdir) else {
        error!(
            "{} is not a job directory (SPOOL/jobs/SEQ); the shepherd is started by the agent",
            jobdir.display()
        );
        return 2;
    };
    let span = tracing::info_span!("job", job = dir.seq);
    let _enter = span.enter();
    let result = shepherd(&dir, &set);
    let mut waiting = false;
    loop {
        match dir.write_result(&result) {
            Ok(()) => {
                info!(cause = ?result.cause(), exit_code = ?result.exit_code, signal = ?result.signal, "result written");
                return 0;
            }
            // A full spool: the end is kept here until there is room, not
            // lost (the job would be taken as lost, and run again).
            Err(e) if disk_full(&e) => {
                if !waiting {
                    error!(
                        "{e}; the job's end waits in its shepherd, which tries again every {} s",
                        RESULT_RETRY.as_secs()
                    );
                    waiting = true;
                }
                std::thread::sleep(RESULT_RETRY);
            }
            Err(e) => {
                error!("{e}; the agent will report this job's end as unknown");
                return 1;
            }
        }
    }
}

/// How often a shepherd tries again to write a result the disk had no
/// room for.
const RESULT_RETRY: Duration = Duration::from_secs(2);

/// Whether `e` says the disk (or the user's quota on it) is full.
fn disk_full(e: &crate::error::AgentError) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            return matches!(
                io.raw_os_error(),
                Some(nix::libc::ENOSPC) | Some(nix::libc::EDQUOT)
            );
        }
        source = err.source();
    }
    false
}

fn shepherd(dir: &JobDir, set: &SigSet) -> JobFinished {
    let launch = match dir.read_launch() {
        Ok(launch) => launch,
        Err(e) => return finish(dir.seq, FinishCause::LaunchFailed, e.to_string(), now()),
    };
    let plan = match plan::plan(&launch, dir) {
        Ok(plan) => plan,
        Err(e) => {
            warn!("job not started: {e}");
            return finish(dir.seq, FinishCause::LaunchFailed, e.to_string(), now());
        }
    };
    for name in &plan.dropped_env {
        warn!(variable = %name, "job variable dropped: a process environment cannot hold it");
    }
    if let Some(prologue) = &launch.added.prologue {
        match run_hook("prologue", prologue, &launch, dir, Orders::Kill) {
            HookEnd::Done => {}
            HookEnd::Failed(why) => {
                warn!("job not started: {why}");
                return finish(dir.seq, FinishCause::LaunchFailed, why, now());
            }
            HookEnd::Killed => return killed_before_start(dir, &launch),
        }
    }
    let (mut contained, uncontained) = match contain::contain(&launch) {
        Ok(contained) => (contained, None),
        Err(why) => {
            warn!("{why}");
            (None, Some(why))
        }
    };
    let spawned = make_tmpdir(&plan).and_then(|()| {
        let before = limits::children_used();
        let join = contained
            .as_ref()
            .map(|c| crate::cgroup::job::raw(&c.procs))
            .unwrap_or_default();
        exec::spawn(&plan, &join).map(|pid| (pid, before, now()))
    });
    if let Some(c) = contained.as_mut() {
        c.procs.clear();
    }
    let (pid, before, start) = match spawned {
        Ok(started) => started,
        Err(e) => {
            warn!("job not started: {e}");
            let mut result = finish(dir.seq, FinishCause::LaunchFailed, e.to_string(), now());
            if let Some(c) = &contained {
                let _ = c.cgroup.remove(Duration::from_secs(5));
            }
            epilogue(&launch, dir, &mut result);
            remove_tmpdir(&plan);
            return result;
        }
    };
    info!(pid, user = %plan.user.name, command = %exec::command_line(&plan), "job started");
    if let Err(e) = dir.write_pid(JOB_PID_FILE, pid) {
        error!("{e}; a restarted agent will not know the job's pid");
    }
    announce(pid, start);

    let mut watch = Watch {
        dir: dir.clone(),
        job: Pid::from_raw(pid),
        grace: launch.order.kill_grace,
        kill: None,
        escalated: false,
        cgroup: contained.as_ref().map(|c| c.cgroup.clone()),
        cpu_limit: launch.limits().job_cpu_secs,
        suspended: None,
        suspended_for: Duration::ZERO,
    };
    let ended = watch.run(set, launch.order.walltime);
    cleanup(watch.job, set, watch.cgroup.as_ref());
    let (cput, max_rss) = limits::job_used(before, limits::children_used());
    let mut result = result(dir, &launch, &watch, ended, start);
    result.cput = cput;
    result.max_rss = max_rss;
    if let Some(c) = &contained {
        contain::settle(c, &launch.added.host, &mut result);
    }
    if let Some(why) = uncontained {
        if !result.message.is_empty() {
            result.message.push_str("; ");
        }
        result.message.push_str(&why);
    }
    info!(?ended, cput = ?result.cput, mem = ?result.max_rss, vmem = ?result.vmem, cause = ?result.cause(), "job ended");
    let limits = killed_line::Limits {
        walltime: launch.order.walltime,
        mem: contained.as_ref().and_then(|c| c.allowance.mem),
        cput: launch.limits().job_cpu_secs,
        suspended: watch.suspended_for.as_secs(),
    };
    if result.cause() == FinishCause::CpuTime {
        let why = format!(
            "its processes used {} s of CPU time, over the {} s it asked for (-l cput)",
            result.cput.unwrap_or(0),
            limits.cput.unwrap_or(0)
        );
        result.message = if result.message.is_empty() {
            why
        } else {
            format!("{why}; {}", result.message)
        };
    }
    if contained.is_none() && limits.cput.is_some() {
        if !result.message.is_empty() {
            result.message.push_str("; ");
        }
        result
            .message
            .push_str("cput was not enforced: its host runs jobs without cgroups");
    }
    if let Some(line) = killed_line::line(&result, &limits) {
        killed_line::append(&plan, &line);
    }
    epilogue(&launch, dir, &mut result);
    remove_tmpdir(&plan);
    result
}

/// The job's TMPDIR and its private directory (`-W sandbox=PRIVATE`),
/// made afresh for its user just before it starts.
fn make_tmpdir(plan: &Plan) -> Result<(), LaunchError> {
    let owner = plan.switch_to.as_ref().map(|c| (c.uid, c.gid));
    if let Some(path) = &plan.tmpdir {
        tmpdir::make(path, owner).map_err(|source| LaunchError::Tmpdir {
            path: path.clone(),
            user: plan.user.name.clone(),
            source,
        })?;
    }
    if let Some(path) = &plan.sandbox {
        tmpdir::make(path, owner).map_err(|source| LaunchError::Sandbox {
            path: path.clone(),
            user: plan.user.name.clone(),
            source,
        })?;
    }
    Ok(())
}

/// Once the job and its epilogue are over: its TMPDIR and private
/// directory go, with all in them.
fn remove_tmpdir(plan: &Plan) {
    for (what, dir) in [
        ("TMPDIR", &plan.tmpdir),
        ("private directory", &plan.sandbox),
    ] {
        if let Some(path) = dir {
            match tmpdir::remove(path) {
                Ok(()) => debug!(dir = %path.display(), "the job's {what} removed"),
                Err(e) => warn!("cannot remove the job's {what} {}: {e}", path.display()),
            }
        }
    }
}

/// What a kill order (SIGTERM, SIGINT) does while a hook runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Orders {
    /// Kills the hook, and with it the job (the prologue).
    Kill,
    /// Waits: the job has ended (the epilogue).
    Wait,
}

/// How a hook the shepherd ran ended.
#[derive(Debug, PartialEq, Eq)]
enum HookEnd {
    Done,
    Failed(String),
    /// A kill order came while it ran.
    Killed,
}

/// Runs the site's epilogue, if any, once the job is over; a failure is
/// added to the result's message (the job's comment), its exit kept.
fn epilogue(launch: &Launch, dir: &JobDir, result: &mut JobFinished) {
    let Some(program) = &launch.added.epilogue else {
        return;
    };
    if let HookEnd::Failed(why) = run_hook("epilogue", program, launch, dir, Orders::Wait) {
        warn!("{why}");
        if !result.message.is_empty() {
            result.message.push_str("; ");
        }
        result.message.push_str(&why);
    }
}

/// Runs the site's `what` (prologue or epilogue) for the job as PBS does
/// (see [`crate::hooks`]), with the job's node file in `QMESH_NODEFILE`,
/// for at most [`hooks::HOOK_TIMEOUT`]. Its stderr goes to `WHAT.err` in
/// the job's directory (a file, so that a talkative hook cannot fill a
/// pipe nobody reads); the first line goes into a failure. Signal
/// requests for the job (the doorbell) stay pending until the job runs.
fn run_hook(what: &str, program: &Path, launch: &Launch, dir: &JobDir, orders: Orders) -> HookEnd {
    let order = &launch.order;
    let job = hooks::HookJob {
        job_id: &order.job_id,
        user: &order.user,
        group: &order.group,
        nodes: launch.local_nodes(),
    };
    let err_path = dir.file(&format!("{what}.err"));
    let stderr = match std::fs::File::create(&err_path) {
        Ok(file) => file,
        Err(e) => return HookEnd::Failed(hooks::unstartable(what, program, &e)),
    };
    let mut cmd = hooks::command(program, &job);
    cmd.env("QMESH_NODEFILE", dir.file(NODE_FILE))
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .process_group(0);
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => return HookEnd::Failed(hooks::unstartable(what, program, &e)),
    };
    info!(program = %program.display(), "{what} started");
    let group = Pid::from_raw(child.id() as i32);
    let mut waits = SigSet::empty();
    for sig in [
        Signal::SIGCHLD,
        Signal::SIGALRM,
        Signal::SIGTERM,
        Signal::SIGINT,
    ] {
        waits.add(sig);
    }
    alarm::set(seconds(hooks::HOOK_TIMEOUT.as_secs()));
    let end = loop {
        match waits.wait() {
            Ok(Signal::SIGCHLD) => match child.try_wait() {
                Ok(Some(status)) => {
                    let said = std::fs::read(&err_path).unwrap_or_default();
                    break match hooks::failure(what, program, status, &said) {
                        None => HookEnd::Done,
                        Some(why) => HookEnd::Failed(why),
                    };
                }
                // An orphan of the hook, adopted by us as subreaper: the
                // job's cleanup reaps it.
                Ok(None) => {}
                Err(e) => {
                    break HookEnd::Failed(format!(
                        "the {what} {} could not be waited for: {e}",
                        program.display()
                    ));
                }
            },
            Ok(Signal::SIGALRM) => {
                signal_group(group, Signal::SIGKILL);
                let _ = child.wait();
                break HookEnd::Failed(hooks::overran(what, program));
            }
            Ok(sig) if orders == Orders::Kill => {
                info!(
                    ?sig,
                    "kill order during the {what}: it is killed, the job not started"
                );
                signal_group(group, Signal::SIGKILL);
                let _ = child.wait();
                break HookEnd::Killed;
            }
            Ok(sig) => debug!(?sig, "kill order after the job's end; the {what} goes on"),
            Err(e) => {
                warn!("sigwait failed ({e}); waiting for the {what} without its time limit");
                break match child.wait() {
                    Ok(status) => match hooks::failure(what, program, status, b"") {
                        None => HookEnd::Done,
                        Some(why) => HookEnd::Failed(why),
                    },
                    Err(e) => HookEnd::Failed(format!(
                        "the {what} {} could not be waited for: {e}",
                        program.display()
                    )),
                };
            }
        }
    };
    alarm::cancel();
    let _ = std::fs::remove_file(&err_path);
    end
}

/// The result of a job killed before it started (during its prologue).
fn killed_before_start(dir: &JobDir, launch: &Launch) -> JobFinished {
    let reason = std::fs::read_to_string(dir.file(KILL_REASON_FILE)).unwrap_or_default();
    let mut message = reason.trim().to_string();
    if !message.is_empty() {
        message.push_str("; ");
    }
    message.push_str("killed during the prologue, before the job started");
    finish(launch.order.job, FinishCause::Killed, message, now())
}

/// Tells the agent that spawned us; then lets go of the pipe, which may
/// already be closed (the agent may be gone).
fn announce(pid: i32, start: i64) {
    let mut out = std::io::stdout();
    let _ = writeln!(out, "started {pid} {start}").and_then(|()| out.flush());
    if let Ok(null) = std::fs::File::options().write(true).open("/dev/null") {
        let _ = nix::unistd::dup2_stdout(&null);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ended {
    Exited(i32),
    Signaled(i32),
    /// The status could not be collected.
    Lost,
}

struct Watch {
    dir: JobDir,
    job: Pid,
    grace: u64,
    kill: Option<FinishCause>,
    escalated: bool,
    /// The job's cgroup, looked at every [`contain::LOOK_EVERY`].
    cgroup: Option<JobCgroup>,
    /// -l cput, seconds: what all its processes may use together.
    cpu_limit: Option<u64>,
    /// `qsig -s suspend`: the suspension under way.
    suspended: Option<pause::Suspended>,
    /// The suspensions that ended: not wall time.
    suspended_for: Duration,
}

impl Watch {
    /// Waits for the job to end, acting on wall time, kill orders and the
    /// kernel's kills at its memory limit.
    fn run(&mut self, set: &SigSet, walltime: u64) -> Ended {
        if walltime > 0 {
            alarm::set(seconds(walltime));
        }
        let look_every = self.cgroup.as_ref().map(|_| contain::LOOK_EVERY);
        loop {
            let woken = wait_within(set, look_every);
            self.look_at_cgroup();
            match woken {
                Ok(None) => {}
                Ok(Some(Signal::SIGCHLD)) => {
                    if let Some(ended) = reap(self.job) {
                        alarm::cancel();
                        return ended;
                    }
                }
                Ok(Some(Signal::SIGALRM)) => match self.kill {
                    None => self.start_kill(FinishCause::Walltime),
                    Some(_) => self.escalate(),
                },
                Ok(Some(sig @ (Signal::SIGTERM | Signal::SIGINT))) => match self.kill {
                    None => self.start_kill(FinishCause::Killed),
                    Some(cause) => debug!(?sig, ?cause, "kill already under way"),
                },
                Ok(Some(signals::DOORBELL)) => self.forward(),
                Ok(Some(sig)) => debug!(?sig, "signal ignored"),
                Err(e) => {
                    error!("sigwait failed ({e}); waiting for the job without enforcing limits");
                    return wait_blocking(self.job);
                }
            }
        }
    }

    /// What the job's cgroup says. The kernel killed a process of the
    /// job at its memory limit: the rest of the job goes at once (v2 kills
    /// the whole cgroup itself). Its processes have used more CPU time
    /// than -l cput: it is killed as for its wall time.
    fn look_at_cgroup(&mut self) {
        let Some(cgroup) = &self.cgroup else {
            return;
        };
        if self.kill.is_some() {
            return;
        }
        let used = cgroup.usage();
        if used.oom_kills > 0 {
            warn!(
                "the kernel killed a process of the job at its memory limit: SIGKILL to the rest"
            );
            self.kill = Some(FinishCause::Memory);
            self.escalated = true;
            signal_group(self.job, Signal::SIGKILL);
            cgroup.kill_all();
            return;
        }
        if let (Some(limit), Some(micros)) = (self.cpu_limit, used.cpu_micros)
            && micros > limit.saturating_mul(1_000_000)
        {
            info!(
                limit,
                used_secs = micros / 1_000_000,
                "the job's CPU time is over -l cput"
            );
            self.start_kill(FinishCause::CpuTime);
        }
    }

    /// Carries out what the agent asked: signals for the job's process
    /// group, suspensions and resumptions.
    fn forward(&mut self) {
        for taken in signals::take(&self.dir) {
            match taken {
                Ok((Order::Signal(sig), request)) => {
                    info!(?sig, reason = %request.reason, "signal sent to the job's process group");
                    signal_group(self.job, sig);
                }
                Ok((Order::Suspend, request)) => self.suspend(&request.reason),
                Ok((Order::Resume, request)) => self.resume(&request.reason, true),
                Err(e) => warn!("{e}"),
            }
        }
    }

    fn suspend(&mut self, reason: &str) {
        if let Some(cause) = self.kill {
            info!(?cause, reason, "the job is being killed; not suspended");
        } else if self.suspended.is_some() {
            info!(reason, "the job is suspended already");
        } else {
            self.suspended = Some(pause::suspend(self.job, self.cgroup.as_ref(), reason));
        }
    }

    /// Ends a suspension; `rearm`: the wall-time alarm goes on.
    fn resume(&mut self, reason: &str, rearm: bool) {
        match self.suspended.take() {
            Some(s) => {
                let cgroup = self.cgroup.as_ref();
                self.suspended_for += pause::resume(self.job, cgroup, s, rearm, reason);
            }
            None => info!(reason, "the job is not suspended; nothing to resume"),
        }
    }

    fn start_kill(&mut self, cause: FinishCause) {
        self.kill = Some(cause);
        info!(
            ?cause,
            grace = self.grace,
            "killing the job: SIGTERM to its process group"
        );
        signal_group(self.job, Signal::SIGTERM);
        // A stopped or frozen job acts on SIGTERM only once continued.
        if self.suspended.is_some() {
            self.resume("to be killed", false);
        }
        signal_group(self.job, Signal::SIGCONT);
        if self.grace == 0 {
            self.escalate();
        } else {
            alarm::set(seconds(self.grace));
        }
    }

    fn escalate(&mut self) {
        if !self.escalated {
            info!("grace period over: SIGKILL to the job's process group");
            signal_group(self.job, Signal::SIGKILL);
            self.escalated = true;
        }
    }
}

/// The next of `set`'s signals, or `None` once `within` has passed
/// without one (`None` for `within`: no time limit).
fn wait_within(set: &SigSet, within: Option<Duration>) -> Result<Option<Signal>, Errno> {
    let Some(within) = within else {
        return set.wait().map(Some);
    };
    let timeout = nix::libc::timespec {
        tv_sec: within.as_secs() as nix::libc::time_t,
        tv_nsec: within.subsec_nanos() as nix::libc::c_long,
    };
    // SAFETY: both pointers are to live values; the info pointer may be null.
    let taken = unsafe { nix::libc::sigtimedwait(set.as_ref(), std::ptr::null_mut(), &timeout) };
    if taken >= 0 {
        return Signal::try_from(taken).map(Some);
    }
    match Errno::last() {
        Errno::EAGAIN | Errno::EINTR => Ok(None),
        e => Err(e),
    }
}

fn seconds(secs: u64) -> u32 {
    u32::try_from(secs).unwrap_or(u32::MAX)
}

fn signal_group(pgrp: Pid, sig: Signal) {
    match nix::sys::signal::killpg(pgrp, sig) {
        Ok(()) | Err(Errno::ESRCH) => {}
        Err(e) => warn!(
            ?sig,
            pgrp = pgrp.as_raw(),
            "cannot signal the job's process group ({e})"
        ),
    }
}

/// Reaps every child that has ended; the job's end if it was among them.
fn reap(job: Pid) -> Option<Ended> {
    let mut ended = None;
    loop {
        match nix::sys::wait::waitpid(None::<Pid>, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, code)) if pid == job => ended = Some(Ended::Exited(code)),
            Ok(WaitStatus::Signaled(pid, sig, _)) if pid == job => {
                ended = Some(Ended::Signaled(sig as i32));
            }
            Ok(WaitStatus::StillAlive) => return ended,
            Ok(_) => {} // an orphan of the job, adopted by us as subreaper
            Err(Errno::EINTR) => {}
            Err(Errno::ECHILD) => return ended.or(Some(Ended::Lost)),
            Err(e) => {
                warn!("waitpid failed ({e})");
                return ended;
            }
        }
    }
}

fn wait_blocking(job: Pid) -> Ended {
    loop {
        match nix::sys::wait::waitpid(job, None) {
            Ok(WaitStatus::Exited(_, code)) => return Ended::Exited(code),
            Ok(WaitStatus::Signaled(_, sig, _)) => return Ended::Signaled(sig as i32),
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => return Ended::Lost,
        }
    }
}

/// Kills what the job left behind: its process group, any process that
/// left the group but was orphaned to us, and all in its cgroup. Reaps
/// them all, for a while.
fn cleanup(job: Pid, set: &SigSet, cgroup: Option<&JobCgroup>) {
    signal_group(job, Signal::SIGKILL);
    if let Some(cgroup) = cgroup {
        let killed = cgroup.kill_all();
        if killed > 0 {
            info!(killed, "killed what was left in the job's cgroup");
        }
    }
    let me = std::process::id() as i32;
    let deadline = Instant::now() + CLEANUP_LIMIT;
    loop {
        loop {
            match nix::sys::wait::waitpid(None::<Pid>, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) => break,
                Ok(_) | Err(Errno::EINTR) => {}
                Err(_) => {
                    // ECHILD: nothing left.
                    alarm::cancel();
                    return;
                }
            }
        }
        let left = crate::procfs::children_of(me);
        for pid in &left {
            let _ = nix::sys::signal::kill(Pid::from_raw(*pid), Signal::SIGKILL);
        }
        if Instant::now() >= deadline {
            warn!(
                ?left,
                "processes of the job did not die within {CLEANUP_LIMIT:?}; leaving them"
            );
            alarm::cancel();
            return;
        }
        // Wake on the next child's end, or in a second to look again.
        alarm::set(1);
        let _ = set.wait();
    }
}

fn result(dir: &JobDir, launch: &Launch, watch: &Watch, ended: Ended, start: i64) -> JobFinished {
    let (exit_code, signal) = match ended {
        Ended::Exited(code) => (Some(code), None),
        Ended::Signaled(sig) => (None, Some(sig)),
        Ended::Lost => (None, None),
    };
    let mut words = Vec::new();
    if watch.kill == Some(FinishCause::Killed) {
        let reason = std::fs::read_to_string(dir.file(KILL_REASON_FILE)).unwrap_or_default();
        if !reason.trim().is_empty() {
            words.push(reason.trim().to_string());
        }
    }
    if watch.escalated && watch.grace > 0 && watch.kill != Some(FinishCause::Memory) {
        words.push(format!(
            "still running {} s after SIGTERM, killed with SIGKILL",
            watch.grace
        ));
    }
    if ended == Ended::Lost {
        words.push("the job's exit status could not be collected".to_string());
    }
    let cause = watch.kill.unwrap_or(FinishCause::Exited);
    JobFinished {
        exit_code,
        signal,
        start_time: start,
        ..finish(launch.order.job, cause, words.join("; "), now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn started_line_round_trips() {
        assert_eq!(
            parse_started("started 4242 1700000000"),
            Some((4242, 1700000000))
        );
        assert_eq!(parse_started("started 4242"), None);
        assert_eq!(parse_started("hello 1 2"), None);
    }

    #[test]
    fn huge_durations_are_clamped_for_alarm() {
        assert_eq!(seconds(5), 5);
        assert_eq!(seconds(u64::MAX), u32::MAX);
    }
}
