//! The queue's and the server's attributes: qmgr's table of their own
//! (`priority`, `resources_max.nodes`, `job_order`, ...), how each is read
//! and written, and the way a name written in a command finds its table:
//! its own here, `resources_*.NAME` in `resource.rs`, PBS's limits and
//! access lists in `pbs_attrs.rs`, those kept without effect in `inert.rs`.
//!
//! Names follow PBS (`resources_max.nodes`); the short names of the issue
//! and of NQS habit (`max_nodes`) are accepted as aliases. Printing always
//! uses the PBS name, so `print server` output reads the same to a PBS admin.

use std::collections::BTreeMap;

use super::inert::{self, Object};
use super::values::{
    canonical, list_items, parse_bool, parse_count, scalar_only, show_bool, update_list,
};
use super::vocab::Op;
use super::{pbs_attrs, resource};
use crate::queue::{PeriodEnd, Queue, QueueType};
use crate::server::{Backfill, JobOrder, ServerAttrs};
use crate::site_resources::ResourceDef;
use crate::time::TimeOfDay;
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
    ("node_group", &[]),
    ("periods", &["period"]),
    ("period_end", &[]),
    ("period_end_warning", &[]),
    ("warning_signal", &[]),
    ("enabled", &[]),
    ("started", &[]),
    ("reorder_times", &[]),
    ("route_destinations", &["destinations"]),
    ("default_destination", &[]),
    ("holding_queue", &["hold_queue"]),
];

/// Server attributes in the order list and print show them.
pub const SERVER_ATTRS: &[(&str, &[&str])] = &[
    ("scheduling", &[]),
    ("default_queue", &[]),
    ("managers", &[]),
    ("operators", &[]),
    ("resources_default.walltime", &["default_walltime"]),
    ("job_history_duration", &["keep_completed"]),
    ("kill_delay", &[]),
    ("max_array_size", &["max_job_array_size"]),
    ("default_rerunnable", &["rerunnable"]),
    ("max_load_factor", &["load_factor"]),
    ("scheduler_iteration", &[]),
    ("job_order", &["job_sort", "sort_by"]),
    ("by_queue", &["queue_priority_first"]),
    ("age_factor", &[]),
    ("block_priority", &[]),
    ("backfill", &[]),
    ("search_depth", &["bf_max_job_test"]),
    ("fairshare_half_life", &["half_life"]),
    ("max_user_queued", &[]),
    ("max_user_run", &[]),
    ("max_user_node_hours", &[]),
    ("max_group_queued", &[]),
    ("max_group_run", &[]),
    ("max_group_node_hours", &[]),
    ("resv_enable", &[]),
    ("acl_resv_user_enable", &[]),
    ("acl_resv_users", &[]),
    ("acl_resv_group_enable", &[]),
    ("acl_resv_groups", &[]),
    ("preempt_queue_prio", &[]),
    ("preempt_order", &[]),
    ("preempt_prio", &[]),
];

fn parse_secs(name: &str, value: &str) -> Result<u64, String> {
    parse_duration(value).map_err(|e| format!("{name}: {e}"))
}

/// `priority.NIGHT`: the period a per-period priority names, if it is one.
fn period_of_priority(name: &str) -> Option<&str> {
    let (head, period) = name.split_once('.')?;
    (head.eq_ignore_ascii_case("priority") && !period.is_empty()).then_some(period)
}

/// What setting an attribute needs besides the object: the site's
/// resources (to check `resources_max.NAME`), and where warnings go.
pub struct Ctx<'a> {
    pub resources: &'a BTreeMap<String, ResourceDef>,
    pub warnings: &'a mut Vec<String>,
}

/// The message for an attribute no table knows.
fn unknown(name: &str, object: &str, table: &[(&str, &[&str])], pbs: &[&str]) -> String {
    let known: Vec<&str> = table
        .iter()
        .map(|(c, _)| *c)
        .chain(pbs.iter().copied())
        .collect();
    format!(
        "unknown attribute \"{name}\" for {object}; known: {}, resources_max.NAME, \
         resources_min.NAME, resources_default.NAME (qmgr -c \"help {}\" lists the PBS \
         and Torque attributes accepted without effect)",
        known.join(", "),
        if object == "a queue" {
            "queue"
        } else {
            "server"
        }
    )
}

