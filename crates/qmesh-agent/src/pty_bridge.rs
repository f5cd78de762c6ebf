//! The terminal of an interactive job (`qsub -I`): `qmesh-agent pty-bridge
//! NAME --agent-uid UID`, exec'd as the job's script, as the job's user.
//!
//! Why a process of its own: the job's shell needs a terminal that outlives
//! any one connection (an agent restart, a client on a slow network), and
//! that belongs to the job like any other job process, under the shepherd's
//! wall clock and qdel. So the bridge holds the pty and the shell, and the
//! agent only relays bytes between the user's `qsub -I` and the bridge's
//! abstract Unix socket NAME, in the framing of [`frame`]. The socket serves
//! root and the agent's uid only, as the kernel's SO_PEERCRED tells them.
//!
//! The shell runs in a session of its own with the pty as its controlling
//! terminal, so the shepherd's signals for the job's process group reach
//! the bridge only; the bridge hangs the shell up (SIGHUP, SIGTERM, SIGCONT)
//! and reports its exit status as its own. Should the bridge be killed, the
//! kernel kills the shell (its parent-death signal) and hangs the terminal
//! up for the rest of the session.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, FdFlag, OFlag};
use nix::poll::{PollFd, PollFlags, PollTimeout};
use nix::pty::{OpenptyResult, Winsize};
use nix::sys::signal::{SigHandler, SigSet, SigmaskHow, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::socket::sockopt::PeerCredentials;
use nix::sys::socket::{AddressFamily, Backlog, MsgFlags, SockFlag, SockType, UnixAddr};
use nix::sys::wait::{WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

pub mod frame;

/// The window before the client says its own, as a terminal's default.
const INITIAL_ROWS: u16 = 24;
const INITIAL_COLS: u16 = 80;
/// The output kept while nobody is attached; older bytes are dropped.
const DETACHED_OUTPUT: usize = 64 * 1024;
/// Framed output the connection has not taken yet, beyond which the
/// terminal is not read, so a slow client slows the shell, as a terminal does.
const OUTPUT_AHEAD: usize = 256 * 1024;
/// Input the terminal has not taken yet, beyond which the socket is not read.
const INPUT_AHEAD: usize = 64 * 1024;
/// One read, from the terminal or the socket.
const CHUNK: usize = 16 * 1024;
/// The most output read from the terminal after the shell has exited
/// (a background process may still be writing).
const FINAL_DRAIN: usize = 1024 * 1024;
/// How long the last output and the EXIT frame may take to leave.
const FINAL_FLUSH: Duration = Duration::from_secs(5);
/// How often (ms) the shell is waited for when the kernel has no pidfd_open.
const WAIT_INTERVAL_MS: u8 = 200;

mod ioctl {
    nix::ioctl_write_int_bad!(set_controlling_terminal, nix::libc::TIOCSCTTY);
    nix::ioctl_write_ptr_bad!(set_window_size, nix::libc::TIOCSWINSZ, nix::libc::winsize);
}

/// What can fail before the shell runs; the bridge then exits with 1.
#[derive(Debug, thiserror::Error)]
enum StartError {
    #[error("the socket name {name:?} is unusable ({reason}); the agent must give 1 to 107 bytes")]
    BadName { name: String, reason: &'static str },

    #[error(
        "the abstract socket {name:?} is already bound by another process; \
         each interactive job needs a name of its own"
    )]
    NameTaken { name: String },

    #[error("cannot listen on the abstract socket {name:?}: {source}")]
    Listen { name: String, source: Errno },

    #[error("cannot block SIGTERM and SIGHUP to receive them through a signalfd: {0}")]
    Signals(Errno),

    #[error(
        "cannot open a pseudo-terminal: {0}; check that /dev/pts is mounted and \
         that ptys are left (sysctl kernel.pty.max)"
    )]
    Pty(Errno),

    #[error(
        "cannot start the login shell {}: {source}; set SHELL in the job's environment \
         to a shell that exists on this host",
        shell.display()
    )]
    Shell { shell: PathBuf, source: io::Error },
}

