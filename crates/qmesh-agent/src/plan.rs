//! What the job will be, decided before anything is started: who it runs
//! as (the user as this host's passwd knows them, with their groups), what
//! it executes (its #! line, or qsub -S's shell with the script as its
//! argument), where it starts (qsub -d, else the user's home directory, as
//! PBS does), where its output goes, its limits and umask, and its
//! environment. Everything that
//! allocates or reads files is done here, in the shepherd, before the fork;
//! [`crate::exec`] then only makes system calls in the child.
//!
//! The launch errors live here too: a job that cannot be started is a
//! result (`LAUNCH_FAILED` with one of these messages), not an agent error.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::unistd::{Gid, Group, Uid, User};
use qmesh_proto::v1::{LaunchJob, ProcessLimits};

use crate::env::{Identity, Places, job_environment};
use crate::record::{GPU_FILE, Launch, NODE_FILE, SCRIPT_FILE};
use crate::spool::JobDir;

/// Why a job could not be started. The text is the `JobFinished` message.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("cannot read the launch order {}: {why}", path.display())]
    Spec { path: PathBuf, why: String },
    #[error("user {user} does not exist on this host; add the user or fix the name service")]
    UnknownUser { user: String },
    #[error("cannot look up user {user}: {source}")]
    UserLookup { user: String, source: Errno },
    #[error(
        "user {user} has uid {local} on this host but {server} on the server; make the uids agree"
    )]
    UidMismatch {
        user: String,
        local: u32,
        server: u32,
    },
    #[error(
        "the agent runs as uid {agent} and can only start jobs as itself, not as {user} (uid {uid}); run the agent as root"
    )]
    NotRoot { agent: u32, user: String, uid: u32 },
    #[error("cannot compute the groups of user {user}: {source}")]
    Groups { user: String, source: Errno },
    #[error("cannot give the job script {} to user {user}: {source}", path.display())]
    Chown {
        path: PathBuf,
        user: String,
        source: Errno,
    },
    #[error("{} contains a NUL byte", path.display())]
    NulPath { path: PathBuf },
    #[error("cannot switch to user {user} ({step}): {source}")]
    Switch {
        user: String,
        step: &'static str,
        source: io::Error,
    },
    #[error("cannot enter working directory {} as user {user}: {source}", path.display())]
    Workdir {
        path: PathBuf,
        user: String,
        source: io::Error,
    },
    #[error(
        "cannot make the job's temporary directory {} for user {user}: {source}; check the agent's --tmpdir-base",
        path.display()
    )]
    Tmpdir {
        path: PathBuf,
        user: String,
        source: io::Error,
    },
    #[error(
        "cannot make the job's private directory {} (qsub -W sandbox=PRIVATE) for user {user}: {source}",
        path.display()
    )]
    Sandbox {
        path: PathBuf,
        user: String,
        source: io::Error,
    },
    #[error("cannot open output file {}: {source}", path.display())]
    Output { path: PathBuf, source: io::Error },
    #[error("cannot prepare the job process ({step}): {source}")]
    Setup {
        step: &'static str,
        source: io::Error,
    },
    #[error(
        "cannot execute the shell {} that runs the job script: {source}; check qsub -S",
        shell.display()
    )]
    Shell { shell: PathBuf, source: io::Error },
    #[error("cannot execute job script {}: {source} (check the #! line of the script)", path.display())]
    Exec { path: PathBuf, source: io::Error },
}

/// The file an output path names: `NAME.oSEQ` in the working directory when
/// none was given; inside the directory when it names an existing directory
/// (PBS behaviour); relative paths are taken from the working directory.
pub fn output_path(
    requested: &str,
    workdir: &Path,
    name: &str,
    kind: char,
    seq: u64,
    is_dir: impl Fn(&Path) -> bool,
) -> PathBuf {
    let file = format!("{name}.{kind}{seq}");
    if requested.is_empty() {
        return workdir.join(file);
    }
    let path = workdir.join(requested); // an absolute `requested` replaces workdir
    if is_dir(&path) { path.join(file) } else { path }
}

/// Who the job runs as.
#[derive(Clone, Debug)]
pub struct Credentials {
    pub uid: Uid,
    pub gid: Gid,
    pub groups: Vec<Gid>,
}