/// Sets one queue attribute as qmgr would (`period_end = kill`), for
/// configuration read from elsewhere (the daemon's file).
pub fn set_queue_attr(queue: &mut Queue, name: &str, value: &str) -> Result<(), String> {
    let resources = BTreeMap::new();
    let mut warnings = Vec::new();
    let mut ctx = Ctx {
        resources: &resources,
        warnings: &mut warnings,
    };
    set_queue_named(queue, name, Op::Assign, value, &mut ctx)
}

/// Sets one server attribute as qmgr would (`job_order = priority_aging`),
/// for configuration read from elsewhere (the daemon's file).
pub fn set_server_attr(server: &mut ServerAttrs, name: &str, value: &str) -> Result<(), String> {
    let mut warnings = Vec::new();
    if let Some(result) = pbs_attrs::set_server(server, name, Op::Assign, value, &mut warnings) {
        return result;
    }
    set_server(server, name, Op::Assign, value)
}

/// `default_chunk.NAME` names a resource as `resources_default.NAME` must:
/// one built in or created, else the same refusal.
fn known_chunk_resource(name: &str, ctx: &Ctx) -> Result<(), String> {
    match name.split_once('.') {
        Some((head, resource)) if head.eq_ignore_ascii_case("default_chunk") => {
            super::resource::known_kind(name, resource, ctx.resources).map(|_| ())
        }
        _ => Ok(()),
    }
}

/// Sets a queue attribute as written: aliases, `priority.PERIOD`,
/// `resources_*.NAME`, PBS's limits and access lists, and the attributes
/// accepted without effect (with a warning).
pub fn set_queue_named(
    q: &mut Queue,
    name: &str,
    op: Op,
    value: &str,
    ctx: &mut Ctx,
) -> Result<(), String> {
    if let Some(period) = period_of_priority(name) {
        scalar_only(name, op)?;
        q.period_priority
            .insert(period.to_string(), parse_priority(value)?);
        return Ok(());
    }
    if let Some(why) = inert::read_only(name) {
        return Err(why);
    }
    if let Ok(canon) = canonical(QUEUE_ATTRS, name, "a queue") {
        return set_queue(q, canon, op, value);
    }
    if let Some(result) = q.resource_maps().set(name, op, value, ctx.resources) {
        // Kept without effect before its resource had flag q: no longer.
        q.inert.remove(&name.to_ascii_lowercase());
        return result;
    }
    if let Some(result) = pbs_attrs::set_queue(q, name, op, value, ctx.warnings) {
        return result;
    }
    known_chunk_resource(name, ctx)?;
    let whose = format!("queue {}", q.name);
    if let Some(result) = inert::set(
        &mut q.inert,
        Object::Queue,
        &whose,
        name,
        op,
        value,
        ctx.warnings,
    ) {
        return result;
    }
    Err(unknown(
        name,
        "a queue",
        QUEUE_ATTRS,
        pbs_attrs::QUEUE_ATTRS,
    ))
}

/// Unsets a queue attribute as written (as [`set_queue_named`] reads it).
pub fn unset_queue_named(q: &mut Queue, name: &str) -> Result<(), String> {
    if let Some(period) = period_of_priority(name) {
        q.period_priority.remove(period);
        return Ok(());
    }
    if let Ok(canon) = canonical(QUEUE_ATTRS, name, "a queue") {
        unset_queue(q, canon);
        return Ok(());
    }
    if q.resource_maps().unset(name) {
        return Ok(());
    }
    if pbs_attrs::unset_queue(q, name) {
        return Ok(());
    }
    if inert::is_inert(name, Object::Queue) {
        q.inert.remove(&name.to_ascii_lowercase());
        return Ok(());
    }
    Err(unknown(
        name,
        "a queue",
        QUEUE_ATTRS,
        pbs_attrs::QUEUE_ATTRS,
    ))
}

