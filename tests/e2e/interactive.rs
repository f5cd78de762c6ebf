//! qsub -I driven through a real terminal: the test holds the master side
//! of a pty whose slave is qsub's controlling terminal, as a user's
//! terminal emulator would, and types. qsub runs on a login node (its own
//! network namespace where the tests run as root) and the job's shell on
//! a compute host. The shell is `-S /bin/sh`: the test machine's root
//! may have a login profile of its own that waits on locks (pyenv's).

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::cluster::Cluster;
use crate::harness::{Daemon, stderr};

/// The user's side of a terminal, with everything the program wrote so
/// far (also used by `sp.rs` for spq --watch).
pub(crate) struct Terminal {
    master: std::fs::File,
    pub seen: Arc<(Mutex<String>, Condvar)>,
    pub child: Child,
}

impl Terminal {
    /// Runs `qsub args` on a new 24 x 80 terminal.
    fn qsub(d: &Daemon, socket: &std::path::Path, args: &[&str]) -> Terminal {
        Terminal::run(d, "qsub", socket, args)
    }

    /// Runs the command `name` on a new 24 x 80 terminal, as the session
    /// leader it controls (Ctrl-C typed there reaches it).
    pub fn run(d: &Daemon, name: &str, socket: &std::path::Path, args: &[&str]) -> Terminal {
        let size = nix::pty::Winsize {
            ws_row: 24,
            ws_col: 80,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let pty = nix::pty::openpty(Some(&size), None).expect("openpty");
        let slave: OwnedFd = pty.slave;
        let slave_fd = slave.as_raw_fd();
        let mut cmd = d.cmd(name);
        cmd.env("QMESH_SOCKET", socket)
            .env("TERM", "dumb")
            .args(args)
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        // SAFETY: setsid and one ioctl between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                nix::unistd::setsid()?;
                if nix::libc::ioctl(slave_fd, nix::libc::TIOCSCTTY as _, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("start a command on a terminal");
        let master = std::fs::File::from(pty.master);
        let seen = Arc::new((Mutex::new(String::new()), Condvar::new()));
        let mut reader = master.try_clone().unwrap();
        let shared = seen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // EIO once qsub and everything on the terminal have gone.
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let (text, ready) = &*shared;
                text.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
                ready.notify_all();
            }
        });
        Terminal {
            master,
            seen,
            child,
        }
    }

    pub fn type_in(&mut self, keys: &str) {
        self.master.write_all(keys.as_bytes()).expect("type");
    }

    /// Waits for `text` on the terminal (60 s at most, as a failure guard).
    pub fn expect(&self, text: &str, d: &Daemon) {
        let (seen, ready) = &*self.seen;
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut shown = seen.lock().unwrap();
        while !shown.contains(text) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "\"{text}\" did not appear on the terminal in 60 s; it shows:\n{shown}\n{}",
                d.log()
            );
            shown = ready.wait_timeout(shown, left).unwrap().0;
        }
    }

    fn resize(&self, rows: u16, cols: u16) {
        let size = nix::libc::winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: TIOCSWINSZ reads one winsize we own.
        let rc = unsafe { nix::libc::ioctl(self.master.as_raw_fd(), nix::libc::TIOCSWINSZ, &size) };
        assert_eq!(rc, 0, "resize the terminal");
    }
}

