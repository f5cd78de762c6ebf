//! The attributes qmgr knows, how their values are read and written.
//!
//! Names follow PBS (`resources_max.nodes`); the short names of the issue
//! and of NQS habit (`max_nodes`) are accepted as aliases. Printing always
//! uses the PBS name, so `print server` output reads the same to a PBS admin.

use super::parse::Op;
use crate::queue::{Queue, QueueType};
use crate::server::ServerAttrs;
use crate::time::{format_hms, parse_duration};

/// Queue attributes in the order list and print show them.
pub const QUEUE_ATTRS: &[(&str, &[&str])] = &[
    ("queue_type", &["type"]),
    ("priority", &[]),
    ("resources_max.nodes", &["max_nodes"]),
    ("resources_min.nodes", &["min_nodes"]),
    ("resources_max.walltime", &["max_walltime"]),
    ("resources_default.nodes", &["default_nodes"]),
    ("resources_default.walltime", &["default_walltime"]),
    ("node_sets", &["node_set"]),
    ("enabled", &[]),
    ("started", &[]),
];

/// Server attributes in the order list and print show them.
pub const SERVER_ATTRS: &[(&str, &[&str])] = &[
    ("scheduling", &[]),
    ("default_queue", &[]),
    ("managers", &[]),
    ("operators", &[]),
    ("resources_default.walltime", &["default_walltime"]),
    ("job_history_duration", &[]),
    ("kill_delay", &[]),
    ("scheduler_iteration", &[]),
];

/// The canonical name of an attribute, or a message listing the known ones.
pub fn canonical(
    table: &[(&'static str, &[&str])],
    name: &str,
    object: &str,
) -> Result<&'static str, String> {
    let lower = name.to_ascii_lowercase();
    table
        .iter()
        .find(|(canon, aliases)| *canon == lower || aliases.contains(&lower.as_str()))
        .map(|(canon, _)| *canon)
        .ok_or_else(|| {
            let known: Vec<&str> = table.iter().map(|(c, _)| *c).collect();
            format!(
                "unknown attribute \"{name}\" for {object}; known: {}",
                known.join(", ")
            )
        })
}

pub fn parse_bool(name: &str, value: &str) -> Result<bool, String> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "t" | "yes" | "y" | "1" | "on" => Ok(true),
        "false" | "f" | "no" | "n" | "0" | "off" => Ok(false),
        _ => Err(format!(
            "\"{value}\" is not a value for {name}; write True or False"
        )),
    }
}

fn show_bool(b: bool) -> String {
    if b { "True" } else { "False" }.to_string()
}

fn parse_count(name: &str, value: &str) -> Result<u32, String> {
    match value.parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "\"{value}\" is not a value for {name}; write a whole number of nodes, at least 1"
        )),
    }
}

fn parse_secs(name: &str, value: &str) -> Result<u64, String> {
    parse_duration(value).map_err(|e| format!("{name}: {e}"))
}

