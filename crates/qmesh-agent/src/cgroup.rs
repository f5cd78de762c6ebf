//! Contained jobs: each job runs in its own cgroup on each host it uses,
//! so that the kernel holds it to the memory it asked for and to the CPUs
//! it was given, every process it starts (pbsdsh's and qmesh-exec's
//! too, and those that leave its session) is found and killed with it,
//! and what all of them used together is measured.
//!
//! The agent finds out once, at start, what the host offers
//! ([`detect`]): cgroup v2 where the unified hierarchy has the memory
//! controller; else cgroup v1 where a memory hierarchy is mounted (with
//! cpu and cpuacct when they are); else nothing, which it says, and jobs
//! run as before. The answer ([`Cgroups`]) travels in each job's
//! `launch.json` (so the type is [`crate::record`]'s), and the shepherd
//! that makes the job's cgroup ([`job`]) needs no detection of its own.
//!
//! Where the job cgroups go:
//! - v2: `MOUNT/qmesh/AGENT/JOBID`. A v2 cgroup that holds processes
//!   cannot hand its controllers to children, so qmesh takes its own
//!   cgroup under the root, which may.
//! - v1: `MOUNT/CONTROLLER/OWN/qmesh/AGENT/JOBID` for each controller,
//!   where OWN is the agent's own cgroup there. The freezer's is made only
//!   when the job is suspended (`qsig -s suspend`), which moves the job's
//!   processes into it: a job that is never suspended costs nothing there.
//!   v2 freezes the job's own cgroup (`cgroup.freeze`). v1 has no such rule, and
//!   so a job stays inside whatever limits the agent itself is under.
//!
//! AGENT is the agent's spool, as a name (`var-spool-qmesh`): job ids are
//! unique to a server, not to a host, and a host may run several agents
//! (of different servers, or a test's). A clean stop removes it.

pub mod job;

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::record::Cgroups;

/// The directory under which jobs' cgroups are made, in each hierarchy.
pub const BASE_NAME: &str = "qmesh";

impl std::fmt::Display for Cgroups {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Cgroups::V2 { base, cpu } => {
                let cpu = if *cpu { "memory and cpu" } else { "memory" };
                write!(f, "cgroup v2 ({cpu}) under {}", base.display())
            }
            Cgroups::V1 {
                memory,
                cpu,
                cpuacct,
                freezer,
            } => {
                write!(f, "cgroup v1: memory under {}", memory.display())?;
                if let Some(cpu) = cpu {
                    write!(f, ", cpu under {}", cpu.display())?;
                }
                if let Some(acct) = cpuacct {
                    write!(f, ", cpuacct under {}", acct.display())?;
                }
                if let Some(freezer) = freezer {
                    write!(f, ", freezer under {}", freezer.display())?;
                }
                Ok(())
            }
        }
    }
}

/// `--cgroups`: which the agent may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Wanted {
    /// v2 where it has the memory controller, else v1, else none.
    Auto,
    V2,
    V1,
    /// Jobs run uncontained.
    Off,
}

/// The cgroup mounts of `/proc/self/mountinfo`: the v2 mount, and each v1
/// controller's mount.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mounts {
    pub v2: Option<PathBuf>,
    pub v1: BTreeMap<String, PathBuf>,
}

/// Reads the mount table's cgroup file systems. A line is `ID PARENT
/// MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER`;
/// a v1 mount names its controllers in SUPER (`rw,cpu,cpuacct`).
pub fn parse_mounts(mountinfo: &str) -> Mounts {
    let mut mounts = Mounts::default();
    for line in mountinfo.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let Some(point) = left.split(' ').nth(4) else {
            continue;
        };
        let point = PathBuf::from(unescape(point));
        let mut right = right.split(' ');
        match (right.next(), right.nth(1)) {
            (Some("cgroup2"), _) => {
                mounts.v2.get_or_insert(point);
            }
            (Some("cgroup"), Some(options)) => {
                for option in options.split(',') {
                    if matches!(option, "memory" | "cpu" | "cpuacct") {
                        mounts
                            .v1
                            .entry(option.to_string())
                            .or_insert_with(|| point.clone());
                    }
                }
            }
            _ => {}
        }
    }
    mounts
}

/// The mount table writes a space as `\040` (and so on, in octal).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let code = (bytes[i] == b'\\')
            .then(|| bytes.get(i + 1..i + 4))
            .flatten()
            .and_then(|digits| std::str::from_utf8(digits).ok())
            .and_then(|digits| u8::from_str_radix(digits, 8).ok());
        if let Some(code) = code {
            out.push(code);
            i += 4;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A process's own cgroups, from `/proc/PID/cgroup`: the v2 path (line
/// `0::PATH`) and each v1 controller's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Own {
    pub v2: Option<String>,
    pub v1: BTreeMap<String, String>,
}

