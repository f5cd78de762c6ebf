//! The server's configuration as qmgr shapes it: server attributes and the
//! queues. It is stored as one record and replaced as a whole, so a qmgr
//! script applies all of its commands or none.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::queue::Queue;

/// Server attributes (`qmgr -c "list server"`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerAttrs {
    /// Whether the scheduler starts jobs at all.
    pub scheduling: bool,
    /// Where a job goes when qsub names no queue.
    pub default_queue: Option<String>,
    /// Users who may change the configuration (root always may).
    pub managers: Vec<String>,
    /// Users who may act on every job and set attributes.
    pub operators: Vec<String>,
    /// Seconds a finished job stays visible to `qstat -x`.
    pub job_history_duration: u64,
    /// Seconds between SIGTERM and SIGKILL when a job is killed.
    pub kill_delay: u64,
    /// Seconds between scheduling passes when nothing else prompts one.
    pub scheduler_iteration: u64,
    /// Wall time, in seconds, of a job that names none and whose queue has
    /// neither a default nor a maximum (`resources_default.walltime`).
    pub default_walltime: u64,
}

impl Default for ServerAttrs {
    fn default() -> Self {
        ServerAttrs {
            scheduling: true,
            default_queue: None,
            managers: Vec::new(),
            operators: Vec::new(),
            job_history_duration: 14 * 24 * 3600,
            kill_delay: 30,
            scheduler_iteration: 10,
            default_walltime: 3600,
        }
    }
}

/// Everything qmgr manages.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub server: ServerAttrs,
    #[serde(default)]
    pub queues: BTreeMap<String, Queue>,
}

impl Config {
    pub fn queue(&self, name: &str) -> Option<&Queue> {
        self.queues.get(name)
    }

    /// The queue a job goes to when it names none: `default_queue`, else
    /// the only queue if there is just one.
    pub fn default_queue(&self) -> Option<&str> {
        match &self.server.default_queue {
            Some(name) => Some(name.as_str()),
            None if self.queues.len() == 1 => self.queues.keys().next().map(|s| s.as_str()),
            None => None,
        }
    }
}
