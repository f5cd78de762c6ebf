//! One job's cgroup on this host: made with its limits before the job
//! starts, joined by the job's process between fork and exec (and by
//! pbsdsh's tasks), read for what the job used, emptied with SIGKILL and
//! removed when the job ends.
//!
//! The limits, as PBS Pro's cgroup hook and Slurm's task/cgroup set them:
//! memory is what the job asked for on this host, with no swap beyond it
//! (v1 `memory.limit_in_bytes` and `memory.memsw.limit_in_bytes`; v2
//! `memory.max`, `memory.swap.max = 0`, and `memory.oom.group = 1`, so that
//! the kernel kills the whole job, not one of its processes); CPU is a
//! quota of as many CPUs' time as it was given (`cpu.cfs_quota_us`,
//! `cpu.max`). What it used: CPU time of all its processes (`cpuacct.usage`,
//! `cpu.stat`), its memory's peak (`memory.max_usage_in_bytes`,
//! `memory.peak`), memory and swap's peak for `vmem`, as PBS's hook
//! reports them, and whether the kernel killed one of its processes for
//! its memory (`oom_kill` in `memory.oom_control` or `memory.events`).

use std::fs;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::record::Cgroups;

/// What the job may use on this host.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Allowance {
    /// Bytes of memory; `None`: not limited.
    pub mem: Option<u64>,
    /// CPUs' worth of time; `None` or 0: not limited.
    pub cpus: Option<u32>,
}

/// What the job's processes used together, as far as the host tells.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub cpu_micros: Option<u64>,
    /// Peak of memory, bytes.
    pub mem_peak: Option<u64>,
    /// Peak of memory and swap together, bytes.
    pub vmem_peak: Option<u64>,
    /// Processes the kernel killed at the memory limit.
    pub oom_kills: u64,
}

/// A job's cgroup directories (one per v1 controller, or the one of v2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobCgroup {
    v2: bool,
    /// Where memory (and, in v2, everything) is.
    memory: PathBuf,
    cpu: Option<PathBuf>,
    cpuacct: Option<PathBuf>,
    /// v1: where it is frozen when suspended (made then).
    freezer: Option<PathBuf>,
}

/// A cgroup directory's name for a job: its id, made safe for a path.
pub fn dir_name(job_id: &str) -> String {
    let name: String = job_id
        .chars()
        .map(|c| if c == '/' || c.is_control() { '_' } else { c })
        .collect();
    match name.as_str() {
        "" | "." | ".." => format!("job_{name}"),
        _ => name,
    }
}

impl JobCgroup {
    /// The cgroup of `job_id` under `cgroups` (made or not).
    pub fn of(cgroups: &Cgroups, job_id: &str) -> JobCgroup {
        let name = dir_name(job_id);
        match cgroups {
            Cgroups::V2 { base, cpu } => JobCgroup {
                v2: true,
                memory: base.join(&name),
                cpu: cpu.then(|| base.join(&name)),
                cpuacct: Some(base.join(&name)),
                freezer: None,
            },
            Cgroups::V1 {
                memory,
                cpu,
                cpuacct,
                freezer,
            } => JobCgroup {
                v2: false,
                memory: memory.join(&name),
                cpu: cpu.as_ref().map(|d| d.join(&name)),
                cpuacct: cpuacct.as_ref().map(|d| d.join(&name)),
                freezer: freezer.as_ref().map(|d| d.join(&name)),
            },
        }
    }

    /// Its directories, each once (v1's cpu and cpuacct may share a mount).
    fn dirs(&self) -> Vec<&Path> {
        let mut dirs: Vec<&Path> = vec![&self.memory];
        for dir in [&self.cpu, &self.cpuacct].into_iter().flatten() {
            if !dirs.contains(&dir.as_path()) {
                dirs.push(dir);
            }
        }
        dirs
    }

    /// The directory that holds the memory controller's files.
    pub fn path(&self) -> &Path {
        &self.memory
    }

