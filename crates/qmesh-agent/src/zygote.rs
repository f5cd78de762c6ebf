//! The zygote (`qmesh-agent zygote SPOOL PAD`): a small single-threaded
//! process the agent starts once, which forks a shepherd for each job.
//!
//! Why: a shepherd exec'd from the agent costs more CPU than the job it
//! watches when jobs are short. Forking the multi-threaded agent copies its
//! page tables; exec'ing this binary again makes the dynamic loader
//! relocate it; tearing the image down at exit unmaps it all (perf of a
//! churn of one-second jobs put these above half the CPU of the host). The
//! zygote was exec'd once: its children are shepherds with nothing to load
//! and little to copy.
//!
//! The protocol, over a `SOCK_SEQPACKET` socket that is the zygote's
//! stdin: the agent sends a job directory with two descriptors (the write
//! end of the pipe the shepherd announces its start on, and its log); the
//! zygote forks, and answers `ok PID` with a pidfd of the child (opened
//! before the child can be reaped, so it is that child's), or `err WHY`.
//! The agent waits on the pidfd for the exit, as it cannot `wait` for a
//! child that is not its own. The zygote reaps its children once a second
//! and ends when the agent's end of the socket closes; its shepherds run
//! on, like those the agent exec'd.
//!
//! A restarted agent recognises shepherds by their command line
//! (`procfs::is_shepherd`), so a forked shepherd writes its own over the
//! zygote's: `qmesh-agent shepherd JOBDIR`, as `ps` shows it. The `PAD`
//! argument makes the zygote's command line long enough for any job
//! directory of its spool.
//!
//! When the zygote cannot serve (it died, or could not start), the agent
//! starts it again at most every ten seconds and meanwhile execs
//! shepherds as before (`supervise::spawn_shepherd`).

use std::ffi::OsStr;
use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::SigmaskHow;
use nix::sys::socket::{
    AddressFamily, ControlMessage, ControlMessageOwned, MsgFlags, SockFlag, SockType, recvmsg,
    sendmsg, setsockopt, socketpair, sockopt,
};
use nix::sys::time::TimeVal;
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid, fork};
use tracing::{info, warn};

use crate::procfs::{SHEPHERD_ARG0, SHEPHERD_COMMAND};
use crate::shepherd;

/// The hidden subcommand that runs the zygote.
pub const ZYGOTE_COMMAND: &str = "zygote";

/// How often the zygote reaps its children while idle.
const REAP_EVERY: Duration = Duration::from_secs(1);

/// How long the agent waits for the zygote's answer.
const ANSWER_WITHIN: Duration = Duration::from_secs(10);

/// How soon a zygote that failed is started again.
const RESTART_AFTER: Duration = Duration::from_secs(10);

/// How often the zygote looks its name services up again (see
/// [`warm_name_services`]); glibc tries an absent nscd again after 100 s.
const WARM_EVERY: Duration = Duration::from_secs(60);

/// The largest request: a job directory's path.
const MAX_REQUEST: usize = 4096;

// ---------------------------------------------------------------- zygote

