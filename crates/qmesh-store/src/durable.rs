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
//!
//! Finding what sled made does not list the directories at every commit:
//! a directory whose modification time has not moved since a listing made
//! well after that time has gained no entry ([`Listed::still_holds`]).
//! That was eight system calls a commit, about one commit per job.

use std::collections::BTreeSet;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// sled's files under the store directory, synced at each group commit.
pub struct Syncer {
    dir: PathBuf,
    log: File,
    /// The files of the store directory and of `blobs/`, as last synced.
    known: BTreeSet<PathBuf>,
    /// When each of the two directories was last listed.
    listed: [Option<Listed>; 2],
}

/// A directory's modification time when it was listed, and when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Listed {
    mtime: SystemTime,
    at: SystemTime,
}

/// How long after a directory's modification time a listing must have
/// been made to stand while that time does not move: a change made in the
/// same tick of the file system's clock as the one before leaves the time
/// as it was, and some file systems keep it to the second or two.
const SETTLED: Duration = Duration::from_secs(2);

impl Listed {
    /// Whether the directory, now modified at `mtime`, has the entries it
    /// had at this listing. Any entry made or removed since sets the time
    /// to the clock at that moment: after the listing, so more than
    /// [`SETTLED`] past the time recorded (unless the clock went back).
    fn still_holds(&self, mtime: SystemTime) -> bool {
        mtime == self.mtime
            && self
                .at
                .duration_since(self.mtime)
                .is_ok_and(|after| after > SETTLED)
    }
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
            listed: [None, None],
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
        for (slot, dir) in [self.dir.clone(), self.dir.join("blobs")]
            .into_iter()
            .enumerate()
        {
            let mtime = modified(&dir)?;
            if let (Some(mtime), Some(listed)) = (mtime, self.listed[slot])
                && listed.still_holds(mtime)
            {
                continue;
            }
            let at = SystemTime::now();
            let now = match mtime {
                Some(_) => files_in(&dir)?,
                None => BTreeSet::new(),
            };
            self.listed[slot] = mtime.map(|mtime| Listed { mtime, at });
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

/// `dir`'s modification time (none if it does not exist).
fn modified(dir: &Path) -> io::Result<Option<SystemTime>> {
    match std::fs::metadata(dir) {
        Ok(meta) => meta.modified().map(Some),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A store directory with its log, last changed an hour ago, and its
    /// syncer: the first listing is settled.
    fn settled_store() -> (tempfile::TempDir, Syncer) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("db"), b"log").unwrap();
        let an_hour_ago = SystemTime::now() - Duration::from_secs(3600);
        File::open(dir.path())
            .unwrap()
            .set_modified(an_hour_ago)
            .unwrap();
        let syncer = Syncer::open(dir.path()).unwrap();
        (dir, syncer)
    }

    #[test]
    fn a_listing_made_in_the_tick_of_the_last_change_does_not_stand() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let soon = Listed {
            mtime: t,
            at: t + Duration::from_millis(3),
        };
        assert!(!soon.still_holds(t));
        let later = Listed {
            mtime: t,
            at: t + Duration::from_secs(3),
        };
        assert!(later.still_holds(t));
        assert!(!later.still_holds(t + Duration::from_secs(5)));
    }

    #[test]
    fn a_file_made_after_a_settled_listing_is_found() {
        let (dir, mut syncer) = settled_store();
        // Settled: the listing stands and the next sync lists nothing.
        syncer.sync().unwrap();
        assert!(
            syncer.listed[0]
                .unwrap()
                .still_holds(modified(dir.path()).unwrap().unwrap())
        );
        let snap = dir.path().join("snap.00000001");
        std::fs::write(&snap, b"snapshot").unwrap();
        syncer.sync().unwrap();
        assert!(syncer.known.contains(&snap), "{:?}", syncer.known);
    }

    #[test]
    fn a_directory_whose_time_has_not_moved_is_not_listed_again() {
        let (dir, mut syncer) = settled_store();
        let listed = syncer.listed[0].unwrap();
        // A file slipped in with the directory's time put back: only a
        // listing would see it, and none is made.
        std::fs::write(dir.path().join("snap.00000002"), b"snapshot").unwrap();
        File::open(dir.path())
            .unwrap()
            .set_modified(listed.mtime)
            .unwrap();
        syncer.sync().unwrap();
        assert_eq!(syncer.known.len(), 1, "{:?}", syncer.known);
    }
}
