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
