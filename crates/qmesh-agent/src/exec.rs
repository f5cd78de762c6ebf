//! Starting the job process, for the shepherd, from a [`Plan`]: the
//! child-side setup between fork and exec, which only makes system calls on
//! memory allocated before the fork: signals, session, the job's process
//! limits and nice value (before the identity switch, so the user cannot
//! raise them), the identity, the umask, the start directory, the output.
//!
//! The identity switch is done by hand through nix, not with std's
//! `CommandExt::uid`/`gid`, because std would call `setgroups(0)` and drop
//! the user's supplementary groups. The output files are opened after the
//! switch, so the kernel checks the user's rights and the files belong to
//! the user. When the child-side setup fails, it writes a one-byte step code
//! to a pipe before exiting, so the launch error can name what failed.

use std::ffi::{CString, OsStr};
use std::fs;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::signal::{SigHandler, SigSet, SigmaskHow, Signal};
use nix::sys::stat::Mode;

use qmesh_proto::v1::ProcessLimits;

use crate::plan::{Credentials, LaunchError, Plan};

/// The steps of the child-side setup, as reported through the step pipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Step {
    Signals = 1,
    Setsid = 2,
    Setgroups = 3,
    Setgid = 4,
    Setuid = 5,
    Chdir = 6,
    Stdout = 7,
    Stderr = 8,
    Limits = 9,
    Cgroup = 10,
}

impl Step {
    fn from_byte(b: u8) -> Option<Step> {
        [
            Step::Signals,
            Step::Setsid,
            Step::Setgroups,
            Step::Setgid,
            Step::Setuid,
            Step::Chdir,
            Step::Stdout,
            Step::Stderr,
            Step::Limits,
            Step::Cgroup,
        ]
        .into_iter()
        .find(|s| *s as u8 == b)
    }
}

/// What the child needs between fork and exec, all allocated beforehand.
struct ChildSetup {
    report: RawFd,
    /// `cgroup.procs` of the job's cgroup(s), to join first of all.
    cgroup_procs: Vec<RawFd>,
    switch_to: Option<Credentials>,
    limits: ProcessLimits,
    umask: Option<u32>,
    workdir: CString,
    stdout: CString,
    stderr: Option<CString>,
}

fn cstring(path: &Path) -> Result<CString, LaunchError> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| LaunchError::NulPath {
        path: path.to_path_buf(),
    })
}

/// Signals whose "ignore" setting could have been inherited (nohup, a
/// service manager) and must not reach the job.
const RESET_SIGNALS: [Signal; 9] = [
    Signal::SIGHUP,
    Signal::SIGINT,
    Signal::SIGQUIT,
    Signal::SIGTERM,
    Signal::SIGPIPE,
    Signal::SIGALRM,
    Signal::SIGCHLD,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
];

/// Runs in the child between fork and exec: system calls only.
fn child_setup(s: &ChildSetup) -> io::Result<()> {
    let fail = |step: Step, e: Errno| {
        // SAFETY: `report` is the write end of the step pipe, open until exec.
        let fd = unsafe { BorrowedFd::borrow_raw(s.report) };
        let _ = nix::unistd::write(fd, &[step as u8]);
        io::Error::from_raw_os_error(e as i32)
    };
    crate::cgroup::job::join(&s.cgroup_procs).map_err(|e| fail(Step::Cgroup, e))?;
    nix::sys::signal::sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None)
        .map_err(|e| fail(Step::Signals, e))?;
    for sig in RESET_SIGNALS {
        // SAFETY: SIG_DFL installs no handler.
        unsafe { nix::sys::signal::signal(sig, SigHandler::SigDfl) }
            .map_err(|e| fail(Step::Signals, e))?;
    }
    nix::unistd::setsid().map_err(|e| fail(Step::Setsid, e))?;
    crate::limits::apply(&s.limits).map_err(|e| fail(Step::Limits, e))?;
    if let Some(c) = &s.switch_to {
        nix::unistd::setgroups(&c.groups).map_err(|e| fail(Step::Setgroups, e))?;
        nix::unistd::setgid(c.gid).map_err(|e| fail(Step::Setgid, e))?;
        nix::unistd::setuid(c.uid).map_err(|e| fail(Step::Setuid, e))?;
    }
    let mode = match s.umask {
        Some(mask) => {
            nix::sys::stat::umask(Mode::from_bits_truncate(mask));
            Mode::from_bits_truncate(0o666)
        }
        None => Mode::from_bits_truncate(0o644),
    };
    nix::unistd::chdir(s.workdir.as_c_str()).map_err(|e| fail(Step::Chdir, e))?;
    // Appending, as PBS's MoM opens them: qmsg's lines, written through
    // other descriptions of the same file (`qmsg.rs`), then land between
    // the job's own, not under them.
    let flags =
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_TRUNC | OFlag::O_APPEND | OFlag::O_CLOEXEC;
    let out: OwnedFd =
        nix::fcntl::open(s.stdout.as_c_str(), flags, mode).map_err(|e| fail(Step::Stdout, e))?;
    nix::unistd::dup2_stdout(&out).map_err(|e| fail(Step::Stdout, e))?;
    match &s.stderr {
        None => nix::unistd::dup2_stderr(&out).map_err(|e| fail(Step::Stderr, e))?,
        Some(path) => {
            let err: OwnedFd = nix::fcntl::open(path.as_c_str(), flags, mode)
                .map_err(|e| fail(Step::Stderr, e))?;
            nix::unistd::dup2_stderr(&err).map_err(|e| fail(Step::Stderr, e))?;
        }
    }
    Ok(())
}

