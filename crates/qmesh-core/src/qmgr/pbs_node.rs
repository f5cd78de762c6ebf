//! PBS's `create node HOST [attributes]` and `delete node HOST`, the way
//! every OpenPBS install adds its hosts, mapped onto qmesh's node sets: a
//! host becomes a flat node set of its own name, one node on that host
//! (`create node_set HOST nodes = HOST, host = HOST`), which a queue naming
//! no node sets runs jobs on. PBS's and Torque's node attributes map where
//! qmesh has them (`resources_available.ncpus`, Torque's `np`, `mem`,
//! `ngpus`, `properties`); the rest are accepted with a WARNING.
//!
//! And PBS Pro's `sched` object: `set sched scheduling = True` is the
//! server's `scheduling`; the scheduler's other knobs have no counterpart
//! in a daemon that schedules at each event, and are answered with a
//! WARNING saying what qmesh does instead.

use super::node_set;
use super::vocab::{Action, Assignment, Op, Outcome};
use crate::server::Config;
use crate::state::State;

/// What a PBS node attribute becomes on the host's node set, or `None`
/// (kept nowhere, with the reason).
fn mapped(a: &Assignment) -> Result<Option<Assignment>, &'static str> {
    let name = a.name.to_ascii_lowercase();
    let to = |n: &str| {
        Ok(Some(Assignment {
            name: n.into(),
            op: a.op,
            value: a.value.clone(),
        }))
    };
    match name.as_str() {
        "resources_available.ncpus" | "np" | "pcpus" => to("ncpus"),
        "resources_available.mem" | "physmem" => to("mem"),
        "resources_available.ngpus" | "gpus" => to("gpus"),
        "properties" | "resources_available.feature" => to("features"),
        "mom" | "port" | "resources_available.host" | "resources_available.vnode" => {
            Err("qmesh knows a host by its agent, which says hello from it")
        }
        "ntype" | "sharing" | "resources_available.arch" | "priority" | "comment" => {
            Err("qmesh has no counterpart")
        }
        "queue" => Err("a queue names its node sets (set queue Q node_sets += HOST)"),
        "state" => Err("set node HOST state = offline takes a node out, after it is made"),
        n if n.starts_with("resources_available.") => Ok(Some(a.clone())),
        _ => Err("qmesh's node sets do not have it"),
    }
}

/// `create node HOST[,HOST...] [attributes]`: a node set per host.
pub(super) fn create(
    hosts: &[String],
    assigns: &[Assignment],
    config: &mut Config,
    state: &State,
    outcome: &mut Outcome,
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    let mut kept = Vec::new();
    for a in assigns {
        match mapped(a) {
            Ok(Some(m)) if m.name == "gpus" => {
                warnings.push(format!(
                    "{}: GPUs come from each host's agent (--gpus, /dev/nvidiaN); not kept",
                    a.name
                ));
            }
            Ok(Some(m)) => kept.push(m),
            Ok(None) => {}
            Err(why) => warnings.push(format!("{} = {}: not kept; {why}", a.name, a.value)),
        }
    }
    for host in hosts {
        let mut set = vec![
            Assignment {
                name: "nodes".into(),
                op: Op::Assign,
                value: host.clone(),
            },
            Assignment {
                name: "host".into(),
                op: Op::Assign,
                value: host.clone(),
            },
        ];
        set.extend(kept.iter().cloned());
        node_set::apply(
            &Action::CreateNodeSet(vec![host.clone()], set),
            config,
            state,
            outcome,
        )
        .map_err(|e| format!("create node {host}: {e}"))?;
        outcome.output.push_str(&format!(
            "create node {host}: node set \"{host}\" made, one node on host {host} \
             (qmesh keeps nodes in node sets: qmgr -c \"list node_set {host}\")\n"
        ));
    }
    Ok(())
}