pub fn parse_own(proc_cgroup: &str) -> Own {
    let mut own = Own::default();
    for line in proc_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if controllers.is_empty() {
            own.v2 = Some(path.to_string());
        } else {
            for c in controllers.split(',') {
                own.v1.insert(c.to_string(), path.to_string());
            }
        }
    }
    own
}

/// `base` joined with an absolute cgroup path (`/a/b`).
fn under(base: &Path, path: &str) -> PathBuf {
    base.join(path.trim_start_matches('/'))
}

/// The name of an agent's own level: its spool's path, `/` as `-`
/// (the end of it, if that is too long for a name).
pub fn agent_name(spool: &Path) -> String {
    let name: String = spool
        .to_string_lossy()
        .trim_matches('/')
        .chars()
        .map(|c| if c == '/' || c.is_control() { '-' } else { c })
        .collect();
    let skip = name.chars().count().saturating_sub(200);
    let name: String = name.chars().skip(skip).collect();
    match name.as_str() {
        "" | "." | ".." => "root".to_string(),
        _ => name,
    }
}

/// What this host offers for `wanted`, or why jobs cannot be contained.
/// Makes the cgroups (`qmesh/AGENT`) it will put jobs under.
pub fn detect(wanted: Wanted, agent: &str) -> Result<Cgroups, String> {
    if wanted == Wanted::Off {
        return Err("--cgroups off".into());
    }
    let mountinfo = fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read /proc/self/mountinfo ({e})"))?;
    let own = fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("cannot read /proc/self/cgroup ({e})"))?;
    let (mounts, own) = (parse_mounts(&mountinfo), parse_own(&own));
    let v2 = || match &mounts.v2 {
        Some(mount) => set_up_v2(mount, agent),
        None => Err("no cgroup2 file system is mounted".to_string()),
    };
    let v1 = || set_up_v1(&mounts, &own, agent);
    match wanted {
        Wanted::V2 => v2(),
        Wanted::V1 => v1(),
        Wanted::Auto | Wanted::Off => v2()
            .or_else(|why2| v1().map_err(|why1| format!("cgroup v2: {why2}; cgroup v1: {why1}"))),
    }
}