/// Sets a server attribute as written (see [`set_queue_named`]).
pub fn set_server_named(
    s: &mut ServerAttrs,
    name: &str,
    op: Op,
    value: &str,
    ctx: &mut Ctx,
) -> Result<(), String> {
    if let Some(why) = inert::read_only(name) {
        return Err(why);
    }
    if let Ok(canon) = canonical(SERVER_ATTRS, name, "the server") {
        if canon == "max_group_run" {
            ctx.warnings.push(
                "server: max_group_run counts the jobs of each account (qsub -A, with its \
                 sub-accounts), not of each Unix group; for Unix groups write \
                 max_run = \"[g:PBS_GENERIC=N]\""
                    .to_string(),
            );
        }
        return set_server(s, canon, op, value);
    }
    if let Some(result) = s.resource_maps().set(name, op, value, ctx.resources) {
        // Kept without effect before its resource had flag q: no longer.
        s.inert.remove(&name.to_ascii_lowercase());
        return result;
    }
    if let Some(result) = pbs_attrs::set_server(s, name, op, value, ctx.warnings) {
        return result;
    }
    known_chunk_resource(name, ctx)?;
    if let Some(result) = inert::set(
        &mut s.inert,
        Object::Server,
        "server",
        name,
        op,
        value,
        ctx.warnings,
    ) {
        return result;
    }
    Err(unknown(
        name,
        "the server",
        SERVER_ATTRS,
        pbs_attrs::SERVER_ATTRS,
    ))
}

/// Unsets a server attribute as written.
pub fn unset_server_named(s: &mut ServerAttrs, name: &str) -> Result<(), String> {
    if let Ok(canon) = canonical(SERVER_ATTRS, name, "the server") {
        unset_server(s, canon);
        return Ok(());
    }
    if s.resource_maps().unset(name) {
        return Ok(());
    }
    if pbs_attrs::unset_server(s, name) {
        return Ok(());
    }
    if inert::is_inert(name, Object::Server) {
        s.inert.remove(&name.to_ascii_lowercase());
        return Ok(());
    }
    Err(unknown(
        name,
        "the server",
        SERVER_ATTRS,
        pbs_attrs::SERVER_ATTRS,
    ))
}

fn parse_priority(value: &str) -> Result<i32, String> {
    match value.parse::<i32>() {
        Ok(p) if (-1024..=1023).contains(&p) => Ok(p),
        _ => Err(format!(
            "\"{value}\" is not a priority; write a whole number from -1024 to 1023"
        )),
    }
}

