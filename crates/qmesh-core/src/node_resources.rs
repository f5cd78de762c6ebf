//! Host-level site resources (PBS Pro's flag `h`): what a node has, and
//! what a job asks of each of its nodes.
//!
//! A node's values are its node set's `resources_available` (the
//! configuration file's `resources = { scratch = "400gb", model =
//! "skylake" }`, or `qmgr -c "set node_set S resources_available.scratch =
//! 400gb"`). A job asks in a chunk (`select=1:scratch=100gb`) or job-wide
//! (`-l model=skylake`, which applies to every node, as a job-wide `mem`
//! does). A node set is homogeneous and a job's nodes all get what its
//! largest chunk asks, so a job's needs are one list: the largest number
//! any chunk or the job asks, the one string they agree on.
//!
//! A number or size is served by at least as much, a string or boolean
//! by the same value (an unset boolean is false), a string array by a
//! list holding every value asked. With flag `n` the resource is also
//! consumed: on a shared node set (`jobs_per_node` over 1) the jobs on a
//! node together use no more than it has, which the planner counts as it
//! counts GPUs; on an exclusive set a node runs one job, so its value is
//! simply a requirement. Flag `f` consumes it on the job's first node
//! only (PBS's mother superior): that node must have it, the others need
//! not.

use crate::error::CoreError;
use crate::job::Job;
use crate::resources::ResourceRequest;
use crate::server::Config;
use crate::site_resources::ResourceType;

pub use crate::site_resources::{Consumed, HostResource};

/// Resources of PBS Pro's vnodes that chunks may name and qmesh records
/// without matching, besides `site_resources::BUILT_IN`.
const CHUNK_RECORDED: &[&str] = &[
    "accelerator",
    "accelerator_memory",
    "accelerator_model",
    "aoe",
    "vntype",
];

/// Whether a chunk may name `name` (built in, or defined by the site).
pub fn known_in_chunk(config: &Config, name: &str) -> bool {
    crate::site_resources::built_in(name).is_some()
        || crate::resources::is_known(name)
        || CHUNK_RECORDED.contains(&name)
        || config.resource_def(name).is_some_and(|d| d.requestable())
}

/// What `req` asks of every node among the host-level resources the site
/// defined: its job-wide entries and its chunks', merged (the largest
/// number; one string, else a refusal saying why). Values are checked
/// against their types.
pub fn of_request(config: &Config, req: &ResourceRequest) -> Result<Vec<HostResource>, CoreError> {
    let mut out: Vec<HostResource> = Vec::new();
    let chunks = req.layout.iter().flat_map(|l| l.chunks.iter());
    let chunk_entries = chunks.flat_map(|c| c.other.iter().map(|(n, v)| (n.as_str(), v.as_str())));
    let job_wide = req.list.iter().map(|(n, v)| (n.as_str(), v.as_str()));
    for (name, value) in chunk_entries.chain(job_wide) {
        if crate::site_resources::built_in(name).is_some() {
            continue;
        }
        let Some(def) = config.resource_def(name) else {
            continue;
        };
        def.kind
            .check(value)
            .map_err(|why| CoreError::BadResource {
                name: name.to_string(),
                value: value.to_string(),
                why: format!("{why}; a {} value is needed", def.kind),
            })?;
        if !def.host_level() {
            continue;
        }
        let consumed = if def.flags.contains('n') {
            Consumed::PerNode
        } else if def.flags.contains('f') {
            Consumed::FirstNode
        } else {
            Consumed::No
        };
        let wanted = HostResource {
            name: name.to_string(),
            value: value.trim().to_string(),
            kind: def.kind,
            consumed,
        };
        match out.iter_mut().find(|r| r.name == name) {
            None => out.push(wanted),
            Some(have) => merge(have, wanted)?,
        }
    }
    Ok(out)
}

/// Two requests of one resource by a job's chunks: the larger number
/// serves both; strings must agree.
fn merge(have: &mut HostResource, wanted: HostResource) -> Result<(), CoreError> {
    match have.kind.compare(&wanted.value, &have.value) {
        Some(std::cmp::Ordering::Greater) => have.value = wanted.value,
        Some(_) => {}
        None if have.value == wanted.value => {}
        None => {
            return Err(CoreError::BadResource {
                name: have.name.clone(),
                value: wanted.value,
                why: format!(
                    "another chunk asks for {}={}; every node of a job gets what its chunks \
                     ask together (node sets are alike), so submit such chunks as separate jobs",
                    have.name, have.value
                ),
            });
        }
    }
    Ok(())
}

/// Refuses a chunk resource that is neither built in nor defined by the
/// site (with the list of those that exist), and notes, for the job's
/// comment, the chunk resources that are recorded but not matched to
/// nodes (those without flag `h`, and built-in ones qmesh does not match).
pub fn check_chunks(config: &Config, req: &mut ResourceRequest) -> Result<(), CoreError> {
    let Some(layout) = &mut req.layout else {
        return Ok(());
    };
    // `NAME=1` asks for a feature, as `NAME=True`, unless NAME is one of
    // the site's resources with values (`nmics=1`) or a built-in one.
    let is_amount = |name: &str| {
        crate::site_resources::built_in(name).is_some()
            || config
                .resource_def(name)
                .is_some_and(|d| d.kind != ResourceType::Boolean)
    };
    for chunk in &mut layout.chunks {
        let (features, other): (Vec<_>, Vec<_>) = std::mem::take(&mut chunk.other)
            .into_iter()
            .partition(|(name, value)| value.trim() == "1" && !is_amount(name));
        chunk.other = other;
        for (name, _) in features {
            let feature =
                crate::resources::check_feature(&name).map_err(|why| CoreError::BadResource {
                    name: name.clone(),
                    value: "1".into(),
                    why,
                })?;
            if !req.features.contains(&feature) {
                req.features.push(feature.clone());
            }
            chunk.features.push(feature);
        }
    }
    let layout = &*layout;
    let mut recorded: Vec<&str> = Vec::new();
    for (name, _) in layout.chunks.iter().flat_map(|c| c.other.iter()) {
        if !known_in_chunk(config, name) {
            return Err(CoreError::UnknownResource {
                name: name.clone(),
                known: config.resource_names(),
            });
        }
        let matched = crate::site_resources::built_in(name).is_none()
            && config.resource_def(name).is_some_and(|d| d.host_level());
        if !matched && !recorded.contains(&name.as_str()) {
            recorded.push(name);
        }
    }
    if !recorded.is_empty() {
        let note = format!(
            "chunk resources {} are recorded, not matched to nodes",
            recorded.join(", ")
        );
        req.notes.push(note);
    }
    Ok(())
}

/// Why a job that uses things up on its nodes (GPUs, flag `n` or `f`
/// resources) waits with `Placement` on shared nodes, naming them, for
/// qstat's comment; `None` for other jobs.
pub fn placement_note(job: &Job) -> Option<String> {
    if !job.consumes_on_nodes() {
        return None;
    }
    let mut uses: Vec<String> = job
        .gpus
        .filter(|&g| g > 0)
        .map(|g| format!("ngpus={g}"))
        .into_iter()
        .collect();
    for r in job
        .node_resources
        .iter()
        .filter(|r| r.consumed != Consumed::No)
    {
        let place = if r.consumed == Consumed::FirstNode {
            " (first node)"
        } else {
            ""
        };
        uses.push(format!("{}={}{place}", r.name, r.value));
    }
    Some(format!(
        "enough nodes are free, but not with {} left on them beside what their jobs use \
         (or not where its chunks must run); it starts when some is given back",
        uses.join(", ")
    ))
}

#[cfg(test)]
mod tests;