#[test]
fn an_interactive_job_from_a_login_node_runs_commands_takes_ctrl_c_and_ends_with_ctrl_d() {
    let mut c = Cluster::start(1, 1, 30, None);
    c.await_nodes(&["h1"], "free");
    let login = c.start_login("login1");
    c.d.ok("qmgr", &["-c", "set server submit_hosts += login1"]);
    let d = &c.d;

    let out = d
        .cmd("qsub")
        .env("QMESH_SOCKET", &login)
        .args(["-I", "-X"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("-X: qmesh does not forward X11"),
        "{}",
        stderr(&out)
    );

    let mut term = Terminal::qsub(
        d,
        &login,
        &["-I", "-S", "/bin/sh", "-N", "inter", "-v", "MARK=from-qsub"],
    );
    term.expect("qsub: waiting for job", d);
    term.expect("ready", d);
    term.type_in("echo \"env-$((6*7)) $PBS_ENVIRONMENT $MARK\"\r");
    term.expect("env-42 PBS_INTERACTIVE from-qsub", d);
    term.type_in("echo \"nodes-$((1+1)) $(cat $PBS_NODEFILE)\"\r");
    term.expect("nodes-2 h1a", d);

    term.resize(33, 101);
    // The window change reaches the job's terminal (qsub forwards its
    // SIGWINCH; a line typed at once may overtake it, so ask again).
    for attempt in 1.. {
        term.type_in(&format!("echo \"size-$(({attempt}*1000)) $(stty size)\"\r"));
        let marker = format!("size-{} ", attempt * 1000);
        term.expect(&marker, d);
        if term
            .seen
            .0
            .lock()
            .unwrap()
            .contains(&format!("{marker}33 101"))
        {
            break;
        }
        assert!(attempt < 20, "the window size never arrived");
    }

    // Ctrl-C reaches the job's foreground process, not qsub.
    term.type_in("sh -c 'echo sleeping-$((3*3)); exec sleep 1000'\r");
    term.expect("sleeping-9", d);
    term.type_in("\x03");
    term.type_in("echo \"back-$((2+3))\"\r");
    term.expect("back-5", d);

    let id = {
        let out = d.ok("qselect", &["-N", "inter"]);
        out.trim().to_string()
    };
    let job = d.job_json(&id);
    assert_eq!(job["job_state"], "R");
    assert_eq!(job["interactive"], "True", "{job}");

    // Ctrl-D ends the shell, the job, and qsub.
    term.type_in("\x04");
    let status = term.child.wait().expect("qsub ends");
    assert!(
        status.success(),
        "qsub -I exited {status:?}; the terminal shows:\n{}\n{}",
        term.seen.0.lock().unwrap(),
        d.log()
    );
    term.expect("completed", d);
    let info = d.wait_job(&id);
    assert_eq!(info.exit_status, Some(0), "{info:?}");
    c.await_nodes(&["h1"], "free");
}

#[test]
fn an_interactive_job_ends_at_its_wall_clock_and_frees_its_node() {
    let c = Cluster::start(1, 1, 30, None);
    c.await_nodes(&["h1"], "free");
    let d = &c.d;
    let relay = c.relay_socket("h1");
    let mut term = Terminal::qsub(
        d,
        &relay,
        &[
            "-I",
            "-S",
            "/bin/sh",
            "-N",
            "short",
            "-l",
            "walltime=00:00:03",
        ],
    );
    term.expect("ready", d);
    term.type_in("echo \"up-$((4*4))\"\r");
    term.expect("up-16", d);
    // Nothing more is typed: the wall clock ends the shell, the job and qsub.
    let status = term.child.wait().expect("qsub ends");
    assert!(
        !status.success(),
        "a job killed at its wall clock is no success"
    );
    let id = d.ok("qselect", &["-x", "-N", "short"]).trim().to_string();
    // qsub ends with the shell's stream; the end's report may still be on
    // its way from the agent.
    d.wait_job(&id);
    let job = d.job_json(&id);
    assert_eq!(job["job_state"], "F", "{job}");
    let comment = job["comment"].as_str().unwrap_or_default();
    assert!(comment.contains("wall"), "{comment}");
    c.await_nodes(&["h1"], "free");
}

#[test]
fn an_interactive_job_whose_qsub_dies_is_deleted() {
    let c = Cluster::start(1, 1, 30, None);
    c.await_nodes(&["h1"], "free");
    let d = &c.d;
    let relay = c.relay_socket("h1");
    let mut term = Terminal::qsub(d, &relay, &["-I", "-S", "/bin/sh", "-N", "orphan"]);
    term.expect("ready", d);
    let id = d.ok("qselect", &["-N", "orphan"]).trim().to_string();
    let _ = term.child.kill();
    let _ = term.child.wait();
    // As PBS does: nobody is at the terminal any more, so the job goes.
    let info = d.wait_job(&id);
    assert!(
        info.comment.contains("delete") || info.comment.contains("kill"),
        "{info:?}"
    );
    c.await_nodes(&["h1"], "free");
}

/// The single-machine daemon (its own local agent, the default set-up):
/// qsub -I on its socket, as a first-time user tries it.
#[test]
fn an_interactive_job_on_a_single_machine() {
    let d = Daemon::start();
    let mut term = Terminal::qsub(&d, &d.socket, &["-I", "-S", "/bin/sh", "-l", "nodes=2"]);
    term.expect("ready", &d);
    term.type_in("echo \"lines-$((3+3)) $(wc -l < $PBS_NODEFILE) $PBS_ENVIRONMENT\"\r");
    term.expect("lines-6 2 PBS_INTERACTIVE", &d);
    term.type_in("exit 4\r");
    let status = term.child.wait().expect("qsub ends");
    assert_eq!(
        status.code(),
        Some(4),
        "qsub -I exits with the shell's status"
    );
}