pub fn set_queue(q: &mut Queue, name: &str, op: Op, value: &str) -> Result<(), String> {
    if !matches!(
        name,
        "node_sets" | "reorder_times" | "periods" | "route_destinations"
    ) {
        scalar_only(name, op)?;
    }
    match name {
        "queue_type" => match value.to_ascii_lowercase().as_str() {
            "e" | "execution" => q.queue_type = QueueType::Execution,
            // PBS says route, NQS pipe.
            "r" | "route" | "p" | "pipe" => q.queue_type = QueueType::Route,
            _ => {
                return Err(format!(
                    "\"{value}\" is not a queue type; write Execution, or Route (pipe)"
                ));
            }
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
        "node_group" => q.node_group = Some(value.trim().to_string()).filter(|g| !g.is_empty()),
        "periods" => update_list(&mut q.periods, name, op, value)?,
        "period_end" => {
            q.period_end = match value.to_ascii_lowercase().as_str() {
                "continue" => PeriodEnd::Continue,
                "kill" => PeriodEnd::Kill,
                "requeue" => PeriodEnd::Requeue,
                _ => {
                    return Err(format!(
                        "\"{value}\" is not a value for period_end; write continue, kill or requeue"
                    ));
                }
            }
        }
        "period_end_warning" => q.period_end_warning = Some(parse_secs(name, value)?),
        "warning_signal" => {
            let signal = crate::signal::parse_signal(value).map_err(|e| e.to_string())?;
            q.warning_signal = Some(signal.to_string());
        }
        "enabled" => q.enabled = parse_bool(name, value)?,
        "started" => q.started = parse_bool(name, value)?,
        "reorder_times" => set_reorder_times(q, op, value)?,
        "route_destinations" => {
            for item in list_items(value) {
                queue_name(name, &item)?;
            }
            update_list(&mut q.route_destinations, name, op, value)?;
        }
        "default_destination" => q.default_destination = Some(queue_name(name, value)?),
        "holding_queue" => q.holding_queue = Some(queue_name(name, value)?),
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
        "node_group" => q.node_group = None,
        "periods" => q.periods.clear(),
        "period_end" => q.period_end = PeriodEnd::Continue,
        "period_end_warning" => q.period_end_warning = None,
        "warning_signal" => q.warning_signal = None,
        "enabled" => q.enabled = fresh.enabled,
        "started" => q.started = fresh.started,
        "reorder_times" => q.reorder_times.clear(),
        "route_destinations" => q.route_destinations.clear(),
        "default_destination" => q.default_destination = None,
        "holding_queue" => q.holding_queue = None,
        _ => {}
    }
}

/// A queue named as a value (route destinations); whether it exists is
/// checked once the command has been applied.
fn queue_name(attr: &str, value: &str) -> Result<String, String> {
    let value = value.trim();
    crate::queue::valid_queue_name(value)
        .map(|()| value.to_string())
        .map_err(|why| format!("{attr}: \"{value}\" is not a queue name: {why}"))
}

/// The attributes that differ from a new queue's, with PBS names and values.
/// `queue_type` is always shown.
pub fn queue_values(q: &Queue) -> Vec<(String, String)> {
    let mut out = queue_fixed_values(q)
        .into_iter()
        .map(|(n, v)| (n.to_string(), v))
        .collect::<Vec<_>>();
    for (period, p) in &q.period_priority {
        out.push((format!("priority.{period}"), p.to_string()));
    }
    out.extend(pbs_attrs::queue_values(q));
    out.extend(resource::map_values(
        &q.resources_max,
        &q.resources_min,
        &q.resources_default,
    ));
    out.extend(resource::available_values(&q.resources_available));
    out.extend(q.inert.iter().map(|(n, v)| (n.clone(), v.clone())));
    out
}

fn queue_fixed_values(q: &Queue) -> Vec<(&'static str, String)> {
    let fresh = Queue::new(&q.name);
    let shown_type = match q.queue_type {
        QueueType::Execution => "Execution",
        QueueType::Route => "Route",
    };
    let mut out = vec![("queue_type", shown_type.to_string())];
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
    if let Some(group) = &q.node_group {
        out.push(("node_group", group.clone()));
    }
    if !q.periods.is_empty() {
        out.push(("periods", q.periods.join(",")));
    }
    if q.period_end.ends_jobs() {
        out.push(("period_end", q.period_end.as_str().to_string()));
    }
    if let Some(secs) = q.period_end_warning {
        out.push(("period_end_warning", format_hms(secs)));
    }
    if let Some(signal) = &q.warning_signal {
        out.push(("warning_signal", signal.clone()));
    }
    if q.enabled != fresh.enabled {
        out.push(("enabled", show_bool(q.enabled)));
    }
    if q.started != fresh.started {
        out.push(("started", show_bool(q.started)));
    }
    if !q.reorder_times.is_empty() {
        let times: Vec<String> = q.reorder_times.iter().map(ToString::to_string).collect();
        out.push(("reorder_times", times.join(",")));
    }
    if !q.route_destinations.is_empty() {
        out.push(("route_destinations", q.route_destinations.join(",")));
    }
    if let Some(d) = &q.default_destination {
        out.push(("default_destination", d.clone()));
    }
    if let Some(h) = &q.holding_queue {
        out.push(("holding_queue", h.clone()));
    }
    out
}

/// `reorder_times = 08:00,20:00` (also += and -=): kept sorted, once each.
fn set_reorder_times(q: &mut Queue, op: Op, value: &str) -> Result<(), String> {
    let mut times: Vec<String> = q.reorder_times.iter().map(ToString::to_string).collect();
    let canonical: Vec<String> = list_items(value)
        .iter()
        .map(|item| TimeOfDay::parse(item).map(|t| t.to_string()))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("reorder_times: {e}"))?;
    update_list(&mut times, "reorder_times", op, &canonical.join(","))?;
    let mut parsed: Vec<TimeOfDay> = times
        .iter()
        .map(|t| TimeOfDay::parse(t))
        .collect::<Result<_, _>>()?;
    parsed.sort();
    parsed.dedup();
    q.reorder_times = parsed;
    Ok(())
}