fn list_items(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Applies `op value` to a list attribute.
fn update_list(list: &mut Vec<String>, name: &str, op: Op, value: &str) -> Result<(), String> {
    let items = list_items(value);
    match op {
        Op::Assign => *list = items,
        Op::Add => {
            for item in items {
                if !list.contains(&item) {
                    list.push(item);
                }
            }
        }
        Op::Remove => {
            for item in items {
                let before = list.len();
                list.retain(|x| *x != item);
                if list.len() == before {
                    return Err(format!("\"{item}\" is not in {name}"));
                }
            }
        }
    }
    Ok(())
}

fn scalar_only(name: &str, op: Op) -> Result<(), String> {
    if op == Op::Assign {
        Ok(())
    } else {
        Err(format!(
            "{} works on lists; {name} takes a single value: use =",
            op.as_str()
        ))
    }
}

pub fn set_queue(q: &mut Queue, name: &str, op: Op, value: &str) -> Result<(), String> {
    if name != "node_sets" {
        scalar_only(name, op)?;
    }
    match name {
        "queue_type" => match value.to_ascii_lowercase().as_str() {
            "e" | "execution" => q.queue_type = QueueType::Execution,
            "r" | "route" | "p" | "pipe" => {
                return Err("routing (pipe) queues are not supported yet; use Execution".into());
            }
            _ => return Err(format!("\"{value}\" is not a queue type; write Execution")),
        },
        "priority" => {
            q.priority = match value.parse::<i32>() {
                Ok(p) if (-1024..=1023).contains(&p) => p,
                _ => {
                    return Err(format!(
                        "\"{value}\" is not a priority; write a whole number from -1024 to 1023"
                    ));
                }
            }
        }
        "resources_max.nodes" => q.max_nodes = Some(parse_count(name, value)?),
        "resources_min.nodes" => q.min_nodes = Some(parse_count(name, value)?),
        "resources_max.walltime" => q.max_walltime = Some(parse_secs(name, value)?),
        "resources_default.nodes" => q.default_nodes = Some(parse_count(name, value)?),
        "resources_default.walltime" => q.default_walltime = Some(parse_secs(name, value)?),
        "node_sets" => update_list(&mut q.node_sets, name, op, value)?,
        "enabled" => q.enabled = parse_bool(name, value)?,
        "started" => q.started = parse_bool(name, value)?,
        _ => return Err(format!("attribute {name} cannot be set on a queue")),
    }
    Ok(())
}

pub fn unset_queue(q: &mut Queue, name: &str) {
    let fresh = Queue::new(&q.name);
    match name {
        "queue_type" => q.queue_type = fresh.queue_type,
        "priority" => q.priority = fresh.priority,
        "resources_max.nodes" => q.max_nodes = None,
        "resources_min.nodes" => q.min_nodes = None,
        "resources_max.walltime" => q.max_walltime = None,
        "resources_default.nodes" => q.default_nodes = None,
        "resources_default.walltime" => q.default_walltime = None,
        "node_sets" => q.node_sets.clear(),
        "enabled" => q.enabled = fresh.enabled,
        "started" => q.started = fresh.started,
        _ => {}
    }
}

/// The attributes that differ from a new queue's, with PBS names and values.
/// `queue_type` is always shown.
pub fn queue_values(q: &Queue) -> Vec<(&'static str, String)> {
    let fresh = Queue::new(&q.name);
    let mut out = vec![("queue_type", "Execution".to_string())];
    if q.priority != fresh.priority {
        out.push(("priority", q.priority.to_string()));
    }
    let mut opt = |name, v: Option<String>| {
        if let Some(v) = v {
            out.push((name, v));
        }
    };
    opt("resources_max.nodes", q.max_nodes.map(|n| n.to_string()));
    opt("resources_min.nodes", q.min_nodes.map(|n| n.to_string()));
    opt("resources_max.walltime", q.max_walltime.map(format_hms));
    opt(
        "resources_default.nodes",
        q.default_nodes.map(|n| n.to_string()),
    );
    opt(
        "resources_default.walltime",
        q.default_walltime.map(format_hms),
    );
    if !q.node_sets.is_empty() {
        out.push(("node_sets", q.node_sets.join(",")));
    }
    if q.enabled != fresh.enabled {
        out.push(("enabled", show_bool(q.enabled)));
    }
    if q.started != fresh.started {
        out.push(("started", show_bool(q.started)));
    }
    out
}

pub fn set_server(s: &mut ServerAttrs, name: &str, op: Op, value: &str) -> Result<(), String> {
    if !matches!(name, "managers" | "operators") {
        scalar_only(name, op)?;
    }
    match name {
        "scheduling" => s.scheduling = parse_bool(name, value)?,
        "default_queue" => s.default_queue = Some(value.to_string()),
        "managers" => update_list(&mut s.managers, name, op, value)?,
        "operators" => update_list(&mut s.operators, name, op, value)?,
        "resources_default.walltime" => s.default_walltime = parse_secs(name, value)?,
        "job_history_duration" => s.job_history_duration = parse_secs(name, value)?,
        "kill_delay" => s.kill_delay = parse_secs(name, value)?,
        "scheduler_iteration" => {
            let secs = parse_secs(name, value)?;
            if secs == 0 {
                return Err("scheduler_iteration must be at least 1 second".into());
            }
            s.scheduler_iteration = secs;
        }
        _ => return Err(format!("attribute {name} cannot be set on the server")),
    }
    Ok(())
}

pub fn unset_server(s: &mut ServerAttrs, name: &str) {
    let d = ServerAttrs::default();
    match name {
        "scheduling" => s.scheduling = d.scheduling,
        "default_queue" => s.default_queue = None,
        "managers" => s.managers.clear(),
        "operators" => s.operators.clear(),
        "resources_default.walltime" => s.default_walltime = d.default_walltime,
        "job_history_duration" => s.job_history_duration = d.job_history_duration,
        "kill_delay" => s.kill_delay = d.kill_delay,
        "scheduler_iteration" => s.scheduler_iteration = d.scheduler_iteration,
        _ => {}
    }
}

/// Every server attribute with its value (for list), and whether it
/// differs from the default (for print).
pub fn server_values(s: &ServerAttrs) -> Vec<(&'static str, String, bool)> {
    let d = ServerAttrs::default();
    vec![
        (
            "scheduling",
            show_bool(s.scheduling),
            s.scheduling != d.scheduling,
        ),
        (
            "default_queue",
            s.default_queue.clone().unwrap_or_default(),
            s.default_queue.is_some(),
        ),
        ("managers", s.managers.join(","), !s.managers.is_empty()),
        ("operators", s.operators.join(","), !s.operators.is_empty()),
        (
            "resources_default.walltime",
            format_hms(s.default_walltime),
            s.default_walltime != d.default_walltime,
        ),
        (
            "job_history_duration",
            format_hms(s.job_history_duration),
            s.job_history_duration != d.job_history_duration,
        ),
        (
            "kill_delay",
            s.kill_delay.to_string(),
            s.kill_delay != d.kill_delay,
        ),
        (
            "scheduler_iteration",
            s.scheduler_iteration.to_string(),
            s.scheduler_iteration != d.scheduler_iteration,
        ),
    ]
}