/// The `pty-bridge` subcommand. Its exit code is the shell's status (its
/// code, or 128 + the signal that killed it), or 1 if the shell could not
/// be started.
pub fn run(name: &str, agent_uid: u32) -> ExitCode {
    match start(name) {
        Ok(started) => {
            let status = serve(
                started.master,
                started.shell,
                started.listener,
                agent_uid,
                Some(started.stop),
            );
            ExitCode::from((status & 0xff) as u8)
        }
        Err(e) => {
            eprintln!("qmesh-agent pty-bridge: {e}");
            ExitCode::from(1)
        }
    }
}

struct Started {
    master: OwnedFd,
    shell: Pid,
    listener: OwnedFd,
    stop: OwnedFd,
}

/// The socket first, so that a taken name fails before any shell runs;
/// the signals blocked before the fork, so that none is lost.
fn start(name: &str) -> Result<Started, StartError> {
    let listener = listen_abstract(name)?;
    let stop = stop_signals().map_err(StartError::Signals)?;
    let pty = open_terminal().map_err(StartError::Pty)?;
    let shell_path = login_shell();
    let shell = spawn_shell(&shell_path, pty.slave).map_err(|source| StartError::Shell {
        shell: shell_path,
        source,
    })?;
    Ok(Started {
        master: pty.master,
        shell,
        listener,
        stop,
    })
}

/// A listening, non-blocking socket in Linux's abstract namespace: no file
/// to create or remove, gone with the process.
fn listen_abstract(name: &str) -> Result<OwnedFd, StartError> {
    let bad_name = |reason| StartError::BadName {
        name: name.to_owned(),
        reason,
    };
    if name.is_empty() {
        return Err(bad_name("empty"));
    }
    let addr = UnixAddr::new_abstract(name.as_bytes()).map_err(|_| bad_name("too long"))?;
    let listen_error = |source| StartError::Listen {
        name: name.to_owned(),
        source,
    };
    let fd = nix::sys::socket::socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK,
        None,
    )
    .map_err(listen_error)?;
    nix::sys::socket::bind(fd.as_raw_fd(), &addr).map_err(|e| match e {
        Errno::EADDRINUSE => StartError::NameTaken {
            name: name.to_owned(),
        },
        e => listen_error(e),
    })?;
    nix::sys::socket::listen(&fd, Backlog::new(8).map_err(listen_error)?).map_err(listen_error)?;
    Ok(fd)
}

/// SIGTERM and SIGHUP (qdel, the wall clock), blocked and readable as a
/// signalfd. The shell's child side unblocks them before exec.
fn stop_signals() -> nix::Result<OwnedFd> {
    let mut mask = SigSet::empty();
    mask.add(Signal::SIGTERM);
    mask.add(Signal::SIGHUP);
    nix::sys::signal::sigprocmask(SigmaskHow::SIG_BLOCK, Some(&mask), None)?;
    let fd = SignalFd::with_flags(&mask, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)?;
    Ok(OwnedFd::from(fd))
}