pub fn set_server(s: &mut ServerAttrs, name: &str, op: Op, value: &str) -> Result<(), String> {
    if !matches!(
        name,
        "managers" | "operators" | "acl_resv_users" | "acl_resv_groups"
    ) {
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
        "max_array_size" => {
            let n = parse_count(name, value)?;
            if n == 0 || n > crate::array::MAX_INDEX {
                return Err(format!(
                    "max_array_size = {value}: give 1 to {}",
                    crate::array::MAX_INDEX
                ));
            }
            s.max_array_size = n;
        }
        "default_rerunnable" => s.default_rerunnable = parse_bool(name, value)?,
        "max_load_factor" => s.max_load_factor = parse_number(name, value)?,
        "scheduler_iteration" => {
            let secs = parse_secs(name, value)?;
            if secs == 0 {
                return Err("scheduler_iteration must be at least 1 second".into());
            }
            s.scheduler_iteration = secs;
        }
        "job_order" => s.job_order = JobOrder::ALL
            .into_iter()
            .find(|o| o.as_str() == value.to_ascii_lowercase())
            .ok_or_else(|| {
                format!(
                    "\"{value}\" is not a job order; write fifo, priority_aging, hrn or fairshare"
                )
            })?,
        "by_queue" => s.by_queue = parse_bool(name, value)?,
        "age_factor" => s.age_factor = parse_number(name, value)?,
        "block_priority" => s.block_priority = parse_number(name, value)?,
        "backfill" => s.backfill = Backfill::ALL
            .into_iter()
            .find(|b| b.as_str() == value.to_ascii_lowercase())
            .ok_or_else(|| {
                format!(
                    "\"{value}\" is not a backfill mode; write none, easy, conservative or easy++"
                )
            })?,
        "search_depth" => s.search_depth = parse_whole(name, value)?,
        "fairshare_half_life" => {
            let secs = parse_secs(name, value)?;
            if secs == 0 {
                return Err("fairshare_half_life must be at least 1 second".into());
            }
            s.fairshare_half_life = secs;
        }
        "max_user_queued" => s.max_user_queued = Some(parse_count(name, value)?),
        "max_user_run" => s.max_user_run = Some(parse_count(name, value)?),
        "max_user_node_hours" => s.max_user_node_hours = Some(parse_whole(name, value)?.into()),
        "max_group_queued" => s.max_group_queued = Some(parse_count(name, value)?),
        "max_group_run" => s.max_group_run = Some(parse_count(name, value)?),
        "max_group_node_hours" => s.max_group_node_hours = Some(parse_whole(name, value)?.into()),
        "resv_enable" => s.resv_enable = parse_bool(name, value)?,
        "acl_resv_user_enable" => s.acl_resv_user_enable = parse_bool(name, value)?,
        "acl_resv_users" => update_list(&mut s.acl_resv_users, name, op, value)?,
        "acl_resv_group_enable" => s.acl_resv_group_enable = parse_bool(name, value)?,
        "acl_resv_groups" => update_list(&mut s.acl_resv_groups, name, op, value)?,
        "preempt_queue_prio" => {
            s.preempt_queue_prio = match value.trim().parse::<i32>() {
                Ok(p) if (-1024..=1023).contains(&p) => p,
                _ => {
                    return Err(format!(
                        "\"{value}\" is not a priority for preempt_queue_prio; write a whole \
                         number from -1024 to 1023 (queues at or above it are express)"
                    ));
                }
            }
        }
        "preempt_order" => {
            let order = crate::preempt::PreemptOrder::parse(value)?;
            s.preempt_order = order.to_string();
        }
        "preempt_prio" => s.preempt_prio = crate::preempt::parse_levels(value)?,
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
        "max_array_size" => s.max_array_size = d.max_array_size,
        "default_rerunnable" => s.default_rerunnable = d.default_rerunnable,
        "max_load_factor" => s.max_load_factor = d.max_load_factor,
        "scheduler_iteration" => s.scheduler_iteration = d.scheduler_iteration,
        "job_order" => s.job_order = d.job_order,
        "by_queue" => s.by_queue = d.by_queue,
        "age_factor" => s.age_factor = d.age_factor,
        "block_priority" => s.block_priority = d.block_priority,
        "backfill" => s.backfill = d.backfill,
        "search_depth" => s.search_depth = d.search_depth,
        "fairshare_half_life" => s.fairshare_half_life = d.fairshare_half_life,
        "max_user_queued" => s.max_user_queued = None,
        "max_user_run" => s.max_user_run = None,
        "max_user_node_hours" => s.max_user_node_hours = None,
        "max_group_queued" => s.max_group_queued = None,
        "max_group_run" => s.max_group_run = None,
        "max_group_node_hours" => s.max_group_node_hours = None,
        "resv_enable" => s.resv_enable = d.resv_enable,
        "acl_resv_user_enable" => s.acl_resv_user_enable = false,
        "acl_resv_users" => s.acl_resv_users.clear(),
        "acl_resv_group_enable" => s.acl_resv_group_enable = false,
        "acl_resv_groups" => s.acl_resv_groups.clear(),
        "preempt_queue_prio" => s.preempt_queue_prio = d.preempt_queue_prio,
        "preempt_order" => s.preempt_order = d.preempt_order,
        "preempt_prio" => s.preempt_prio = d.preempt_prio,
        _ => {}
    }
}

