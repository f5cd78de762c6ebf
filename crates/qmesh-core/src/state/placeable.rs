//! Whether a job's layout could ever be placed, checked at submission:
//! the nodes and hosts its chunks name exist among its queue's nodes, and
//! `place=pack` or `scatter` is possible on their hosts. A job that could
//! never run is refused at once, with what to write instead, rather than
//! left waiting for ever (PBS Pro refuses such jobs too).

use std::collections::BTreeMap;

use super::State;
use crate::error::CoreError;
use crate::job::Job;
use crate::resources::Arrangement;

impl State {
    /// Refuses a job whose layout no node of its queue's sets allows.
    pub(crate) fn check_placeable(&self, job: &Job) -> Result<(), CoreError> {
        let Some(layout) = job.layout.as_ref().filter(|l| l.constrains_placement()) else {
            return Ok(());
        };
        let Some(queue) = self.config.queue(&job.queue) else {
            return Ok(());
        };
        let needs = job.needs();
        let sets: Vec<usize> = self
            .sets_ever(queue)
            .into_iter()
            .filter(|&s| self.effective_attrs(s).satisfies(&needs))
            .collect();
        let names: Vec<&str> = sets
            .iter()
            .map(|&s| self.machine.node_sets[s].name.as_str())
            .collect();
        let nodes: Vec<(&str, &str)> = sets
            .iter()
            .flat_map(|&s| self.machine.node_sets[s].nodes.iter())
            .map(|n| (n.name.as_str(), n.host.as_str()))
            .collect();
        let refuse = |message: String| Err(CoreError::Unplaceable { message });
        for chunk in &layout.chunks {
            let Some(pin) = &chunk.pin else {
                continue;
            };
            let matching = nodes
                .iter()
                .filter(|(node, host)| pin.admits(node, host))
                .count();
            if matching == 0 {
                return refuse(format!(
                    "no node or host named \"{}\" among the nodes queue \"{}\" can give this job (node sets: {}); see pbsnodes -a",
                    pin.name(),
                    job.queue,
                    names.join(", ")
                ));
            }
            if matching < chunk.count as usize {
                return refuse(format!(
                    "{} chunks ask for \"{}\", which has only {matching} node(s); ask for fewer",
                    chunk.count,
                    pin.name()
                ));
            }
        }
        let mut per_host: BTreeMap<&str, usize> = BTreeMap::new();
        for (_, host) in &nodes {
            *per_host.entry(host).or_default() += 1;
        }
        let chunks = job.nodes as usize;
        match layout.place.arrangement {
            Arrangement::Pack => {
                let most = per_host.values().copied().max().unwrap_or(0);
                if most < chunks {
                    return refuse(format!(
                        "place=pack asks for all {chunks} chunks on one host, but no host of queue \"{}\" has {chunks} such nodes (the most is {most}); write place=free or place=scatter",
                        job.queue
                    ));
                }
            }
            Arrangement::Scatter => {
                if per_host.len() < chunks {
                    return refuse(format!(
                        "place=scatter asks for each of {chunks} chunks on its own host, but the nodes of queue \"{}\" are on {} host(s); write place=vscatter (one chunk per node) or place=free",
                        job.queue,
                        per_host.len()
                    ));
                }
            }
            Arrangement::Free | Arrangement::Vscatter => {}
        }
        Ok(())
    }
}