fn controllers(dir: &Path) -> Vec<String> {
    fs::read_to_string(dir.join("cgroup.controllers"))
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// Makes `mount/qmesh/AGENT` with the memory (and cpu) controller for
/// its children.
fn set_up_v2(mount: &Path, agent: &str) -> Result<Cgroups, String> {
    let offered = controllers(mount);
    if !offered.iter().any(|c| c == "memory") {
        return Err(format!(
            "the memory controller is not available in {} (it offers: {}); \
             it may be bound to a v1 hierarchy",
            mount.display(),
            if offered.is_empty() {
                "none".to_string()
            } else {
                offered.join(" ")
            }
        ));
    }
    let cpu = offered.iter().any(|c| c == "cpu");
    let wanted = if cpu { "+memory +cpu" } else { "+memory" };
    let enable = |dir: &Path| {
        fs::write(dir.join("cgroup.subtree_control"), wanted).map_err(|e| {
            format!(
                "cannot enable {wanted} in {}/cgroup.subtree_control ({e})",
                dir.display()
            )
        })
    };
    enable(mount)?;
    let qmesh = mount.join(BASE_NAME);
    make_dir(&qmesh)?;
    enable(&qmesh)?;
    let base = qmesh.join(agent);
    make_dir(&base)?;
    enable(&base)?;
    Ok(Cgroups::V2 { base, cpu })
}

/// Makes `qmesh/AGENT` under the agent's own cgroup of each v1
/// controller.
fn set_up_v1(mounts: &Mounts, own: &Own, agent: &str) -> Result<Cgroups, String> {
    let base = |controller: &str| -> Option<PathBuf> {
        let mount = mounts.v1.get(controller)?;
        let path = own.v1.get(controller).map_or("/", String::as_str);
        Some(under(mount, path).join(BASE_NAME).join(agent))
    };
    let memory = base("memory").ok_or("no memory hierarchy is mounted")?;
    make_dir(&memory)?;
    // cpu, cpuacct and freezer are a help, not a need: without them a job
    // is held to its memory and killed whole, its CPU time comes from
    // rusage, and a suspended job is stopped with SIGSTOP.
    let optional = |controller: &str| base(controller).filter(|dir| make_dir(dir).is_ok());
    Ok(Cgroups::V1 {
        memory,
        cpu: optional("cpu"),
        cpuacct: optional("cpuacct"),
        freezer: optional("freezer"),
    })
}

/// The directories jobs' cgroups are made in, one per hierarchy.
fn bases(cgroups: &Cgroups) -> Vec<&PathBuf> {
    match cgroups {
        Cgroups::V2 { base, .. } => vec![base],
        Cgroups::V1 {
            memory,
            cpu,
            cpuacct,
            freezer,
        } => [
            Some(memory),
            cpu.as_ref(),
            cpuacct.as_ref(),
            freezer.as_ref(),
        ]
        .into_iter()
        .flatten()
        .collect(),
    }
}

/// At a clean stop: the agent's own level goes, if no job's cgroup is
/// left in it (jobs outlive the agent; then it stays for the next).
pub fn remove_agent_level(cgroups: &Cgroups) {
    for base in bases(cgroups) {
        let _ = fs::remove_dir(base);
    }
}

/// Removes the job cgroups under this agent's level that belong to no
/// job it still has (`live` says which names it has; see
/// [`job::dir_name`]). A shepherd killed with SIGKILL, or a host that went
/// down under its jobs, leaves its job's cgroup behind, and nothing else
/// would remove it. The kernel refuses to remove one that still holds a
/// process, so a job running outside the spool is never touched. How many
/// went.
pub fn remove_left_behind(cgroups: &Cgroups, live: &dyn Fn(&str) -> bool) -> usize {
    bases(cgroups)
        .into_iter()
        .map(|base| remove_children(base, live))
        .sum()
}

/// Removes every agent level left by agents whose spools were under `dir`
/// (their names start with its name, [`agent_name`]), with the job
/// cgroups left in them: for test suites and benchmarks, once every
/// process that ran there is gone or going. How many levels are still
/// there (a cgroup whose last process has not exited yet cannot go: try
/// again).
pub fn remove_levels_under(dir: &Path) -> usize {
    let prefix = agent_name(dir);
    let (Ok(mountinfo), Ok(own)) = (
        fs::read_to_string("/proc/self/mountinfo"),
        fs::read_to_string("/proc/self/cgroup"),
    ) else {
        return 0;
    };
    let (mounts, own) = (parse_mounts(&mountinfo), parse_own(&own));
    let mut qmesh_dirs: Vec<PathBuf> = mounts
        .v2
        .iter()
        .map(|mount| mount.join(BASE_NAME))
        .collect();
    for (controller, mount) in &mounts.v1 {
        let path = own.v1.get(controller).map_or("/", String::as_str);
        qmesh_dirs.push(under(mount, path).join(BASE_NAME));
    }
    qmesh_dirs.sort();
    qmesh_dirs.dedup();
    let mut left = 0;
    for qmesh in qmesh_dirs {
        let Ok(levels) = fs::read_dir(&qmesh) else {
            continue;
        };
        for level in levels.flatten() {
            if level.file_name().to_string_lossy().starts_with(&prefix) && level.path().is_dir() {
                remove_children(&level.path(), &|_| false);
                left += usize::from(fs::remove_dir(level.path()).is_err());
            }
        }
    }
    left
}

/// Removes the directories (child cgroups) of `base` that `keep` does not
/// name; a cgroup's own files are not directories.
fn remove_children(base: &Path, keep: &dyn Fn(&str) -> bool) -> usize {
    let Ok(entries) = fs::read_dir(base) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| !keep(&e.file_name().to_string_lossy()))
        .filter(|e| fs::remove_dir(e.path()).is_ok())
        .count()
}