/// Every server attribute with its value (for list), and whether it
/// differs from the default (for print).
pub fn server_values(s: &ServerAttrs) -> Vec<(String, String, bool)> {
    let d = ServerAttrs::default();
    let fixed: Vec<(&'static str, String, bool)> = vec![
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
            "max_array_size",
            s.max_array_size.to_string(),
            s.max_array_size != d.max_array_size,
        ),
        (
            "default_rerunnable",
            s.default_rerunnable.to_string(),
            s.default_rerunnable != d.default_rerunnable,
        ),
        (
            "max_load_factor",
            s.max_load_factor.to_string(),
            s.max_load_factor != d.max_load_factor,
        ),
        (
            "scheduler_iteration",
            s.scheduler_iteration.to_string(),
            s.scheduler_iteration != d.scheduler_iteration,
        ),
        (
            "job_order",
            s.job_order.as_str().to_string(),
            s.job_order != d.job_order,
        ),
        ("by_queue", show_bool(s.by_queue), s.by_queue != d.by_queue),
        (
            "age_factor",
            s.age_factor.to_string(),
            s.age_factor != d.age_factor,
        ),
        (
            "block_priority",
            s.block_priority.to_string(),
            s.block_priority != d.block_priority,
        ),
        (
            "backfill",
            s.backfill.as_str().to_string(),
            s.backfill != d.backfill,
        ),
        (
            "search_depth",
            s.search_depth.to_string(),
            s.search_depth != d.search_depth,
        ),
        (
            "fairshare_half_life",
            format_hms(s.fairshare_half_life),
            s.fairshare_half_life != d.fairshare_half_life,
        ),
        optional("max_user_queued", s.max_user_queued),
        optional("max_user_run", s.max_user_run),
        optional("max_user_node_hours", s.max_user_node_hours),
        optional("max_group_queued", s.max_group_queued),
        optional("max_group_run", s.max_group_run),
        optional("max_group_node_hours", s.max_group_node_hours),
        (
            "resv_enable",
            show_bool(s.resv_enable),
            s.resv_enable != d.resv_enable,
        ),
        (
            "acl_resv_user_enable",
            show_bool(s.acl_resv_user_enable),
            s.acl_resv_user_enable,
        ),
        (
            "acl_resv_users",
            s.acl_resv_users.join(","),
            !s.acl_resv_users.is_empty(),
        ),
        (
            "acl_resv_group_enable",
            show_bool(s.acl_resv_group_enable),
            s.acl_resv_group_enable,
        ),
        (
            "acl_resv_groups",
            s.acl_resv_groups.join(","),
            !s.acl_resv_groups.is_empty(),
        ),
        (
            "preempt_queue_prio",
            s.preempt_queue_prio.to_string(),
            s.preempt_queue_prio != d.preempt_queue_prio,
        ),
        (
            "preempt_order",
            s.preempt_order.clone(),
            s.preempt_order != d.preempt_order,
        ),
        (
            "preempt_prio",
            s.preempt_prio.join(", "),
            s.preempt_prio != d.preempt_prio,
        ),
    ];
    let mut out: Vec<(String, String, bool)> = fixed
        .into_iter()
        .map(|(n, v, differs)| (n.to_string(), v, differs))
        .collect();
    out.extend(pbs_attrs::server_values(s));
    for (name, value) in
        resource::map_values(&s.resources_max, &s.resources_min, &s.resources_default)
    {
        out.push((name, value, true));
    }
    for (name, value) in resource::available_values(&s.resources_available) {
        out.push((name, value, true));
    }
    out.extend(s.inert.iter().map(|(n, v)| (n.clone(), v.clone(), true)));
    out
}

/// An unset limit lists as empty and is not printed.
fn optional<T: ToString>(name: &'static str, v: Option<T>) -> (&'static str, String, bool) {
    (
        name,
        v.as_ref().map(ToString::to_string).unwrap_or_default(),
        v.is_some(),
    )
}

fn parse_number(name: &str, value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(format!(
            "\"{value}\" is not a value for {name}; write a number, 0 or more"
        )),
    }
}

fn parse_whole(name: &str, value: &str) -> Result<u32, String> {
    value.parse::<u32>().map_err(|_| {
        format!("\"{value}\" is not a value for {name}; write a whole number, 0 or more")
    })
}