/// Everything needed to start the job, computed before the fork.
#[derive(Debug)]
pub struct Plan {
    pub user: User,
    /// `None`: the job runs as the shepherd itself.
    pub switch_to: Option<Credentials>,
    pub program: PathBuf,
    pub args: Vec<PathBuf>,
    pub env: BTreeMap<String, String>,
    /// Where the job starts.
    pub workdir: PathBuf,
    /// The file standard output goes to (the error file with -j eo).
    pub stdout: PathBuf,
    /// `None`: stderr goes to the stdout file.
    pub stderr: Option<PathBuf>,
    /// qsub -W umask=: the job's, and its output files' (then created
    /// 0666 less the mask; else 0644).
    pub umask: Option<u32>,
    pub limits: ProcessLimits,
    /// The job's TMPDIR, made by the shepherd just before the start.
    pub tmpdir: Option<PathBuf>,
    /// `-W sandbox=PRIVATE`: the directory it starts in, `HOME/pbs.JOBID`,
    /// made with its TMPDIR and removed with it.
    pub sandbox: Option<PathBuf>,
    /// Job variables that could not be set, for the log.
    pub dropped_env: Vec<String>,
}

/// Looks up the user and computes the plan.
pub fn plan(launch: &Launch, dir: &JobDir) -> Result<Plan, LaunchError> {
    let order = &launch.order;
    let user = resolve_user(order)?;
    let switch_to = credentials(order, &user)?;
    let script = dir.file(SCRIPT_FILE);
    if let Some(c) = &switch_to {
        nix::unistd::chown(&script, Some(c.uid), Some(c.gid)).map_err(|source| {
            LaunchError::Chown {
                path: script.clone(),
                user: user.name.clone(),
                source,
            }
        })?;
    }
    let shebang = fs::File::open(&script)
        .and_then(|mut f| {
            let mut head = [0u8; 2];
            f.read_exact(&mut head).map(|()| head == *b"#!")
        })
        .unwrap_or(false);
    let (program, args) = if !order.shell.is_empty() {
        (PathBuf::from(&order.shell), vec![script.clone()])
    } else if shebang {
        (script.clone(), Vec::new())
    } else {
        (PathBuf::from("/bin/sh"), vec![script.clone()])
    };
    // Output paths are taken from the submit directory; the job starts
    // where qsub -d said, else at home.
    let submitted_in = if order.workdir.is_empty() {
        user.dir.clone()
    } else {
        PathBuf::from(&order.workdir)
    };
    let sandbox = order
        .sandbox_private
        .then(|| crate::tmpdir::path(&user.dir, &order.job_id));
    let workdir = if let Some(private) = &sandbox {
        private.clone()
    } else if order.start_dir.is_empty() {
        user.dir.clone()
    } else {
        PathBuf::from(&order.start_dir)
    };
    let name = if order.name.is_empty() {
        "qmesh"
    } else {
        &order.name
    };
    let is_dir = |p: &Path| p.is_dir();
    let stdout = output_path(
        &order.stdout_path,
        &submitted_in,
        name,
        'o',
        order.job,
        is_dir,
    );
    let stderr = output_path(
        &order.stderr_path,
        &submitted_in,
        name,
        'e',
        order.job,
        is_dir,
    );
    let (stdout, stderr) = if order.join_output {
        (stdout, None)
    } else if order.join_to_error {
        (stderr, None)
    } else if stderr == stdout {
        // One file named twice is one file: opening it twice would interleave.
        (stdout, None)
    } else {
        (stdout, Some(stderr))
    };
    let tmpdir = crate::tmpdir::of(launch);
    let who = Identity {
        user: &user.name,
        home: &user.dir,
        shell: &user.shell,
    };
    let nodefile = dir.file(NODE_FILE);
    let gpufile = dir.file(GPU_FILE);
    let places = Places {
        nodefile: &nodefile,
        start_dir: &workdir,
        tmpdir: tmpdir.as_deref(),
        gpufile: Some(&gpufile),
    };
    let (env, dropped_env) = job_environment(launch, &who, &places);
    Ok(Plan {
        switch_to,
        program,
        args,
        env,
        workdir,
        stdout,
        stderr,
        umask: order.umask,
        limits: launch.limits(),
        tmpdir,
        sandbox,
        dropped_env,
        user,
    })
}

