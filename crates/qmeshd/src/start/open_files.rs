//! Open files for every host and client. Each agent holds a connection to
//! qmeshd, and so does each qstat; a site of thousands of hosts needs
//! thousands of descriptors, where a login shell's soft limit is often
//! 1,024. As slurmctld and most daemons do, qmeshd raises its soft limit
//! to the hard one at start (the hard limit is the administrator's:
//! `LimitNOFILE` in the unit, `ulimit -Hn` in a shell), and says so when
//! even that leaves too little room for the hosts it is configured with.
//! Its local agent starts with the soft limit qmeshd started with, so its
//! jobs get the limits they would under an agent started on its own.

use std::collections::HashSet;
use std::sync::OnceLock;

use nix::sys::resource::{Resource, getrlimit, setrlimit};
use tracing::{info, warn};

use qmesh_config::Settings;

/// Descriptors kept for clients, the store and logs beside one per host.
const ROOM_BESIDE_HOSTS: u64 = 1024;

/// The soft limit qmeshd started with, once it raised it.
static STARTED_WITH: OnceLock<u64> = OnceLock::new();

/// What was done with the limit.
#[derive(Debug, PartialEq, Eq)]
pub enum Raised {
    /// The soft limit was already the hard one.
    AlreadyAtHard(u64),
    /// Raised from the first to the second.
    From(u64, u64),
}

/// Raises the soft limit on open files to the hard limit, and warns when
/// the hard limit leaves less than a descriptor per configured host and
/// room for clients. A failure is logged, not fatal: qmeshd runs as
/// before, within the soft limit.
pub fn raise(settings: &Settings) -> Option<Raised> {
    let raised = match raise_to_hard() {
        Ok(raised) => raised,
        Err(e) => {
            warn!("open files: cannot raise the soft limit to the hard limit ({e}); it stays");
            return None;
        }
    };
    let limit = match raised {
        Raised::AlreadyAtHard(limit) => limit,
        Raised::From(old, new) => {
            let _ = STARTED_WITH.set(old);
            info!("open files: soft limit raised from {old} to the hard limit, {new}");
            new
        }
    };
    let hosts = hosts_configured(settings);
    if hosts + ROOM_BESIDE_HOSTS > limit {
        warn!(
            "open files: the limit is {limit}, for {hosts} hosts configured and their \
             clients; raise it (LimitNOFILE in qmeshd's unit, or ulimit -Hn) to at least {}",
            hosts + ROOM_BESIDE_HOSTS
        );
    }
    Some(raised)
}

/// The soft limit qmeshd started with, if it raised it: its local agent
/// starts with it (`LocalAgent::open_files`), and so its jobs.
pub fn started_with() -> Option<u64> {
    STARTED_WITH.get().copied()
}

fn raise_to_hard() -> nix::Result<Raised> {
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    if soft >= hard {
        return Ok(Raised::AlreadyAtHard(soft));
    }
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard)?;
    Ok(Raised::From(soft, hard))
}

/// Hosts named by the node sets: each one's agent keeps a connection.
fn hosts_configured(settings: &Settings) -> u64 {
    let hosts: HashSet<&str> = settings
        .node_sets
        .iter()
        .flat_map(|set| set.nodes.iter().map(|node| node.host.as_str()))
        .collect();
    hosts.len() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_configuration_names_its_one_host() {
        let settings = Settings::embedded().unwrap();
        assert_eq!(hosts_configured(&settings), 1);
    }
}
