//! What the state knows of the host-level resources a job uses up on its
//! nodes (GPUs, flag `n` and `f` resources): what a node has left, and
//! whether a job's first node serves what it asks there alone.

use crate::error::CoreError;
use crate::job::Job;
use crate::site_resources::HostResource;
use crate::state::State;

impl State {
    /// Whether node `i` has `r` left for one more job, after what the
    /// jobs on it use (a job's first node also what it uses there alone)
    /// and `taken` more: its node set's `resources_available` less
    /// those.
    pub(crate) fn has_left(&self, i: usize, r: &HostResource, taken: f64) -> bool {
        let Some(node) = self.nodes().get(i) else {
            return false;
        };
        let total = self
            .effective_attrs(node.set)
            .resources
            .get(&r.name)
            .and_then(|v| r.kind.amount(v))
            .unwrap_or(0.0);
        let held: f64 = node
            .jobs
            .iter()
            .filter_map(|id| self.job(id))
            .map(|job| {
                let first = job.exec_nodes.first() == Some(&node.name);
                job.node_resources
                    .iter()
                    .filter(|x| x.name == r.name && x.consumed_on(first))
                    .map(HostResource::amount)
                    .sum::<f64>()
            })
            .sum();
        // A little room for sums of floats.
        total - held - taken >= r.amount() - 1e-9 * total.max(1.0)
    }

    /// Refuses a job whose first node must have a resource (flag `f`)
    /// that no node of its queue's sets has, with the figures.
    pub(crate) fn check_first_node(&self, job: &Job) -> Result<(), CoreError> {
        let first: Vec<&HostResource> = job
            .node_resources
            .iter()
            .filter(|r| !r.on_every_node())
            .collect();
        let Some(queue) = self
            .config()
            .queue(&job.queue)
            .filter(|_| !first.is_empty())
        else {
            return Ok(());
        };
        let sets = self.sets_ever(queue);
        let serves = |s: usize| {
            let have = &self.effective_attrs(s).resources;
            first
                .iter()
                .all(|r| r.served_by(have.get(&r.name).map(String::as_str)))
        };
        if sets.iter().any(|&s| serves(s)) {
            return Ok(());
        }
        let asked: Vec<String> = first
            .iter()
            .map(|r| format!("{}={}", r.name, r.value))
            .collect();
        let described: Vec<String> = sets
            .iter()
            .map(|&s| {
                format!(
                    "{}: {}",
                    self.node_sets()[s].name,
                    self.effective_attrs(s).describe()
                )
            })
            .collect();
        Err(CoreError::Unplaceable {
            message: format!(
                "its first node must have {}, and no node of queue \"{}\" has (node sets: {}); \
                 see qmgr -c \"list node_set\"",
                asked.join(", "),
                job.queue,
                if described.is_empty() {
                    "none".to_string()
                } else {
                    described.join("; ")
                }
            ),
        })
    }
}