/// The zygote's main: serves the agent on stdin until it goes away.
pub fn run(spool: &Path) -> ExitCode {
    let title = match TitleArea::of_self() {
        Some(area) => area,
        None => {
            eprintln!("qmesh-agent zygote: cannot find its command line in /proc/self/stat");
            return ExitCode::FAILURE;
        }
    };
    // SAFETY: fd 0 is the socket the agent gave us as stdin; we own it
    // from here on.
    let sock = unsafe { OwnedFd::from_raw_fd(0) };
    let mut warmed = Instant::now();
    warm_name_services();
    shepherd::init_logging();
    loop {
        reap();
        if warmed.elapsed() >= WARM_EVERY {
            warm_name_services();
            warmed = Instant::now();
        }
        let mut fds = [PollFd::new(sock.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::from(REAP_EVERY.as_millis() as u16)) {
            Ok(0) | Err(Errno::EINTR) => continue,
            Ok(_) => {}
            Err(e) => {
                eprintln!("qmesh-agent zygote: poll: {e}");
                return ExitCode::FAILURE;
            }
        }
        match serve_one(&sock, spool, &title) {
            Ok(true) => {}
            Ok(false) => {
                reap();
                return ExitCode::SUCCESS;
            }
            Err(e) => {
                eprintln!("qmesh-agent zygote: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
}

/// Looks up a user and its groups, so that the name service modules
/// (`/etc/nsswitch.conf`'s `systemd`, `sss`, ...) are loaded here, once,
/// and glibc has found whether nscd answers: each shepherd forked after
/// inherits both. Without it, every shepherd loaded and relocated the
/// modules again to set its job's groups, and tried nscd's socket four
/// times (a sixth of a shepherd's CPU with `true` jobs).
fn warm_name_services() {
    use nix::unistd::{Gid, Group, Uid, User, getgrouplist};
    if let Ok(Some(user)) = User::from_uid(Uid::from_raw(0))
        && let Ok(name) = std::ffi::CString::new(user.name)
    {
        let _ = getgrouplist(&name, user.gid);
    }
    let _ = Group::from_gid(Gid::from_raw(0));
}

/// Reaps every child that has ended.
fn reap() {
    while let Ok(status) = waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
        if status == WaitStatus::StillAlive {
            return;
        }
    }
}

/// Takes one request and answers it; `Ok(false)` when the agent is gone.
fn serve_one(sock: &OwnedFd, spool: &Path, title: &TitleArea) -> Result<bool, Errno> {
    let mut buf = vec![0u8; MAX_REQUEST];
    let mut space = nix::cmsg_space!([RawFd; 2]);
    let (len, fds) = {
        let mut iov = [IoSliceMut::new(&mut buf)];
        let msg = match recvmsg::<()>(
            sock.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        ) {
            Ok(msg) => msg,
            Err(Errno::EINTR | Errno::EAGAIN) => return Ok(true),
            Err(e) => return Err(e),
        };
        let mut fds: Vec<OwnedFd> = Vec::new();
        for cmsg in msg.cmsgs()? {
            if let ControlMessageOwned::ScmRights(raw) = cmsg {
                // SAFETY: the kernel just gave us these descriptors.
                fds.extend(
                    raw.into_iter()
                        .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }),
                );
            }
        }
        (msg.bytes, fds)
    };
    if len == 0 && fds.is_empty() {
        return Ok(false);
    }
    let answer = match spawn(&buf[..len], fds, spool, title) {
        Ok((pid, pidfd)) => Answer::Spawned(pid, pidfd),
        Err(why) => Answer::Refused(why),
    };
    answer.send(sock)?;
    Ok(true)
}

/// Forks a shepherd for the job directory `path`, with `fds` (its start
/// pipe, its log) as stdout and stderr.
fn spawn(
    path: &[u8],
    fds: Vec<OwnedFd>,
    spool: &Path,
    title: &TitleArea,
) -> Result<(i32, Option<OwnedFd>), String> {
    let dir = Path::new(OsStr::from_bytes(path));
    if !dir.starts_with(spool) {
        return Err(format!("{} is not under the spool", dir.display()));
    }
    let [out, log]: [OwnedFd; 2] = fds
        .try_into()
        .map_err(|_| "a request needs two descriptors: the start pipe and the log".to_string())?;
    let cmdline = shepherd_cmdline(dir);
    if cmdline.len() >= title.len {
        return Err(format!(
            "the command line for {} does not fit in the zygote's",
            dir.display()
        ));
    }
    // SAFETY: this process is single-threaded (the zygote starts no
    // thread), so the child may run any code.
    match unsafe { fork() } {
        Ok(ForkResult::Child) => become_shepherd(dir, out, log, title, &cmdline),
        Ok(ForkResult::Parent { child }) => {
            // The child is not reaped before `reap`, so the pidfd is its.
            let pidfd = pidfd_open(child.as_raw()).ok();
            Ok((child.as_raw(), pidfd))
        }
        Err(e) => Err(format!("fork: {e}")),
    }
}

/// The child side: its descriptors, its session, its command line; then
/// the shepherd. Never returns.
fn become_shepherd(dir: &Path, out: OwnedFd, log: OwnedFd, title: &TitleArea, cmdline: &[u8]) -> ! {
    let ok = (|| -> nix::Result<()> {
        let null = nix::fcntl::open(
            "/dev/null",
            nix::fcntl::OFlag::O_RDWR,
            nix::sys::stat::Mode::empty(),
        )?;
        nix::unistd::dup2_stdin(&null)?;
        nix::unistd::dup2_stdout(&out)?;
        nix::unistd::dup2_stderr(&log)?;
        nix::unistd::setsid()?;
        nix::unistd::chdir("/")?;
        // Blocked already (the zygote keeps them blocked), so that a kill
        // sent at once waits for the shepherd's sigwait.
        nix::sys::signal::sigprocmask(SigmaskHow::SIG_SETMASK, Some(&shepherd::signals()), None)
    })();
    drop((out, log));
    if let Err(e) = ok {
        eprintln!("qmesh-agent shepherd: cannot set up after fork: {e}");
        std::process::exit(1);
    }
    title.write(cmdline);
    std::process::exit(i32::from(shepherd::run_code(dir)));
}

/// `qmesh-agent\0shepherd\0DIR\0`: what a shepherd exec'd by the agent
/// has as its command line, and so what `procfs::is_shepherd` looks for.
pub fn shepherd_cmdline(dir: &Path) -> Vec<u8> {
    cmdline(&[
        OsStr::new(SHEPHERD_ARG0),
        OsStr::new(SHEPHERD_COMMAND),
        dir.as_os_str(),
    ])
}

/// Arguments as /proc shows them: each followed by a NUL.
fn cmdline(args: &[&OsStr]) -> Vec<u8> {
    let mut line = Vec::new();
    for arg in args {
        line.extend_from_slice(arg.as_bytes());
        line.push(0);
    }
    line
}

/// The zygote's command line, `qmesh-agent zygote SPOOL PAD`.
fn zygote_cmdline(spool: &Path, pad: &str) -> Vec<u8> {
    cmdline(&[
        OsStr::new(SHEPHERD_ARG0),
        OsStr::new(ZYGOTE_COMMAND),
        spool.as_os_str(),
        OsStr::new(pad),
    ])
}

/// What `PAD` must be for the command line of every job directory of
/// `spool` (`SPOOL/jobs/SEQ`, SEQ a u64) to fit in the zygote's with a
/// byte to spare: the last byte of the area stays a NUL.
pub fn padding_for(spool: &Path) -> String {
    let longest = shepherd_cmdline(&spool.join("jobs").join(u64::MAX.to_string())).len();
    let without = zygote_cmdline(spool, "").len();
    "x".repeat((longest + 1).saturating_sub(without))
}

/// The memory of this process's command line (`/proc/self/cmdline`).
struct TitleArea {
    start: usize,
    len: usize,
}

impl TitleArea {
    /// From the `arg_start` and `arg_end` fields (48 and 49) of
    /// `/proc/self/stat`.
    fn of_self() -> Option<TitleArea> {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        let (start, end) = parse_arg_area(&stat)?;
        (end > start).then_some(TitleArea {
            start,
            len: end - start,
        })
    }

    /// Puts `line` (shorter than the area) in place of the command line,
    /// the rest zeroed, as PostgreSQL does to title its processes.
    fn write(&self, line: &[u8]) {
        if line.len() >= self.len {
            return;
        }
        // SAFETY: [start, start + len) is this process's argument area,
        // mapped and writable; nothing in this process reads it while it
        // is written (the shepherd never looks at its arguments).
        unsafe {
            let area = std::slice::from_raw_parts_mut(self.start as *mut u8, self.len);
            area.fill(0);
            area[..line.len()].copy_from_slice(line);
        }
    }
}

/// `arg_start` and `arg_end` from the text of `/proc/PID/stat`.
fn parse_arg_area(stat: &str) -> Option<(usize, usize)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // Fields are counted from 1, and `rest` starts at field 3.
    let mut fields = rest.split_ascii_whitespace().skip(48 - 3);
    let start = fields.next()?.parse().ok()?;
    let end = fields.next()?.parse().ok()?;
    Some((start, end))
}

fn pidfd_open(pid: i32) -> nix::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new
    // descriptor or -1.
    let fd = unsafe { nix::libc::syscall(nix::libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(Errno::last());
    }
    // SAFETY: a descriptor the kernel just made for us.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

enum Answer {
    Spawned(i32, Option<OwnedFd>),
    Refused(String),
}

impl Answer {
    fn send(self, sock: &OwnedFd) -> Result<(), Errno> {
        let (text, pidfd) = match self {
            Answer::Spawned(pid, pidfd) => (format!("ok {pid}"), pidfd),
            Answer::Refused(why) => (format!("err {why}"), None),
        };
        let iov = [IoSlice::new(text.as_bytes())];
        let raw: Vec<RawFd> = pidfd.iter().map(|fd| fd.as_raw_fd()).collect();
        let rights = [ControlMessage::ScmRights(&raw)];
        let cmsgs: &[ControlMessage] = if raw.is_empty() { &[] } else { &rights };
        sendmsg::<()>(sock.as_raw_fd(), &iov, cmsgs, MsgFlags::empty(), None).map(|_| ())
    }
}

// ----------------------------------------------------------------- agent

/// A shepherd the zygote forked.
pub struct Forked {
    pub pid: i32,
    /// Readable once the shepherd has ended; `None` if the kernel could
    /// not make one (the agent then watches /proc).
    pub pidfd: Option<OwnedFd>,
}

/// The agent's handle on its zygote: requests go to one thread that owns
/// the socket, one at a time.
pub struct Zygote {
    tx: mpsc::Sender<Request>,
}

struct Request {
    dir: PathBuf,
    out: OwnedFd,
    log: OwnedFd,
    answer: tokio::sync::oneshot::Sender<Result<Forked, String>>,
}

impl Zygote {
    /// Starts the zygote for `spool` (the binary at `program`) and the
    /// thread that talks to it.
    pub fn start(program: PathBuf, spool: PathBuf) -> Zygote {
        let (tx, rx) = mpsc::channel::<Request>();
        let spawned = std::thread::Builder::new()
            .name("zygote".into())
            .spawn(move || serve_requests(&program, &spool, rx));
        if let Err(e) = spawned {
            warn!("cannot start the zygote's thread ({e}); shepherds will be exec'd");
        }
        Zygote { tx }
    }

    /// Asks for a shepherd for `dir`, writing its start line to `out` and
    /// its log to `log`.
    pub async fn fork(&self, dir: &Path, out: OwnedFd, log: OwnedFd) -> Result<Forked, String> {
        let (answer, answered) = tokio::sync::oneshot::channel();
        let request = Request {
            dir: dir.to_path_buf(),
            out,
            log,
            answer,
        };
        self.tx
            .send(request)
            .map_err(|_| "the zygote's thread has stopped".to_string())?;
        answered
            .await
            .map_err(|_| "the zygote's thread has stopped".to_string())?
    }
}

/// The zygote's thread: starts the zygote, passes it the requests, and
/// starts it again (not more often than `RESTART_AFTER`) when it fails.
fn serve_requests(program: &Path, spool: &Path, rx: mpsc::Receiver<Request>) {
    let mut conn: Option<Conn> = None;
    let mut last_start: Option<Instant> = None;
    let start = |conn: &mut Option<Conn>, last_start: &mut Option<Instant>| {
        if conn.is_none() && last_start.is_none_or(|at| at.elapsed() >= RESTART_AFTER) {
            *last_start = Some(Instant::now());
            match Conn::start(program, spool) {
                Ok(started) => {
                    info!(pid = started.child.id(), "zygote started");
                    *conn = Some(started);
                }
                Err(e) => warn!("cannot start the zygote ({e}); shepherds will be exec'd"),
            }
        }
    };
    start(&mut conn, &mut last_start);
    for request in rx {
        start(&mut conn, &mut last_start);
        let answer = match conn.as_mut().map(|c| c.fork(&request)) {
            Some(Ok(forked)) => Ok(forked),
            Some(Err(e)) => {
                warn!(
                    "the zygote failed ({e}); shepherds will be exec'd until it is started again"
                );
                if let Some(mut failed) = conn.take() {
                    let _ = failed.child.kill();
                    let _ = failed.child.wait();
                }
                Err(e)
            }
            None => Err("no zygote".to_string()),
        };
        let _ = request.answer.send(answer);
    }
    // The agent is stopping: closing the socket ends the zygote.
    if let Some(mut c) = conn {
        drop(c.sock);
        let _ = c.child.wait();
    }
}

/// A running zygote: its socket and its process.
struct Conn {
    sock: OwnedFd,
    child: Child,
}

impl Conn {
    fn start(program: &Path, spool: &Path) -> std::io::Result<Conn> {
        let (ours, theirs) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )?;
        let timeout = TimeVal::new(ANSWER_WITHIN.as_secs() as _, 0);
        setsockopt(&ours, sockopt::ReceiveTimeout, &timeout)?;
        setsockopt(&ours, sockopt::SendTimeout, &timeout)?;
        let mut cmd = Command::new(program);
        cmd.arg0(SHEPHERD_ARG0)
            .arg(ZYGOTE_COMMAND)
            .arg(spool)
            .arg(padding_for(spool))
            .current_dir("/")
            .stdin(Stdio::from(theirs));
        // Its shepherds are born with the signals blocked (see
        // `become_shepherd`); the zygote itself ends with the agent's
        // socket, not on a signal.
        // SAFETY: setsid and sigprocmask are async-signal-safe system calls.
        unsafe {
            cmd.pre_exec(shepherd::own_session_signals_blocked());
        }
        let child = cmd.spawn()?;
        Ok(Conn { sock: ours, child })
    }

    fn fork(&mut self, request: &Request) -> Result<Forked, String> {
        let path = request.dir.as_os_str().as_bytes();
        let raw = [request.out.as_raw_fd(), request.log.as_raw_fd()];
        let rights = [ControlMessage::ScmRights(&raw)];
        let iov = [IoSlice::new(path)];
        sendmsg::<()>(
            self.sock.as_raw_fd(),
            &iov,
            &rights,
            MsgFlags::empty(),
            None,
        )
        .map_err(|e| format!("send to the zygote: {e}"))?;
        let mut buf = [0u8; 1024];
        let mut space = nix::cmsg_space!([RawFd; 1]);
        let mut iov = [IoSliceMut::new(&mut buf)];
        let msg = recvmsg::<()>(
            self.sock.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        )
        .map_err(|e| format!("answer from the zygote: {e}"))?;
        let mut pidfd = None;
        for cmsg in msg
            .cmsgs()
            .map_err(|e| format!("answer from the zygote: {e}"))?
        {
            if let ControlMessageOwned::ScmRights(fds) = cmsg {
                for fd in fds {
                    // SAFETY: the kernel just gave us this descriptor.
                    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
                    pidfd.get_or_insert(fd);
                }
            }
        }
        let len = msg.bytes;
        if len == 0 {
            return Err("the zygote has ended".into());
        }
        parse_answer(&buf[..len], pidfd)
    }
}

/// `ok PID` (with the pidfd, if one came) or `err WHY`.
fn parse_answer(text: &[u8], pidfd: Option<OwnedFd>) -> Result<Forked, String> {
    let text = String::from_utf8_lossy(text);
    match text.split_once(' ') {
        Some(("ok", pid)) => pid
            .parse()
            .map(|pid| Forked { pid, pidfd })
            .map_err(|_| format!("the zygote answered \"{text}\"")),
        Some(("err", why)) => Err(format!("the zygote could not fork: {why}")),
        _ => Err(format!("the zygote answered \"{text}\"")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_arg_area_is_fields_48_and_49_of_stat() {
        let mut fields: Vec<String> = (3..=52).map(|n| n.to_string()).collect();
        fields[48 - 3] = "140736".into();
        fields[49 - 3] = "140800".into();
        let stat = format!("4242 (qmesh agent) {}", fields.join(" "));
        assert_eq!(parse_arg_area(&stat), Some((140736, 140800)));
        assert_eq!(parse_arg_area("4242 (x) S 1"), None);
        let me = TitleArea::of_self().expect("this process has a command line");
        let cmdline = std::fs::read("/proc/self/cmdline").unwrap();
        assert_eq!(me.len, cmdline.len());
    }

    #[test]
    fn the_padding_leaves_room_for_any_job_directory() {
        for spool in [
            "/var/spool/qmesh",
            "/s",
            "/a/very/long/spool/path/for/a/site",
        ] {
            let spool = Path::new(spool);
            let area = zygote_cmdline(spool, &padding_for(spool)).len();
            let longest = shepherd_cmdline(&spool.join("jobs").join(u64::MAX.to_string()));
            assert_eq!(longest.len() + 1, area, "{}", spool.display());
        }
    }

    #[test]
    fn a_shepherd_cmdline_is_what_procfs_recognises() {
        let dir = Path::new("/var/spool/qmesh/jobs/17");
        let mut line = shepherd_cmdline(dir);
        line.extend_from_slice(&[0, 0, 0]);
        assert!(crate::procfs::is_shepherd_cmdline(&line, dir));
    }

    #[test]
    fn answers_are_parsed() {
        assert_eq!(parse_answer(b"ok 42", None).map(|f| f.pid), Ok(42));
        let err = parse_answer(b"err fork: EAGAIN", None).err().unwrap();
        assert!(err.contains("EAGAIN"), "{err}");
        assert!(parse_answer(b"what", None).is_err());
    }
}