/// The home directory of the job's user, if the user is known here.
pub fn home_of(order: &LaunchJob) -> Option<PathBuf> {
    resolve_user(order).ok().map(|u| u.dir)
}

fn resolve_user(order: &LaunchJob) -> Result<User, LaunchError> {
    let (found, shown) = if order.user.is_empty() {
        let shown = format!("uid {}", order.uid);
        (User::from_uid(Uid::from_raw(order.uid)), shown)
    } else {
        (User::from_name(&order.user), order.user.clone())
    };
    let user = found
        .map_err(|source| LaunchError::UserLookup {
            user: shown.clone(),
            source,
        })?
        .ok_or(LaunchError::UnknownUser { user: shown })?;
    if user.uid.as_raw() != order.uid {
        return Err(LaunchError::UidMismatch {
            user: user.name,
            local: user.uid.as_raw(),
            server: order.uid,
        });
    }
    Ok(user)
}

/// The identity to switch to, or `None` when the job runs as we do. The
/// group is the job's group when the user belongs to it on this host, else
/// the user's primary group (never a group the user is not in).
fn credentials(order: &LaunchJob, user: &User) -> Result<Option<Credentials>, LaunchError> {
    let me = Uid::effective();
    if !me.is_root() {
        if user.uid != me {
            return Err(LaunchError::NotRoot {
                agent: me.as_raw(),
                user: user.name.clone(),
                uid: user.uid.as_raw(),
            });
        }
        return Ok(None);
    }
    let cname = CString::new(user.name.as_bytes()).map_err(|_| LaunchError::UnknownUser {
        user: user.name.clone(),
    })?;
    let member_of =
        nix::unistd::getgrouplist(&cname, user.gid).map_err(|source| LaunchError::Groups {
            user: user.name.clone(),
            source,
        })?;
    let named = if order.group.is_empty() {
        None
    } else {
        Group::from_name(&order.group).ok().flatten()
    };
    let wanted = named.map_or(Gid::from_raw(order.gid), |g| g.gid);
    let gid = if member_of.contains(&wanted) {
        wanted
    } else {
        tracing::warn!(
            user = %user.name,
            group = %order.group,
            gid = order.gid,
            "user is not a member of the job's group on this host; using the primary group"
        );
        user.gid
    };
    if user.uid == me && gid == Gid::effective() {
        return Ok(None);
    }
    let groups = if gid == user.gid {
        member_of
    } else {
        nix::unistd::getgrouplist(&cname, gid).map_err(|source| LaunchError::Groups {
            user: user.name.clone(),
            source,
        })?
    };
    Ok(Some(Credentials {
        uid: user.uid,
        gid,
        groups,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_defaults_to_name_dot_o_seq_in_the_workdir() {
        let p = output_path("", Path::new("/home/a/w"), "run.sh", 'o', 17, |_| false);
        assert_eq!(p, Path::new("/home/a/w/run.sh.o17"));
        let p = output_path("", Path::new("/home/a/w"), "run.sh", 'e', 17, |_| false);
        assert_eq!(p, Path::new("/home/a/w/run.sh.e17"));
    }

    #[test]
    fn an_existing_directory_gets_the_default_name_inside() {
        let is_dir = |p: &Path| p == Path::new("/scratch/logs");
        let p = output_path("/scratch/logs", Path::new("/w"), "job", 'o', 3, is_dir);
        assert_eq!(p, Path::new("/scratch/logs/job.o3"));
        let p = output_path(
            "/scratch/logs/x.out",
            Path::new("/w"),
            "job",
            'o',
            3,
            is_dir,
        );
        assert_eq!(p, Path::new("/scratch/logs/x.out"));
    }

    #[test]
    fn relative_paths_are_taken_from_the_workdir() {
        let p = output_path("out/log", Path::new("/home/a"), "j", 'o', 1, |_| false);
        assert_eq!(p, Path::new("/home/a/out/log"));
    }

    #[test]
    fn output_error_names_the_file() {
        let e = LaunchError::Output {
            path: PathBuf::from("/x/y.o3"),
            source: io::Error::from_raw_os_error(13),
        };
        assert_eq!(
            e.to_string(),
            "cannot open output file /x/y.o3: Permission denied (os error 13)"
        );
    }
}
