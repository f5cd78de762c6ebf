//! Where the daemon keeps its files, and the lock that keeps two daemons
//! off one state directory.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

use anyhow::{Context, bail};

/// Where a daemon run by `uid` keeps its state when none is given (shared
/// with the commands that read it, such as qreport).
pub use qmesh_proto::endpoint::default_state_dir;

/// Creates a directory (and parents) with the given mode if missing.
pub fn ensure_dir(dir: &Path, mode: u32) -> anyhow::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(mode)
        .create(dir)
        .with_context(|| format!("create directory {}", dir.display()))
}

/// An exclusive lock on `DIR/qmeshd.lock`, held for the daemon's life.
pub struct StateLock {
    _file: nix::fcntl::Flock<File>,
}

impl StateLock {
    pub fn take(state_dir: &Path) -> anyhow::Result<StateLock> {
        let path = state_dir.join("qmeshd.lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .with_context(|| format!("open {}", path.display()))?;
        let mut locked = match nix::fcntl::Flock::lock(
            file,
            nix::fcntl::FlockArg::LockExclusiveNonblock,
        ) {
            Ok(locked) => locked,
            Err((_, errno)) => {
                let holder = std::fs::read_to_string(&path).unwrap_or_default();
                bail!(
                    "another qmeshd (pid {}) already uses state directory {} ({errno}); stop it first or give --state-dir",
                    holder.trim(),
                    state_dir.display()
                );
            }
        };
        locked.set_len(0).ok();
        let _ = writeln!(locked, "{}", std::process::id());
        Ok(StateLock { _file: locked })
    }
}

/// Binds a Unix socket for clients: removes a stale socket file, refuses if
/// a daemon answers on it, and opens it to every local user (identity comes
/// from the peer credentials, not from file permissions).
pub fn bind_socket(path: &Path, mode: u32) -> anyhow::Result<tokio::net::UnixListener> {
    if let Some(parent) = path.parent() {
        ensure_dir(parent, 0o755)?;
    }
    if path.exists() {
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            bail!(
                "a daemon already listens on {}; stop it first or give another --socket",
                path.display()
            );
        }
        std::fs::remove_file(path)
            .with_context(|| format!("remove the stale socket {}", path.display()))?;
    }
    let listener = tokio::net::UnixListener::bind(path)
        .with_context(|| format!("listen on {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("set the permissions of {}", path.display()))?;
    Ok(listener)
}