/// A pty with the initial window; both ends close on exec, the master is
/// non-blocking.
fn open_terminal() -> nix::Result<OpenptyResult> {
    let window = Winsize {
        ws_row: INITIAL_ROWS,
        ws_col: INITIAL_COLS,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pty = nix::pty::openpty(&window, None::<&nix::sys::termios::Termios>)?;
    for fd in [&pty.master, &pty.slave] {
        nix::fcntl::fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
    }
    nix::fcntl::fcntl(&pty.master, FcntlArg::F_SETFL(OFlag::O_NONBLOCK))?;
    Ok(pty)
}

/// $SHELL, as PBS gives an interactive job, else /bin/sh.
fn login_shell() -> PathBuf {
    std::env::var_os("SHELL")
        .filter(|s| !s.is_empty())
        .map_or_else(|| PathBuf::from("/bin/sh"), PathBuf::from)
}

/// "-bash" for /bin/bash: the leading dash makes a login shell.
fn login_name(shell: &Path) -> OsString {
    let mut name = OsString::from("-");
    name.push(shell.file_name().unwrap_or(shell.as_os_str()));
    name
}

/// Starts `shell` as a login shell on the pty's `slave` (its stdin, stdout
/// and stderr), in a session of its own whose controlling terminal is the
/// pty, with this process's environment and working directory. The shell's
/// pid is also its process group and session.
fn spawn_shell(shell: &Path, slave: OwnedFd) -> io::Result<Pid> {
    let mut cmd = Command::new(shell);
    cmd.arg0(login_name(shell))
        .stdin(Stdio::from(slave.try_clone()?))
        .stdout(Stdio::from(slave.try_clone()?))
        .stderr(Stdio::from(slave));
    let bridge = nix::unistd::getpid();
    // SAFETY: the closure makes only async-signal-safe system calls and
    // allocates nothing; std prepares the program, its arguments and
    // environment before the fork.
    unsafe {
        cmd.pre_exec(move || become_terminal_session(bridge));
    }
    let child = cmd.spawn()?;
    // `cmd`, dropped here, holds the parent's copies of the slave: only the
    // shell's remain, so the master sees the terminal close when it ends.
    Ok(Pid::from_raw(child.id() as i32))
}

/// Runs in the shell's process between fork and exec, with the slave
/// already on 0, 1 and 2: system calls only.
///
/// The shell leaves the job's process group, which the shepherd's SIGKILL
/// reaches; so it is SIGKILLed when the bridge dies (`bridge`: the pid it
/// checks it still has as parent once that is set).
fn become_terminal_session(bridge: Pid) -> io::Result<()> {
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
    if nix::unistd::getppid() != bridge {
        return Err(Errno::ESRCH.into());
    }
    // The bridge blocks SIGTERM and SIGHUP, and Rust ignores SIGPIPE: the
    // shell must start with neither. Nor with an "ignore" inherited from
    // whatever started the agent (nohup ignores SIGHUP): a shell that
    // ignores SIGHUP would outlive qdel and the wall clock.
    nix::sys::signal::sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None)?;
    for signal in [
        Signal::SIGPIPE,
        Signal::SIGHUP,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGQUIT,
        Signal::SIGCHLD,
    ] {
        // SAFETY: SIG_DFL installs no handler.
        unsafe { nix::sys::signal::signal(signal, SigHandler::SigDfl) }?;
    }
    nix::unistd::setsid()?;
    // SAFETY: fd 0 is the pty's slave; 0 asks not to steal a terminal
    // another session holds.
    unsafe { ioctl::set_controlling_terminal(0, 0) }?;
    Ok(())
}

/// Whether a connecting uid may use the terminal: root and the agent.
fn may_attach(peer_uid: u32, agent_uid: u32) -> bool {
    peer_uid == 0 || peer_uid == agent_uid
}

/// The status a shell reports for a wait status: its code, or 128 + the
/// signal; `None` while it has not ended.
fn exit_status(status: WaitStatus) -> Option<i32> {
    match status {
        WaitStatus::Exited(_, code) => Some(code),
        WaitStatus::Signaled(_, signal, _) => Some(128 + signal as i32),
        _ => None,
    }
}

/// Appends `bytes` to `kept`, dropping the oldest beyond `limit`.
fn keep_recent(kept: &mut VecDeque<u8>, bytes: &[u8], limit: usize) {
    let bytes = &bytes[bytes.len().saturating_sub(limit)..];
    let overflow = (kept.len() + bytes.len()).saturating_sub(limit);
    kept.drain(..overflow);
    kept.extend(bytes);
}

/// A pidfd for `pid`, readable once it has ended (Linux 5.3 and later).
fn pidfd_open(pid: Pid) -> nix::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor
    // (close-on-exec) or -1.
    let fd = unsafe { nix::libc::syscall(nix::libc::SYS_pidfd_open, pid.as_raw(), 0) };
    if fd < 0 {
        return Err(Errno::last());
    }
    // SAFETY: the descriptor is new and ours.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

fn log(what: std::fmt::Arguments) {
    eprintln!("qmesh-agent pty-bridge: {what}");
}

