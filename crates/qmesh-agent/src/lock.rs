//! One agent per spool. Two agents on one spool would both adopt the same
//! shepherds and report every job twice, so the agent takes an exclusive
//! `flock` on `SPOOL/agent.lock` for its whole life and writes its pid in
//! it. The kernel drops the lock when the process dies, however it dies,
//! and the file is opened close-on-exec, so shepherds never inherit it.
//! The daemon relies on this when it (re)starts a local agent.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

use crate::error::{AgentError, Result};

pub const LOCK_FILE: &str = "agent.lock";

/// Held for as long as the agent runs.
#[derive(Debug)]
pub struct SpoolLock {
    _lock: Flock<File>,
}

/// Takes the spool's lock, or says which process holds it.
pub fn acquire(spool: &Path) -> Result<SpoolLock> {
    let path = spool.join(LOCK_FILE);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o644)
        .open(&path)
        .map_err(|e| AgentError::io("open lock file", &path, e))?;
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(lock) => {
            let mut file: &File = &lock;
            file.set_len(0)
                .and_then(|()| file.seek(SeekFrom::Start(0)))
                .and_then(|_| writeln!(file, "{}", std::process::id()))
                .map_err(|e| AgentError::io("write pid into", &path, e))?;
            Ok(SpoolLock { _lock: lock })
        }
        Err((mut file, Errno::EWOULDBLOCK)) => {
            let mut text = String::new();
            let pid = file
                .read_to_string(&mut text)
                .ok()
                .and_then(|_| text.trim().parse().ok());
            Err(AgentError::LockHeld {
                spool: spool.to_path_buf(),
                pid,
            })
        }
        Err((_, e)) => Err(AgentError::io("lock", &path, e.into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_names_the_holder() {
        let tmp = tempfile::tempdir().unwrap();
        let held = acquire(tmp.path()).unwrap();
        let text = std::fs::read_to_string(tmp.path().join(LOCK_FILE)).unwrap();
        assert_eq!(text.trim(), std::process::id().to_string());
        // flock locks belong to the open file description: a second open
        // in the same process conflicts like another process would.
        match acquire(tmp.path()) {
            Err(AgentError::LockHeld { pid, .. }) => assert_eq!(pid, Some(std::process::id())),
            other => panic!("expected LockHeld, got {other:?}"),
        }
        drop(held);
        acquire(tmp.path()).unwrap();
    }
}