fn make_dir(dir: &Path) -> Result<(), String> {
    match fs::create_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(format!("cannot make {} ({e})", dir.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIXED: &str = "\
35 24 0:30 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
36 35 0:31 / /sys/fs/cgroup/unified rw,relatime shared:10 - cgroup2 cgroup2 rw
37 35 0:32 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:11 - cgroup cgroup rw,cpu,cpuacct
38 35 0:33 / /sys/fs/cgroup/memory rw,relatime shared:12 - cgroup cgroup rw,memory
39 35 0:34 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 24 0:35 / /mnt/with\\040space rw - ext4 /dev/vdb rw
";

    #[test]
    fn only_the_job_cgroups_no_job_owns_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("agent");
        for job in ["1.srv", "2.srv"] {
            fs::create_dir_all(base.join(job)).unwrap();
        }
        // A cgroup's own files are files, and a busy cgroup refuses rmdir
        // as a directory that is not empty does.
        fs::write(base.join("cgroup.procs"), "").unwrap();
        fs::create_dir_all(base.join("3.srv/busy")).unwrap();
        let cgroups = Cgroups::V2 {
            base: base.clone(),
            cpu: false,
        };
        let removed = remove_left_behind(&cgroups, &|name| name == "1.srv");
        assert_eq!(removed, 1);
        assert!(base.join("1.srv").is_dir(), "a job it has");
        assert!(!base.join("2.srv").exists(), "a job it has not");
        assert!(base.join("3.srv").is_dir(), "busy: kept");
        assert!(base.join("cgroup.procs").is_file());
    }

    #[test]
    fn the_mount_table_gives_each_hierarchy() {
        let m = parse_mounts(MIXED);
        assert_eq!(m.v2, Some(PathBuf::from("/sys/fs/cgroup/unified")));
        assert_eq!(m.v1["memory"], Path::new("/sys/fs/cgroup/memory"));
        assert_eq!(m.v1["cpu"], Path::new("/sys/fs/cgroup/cpu,cpuacct"));
        assert_eq!(m.v1["cpuacct"], Path::new("/sys/fs/cgroup/cpu,cpuacct"));
        assert!(!m.v1.contains_key("pids"), "only what jobs use");
        let pure = parse_mounts("30 1 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n");
        assert_eq!(pure.v2, Some(PathBuf::from("/sys/fs/cgroup")));
        assert!(pure.v1.is_empty());
    }

    #[test]
    fn each_agent_has_its_own_level_named_after_its_spool() {
        assert_eq!(agent_name(Path::new("/var/spool/qmesh")), "var-spool-qmesh");
        assert_eq!(agent_name(Path::new("/")), "root");
        let long = format!("/{}", "d/".repeat(150));
        assert_eq!(agent_name(Path::new(&long)).chars().count(), 200);
    }

    #[test]
    fn escaped_mount_points_are_read_back() {
        assert_eq!(unescape("/mnt/with\\040space"), "/mnt/with space");
        assert_eq!(unescape("/plain"), "/plain");
        assert_eq!(unescape("/odd\\"), "/odd\\");
    }

    #[test]
    fn own_cgroups_per_controller() {
        let own = parse_own(
            "9:name=systemd:/\n4:memory:/process_api/abc\n2:cpu,cpuacct:/\n0::/user.slice\n",
        );
        assert_eq!(own.v2.as_deref(), Some("/user.slice"));
        assert_eq!(own.v1["memory"], "/process_api/abc");
        assert_eq!(own.v1["cpuacct"], "/");
        assert_eq!(
            under(Path::new("/sys/fs/cgroup/memory"), "/process_api/abc"),
            Path::new("/sys/fs/cgroup/memory/process_api/abc")
        );
    }

    #[test]
    fn v1_bases_nest_under_the_agents_own_cgroup() {
        let mounts = parse_mounts(MIXED);
        let own = parse_own("4:memory:/box\n2:cpu,cpuacct:/\n");
        let tmp = tempfile::tempdir().unwrap();
        // The same layout under a scratch directory.
        let root = tmp.path();
        let mut scratch = Mounts::default();
        for (c, m) in &mounts.v1 {
            let dir = root.join(m.strip_prefix("/").unwrap());
            fs::create_dir_all(dir.join(own.v1.get(c).map_or("", |p| &p[1..]))).unwrap();
            scratch.v1.insert(c.clone(), dir);
        }
        let Cgroups::V1 {
            memory,
            cpu,
            cpuacct,
            ..
        } = set_up_v1(&scratch, &own, "spool-a").unwrap()
        else {
            panic!("v1 expected");
        };
        assert!(memory.ends_with("sys/fs/cgroup/memory/box/qmesh/spool-a"));
        assert!(memory.is_dir());
        assert_eq!(cpu, cpuacct, "one mount for both");
        assert!(
            cpu.unwrap()
                .ends_with("sys/fs/cgroup/cpu,cpuacct/qmesh/spool-a")
        );
        let none = set_up_v1(&Mounts::default(), &own, "spool-a").unwrap_err();
        assert_eq!(none, "no memory hierarchy is mounted");
    }

    #[test]
    fn a_v2_hierarchy_without_memory_says_so() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("cgroup.controllers"), "hugetlb\n").unwrap();
        let why = set_up_v2(tmp.path(), "a").unwrap_err();
        assert!(why.contains("memory controller is not available"), "{why}");
        assert!(why.contains("offers: hugetlb"), "{why}");
    }
}
