//! What `/proc` says about processes: is this pid still our shepherd (pids
//! are reused, so a number in a file proves nothing by itself), and which
//! processes are a shepherd's children (orphans of the job, to clean up).

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The `argv[0]` the agent gives its shepherds, so that `ps` shows them and a
/// restarted agent recognises them.
pub const SHEPHERD_ARG0: &str = "qmesh-agent";
/// The hidden subcommand that runs a shepherd.
pub const SHEPHERD_COMMAND: &str = "shepherd";

/// The fields of `/proc/PID/stat` we use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcStat {
    /// R, S, D, Z, T...
    pub state: char,
    pub ppid: i32,
    pub pgrp: i32,
    pub session: i32,
}

/// Parses the content of `/proc/PID/stat`. The command name (field 2) may
/// hold spaces and parentheses, so the fields are counted after the last ')'.
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    let session = fields.next()?.parse().ok()?;
    Some(ProcStat {
        state,
        ppid,
        pgrp,
        session,
    })
}

pub fn stat(pid: i32) -> Option<ProcStat> {
    parse_stat(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Whether `pid` exists and is not a zombie.
pub fn alive(pid: i32) -> bool {
    stat(pid).is_some_and(|s| s.state != 'Z' && s.state != 'X')
}

/// Whether a `/proc/PID/cmdline` content is a shepherd for `dir`.
pub fn is_shepherd_cmdline(cmdline: &[u8], dir: &Path) -> bool {
    let mut args = cmdline.split(|b| *b == 0);
    let arg0 = args.next().unwrap_or_default();
    let base = arg0.rsplit(|b| *b == b'/').next().unwrap_or_default();
    base == SHEPHERD_ARG0.as_bytes()
        && args.next() == Some(SHEPHERD_COMMAND.as_bytes())
        && args.next() == Some(dir.as_os_str().as_bytes())
}

/// Whether `pid` is a live shepherd for the job directory `dir`.
pub fn is_shepherd(pid: i32, dir: &Path) -> bool {
    if pid <= 0 || !alive(pid) {
        return false;
    }
    fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| is_shepherd_cmdline(&c, dir))
}

/// A live shepherd for `dir`, found by scanning every process (for when
/// `shepherd.pid` was never written: an agent that died mid-launch).
pub fn find_shepherd(dir: &Path) -> Option<i32> {
    pids().find(|&pid| is_shepherd(pid, dir))
}

/// The live children of `parent`.
pub fn children_of(parent: i32) -> Vec<i32> {
    pids()
        .filter(|&pid| stat(pid).is_some_and(|s| s.ppid == parent && s.state != 'Z'))
        .collect()
}

/// All process ids in `/proc`.
fn pids() -> impl Iterator<Item = i32> {
    fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| pid_of(&e.file_name()))
}

fn pid_of(name: &OsStr) -> Option<i32> {
    name.to_str()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        let text = "4242 (a (weird) name) S 1 4242 4242 0 -1 4194560 100 0 0 0";
        assert_eq!(
            parse_stat(text),
            Some(ProcStat {
                state: 'S',
                ppid: 1,
                pgrp: 4242,
                session: 4242
            })
        );
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn shepherd_cmdline_must_name_the_same_directory() {
        let dir = Path::new("/var/spool/qmesh/jobs/17");
        let good = b"qmesh-agent\0shepherd\0/var/spool/qmesh/jobs/17\0";
        assert!(is_shepherd_cmdline(good, dir));
        let full = b"/usr/sbin/qmesh-agent\0shepherd\0/var/spool/qmesh/jobs/17\0";
        assert!(is_shepherd_cmdline(full, dir));
        let other = b"qmesh-agent\0shepherd\0/var/spool/qmesh/jobs/170\0";
        assert!(!is_shepherd_cmdline(other, dir));
        assert!(!is_shepherd_cmdline(b"sleep\x00100\x00", dir));
        assert!(!is_shepherd_cmdline(b"", dir));
    }

    #[test]
    fn this_process_is_alive_and_not_a_shepherd() {
        let me = std::process::id() as i32;
        assert!(alive(me));
        assert!(!is_shepherd(me, Path::new("/nowhere")));
        assert!(!alive(-1));
    }
}