/// Relays between the terminal and one connection at a time until the
/// shell ends; returns its status (code, or 128 + signal). `master` is the
/// pty's master (non-blocking), `shell` the shell's pid (a child of this
/// process, in its own session), `listener` a listening non-blocking
/// socket. `stop`, when readable, asks to hang the shell up: a signalfd for
/// SIGTERM and SIGHUP, or a pipe in tests.
fn serve(
    master: OwnedFd,
    shell: Pid,
    listener: OwnedFd,
    agent_uid: u32,
    stop: Option<OwnedFd>,
) -> i32 {
    let shell_exit = match pidfd_open(shell) {
        Ok(fd) => Some(fd),
        Err(e) => {
            log(format_args!(
                "no pidfd for the shell ({e}); checking for its exit every {WAIT_INTERVAL_MS} ms"
            ));
            None
        }
    };
    let mut bridge = Bridge {
        master,
        terminal_open: true,
        shell,
        shell_exit,
        listener,
        agent_uid,
        stop,
        to_terminal: VecDeque::new(),
        detached_output: VecDeque::new(),
        attached: None,
    };
    loop {
        if let Some(status) = bridge.step() {
            return bridge.finish(status);
        }
    }
}

/// The connection being served.
struct Attached {
    sock: OwnedFd,
    decoder: frame::Decoder,
    /// Encoded frames not yet sent.
    outgoing: VecDeque<u8>,
}

struct Bridge {
    master: OwnedFd,
    /// False once no process holds the terminal's slave side any more.
    terminal_open: bool,
    shell: Pid,
    shell_exit: Option<OwnedFd>,
    listener: OwnedFd,
    agent_uid: u32,
    stop: Option<OwnedFd>,
    /// Input not yet written to the terminal.
    to_terminal: VecDeque<u8>,
    /// Output while nobody is attached, for the next connection.
    detached_output: VecDeque<u8>,
    attached: Option<Attached>,
}

/// What one poll found ready; `None` where the descriptor was not polled.
struct Ready {
    master: Option<PollFlags>,
    sock: Option<PollFlags>,
    listener: Option<PollFlags>,
    shell_exit: Option<PollFlags>,
    stop: Option<PollFlags>,
}

impl Bridge {
    fn master_interest(&self) -> PollFlags {
        let mut flags = PollFlags::empty();
        if !self.terminal_open {
            return flags;
        }
        if self
            .attached
            .as_ref()
            .is_none_or(|a| a.outgoing.len() < OUTPUT_AHEAD)
        {
            flags |= PollFlags::POLLIN;
        }
        if !self.to_terminal.is_empty() {
            flags |= PollFlags::POLLOUT;
        }
        flags
    }

    fn sock_interest(&self, attached: &Attached) -> PollFlags {
        let mut flags = PollFlags::empty();
        if self.to_terminal.len() < INPUT_AHEAD {
            flags |= PollFlags::POLLIN;
        }
        if !attached.outgoing.is_empty() {
            flags |= PollFlags::POLLOUT;
        }
        flags
    }

