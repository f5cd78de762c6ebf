//! PBS's `resources_max.NAME`, `resources_min.NAME` and
//! `resources_default.NAME` on queues and on the server, for every
//! resource: a job's request (its PBS `Resource_List`, resource name to
//! value text) must lie within its queue's bounds and the server's, and
//! what it leaves out is filled from the queue's defaults, then the
//! server's.
//!
//! Values compare by the resource's type (`site_resources.rs`): sizes as
//! sizes (`2gb` > `512mb`), durations as durations, numbers as numbers;
//! strings and booleans must equal the bound. Nodes and wall time keep
//! their own fields on [`Queue`] (`max_nodes`, `max_walltime`, ...), which
//! `submit.rs` checks; the bounds here are the maps beside them.
//!
//! Pure functions over a resource list, to be called where a job's
//! `Resource_List` is made: [`fill_job_defaults`], then
//! [`check_job_resources`].

use std::cmp::Ordering;
use std::collections::BTreeMap;

use crate::error::CoreError;
use crate::queue::Queue;
use crate::server::{Config, ServerAttrs};
use crate::site_resources::ResourceType;

/// Whose bounds these are, for messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner<'a> {
    Server,
    Queue(&'a str),
}

/// One owner's bounds and defaults, by resource name.
#[derive(Clone, Copy, Debug)]
pub struct Bounds<'a> {
    pub owner: Owner<'a>,
    pub max: &'a BTreeMap<String, String>,
    pub min: &'a BTreeMap<String, String>,
    pub default: &'a BTreeMap<String, String>,
}

impl Queue {
    pub fn resource_bounds(&self) -> Bounds<'_> {
        Bounds {
            owner: Owner::Queue(&self.name),
            max: &self.resources_max,
            min: &self.resources_min,
            default: &self.resources_default,
        }
    }
}

impl ServerAttrs {
    pub fn resource_bounds(&self) -> Bounds<'_> {
        Bounds {
            owner: Owner::Server,
            max: &self.resources_max,
            min: &self.resources_min,
            default: &self.resources_default,
        }
    }
}

/// Checks a job's resource list against one owner's `resources_max` and
/// `resources_min`. `config` gives the resources' types. The error is
/// PBS's "Job exceeds queue resource limits" with the request, the bound
/// and the attribute.
pub fn check_resource_limits(
    bounds: &Bounds,
    resource_list: &BTreeMap<String, String>,
    config: &Config,
) -> Result<(), CoreError> {
    for (name, asked) in resource_list {
        let kind = config.resource_type(name);
        if let Some(max) = bounds.max.get(name)
            && passes(kind, name, asked, max, Ordering::Greater)?
        {
            return Err(limit_error(bounds, name, asked, max, true));
        }
        if let Some(min) = bounds.min.get(name)
            && passes(kind, name, asked, min, Ordering::Less)?
        {
            return Err(limit_error(bounds, name, asked, min, false));
        }
    }
    Ok(())
}

/// Whether `asked` lies beyond `bound` in the direction `beyond`
/// (Greater: above a maximum; Less: below a minimum). Strings, booleans
/// and resources of unknown type must equal the bound.
fn passes(
    kind: Option<ResourceType>,
    name: &str,
    asked: &str,
    bound: &str,
    beyond: Ordering,
) -> Result<bool, CoreError> {
    if name == "nodes" {
        // A count, or Torque's spec (2:ppn=8+node7): compared as nodes.
        let bad = |why: &str| CoreError::BadResource {
            name: name.to_string(),
            value: asked.to_string(),
            why: why.to_string(),
        };
        let asked =
            node_count(asked).ok_or_else(|| bad("write a node count or spec, e.g. 2:ppn=8"))?;
        return Ok(node_count(bound).is_some_and(|b| asked.cmp(&b) == beyond));
    }
    match kind {
        Some(kind) if kind.is_consumable() => {
            kind.check(asked).map_err(|why| CoreError::BadResource {
                name: name.to_string(),
                value: asked.to_string(),
                why,
            })?;
            Ok(kind.compare(asked, bound) == Some(beyond))
        }
        Some(ResourceType::Boolean) => {
            let truth = |v: &str| crate::resources::parse_bool(name, v).ok();
            Ok(truth(asked) != truth(bound))
        }
        _ => Ok(asked.trim() != bound.trim()),
    }
}

/// The nodes a `nodes` value asks for: a count (`4`), or Torque's spec,
/// `+`-separated parts each a count or a host name (`2:ppn=8+node7` is 3).
pub fn node_count(spec: &str) -> Option<u64> {
    let mut total = 0u64;
    for part in spec.trim().split('+') {
        let head = part.split(':').next()?.trim();
        if head.is_empty() {
            return None;
        }
        total += if head.bytes().all(|b| b.is_ascii_digit()) {
            head.parse::<u64>().ok()?
        } else {
            1
        };
    }
    Some(total)
}

fn limit_error(bounds: &Bounds, name: &str, asked: &str, bound: &str, max: bool) -> CoreError {
    let (whose, place) = match bounds.owner {
        Owner::Server => ("server", "the server".to_string()),
        Owner::Queue(q) => ("queue", format!("queue \"{q}\"")),
    };
    CoreError::ResourceLimit {
        header: if max {
            format!("Job exceeds {whose} resource limits")
        } else {
            format!("Job violates {whose} resource limits")
        },
        requested: format!("{name}={}", asked.trim()),
        bound: format!(
            "{place} {} {} ({}.{name}); ask for {}",
            if max {
                "allows at most"
            } else {
                "needs at least"
            },
            bound.trim(),
            if max {
                "resources_max"
            } else {
                "resources_min"
            },
            if max { "less" } else { "more" }
        ),
    }
}