/// `delete node HOST`: the node set `create node` made for it.
pub(super) fn delete(
    hosts: &[String],
    config: &mut Config,
    state: &State,
    outcome: &mut Outcome,
) -> Result<(), String> {
    for host in hosts {
        let made_for_host = config
            .node_sets
            .get(host)
            .is_some_and(|s| s.nodes.len() == 1 && s.nodes[0].name == *host);
        if !made_for_host {
            return Err(format!(
                "delete node {host}: no node set was made for host {host} by create node; \
                 nodes belong to node sets (qmgr -c \"list node_set\")"
            ));
        }
        node_set::apply(
            &Action::DeleteNodeSet(vec![host.clone()]),
            config,
            state,
            outcome,
        )?;
    }
    Ok(())
}

/// PBS Pro's scheduler attributes, and what qmesh does instead of each.
#[rustfmt::skip]
const SCHED_ATTRS: &[(&str, &str)] = &[
    ("scheduler_iteration", "qmesh schedules at every event (a submission, an end), and passes are at most [daemon] pass_interval_ms apart"),
    ("sched_cycle_length", "a pass places every job it can; spq shows the last one"),
    ("opt_backfill_fuzzy", "backfill is exact; set server backfill = easy or conservative"),
    ("throughput_mode", "passes run beside the services, never blocking them"),
    ("job_run_wait", "a start is launched once it is durable"),
    ("partition", "qmesh has one scheduler; queues name node sets"),
    ("sched_host", "the scheduler is in qmeshd"),
    ("sched_port", "the scheduler is in qmeshd"),
    ("sched_priv", "the scheduler is in qmeshd"),
    ("sched_log", "the scheduler logs through qmeshd"),
    ("log_events", "qmeshd logs through its --log-level"),
    ("pbs_version", "read only"),
    ("do_not_span_psets", "a job runs in one node set"),
    ("only_explicit_psets", "node groups are qmgr's node_group objects"),
    ("preempt_sort", "the lowest-priority, latest-started jobs are preempted first"),
    ("sched_preempt_enforce_resumption", "a suspended job resumes as soon as its nodes are all free, before any other start"),
    ("server_dyn_res_alarm", "qmesh has no dynamic server resources"),
    ("attr_update_period", "qstat reads the last pass's plan"),
    ("comment", "see the server's comment"),
];

/// The scheduler's preemption attributes, kept on the server.
const SERVER_PREEMPT: &[&str] = &["preempt_queue_prio", "preempt_order", "preempt_prio"];

/// `set sched [NAME] attr = value, ...`.
pub(super) fn set_sched(
    assigns: &[Assignment],
    config: &mut Config,
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    for a in assigns {
        let name = a.name.to_ascii_lowercase();
        if name == "scheduling" {
            config.server.scheduling = super::values::parse_bool(&name, &a.value)?;
            continue;
        }
        if SERVER_PREEMPT.contains(&name.as_str()) {
            // PBS Pro keeps them on the scheduler, qmesh on the server.
            super::attrs::set_server_attr(&mut config.server, &name, &a.value)?;
            continue;
        }
        match SCHED_ATTRS.iter().find(|(n, _)| *n == name) {
            Some((_, why)) => warnings.push(format!(
                "sched {name} = {}: not kept; {why}",
                a.value.trim()
            )),
            None => {
                let known: Vec<&str> = std::iter::once("scheduling")
                    .chain(SERVER_PREEMPT.iter().copied())
                    .chain(SCHED_ATTRS.iter().map(|(n, _)| *n))
                    .collect();
                return Err(format!(
                    "unknown attribute \"{}\" for the scheduler; known: {}",
                    a.name,
                    known.join(", ")
                ));
            }
        }
    }
    Ok(())
}

/// `list sched`: the one scheduler, as PBS lists its default.
pub(super) fn list_sched(config: &Config) -> String {
    format!(
        "Sched default\n    scheduling = {}\n    backfill = {}\n    job_order = {}\n\n",
        if config.server.scheduling {
            "True"
        } else {
            "False"
        },
        config.server.backfill.as_str(),
        config.server.job_order.as_str(),
    )
}

#[cfg(test)]
mod tests;
