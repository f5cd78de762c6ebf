//! What the job may use and what it used.
//!
//! The limits PBS sets on each of a job's processes (`-l pcput`, `pvmem`,
//! `file`, `nice`): set in the job's process between fork and exec, before
//! the identity switch, soft and hard alike as PBS Pro's and Torque's MOMs
//! do, so that the user cannot raise them again. [`apply`] makes system
//! calls only (it runs in the forked child).
//!
//! What it used: the CPU time and largest resident set of the processes the
//! shepherd reaped (`RUSAGE_CHILDREN`), read before the job starts and after
//! it and its leftovers are reaped, so the prologue's CPU time is not the
//! job's and the epilogue's comes after.

use nix::errno::Errno;
use nix::sys::resource::{Resource, UsageWho, getrusage, setrlimit};
use qmesh_proto::v1::ProcessLimits;

/// Sets `limits` on the calling process.
pub fn apply(limits: &ProcessLimits) -> Result<(), Errno> {
    for (resource, value) in [
        (Resource::RLIMIT_CPU, limits.cpu_secs),
        (Resource::RLIMIT_AS, limits.address_space),
        (Resource::RLIMIT_FSIZE, limits.file_size),
    ] {
        if let Some(value) = value {
            setrlimit(resource, value, value)?;
        }
    }
    if let Some(nice) = limits.nice {
        // SAFETY: setpriority takes plain integers and touches no memory.
        if unsafe { nix::libc::setpriority(nix::libc::PRIO_PROCESS, 0, nice) } == -1 {
            return Err(Errno::last());
        }
    }
    Ok(())
}

/// What the reaped children used so far: CPU time in microseconds, and
/// the largest resident set in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Used {
    pub cpu_micros: u64,
    pub max_rss: u64,
}

/// [`Used`] now; `None` when getrusage fails.
pub fn children_used() -> Option<Used> {
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).ok()?;
    let micros = |t: nix::sys::time::TimeVal| {
        u64::try_from(t.tv_sec()).unwrap_or(0) * 1_000_000 + u64::try_from(t.tv_usec()).unwrap_or(0)
    };
    Some(Used {
        cpu_micros: micros(usage.user_time()) + micros(usage.system_time()),
        // Linux counts ru_maxrss in kilobytes.
        max_rss: u64::try_from(usage.max_rss()).unwrap_or(0) * 1024,
    })
}

/// What the job used between `before` and `after`: whole CPU seconds
/// (rounded to the nearest, as PBS shows cput), and the largest resident
/// set (the largest of any child reaped so far; a prologue larger than
/// the job would show as the job's).
pub fn job_used(before: Option<Used>, after: Option<Used>) -> (Option<u64>, Option<u64>) {
    match (before, after) {
        (Some(before), Some(after)) => {
            let micros = after.cpu_micros.saturating_sub(before.cpu_micros);
            let rss = (after.max_rss > 0).then_some(after.max_rss);
            (Some((micros + 500_000) / 1_000_000), rss)
        }
        _ => (None, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    #[test]
    fn the_limits_hold_in_the_process_and_its_children() {
        let limits = ProcessLimits {
            cpu_secs: Some(7),
            address_space: Some(512 << 20),
            file_size: Some(1 << 20),
            nice: Some(3),
            job_cpu_secs: None,
        };
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg("ulimit -t; ulimit -v; ulimit -H -t; cut -d' ' -f19 /proc/self/stat");
        // SAFETY: apply makes system calls only.
        unsafe {
            cmd.pre_exec(move || apply(&limits).map_err(std::io::Error::from));
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let nice_before: i64 = std::fs::read_to_string("/proc/self/stat")
            .unwrap()
            .split(' ')
            .nth(18)
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(lines[0], "7", "soft RLIMIT_CPU: {text}");
        assert_eq!(
            lines[1],
            (512 * 1024).to_string(),
            "RLIMIT_AS in kB: {text}"
        );
        assert_eq!(lines[2], "7", "the hard limit too: {text}");
        let nice: i64 = lines[3].parse().unwrap();
        assert_eq!(nice, (nice_before + 3).min(19), "{text}");
    }

    #[test]
    fn no_limits_change_nothing() {
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c").arg("ulimit -t");
        // SAFETY: apply makes system calls only.
        unsafe {
            cmd.pre_exec(|| apply(&ProcessLimits::default()).map_err(std::io::Error::from));
        }
        let out = cmd.output().unwrap();
        let ours = nix::sys::resource::getrlimit(Resource::RLIMIT_CPU)
            .unwrap()
            .0;
        let shown = String::from_utf8(out.stdout).unwrap();
        if ours == nix::libc::RLIM_INFINITY {
            assert_eq!(shown.trim(), "unlimited");
        }
    }

    #[test]
    fn the_jobs_share_is_the_difference_and_rounds_to_seconds() {
        let before = Used {
            cpu_micros: 2_000_000,
            max_rss: 4096,
        };
        let after = Used {
            cpu_micros: 5_600_000,
            max_rss: 1 << 20,
        };
        assert_eq!(
            job_used(Some(before), Some(after)),
            (Some(4), Some(1 << 20))
        );
        assert_eq!(job_used(None, Some(after)), (None, None));
        let used = children_used().expect("getrusage works");
        assert!(used.cpu_micros < u64::MAX);
    }
}