/// Fills in what the job's list leaves out from one owner's
/// `resources_default`; returns the names it filled.
pub fn apply_defaults(
    bounds: &Bounds,
    resource_list: &mut BTreeMap<String, String>,
) -> Vec<String> {
    let mut filled = Vec::new();
    for (name, value) in bounds.default {
        if !resource_list.contains_key(name) {
            resource_list.insert(name.clone(), value.clone());
            filled.push(name.clone());
        }
    }
    filled
}

/// A job's defaults as PBS gives them: its own request, then its queue's
/// `resources_default`, then the server's. (Nodes and wall time have their
/// own defaults, applied by `submit.rs`.)
pub fn fill_job_defaults(
    config: &Config,
    queue: &Queue,
    resource_list: &mut BTreeMap<String, String>,
) -> Vec<String> {
    let mut filled = apply_defaults(&queue.resource_bounds(), resource_list);
    filled.extend(apply_defaults(
        &config.server.resource_bounds(),
        resource_list,
    ));
    filled
}

/// A job's list against its queue's bounds, then the server's.
pub fn check_job_resources(
    config: &Config,
    queue: &Queue,
    resource_list: &BTreeMap<String, String>,
) -> Result<(), CoreError> {
    check_resource_limits(&queue.resource_bounds(), resource_list, config)?;
    check_resource_limits(&config.server.resource_bounds(), resource_list, config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::site_resources::ResourceDef;

    fn list(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn workq() -> Queue {
        let mut q = Queue::open("workq");
        q.resources_max = list(&[("ncpus", "16"), ("mem", "32gb"), ("arch", "linux")]);
        q.resources_min = list(&[("ncpus", "2"), ("walltime", "00:10:00")]);
        q.resources_default = list(&[("mem", "1gb"), ("ncpus", "2")]);
        q
    }

    #[test]
    fn requests_are_compared_by_type() {
        let config = Config::default();
        let q = workq();
        let ok = list(&[("ncpus", "16"), ("mem", "2048mb"), ("walltime", "1:00:00")]);
        check_job_resources(&config, &q, &ok).unwrap();

        let err = check_job_resources(&config, &q, &list(&[("mem", "64gb")])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Job exceeds queue resource limits: it asks for mem=64gb but queue \"workq\" \
             allows at most 32gb (resources_max.mem); ask for less, or submit to another \
             queue (qstat -Q -f)"
        );
        // 512mb is less than 32gb although 512 > 32.
        check_job_resources(&config, &q, &list(&[("mem", "512mb")])).unwrap();
        let err = check_job_resources(&config, &q, &list(&[("ncpus", "1")])).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("Job violates queue resource limits: it asks for ncpus=1")
                && err
                    .to_string()
                    .contains("needs at least 2 (resources_min.ncpus)"),
            "{err}"
        );
        let err = check_job_resources(&config, &q, &list(&[("walltime", "00:05:00")])).unwrap_err();
        assert!(err.to_string().contains("resources_min.walltime"), "{err}");
        let err = check_job_resources(&config, &q, &list(&[("arch", "aix")])).unwrap_err();
        assert!(err.to_string().contains("arch=aix"), "{err}");
        let err = check_job_resources(&config, &q, &list(&[("mem", "lots")])).unwrap_err();
        assert!(matches!(err, CoreError::BadResource { .. }), "{err}");
    }

    #[test]
    fn nodes_compare_as_counts_in_either_spec() {
        let mut config = Config::default();
        config.server.resources_max = list(&[("nodes", "4")]);
        let q = Queue::open("batch");
        for ok in ["4", "2:ppn=8+n7", "node1+node2"] {
            check_job_resources(&config, &q, &list(&[("nodes", ok)])).unwrap();
        }
        let err = check_job_resources(&config, &q, &list(&[("nodes", "4:ppn=2+n9")])).unwrap_err();
        assert!(err.to_string().contains("nodes=4:ppn=2+n9"), "{err}");
        assert_eq!(node_count("2:ppn=8+node7"), Some(3));
        assert_eq!(node_count(":ppn=2"), None);
    }

    #[test]
    fn site_resources_and_the_server_bound_too() {
        let mut config = Config::default();
        config
            .resources
            .insert("ngpus".into(), ResourceDef::new("ngpus"));
        config.server.resources_max = list(&[("ngpus", "4")]);
        let q = Queue::open("gpu");
        check_job_resources(&config, &q, &list(&[("ngpus", "4")])).unwrap();
        let err = check_job_resources(&config, &q, &list(&[("ngpus", "8")])).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("Job exceeds server resource limits: it asks for ngpus=8 but the server allows at most 4"),
            "{err}"
        );
    }

    #[test]
    fn defaults_come_from_the_queue_then_the_server() {
        let mut config = Config::default();
        config.server.resources_default = list(&[("mem", "4gb"), ("software", "abaqus")]);
        let q = workq();
        let mut asked = list(&[("ncpus", "8")]);
        let filled = fill_job_defaults(&config, &q, &mut asked);
        assert_eq!(filled, vec!["mem", "software"]);
        assert_eq!(
            asked,
            list(&[("ncpus", "8"), ("mem", "1gb"), ("software", "abaqus")])
        );
    }
}
