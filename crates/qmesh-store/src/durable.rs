//! What makes a group commit survive a power cut, not only a crash of the
//! daemon. sled's `flush()` writes its log and calls `sync_file_range` on
//! it: the data reaches the drive's queue, but neither the drive's cache
//! nor the file's metadata (its size) is flushed, and the files sled
//! creates (snapshots, blobs) are never synced, nor the directories that
//! name them. After sled's flush, at each group commit, the writer calls
//! [`Syncer::sync`]: `fdatasync` of sled's log file, `fsync` of every file
//! sled made since the last commit, and `fsync` of a directory whose
//! entries changed. One `fdatasync` per batch when nothing was created,
//! which is the common case.

use std::collections::BTreeSet;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// sled's files under the store directory, synced at each group commit.
pub struct Syncer {
    dir: PathBuf,
    log: File,
    /// The files of the store directory and of `blobs/`, as last synced.
    known: BTreeSet<PathBuf>,
}

impl Syncer {
    /// For the sled store in `dir` (opened: its `db` file exists). Syncs
    /// everything there now, and the directory that holds `dir`, which
    /// may just have been created.
    pub fn open(dir: &Path) -> io::Result<Syncer> {
        let log = File::open(dir.join("db"))?;
        let mut syncer = Syncer {
            dir: dir.to_path_buf(),
            log,
            known: BTreeSet::new(),
        };
        syncer.sync()?;
        if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            sync_dir(parent)?;
        }
        Ok(syncer)
    }

    /// Makes what sled has flushed durable on the disk itself.
    pub fn sync(&mut self) -> io::Result<()> {
        self.log.sync_data()?;
        for dir in [self.dir.clone(), self.dir.join("blobs")] {
            let now = files_in(&dir)?;
            let before: BTreeSet<PathBuf> = self
                .known
                .iter()
                .filter(|p| p.parent() == Some(dir.as_path()))
                .cloned()
                .collect();
            if now == before {
                continue;
            }
            for new in now.difference(&before) {
                match File::open(new) {
                    Ok(f) => f.sync_all()?,
                    // Made and removed by sled since the listing.
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e),
                }
            }
            sync_dir(&dir)?;
            self.known.retain(|p| p.parent() != Some(dir.as_path()));
            self.known.extend(now);
        }
        Ok(())
    }
}

/// The regular files directly in `dir` (none if it does not exist).
fn files_in(dir: &Path) -> io::Result<BTreeSet<PathBuf>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(BTreeSet::new()),
        Err(e) => return Err(e),
    };
    let mut out = BTreeSet::new();
    for entry in entries {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            out.insert(entry.path());
        }
    }
    Ok(out)
}

/// `fsync` of a directory: the names in it are on disk.
fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}