/// Starts the job in its own session (its pid is its process group), in
/// the cgroups whose `cgroup.procs` are `cgroup_procs` (open until then).
/// Returns the job's pid. Call only from a single-threaded process.
pub fn spawn(plan: &Plan, cgroup_procs: &[RawFd]) -> Result<i32, LaunchError> {
    let setup_error = |step: &'static str| {
        move |e: Errno| LaunchError::Setup {
            step,
            source: io::Error::from_raw_os_error(e as i32),
        }
    };
    let (report_read, report_write) =
        nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(setup_error("pipe"))?;
    let setup = ChildSetup {
        report: report_write.as_raw_fd(),
        cgroup_procs: cgroup_procs.to_vec(),
        switch_to: plan.switch_to.clone(),
        limits: plan.limits,
        umask: plan.umask,
        workdir: cstring(&plan.workdir)?,
        stdout: cstring(&plan.stdout)?,
        stderr: plan.stderr.as_deref().map(cstring).transpose()?,
    };
    let mut cmd = Command::new(&plan.program);
    cmd.args(&plan.args)
        .env_clear()
        .envs(&plan.env)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: the closure only makes system calls on memory allocated before
    // the fork, and the shepherd is single-threaded.
    unsafe {
        cmd.pre_exec(move || child_setup(&setup));
    }
    let spawned = cmd.spawn();
    // Only the child may hold the write end now: a read then ends at EOF.
    drop(report_write);
    match spawned {
        Ok(child) => Ok(child.id() as i32),
        Err(source) => {
            let mut byte = [0u8; 1];
            let step = match fs::File::from(report_read).read(&mut byte) {
                Ok(1) => Step::from_byte(byte[0]),
                _ => None,
            };
            Err(describe_failure(plan, step, source))
        }
    }
}

fn describe_failure(plan: &Plan, step: Option<Step>, source: io::Error) -> LaunchError {
    let user = plan.user.name.clone();
    match step {
        Some(Step::Signals) => LaunchError::Setup {
            step: "signal mask",
            source,
        },
        Some(Step::Setsid) => LaunchError::Setup {
            step: "setsid",
            source,
        },
        Some(Step::Limits) => LaunchError::Setup {
            step: "process limits from -l pcput, pvmem, file or nice",
            source,
        },
        Some(Step::Cgroup) => LaunchError::Setup {
            step: "joining the job's cgroup",
            source,
        },
        Some(Step::Setgroups) => LaunchError::Switch {
            user,
            step: "setgroups",
            source,
        },
        Some(Step::Setgid) => LaunchError::Switch {
            user,
            step: "setgid",
            source,
        },
        Some(Step::Setuid) => LaunchError::Switch {
            user,
            step: "setuid",
            source,
        },
        Some(Step::Chdir) => LaunchError::Workdir {
            path: plan.workdir.clone(),
            user,
            source,
        },
        Some(Step::Stdout) => LaunchError::Output {
            path: plan.stdout.clone(),
            source,
        },
        Some(Step::Stderr) => LaunchError::Output {
            path: plan.stderr.clone().unwrap_or_else(|| plan.stdout.clone()),
            source,
        },
        // A shell (qsub -S, or /bin/sh) runs the script: it is what failed.
        None if !plan.args.is_empty() => LaunchError::Shell {
            shell: plan.program.clone(),
            source,
        },
        None => LaunchError::Exec {
            path: plan.program.clone(),
            source,
        },
    }
}

/// For logs: the program and its arguments.
pub fn command_line(plan: &Plan) -> String {
    std::iter::once(plan.program.as_os_str())
        .chain(plan.args.iter().map(|a| a.as_os_str()))
        .map(OsStr::to_string_lossy)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_codes_round_trip() {
        for b in 1..=10u8 {
            assert_eq!(Step::from_byte(b).map(|s| s as u8), Some(b));
        }
        assert_eq!(Step::from_byte(0), None);
        assert_eq!(Step::from_byte(11), None);
    }
}
