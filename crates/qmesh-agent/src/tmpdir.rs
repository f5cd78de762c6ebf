//! The job's TMPDIR, as PBS Pro's MOM makes it: `BASE/pbs.JOBID` (BASE is
//! the agent's `--tmpdir-base`, PBS's `$tmpdir`), owned by the job's
//! user, mode 0700, made before the job starts and removed with all it
//! holds once the job has ended (after the epilogue, which may still read
//! it).
//!
//! The shepherd makes and removes it, so an agent restart changes
//! nothing; when a shepherd vanished without a result, the agent that
//! finds out removes it (`supervise::vanished`). The base is usually
//! world-writable: whatever already stands at the name (a leftover, or a
//! user's link) is removed without following links, and the directory is
//! opened with `O_NOFOLLOW` before it is given away.

use std::fs::{self, DirBuilder};
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;
use nix::sys::stat::Mode;
use nix::unistd::{Gid, Uid};

use crate::record::Launch;

/// The default base: PBS's `/var/tmp`, else the system's temporary
/// directory.
pub fn default_base() -> PathBuf {
    let var_tmp = Path::new("/var/tmp");
    if var_tmp.is_dir() {
        var_tmp.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// `BASE/pbs.JOBID`; a `/` in the id (there is none in qmesh's) would
/// leave the base, so it becomes `_`.
pub fn path(base: &Path, job_id: &str) -> PathBuf {
    base.join(format!("pbs.{}", job_id.replace('/', "_")))
}

/// The job's TMPDIR, when the agent that launched it makes one.
pub fn of(launch: &Launch) -> Option<PathBuf> {
    let base = launch.added.tmpdir_base.as_deref()?;
    Some(path(base, &launch.order.job_id))
}

/// Makes `dir` afresh: mode 0700, owned by `owner` when given (else by
/// whoever runs this).
pub fn make(dir: &Path, owner: Option<(Uid, Gid)>) -> io::Result<()> {
    remove(dir)?;
    DirBuilder::new().mode(0o700).create(dir)?;
    let fd = nix::fcntl::open(
        dir,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    if let Some((uid, gid)) = owner {
        nix::unistd::fchown(&fd, Some(uid), Some(gid))?;
    }
    nix::sys::stat::fchmod(&fd, Mode::from_bits_truncate(0o700))?;
    Ok(())
}

/// Removes `dir` and everything in it (links are removed, not followed);
/// nothing there is no error.
pub fn remove(dir: &Path) -> io::Result<()> {
    match fs::symlink_metadata(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
        Ok(meta) if meta.is_dir() => fs::remove_dir_all(dir),
        Ok(_) => fs::remove_file(dir),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    #[test]
    fn named_as_pbs_pro_names_it() {
        assert_eq!(
            path(Path::new("/var/tmp"), "17.server"),
            Path::new("/var/tmp/pbs.17.server")
        );
        assert_eq!(
            path(Path::new("/t"), "1.a/b"),
            Path::new("/t/pbs.1.a_b"),
            "an id cannot leave the base"
        );
        let mut launch = Launch::default();
        launch.order.job_id = "3.s".into();
        assert_eq!(of(&launch), None, "older launches get none");
        launch.added.tmpdir_base = Some("/scratch".into());
        assert_eq!(of(&launch), Some(PathBuf::from("/scratch/pbs.3.s")));
    }

    #[test]
    fn made_private_and_afresh_then_removed_with_its_contents() {
        let base = tempfile::tempdir().unwrap();
        let dir = path(base.path(), "4.s");
        fs::create_dir(&dir).unwrap();
        fs::write(dir.join("left-over"), "x").unwrap();
        make(&dir, None).unwrap();
        let meta = fs::metadata(&dir).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o700);
        assert_eq!(meta.uid(), Uid::effective().as_raw());
        assert!(!dir.join("left-over").exists(), "a leftover is not reused");
        fs::create_dir(dir.join("sub")).unwrap();
        fs::write(dir.join("sub/f"), "y").unwrap();
        remove(&dir).unwrap();
        assert!(!dir.exists());
        remove(&dir).unwrap();
    }

    #[test]
    fn a_link_at_the_name_is_removed_not_followed() {
        let base = tempfile::tempdir().unwrap();
        let elsewhere = base.path().join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        fs::write(elsewhere.join("keep"), "k").unwrap();
        let dir = path(base.path(), "5.s");
        std::os::unix::fs::symlink(&elsewhere, &dir).unwrap();
        make(&dir, None).unwrap();
        assert!(!fs::symlink_metadata(&dir).unwrap().file_type().is_symlink());
        assert!(elsewhere.join("keep").exists());
        std::os::unix::fs::symlink(&elsewhere, dir.join("link")).unwrap();
        remove(&dir).unwrap();
        assert!(elsewhere.join("keep").exists(), "removal follows no link");
    }
}
