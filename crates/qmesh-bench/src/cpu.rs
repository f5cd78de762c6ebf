//! Where a run's CPU went: a process's own time and its reaped children's,
//! from /proc/PID/stat, so the churn figures can say which part is the
//! scheduler, which the agents and which the jobs themselves.

/// Seconds of CPU (user + system).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpuTimes {
    pub own: f64,
    /// Of children waited for (for an agent: its shepherds and their jobs).
    pub children: f64,
}

impl CpuTimes {
    /// `None` when the process is gone or its stat unreadable.
    pub fn of(pid: u32) -> Option<CpuTimes> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let ticks = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
            .ok()
            .flatten()
            .unwrap_or(100) as f64;
        CpuTimes::parse(&stat, ticks)
    }

    /// Fields 14 to 17 of a stat line (utime, stime, cutime, cstime), counted
    /// after the command name, which may hold spaces and parentheses.
    fn parse(stat: &str, ticks: f64) -> Option<CpuTimes> {
        let rest = &stat[stat.rfind(')')? + 1..];
        let fields: Vec<f64> = rest
            .split_whitespace()
            .skip(11)
            .take(4)
            .map(|f| f.parse().ok())
            .collect::<Option<_>>()?;
        if fields.len() < 4 {
            return None;
        }
        Some(CpuTimes {
            own: (fields[0] + fields[1]) / ticks,
            children: (fields[2] + fields[3]) / ticks,
        })
    }
}

/// A process's CPU seconds (own) by thread name, threads of one name
/// (digits dropped: `sled-io-3` is `sled-io-`) added together.
pub fn by_thread(pid: u32) -> std::collections::BTreeMap<String, f64> {
    let ticks = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .unwrap_or(100) as f64;
    let mut seconds = std::collections::BTreeMap::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return seconds;
    };
    for task in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue;
        };
        let name: String = stat
            .split_once('(')
            .and_then(|(_, rest)| rest.rsplit_once(')'))
            .map(|(name, _)| name.chars().filter(|c| !c.is_ascii_digit()).collect())
            .unwrap_or_default();
        if let Some(t) = CpuTimes::parse(&stat, ticks) {
            *seconds.entry(name).or_insert(0.0) += t.own;
        }
    }
    seconds
}

/// The running processes whose parent is one of `parents`.
pub fn children_of_any(parents: &[u32]) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| parent_in(&stat))
                .is_some_and(|p| parents.contains(&p))
        })
        .collect()
}

/// The running children of `parent`.
pub fn children_of(parent: u32) -> Vec<u32> {
    children_of_any(&[parent])
}

/// Whether `pid`'s program (its first argument's file name) is `program`.
pub fn runs(pid: u32, program: &str) -> bool {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let arg0 = cmdline.split(|&b| b == 0).next().unwrap_or_default();
    arg0.rsplit(|&b| b == b'/').next() == Some(program.as_bytes())
}

/// The zygotes of these agents: their children that run `qmesh-agent
/// zygote`, whose children are the shepherds.
pub fn zygotes_of(agents: &[u32]) -> Vec<u32> {
    children_of_any(agents)
        .into_iter()
        .filter(|&pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            cmdline.split(|&b| b == 0).nth(1) == Some(b"zygote")
        })
        .collect()
}

/// Waits (up to `limit`) until none of `parents` has a child left to
/// reap, so their reaped children's time is complete.
pub fn await_reaped(parents: &[u32], limit: std::time::Duration) {
    let deadline = std::time::Instant::now() + limit;
    while std::time::Instant::now() < deadline && parents.iter().any(|&p| has_zombie_child(p)) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn has_zombie_child(parent: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .any(|stat| {
            let rest = stat.rfind(')').map_or("", |i| &stat[i + 1..]);
            let mut fields = rest.split_whitespace();
            fields.next() == Some("Z") && fields.next().and_then(|p| p.parse().ok()) == Some(parent)
        })
}

/// The parent pid (field 4) of a stat line.
fn parent_in(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

impl std::ops::Add for CpuTimes {
    type Output = CpuTimes;
    fn add(self, other: CpuTimes) -> CpuTimes {
        CpuTimes {
            own: self.own + other.own,
            children: self.children + other.children,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_gives_own_and_children_time() {
        let line = "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 30 20 20 0 1 0 5 0 0";
        let t = CpuTimes::parse(line, 100.0).unwrap();
        assert_eq!(t.own, 3.0);
        assert_eq!(t.children, 0.5);
        assert!(CpuTimes::parse("garbage", 100.0).is_none());
    }

    #[test]
    fn this_process_has_a_stat() {
        assert!(CpuTimes::of(std::process::id()).is_some());
    }
}