    /// Makes the cgroup (or takes the one left by an earlier run of the
    /// job here) and sets `allowance` on it.
    pub fn create(&self, allowance: Allowance) -> io::Result<()> {
        for dir in self.dirs() {
            match fs::create_dir(dir) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(at(dir, e)),
            }
        }
        let mem = &self.memory;
        if self.v2 {
            if let Some(bytes) = allowance.mem {
                set(mem, "memory.max", bytes)?;
                // Swap is not more room: the job's limit is its memory.
                set_if_there(mem, "memory.swap.max", 0)?;
            }
            set_if_there(mem, "memory.oom.group", 1)?;
        } else if let Some(bytes) = allowance.mem {
            set(mem, "memory.limit_in_bytes", bytes)?;
            set_if_there(mem, "memory.memsw.limit_in_bytes", bytes)?;
        }
        if let (Some(dir), Some(cpus)) = (&self.cpu, allowance.cpus.filter(|&n| n > 0)) {
            let period: u64 = 100_000;
            let quota = period * u64::from(cpus);
            if self.v2 {
                write(dir, "cpu.max", &format!("{quota} {period}"))?;
            } else {
                set(dir, "cpu.cfs_period_us", period)?;
                set(dir, "cpu.cfs_quota_us", quota)?;
            }
        }
        Ok(())
    }

    /// Whether it exists (an agent's task joins only a job's cgroup that
    /// its shepherd, or the agent itself, made).
    pub fn exists(&self) -> bool {
        self.memory.is_dir()
    }

    /// `cgroup.procs` of each directory, open for writing: what a child
    /// writes "0" to between fork and exec, to join.
    pub fn procs_files(&self) -> io::Result<Vec<OwnedFd>> {
        self.dirs()
            .into_iter()
            .map(|dir| {
                let path = dir.join("cgroup.procs");
                fs::OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .map(OwnedFd::from)
                    .map_err(|e| at(&path, e))
            })
            .collect()
    }

    /// The pids in it.
    pub fn pids(&self) -> Vec<i32> {
        pids_of(&self.memory)
    }

    /// Freezes every process of the job (`qsig -s suspend`): v2's
    /// `cgroup.freeze`; in v1 the job's processes move into its freezer
    /// cgroup, frozen before they enter. Waits up to `within` for the
    /// kernel to say all are frozen. An error: the job cannot be frozen
    /// here (no freezer, an old kernel) and the caller stops it otherwise.
    pub fn freeze(&self, within: Duration) -> io::Result<()> {
        let deadline = Instant::now() + within;
        if self.v2 {
            write(&self.memory, "cgroup.freeze", "1")?;
            while keyed(&self.memory, "cgroup.events", "frozen") != Some(1) {
                if Instant::now() >= deadline {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("{} is not frozen within {within:?}", self.memory.display()),
                    ));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            return Ok(());
        }
        let dir = self
            .freezer
            .as_ref()
            .ok_or_else(|| io::Error::new(io::ErrorKind::Unsupported, "no freezer hierarchy"))?;
        match fs::create_dir(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(at(dir, e)),
        }
        write(dir, "freezer.state", "FROZEN")?;
        // A process that forks while the others move: its child is in the
        // job's memory cgroup and is moved in the next round.
        loop {
            let inside = pids_of(dir);
            let outside: Vec<i32> = self
                .pids()
                .into_iter()
                .filter(|p| !inside.contains(p))
                .collect();
            let state = fs::read_to_string(dir.join("freezer.state")).unwrap_or_default();
            if outside.is_empty() && state.trim() == "FROZEN" {
                return Ok(());
            }
            for pid in outside {
                // It may have ended meanwhile.
                let _ = write(dir, "cgroup.procs", &pid.to_string());
            }
            if Instant::now() >= deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("{} is not frozen within {within:?}", dir.display()),
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Lets the job's processes run again. The v1 freezer cgroup stays
    /// until the job ends (a later suspension takes it again).
    pub fn thaw(&self) -> io::Result<()> {
        if self.v2 {
            return write(&self.memory, "cgroup.freeze", "0");
        }
        match &self.freezer {
            Some(dir) if dir.is_dir() => write(dir, "freezer.state", "THAWED"),
            _ => Ok(()),
        }
    }

    /// Sends SIGKILL to every process in it (v2: at once, through
    /// `cgroup.kill` where the kernel has it). Returns how many were there.
    /// A frozen job is thawed first: frozen processes do not die.
    pub fn kill_all(&self) -> usize {
        let _ = self.thaw();
        let pids = self.pids();
        if self.v2 && fs::write(self.memory.join("cgroup.kill"), "1").is_ok() {
            return pids.len();
        }
        for &pid in &pids {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        pids.len()
    }

    /// What its processes used so far.
    pub fn usage(&self) -> Usage {
        let mem = &self.memory;
        let oom_kills = if self.v2 {
            keyed(mem, "memory.events", "oom_kill")
        } else {
            keyed(mem, "memory.oom_control", "oom_kill")
        }
        .unwrap_or(0);
        if self.v2 {
            let peak = number(mem, "memory.peak");
            let swap = number(mem, "memory.swap.peak");
            Usage {
                cpu_micros: keyed(mem, "cpu.stat", "usage_usec"),
                mem_peak: peak,
                vmem_peak: peak.map(|p| p + swap.unwrap_or(0)),
                oom_kills,
            }
        } else {
            Usage {
                cpu_micros: self
                    .cpuacct
                    .as_ref()
                    .and_then(|d| number(d, "cpuacct.usage"))
                    .map(|nanos| nanos / 1000),
                mem_peak: number(mem, "memory.max_usage_in_bytes"),
                vmem_peak: number(mem, "memory.memsw.max_usage_in_bytes"),
                oom_kills,
            }
        }
    }

    /// Its memory limit as the kernel holds it; `None`: unlimited.
    pub fn memory_limit(&self) -> Option<u64> {
        let file = if self.v2 {
            "memory.max"
        } else {
            "memory.limit_in_bytes"
        };
        // v1 says "unlimited" with a huge number, v2 with "max".
        number(&self.memory, file).filter(|&n| n < (1 << 62))
    }

    /// Kills what is left in it and removes it, waiting up to `within`
    /// for its processes to go (a cgroup with processes cannot be removed).
    pub fn remove(&self, within: Duration) -> io::Result<()> {
        let deadline = Instant::now() + within;
        let frozen = self.freezer.as_deref().filter(|d| d.is_dir());
        for dir in frozen.into_iter().chain(self.dirs().into_iter().rev()) {
            loop {
                match fs::remove_dir(dir) {
                    Ok(()) => break,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => break,
                    Err(e) if Instant::now() >= deadline => return Err(at(dir, e)),
                    Err(_) => {
                        self.kill_all();
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
            }
        }
        Ok(())
    }
}

/// Between fork and exec: moves the calling process into the cgroups whose
/// `cgroup.procs` are `fds`. Only system calls.
pub fn join(fds: &[RawFd]) -> Result<(), nix::errno::Errno> {
    for &fd in fds {
        // SAFETY: `fd` is open until exec (the caller owns it); write
        // touches only the two bytes given.
        if unsafe { nix::libc::write(fd, b"0\n".as_ptr().cast(), 2) } < 0 {
            return Err(nix::errno::Errno::last());
        }
    }
    Ok(())
}

/// The raw descriptors of `files`, for [`join`].
pub fn raw(files: &[OwnedFd]) -> Vec<RawFd> {
    files.iter().map(AsRawFd::as_raw_fd).collect()
}

fn pids_of(dir: &Path) -> Vec<i32> {
    fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

fn at(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

fn write(dir: &Path, file: &str, value: &str) -> io::Result<()> {
    let path = dir.join(file);
    fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .and_then(|mut f| f.write_all(value.as_bytes()))
        .map_err(|e| at(&path, e))
}

fn set(dir: &Path, file: &str, value: u64) -> io::Result<()> {
    write(dir, file, &value.to_string())
}

/// Sets a file the kernel may not have (no swap accounting, an older
/// kernel): its absence is no error.
fn set_if_there(dir: &Path, file: &str, value: u64) -> io::Result<()> {
    if dir.join(file).exists() {
        set(dir, file, value)
    } else {
        Ok(())
    }
}

fn number(dir: &Path, file: &str) -> Option<u64> {
    fs::read_to_string(dir.join(file)).ok()?.trim().parse().ok()
}

/// The value of `key` in a file of `key value` lines.
fn keyed(dir: &Path, file: &str, key: &str) -> Option<u64> {
    let text = fs::read_to_string(dir.join(file)).ok()?;
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_ids_make_safe_names() {
        assert_eq!(dir_name("17.server"), "17.server");
        assert_eq!(dir_name("12[3].srv"), "12[3].srv");
        assert_eq!(dir_name("a/../b"), "a_.._b");
        assert_eq!(dir_name(".."), "job_..");
    }

    #[test]
    fn v1_controllers_sharing_a_mount_make_one_directory() {
        let cg = JobCgroup::of(
            &Cgroups::V1 {
                memory: "/m/qmesh".into(),
                cpu: Some("/c/qmesh".into()),
                cpuacct: Some("/c/qmesh".into()),
                freezer: Some("/f/qmesh".into()),
            },
            "4.s",
        );
        // The freezer's is not among them: it is made at a suspension.
        assert_eq!(
            cg.dirs(),
            [Path::new("/m/qmesh/4.s"), Path::new("/c/qmesh/4.s")]
        );
        let v2 = JobCgroup::of(
            &Cgroups::V2 {
                base: "/u/qmesh".into(),
                cpu: true,
            },
            "4.s",
        );
        assert_eq!(v2.dirs(), [Path::new("/u/qmesh/4.s")]);
    }

    #[test]
    fn usage_is_read_from_the_kernels_files() {
        // The files as the kernel writes them, in a scratch directory.
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path().join("7.s");
        fs::create_dir(&d).unwrap();
        fs::write(d.join("memory.max_usage_in_bytes"), "3145728\n").unwrap();
        fs::write(d.join("memory.memsw.max_usage_in_bytes"), "4194304\n").unwrap();
        fs::write(
            d.join("memory.oom_control"),
            "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
        )
        .unwrap();
        fs::write(d.join("cpuacct.usage"), "2500000000\n").unwrap();
        let cg = JobCgroup::of(
            &Cgroups::V1 {
                memory: tmp.path().into(),
                cpu: None,
                cpuacct: Some(tmp.path().into()),
                freezer: None,
            },
            "7.s",
        );
        assert_eq!(
            cg.usage(),
            Usage {
                cpu_micros: Some(2_500_000),
                mem_peak: Some(3 << 20),
                vmem_peak: Some(4 << 20),
                oom_kills: 2,
            }
        );
        fs::write(d.join("memory.limit_in_bytes"), "9223372036854771712\n").unwrap();
        assert_eq!(cg.memory_limit(), None, "v1's unlimited");

        let v2 = tmp.path().join("v2");
        fs::create_dir_all(v2.join("8.s")).unwrap();
        let d = v2.join("8.s");
        fs::write(d.join("memory.peak"), "1048576\n").unwrap();
        fs::write(d.join("memory.swap.peak"), "4096\n").unwrap();
        fs::write(
            d.join("memory.events"),
            "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n",
        )
        .unwrap();
        fs::write(d.join("cpu.stat"), "usage_usec 1500\nuser_usec 1000\n").unwrap();
        fs::write(d.join("memory.max"), "max\n").unwrap();
        let cg = JobCgroup::of(
            &Cgroups::V2 {
                base: v2,
                cpu: false,
            },
            "8.s",
        );
        assert_eq!(
            cg.usage(),
            Usage {
                cpu_micros: Some(1500),
                mem_peak: Some(1 << 20),
                vmem_peak: Some((1 << 20) + 4096),
                oom_kills: 1,
            }
        );
        assert_eq!(cg.memory_limit(), None, "v2's max");
    }
}
