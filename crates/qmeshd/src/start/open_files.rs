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

use nix::sys::resource::{Resource, getrlimit, setrlimit};
use tracing::{info, warn};

use qmesh_config::Settings;

/// Descriptors kept for clients, the store and logs beside one per host.
const ROOM_BESIDE_HOSTS: u64 = 1024;

/// Raises the soft limit on open files to the hard limit, and warns when
/// the hard limit leaves less than a descriptor per configured host and
/// room for clients. Gives the soft limit qmeshd started with if it
/// raised it: its local agent starts with that one. A failure is logged,
/// not fatal: qmeshd runs as before, within the soft limit.
pub fn raise(settings: &Settings) -> Option<u64> {
    let (started_with, limit) = match raise_to_hard() {
        Ok(limits) => limits,
        Err(e) => {
            warn!("open files: cannot raise the soft limit to the hard limit ({e}); it stays");
            return None;
        }
    };
    if started_with < limit {
        info!("open files: soft limit raised from {started_with} to the hard limit, {limit}");
    }
    let hosts = hosts_configured(settings);
    if hosts + ROOM_BESIDE_HOSTS > limit {
        warn!(
            "open files: the limit is {limit}, for {hosts} hosts configured and their \
             clients; raise it (LimitNOFILE in qmeshd's unit, or ulimit -Hn) to at least {}",
            hosts + ROOM_BESIDE_HOSTS
        );
    }
    (started_with < limit).then_some(started_with)
}

/// The soft limit before and after: raised to the hard one if below it.
fn raise_to_hard() -> nix::Result<(u64, u64)> {
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard)?;
        return Ok((soft, hard));
    }
    Ok((soft, soft))
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