    /// Waits for something to do and does it; the shell's status once it
    /// has ended. Descriptors with nothing wanted of them are left out of
    /// the poll, as it would report their hang-ups over and over.
    fn step(&mut self) -> Option<i32> {
        let want_master = self.master_interest();
        let want_sock = self.attached.as_ref().map(|a| self.sock_interest(a));
        let ready = {
            let mut fds: Vec<PollFd> = Vec::with_capacity(5);
            let mut add = |fd, flags: PollFlags| {
                (!flags.is_empty()).then(|| {
                    fds.push(PollFd::new(fd, flags));
                    fds.len() - 1
                })
            };
            let master = add(self.master.as_fd(), want_master);
            let sock = match (&self.attached, want_sock) {
                (Some(a), Some(flags)) => add(a.sock.as_fd(), flags),
                _ => None,
            };
            let listen_flags = if self.attached.is_none() {
                PollFlags::POLLIN
            } else {
                PollFlags::empty()
            };
            let listener = add(self.listener.as_fd(), listen_flags);
            let shell_exit = self
                .shell_exit
                .as_ref()
                .and_then(|fd| add(fd.as_fd(), PollFlags::POLLIN));
            let stop = self
                .stop
                .as_ref()
                .and_then(|fd| add(fd.as_fd(), PollFlags::POLLIN));
            let timeout = if self.shell_exit.is_some() {
                PollTimeout::NONE
            } else {
                PollTimeout::from(WAIT_INTERVAL_MS)
            };
            match nix::poll::poll(&mut fds, timeout) {
                Ok(_) | Err(Errno::EINTR) => {}
                Err(e) => {
                    log(format_args!("poll failed ({e}); retrying"));
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
            let got =
                |at: Option<usize>| at.map(|i| fds[i].revents().unwrap_or(PollFlags::empty()));
            Ready {
                master: got(master),
                sock: got(sock),
                listener: got(listener),
                shell_exit: got(shell_exit),
                stop: got(stop),
            }
        };

        let readable = PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR;
        let writable = PollFlags::POLLOUT | PollFlags::POLLHUP | PollFlags::POLLERR;
        if ready.stop.is_some_and(|r| r.intersects(readable)) {
            self.take_stop_request();
            self.hang_up_shell();
        }
        if let Some(r) = ready.master {
            if r.intersects(writable) && want_master.contains(PollFlags::POLLOUT) {
                self.write_terminal();
            }
            if r.intersects(readable) && want_master.contains(PollFlags::POLLIN) {
                self.read_terminal(r.contains(PollFlags::POLLHUP));
            }
        }
        if let (Some(r), Some(want)) = (ready.sock, want_sock) {
            if r.intersects(readable) && want.contains(PollFlags::POLLIN) {
                self.read_connection();
            }
            if r.intersects(writable) && want.contains(PollFlags::POLLOUT) {
                self.write_connection();
            }
        }
        if ready.listener.is_some_and(|r| r.intersects(readable)) {
            self.accept();
        }
        let exit_ready = match ready.shell_exit {
            Some(r) => r.intersects(readable),
            None => self.shell_exit.is_none(),
        };
        if exit_ready { self.reap_shell() } else { None }
    }

    /// Consumes what made `stop` readable: a signal's record, or a pipe's
    /// bytes. At its end (a closed pipe) it is no longer polled.
    fn take_stop_request(&mut self) {
        let Some(fd) = &self.stop else { return };
        // A signalfd needs room for one whole record (128 bytes).
        let mut record = [0u8; 128];
        match nix::unistd::read(fd, &mut record) {
            Ok(0) => self.stop = None,
            Ok(_) | Err(Errno::EAGAIN | Errno::EINTR) => {}
            Err(e) => {
                log(format_args!(
                    "cannot read the stop signals ({e}); no longer watching them"
                ));
                self.stop = None;
            }
        }
    }

    /// qdel or the wall clock: SIGHUP (what a terminal's hang-up sends, and
    /// what makes an interactive shell end its jobs), SIGTERM, SIGCONT, to
    /// the shell's group and the terminal's foreground group. The shell is
    /// then waited for as usual.
    fn hang_up_shell(&self) {
        // The shell leads its session: its pid is its process group.
        let foreground = nix::unistd::tcgetpgrp(&self.master)
            .ok()
            .filter(|g| g.as_raw() > 0 && *g != self.shell);
        for signal in [Signal::SIGHUP, Signal::SIGTERM, Signal::SIGCONT] {
            for group in std::iter::once(self.shell).chain(foreground) {
                // ESRCH: that group is gone already.
                let _ = nix::sys::signal::killpg(group, signal);
            }
        }
    }

    /// A signal from the client, for whatever runs in the foreground.
    fn signal_foreground(&self, signo: i32) {
        let Ok(signal) = Signal::try_from(signo) else {
            log(format_args!(
                "ignored a SIGNAL frame for {signo}, which is no signal"
            ));
            return;
        };
        let group = match nix::unistd::tcgetpgrp(&self.master) {
            Ok(g) if g.as_raw() > 0 => g,
            _ => self.shell,
        };
        if let Err(e) = nix::sys::signal::killpg(group, signal) {
            log(format_args!(
                "cannot send {signal} to process group {group}: {e}"
            ));
        }
    }

    /// Sets the terminal's window; the kernel sends SIGWINCH to its
    /// foreground group.
    fn set_window(&self, rows: u16, cols: u16) {
        let size = nix::libc::winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: `master` is an open pty master and `size` a valid winsize.
        if let Err(e) = unsafe { ioctl::set_window_size(self.master.as_raw_fd(), &size) } {
            log(format_args!("cannot set the window to {rows}x{cols}: {e}"));
        }
    }

    fn read_terminal(&mut self, hung_up: bool) {
        let mut buf = [0u8; CHUNK];
        match nix::unistd::read(&self.master, &mut buf) {
            Ok(0) => self.terminal_closed(),
            Ok(n) => self.output(&buf[..n]),
            // A hang-up with nothing to read: no process holds the terminal.
            Err(Errno::EAGAIN | Errno::EINTR) if !hung_up => {}
            // EIO: the slave side is closed everywhere and all is read.
            Err(Errno::EIO | Errno::EAGAIN | Errno::EINTR) => self.terminal_closed(),
            Err(e) => {
                log(format_args!(
                    "cannot read the terminal ({e}); its output is lost from now on"
                ));
                self.terminal_closed();
            }
        }
    }

    fn write_terminal(&mut self) {
        let (front, _) = self.to_terminal.as_slices();
        match nix::unistd::write(&self.master, front) {
            Ok(n) => {
                self.to_terminal.drain(..n);
            }
            Err(Errno::EAGAIN | Errno::EINTR) => {}
            Err(Errno::EIO) => self.terminal_closed(),
            Err(e) => {
                log(format_args!(
                    "cannot write to the terminal ({e}); its input is dropped from now on"
                ));
                self.terminal_closed();
            }
        }
    }

    fn terminal_closed(&mut self) {
        self.terminal_open = false;
        self.to_terminal.clear();
    }

    /// Terminal output, to the connection or kept for the next.
    fn output(&mut self, bytes: &[u8]) {
        match &mut self.attached {
            Some(a) => a.outgoing.extend(frame::encode(frame::DATA, bytes)),
            None => keep_recent(&mut self.detached_output, bytes, DETACHED_OUTPUT),
        }
    }

    fn accept(&mut self) {
        let flags = SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK;
        let sock = match nix::sys::socket::accept4(self.listener.as_raw_fd(), flags) {
            // SAFETY: accept4 returned a new descriptor, ours.
            Ok(fd) => unsafe { OwnedFd::from_raw_fd(fd) },
            Err(Errno::EAGAIN | Errno::EINTR | Errno::ECONNABORTED) => return,
            Err(e) => {
                log(format_args!("cannot accept a connection ({e}); retrying"));
                std::thread::sleep(Duration::from_millis(100));
                return;
            }
        };
        match nix::sys::socket::getsockopt(&sock, PeerCredentials) {
            Ok(peer) if may_attach(peer.uid(), self.agent_uid) => {
                let mut outgoing = VecDeque::new();
                if !self.detached_output.is_empty() {
                    let kept: Vec<u8> = self.detached_output.drain(..).collect();
                    outgoing.extend(frame::encode(frame::DATA, &kept));
                }
                self.attached = Some(Attached {
                    sock,
                    decoder: frame::Decoder::new(),
                    outgoing,
                });
            }
            Ok(peer) => log(format_args!(
                "refused a connection from uid {} (pid {}): only root and the agent (uid {}) may attach",
                peer.uid(),
                peer.pid(),
                self.agent_uid
            )),
            Err(e) => log(format_args!(
                "refused a connection whose sender is unknown: SO_PEERCRED failed: {e}"
            )),
        }
    }

    fn read_connection(&mut self) {
        let Some(a) = &mut self.attached else { return };
        let mut buf = [0u8; CHUNK];
        match nix::sys::socket::recv(a.sock.as_raw_fd(), &mut buf, MsgFlags::MSG_DONTWAIT) {
            Ok(0) => return self.detach(None),
            Ok(n) => a.decoder.push(&buf[..n]),
            Err(Errno::EAGAIN | Errno::EINTR) => return,
            Err(Errno::ECONNRESET) => return self.detach(None),
            Err(e) => return self.detach(Some(format!("cannot read from it: {e}"))),
        }
        loop {
            let next = match &mut self.attached {
                Some(a) => a.decoder.next(),
                None => return,
            };
            match next {
                Ok(Some((kind, payload))) => {
                    if let Err(problem) = self.handle_frame(kind, &payload) {
                        return self.detach(Some(problem));
                    }
                }
                Ok(None) => return,
                Err(e) => return self.detach(Some(e.to_string())),
            }
        }
    }

    /// One frame from the client; `Err` says how it broke the protocol.
    fn handle_frame(&mut self, kind: u8, payload: &[u8]) -> Result<(), String> {
        match kind {
            frame::DATA => {
                if self.terminal_open {
                    self.to_terminal.extend(payload);
                }
            }
            frame::WINDOW => {
                let (rows, cols) = frame::parse_window(payload)
                    .ok_or_else(|| format!("a WINDOW frame of {} bytes, not 4", payload.len()))?;
                self.set_window(rows, cols);
            }
            frame::SIGNAL => {
                let signo = frame::parse_i32(payload)
                    .ok_or_else(|| format!("a SIGNAL frame of {} bytes, not 4", payload.len()))?;
                self.signal_foreground(signo);
            }
            // A later client's additions: ignored, not fatal.
            other => log(format_args!("ignored a frame of unknown kind {other}")),
        }
        Ok(())
    }

    fn write_connection(&mut self) {
        let Some(a) = &mut self.attached else { return };
        match send_pending(a) {
            Ok(()) | Err(Errno::EAGAIN | Errno::EINTR) => {}
            Err(Errno::EPIPE | Errno::ECONNRESET) => self.detach(None),
            Err(e) => self.detach(Some(format!("cannot write to it: {e}"))),
        }
    }

    /// Ends the connection, for the next one; `why` is logged when it broke
    /// rather than closed.
    fn detach(&mut self, why: Option<String>) {
        if let Some(why) = why {
            log(format_args!("dropped the connection: {why}"));
        }
        self.attached = None;
    }

    fn reap_shell(&mut self) -> Option<i32> {
        match nix::sys::wait::waitpid(self.shell, Some(WaitPidFlag::WNOHANG)) {
            Ok(status) => exit_status(status),
            Err(Errno::EINTR) => None,
            Err(e) => {
                log(format_args!(
                    "cannot wait for the shell (pid {}): {e}; ending with status 1",
                    self.shell
                ));
                Some(1)
            }
        }
    }

    /// The shell has ended: its last output and its status to the client,
    /// if one is attached. Returns `status`.
    fn finish(mut self, status: i32) -> i32 {
        let mut drained = 0;
        let mut buf = [0u8; CHUNK];
        while self.terminal_open && drained < FINAL_DRAIN {
            match nix::unistd::read(&self.master, &mut buf) {
                Ok(n) if n > 0 => {
                    self.output(&buf[..n]);
                    drained += n;
                }
                _ => break,
            }
        }
        let Some(a) = &mut self.attached else {
            return status;
        };
        a.outgoing.extend(frame::exit(status));
        let deadline = Instant::now() + FINAL_FLUSH;
        while !a.outgoing.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(timeout) = PollTimeout::try_from(left) else {
                break;
            };
            if left.is_zero() {
                log(format_args!(
                    "the client took no output for {FINAL_FLUSH:?}; ending without it"
                ));
                break;
            }
            let mut fds = [PollFd::new(a.sock.as_fd(), PollFlags::POLLOUT)];
            match nix::poll::poll(&mut fds, timeout) {
                Ok(_) | Err(Errno::EINTR) => {}
                Err(_) => break,
            }
            match send_pending(a) {
                Ok(()) | Err(Errno::EAGAIN | Errno::EINTR) => {}
                Err(_) => break,
            }
        }
        status
    }
}

/// Sends what the attached client may take now of its pending output.
fn send_pending(a: &mut Attached) -> nix::Result<()> {
    let (front, _) = a.outgoing.as_slices();
    let flags = MsgFlags::MSG_NOSIGNAL | MsgFlags::MSG_DONTWAIT;
    let n = nix::sys::socket::send(a.sock.as_raw_fd(), front, flags)?;
    a.outgoing.drain(..n);
    Ok(())
}

#[cfg(test)]
mod tests;
