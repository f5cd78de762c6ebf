//! Running a parsed script: each command's rights checked, the command
//! applied to the configuration's working copy (queues and the server
//! here, other objects in their modules, `list`, `print` and `help` by
//! `print.rs`), then the cross-checks that name the line that broke them.

use super::print::{self, print_server_over};
use super::vocab::{Action, Command, HookAction, Outcome, QmgrError};
use super::{
    account, attrs, calendar, hook, node, node_group, node_set, pbs_node, resource, shutdown,
};
use crate::access::{Caller, Role};
use crate::queue::{Queue, valid_queue_name};
use crate::server::Config;
use crate::state::State;

/// Runs parsed commands against `config` (a working copy: on error the
/// caller discards it). `state` gives the node sets and the jobs that list
/// and delete look at. Times written without an offset (shutdown windows)
/// are in the calendar's time zone.
pub fn run(
    commands: &[Command],
    config: &mut Config,
    state: &State,
    caller: &Caller,
) -> Result<Outcome, QmgrError> {
    run_over(commands, config, state, caller, &Config::default())
}

/// [`run`], for a daemon whose configuration file seeds a new store with
/// `file`: `print server` then writes what recreates `config` on a fresh
/// daemon started from the same file (see [`print_server_over`]).
pub fn run_over(
    commands: &[Command],
    config: &mut Config,
    state: &State,
    caller: &Caller,
    file: &Config,
) -> Result<Outcome, QmgrError> {
    let mut outcome = Outcome::default();
    let warned_before = crate::route::check(config).unwrap_or_default();
    for cmd in commands {
        let fail = |message: String| QmgrError {
            line: cmd.line,
            message,
        };
        // A hook's content is the site's code: exported or printed by
        // managers only, as PBS lets root alone.
        if cmd.action.changes()
            || matches!(
                cmd.action,
                Action::ReorderQueue(_)
                    | Action::Hook(HookAction::Export { .. } | HookAction::Print(_))
            )
        {
            check_rights(&cmd.action, caller).map_err(fail)?;
        }
        let mut warnings = Vec::new();
        let hooks_shown = caller.role >= Role::Manager;
        apply(
            &cmd.action,
            config,
            state,
            &mut outcome,
            (file, hooks_shown),
            &mut warnings,
        )
        .map_err(fail)?;
        for warning in warnings {
            outcome
                .output
                .push_str(&format!("WARNING: line {}: {warning}\n", cmd.line));
        }
        if cmd.action.changes() {
            node::forget_missing(config, state);
            validate(config, state).map_err(fail)?;
            outcome.applied += 1;
        }
        if outcome.quit {
            break;
        }
    }
    // Route queue warnings the script brought about, once, at its end.
    for warning in crate::route::check(config).unwrap_or_default() {
        if !warned_before.contains(&warning) {
            outcome.output.push_str(&warning);
            outcome.output.push('\n');
        }
    }
    Ok(outcome)
}

fn check_rights(action: &Action, caller: &Caller) -> Result<(), String> {
    let need = match action {
        Action::CreateQueue(..) | Action::DeleteQueue(..) => Role::Manager,
        Action::Shutdown(s) if s.needs_manager() => Role::Manager,
        Action::CreateAccount(..)
        | Action::DeleteAccount(..)
        | Action::SetAccount(..)
        | Action::UnsetAccount(..) => Role::Manager,
        Action::CreateResource(..)
        | Action::DeleteResource(..)
        | Action::SetResource(..)
        | Action::UnsetResource(..) => Role::Manager,
        // A hook runs as the daemon's user: PBS lets root alone touch one.
        Action::Hook(_) => Role::Manager,
        Action::CreateNode(..) | Action::DeleteNode(..) | Action::SetSched(..) => Role::Manager,
        Action::CreateNodeGroup(..)
        | Action::DeleteNodeGroup(..)
        | Action::SetNodeGroup(..)
        | Action::UnsetNodeGroup(..)
        | Action::CreateNodeSet(..)
        | Action::DeleteNodeSet(..)
        | Action::SetNodeSet(..)
        | Action::UnsetNodeSet(..)
        | Action::SetCalendar(..)
        | Action::UnsetCalendar(..) => Role::Manager,
        Action::SetServer(list) if list.iter().any(|a| manager_only(&a.name)) => Role::Manager,
        Action::UnsetServer(names) if names.iter().any(|n| manager_only(n)) => Role::Manager,
        _ => Role::Operator,
    };
    if caller.role >= need {
        Ok(())
    } else {
        Err(format!(
            "{} may not do this: it needs {} rights (see qmgr -c \"list server\": managers, operators)",
            caller.user,
            need.as_str()
        ))
    }
}

/// Server attributes only managers change (PBS: the lists of rights and
/// of who may submit).
fn manager_only(attr: &str) -> bool {
    let attr = attr.to_ascii_lowercase();
    matches!(attr.as_str(), "managers" | "operators") || attr.starts_with("acl_")
}

fn no_queue(name: &str) -> String {
    format!("queue \"{name}\" does not exist; see qmgr -c \"list queue\"")
}

fn queue_mut<'a>(config: &'a mut Config, name: &str) -> Result<&'a mut Queue, String> {
    config.queues.get_mut(name).ok_or_else(|| no_queue(name))
}

/// The queues a list or print names; all of them when it names none.
fn named_queues<'a>(config: &'a Config, names: &[String]) -> Result<Vec<&'a Queue>, String> {
    if names.is_empty() {
        return Ok(config.queues.values().collect());
    }
    names
        .iter()
        .map(|name| config.queues.get(name).ok_or_else(|| no_queue(name)))
        .collect()
}

fn apply(
    action: &Action,
    config: &mut Config,
    state: &State,
    outcome: &mut Outcome,
    (file, hooks_shown): (&Config, bool),
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    let resources = config.resources.clone();
    let mut ctx = attrs::Ctx {
        resources: &resources,
        warnings,
    };
    match action {
        Action::CreateQueue(names, assigns) => {
            for name in names {
                valid_queue_name(name)
                    .map_err(|why| format!("bad queue name \"{name}\": {why}"))?;
                if config.queues.contains_key(name) {
                    return Err(format!("queue \"{name}\" already exists"));
                }
                let mut queue = Queue::new(name);
                for a in assigns {
                    attrs::set_queue_named(&mut queue, &a.name, a.op, &a.value, &mut ctx)?;
                }
                config.queues.insert(name.clone(), queue);
            }
        }
        Action::DeleteQueue(names) => {
            for name in names {
                if let Some(id) = queue_mut(config, name)?
                    .reservation
                    .filter(|id| config.reservations.contains_key(id))
                {
                    return Err(format!(
                        "queue \"{name}\" is reservation R{id}'s; pbs_rdel R{id} removes both"
                    ));
                }
                let jobs = state.counts(name).total();
                if jobs > 0 {
                    return Err(format!(
                        "queue \"{name}\" still has {jobs} job(s); delete or move them first"
                    ));
                }
                if let Some((route, attr)) = crate::route::named_by(config, name) {
                    return Err(format!(
                        "queue \"{name}\" is in the {attr} of route queue \"{route}\"; take it out there first (qmgr -c \"set queue {route} {attr} ...\")"
                    ));
                }
                if config.server.default_queue.as_deref() == Some(name.as_str()) {
                    return Err(format!(
                        "queue \"{name}\" is the server's default_queue; set server default_queue to another queue first"
                    ));
                }
                config.queues.remove(name);
            }
        }
        Action::SetQueue(names, assigns) => {
            for name in names {
                let queue = queue_mut(config, name)?;
                for a in assigns {
                    attrs::set_queue_named(queue, &a.name, a.op, &a.value, &mut ctx)?;
                }
            }
        }
        Action::UnsetQueue(names, attr_names) => {
            for name in names {
                let queue = queue_mut(config, name)?;
                for a in attr_names {
                    attrs::unset_queue_named(queue, a)?;
                }
            }
        }
        Action::SetServer(assigns) => {
            for a in assigns {
                attrs::set_server_named(&mut config.server, &a.name, a.op, &a.value, &mut ctx)?;
            }
        }
        Action::UnsetServer(attr_names) => {
            for a in attr_names {
                attrs::unset_server_named(&mut config.server, a)?;
            }
        }
        Action::ListQueue(names) => {
            for queue in named_queues(config, names)? {
                outcome.output.push_str(&print::list_queue(queue, state));
            }
        }
        Action::ListServer => outcome.output.push_str(&print::list_server(config, state)),
        Action::PrintServer if hooks_shown => {
            outcome.output.push_str(&print_server_over(config, file))
        }
        Action::PrintServer => {
            let mut without = config.clone();
            without.hooks.clear();
            outcome.output.push_str(&print_server_over(&without, file));
            if !config.hooks.is_empty() {
                outcome.output.push_str(
                    "#
# Hooks are printed for managers only (print hook).
#
",
                );
            }
        }
        Action::PrintQueue(names) => {
            for queue in named_queues(config, names)? {
                outcome.output.push_str(&print::print_queue(queue));
            }
        }
        Action::Help(topic) => outcome.output.push_str(&print::help(topic.as_deref())),
        Action::ReorderQueue(names) => {
            for name in names {
                queue_mut(config, name)?;
                let reordered = state.cascade_order(name);
                outcome
                    .output
                    .push_str(&format!("queue {name}: {reordered}\n"));
                outcome.reorder.push(name.clone());
            }
        }
        Action::CreateAccount(..)
        | Action::DeleteAccount(..)
        | Action::SetAccount(..)
        | Action::UnsetAccount(..)
        | Action::ListAccount(..) => {
            account::apply(action, config, state, outcome)?;
        }
        Action::CreateNodeGroup(..)
        | Action::DeleteNodeGroup(..)
        | Action::SetNodeGroup(..)
        | Action::UnsetNodeGroup(..)
        | Action::ListNodeGroup(..) => {
            node_group::apply(action, config, outcome)?;
        }
        Action::CreateNodeSet(..)
        | Action::DeleteNodeSet(..)
        | Action::SetNodeSet(..)
        | Action::UnsetNodeSet(..)
        | Action::ListNodeSet(..) => {
            node_set::apply(action, config, state, outcome)?;
        }
        Action::SetNode(..) | Action::UnsetNode(..) | Action::ListNode(..) => {
            node::apply(action, config, state, outcome)?;
        }
        Action::SetCalendar(..) | Action::UnsetCalendar(..) | Action::ListCalendar => {
            calendar::apply(action, config, outcome)?;
        }
        Action::Shutdown(s) => shutdown::apply(s, config, state, outcome)?,
        Action::Hook(h) => hook::apply(h, config, outcome, ctx.warnings)?,
        Action::CreateNode(hosts, assigns) => {
            pbs_node::create(hosts, assigns, config, state, outcome, ctx.warnings)?
        }
        Action::DeleteNode(hosts) => pbs_node::delete(hosts, config, state, outcome)?,
        Action::SetSched(assigns) => pbs_node::set_sched(assigns, config, ctx.warnings)?,
        Action::ListSched => outcome.output.push_str(&pbs_node::list_sched(config)),
        Action::CreateResource(..)
        | Action::DeleteResource(..)
        | Action::SetResource(..)
        | Action::UnsetResource(..)
        | Action::ListResource(..)
        | Action::PrintResource(..) => {
            resource::apply(action, config, outcome)?;
        }
        Action::Active(object, shown) => {
            if !shown.is_empty() {
                outcome
                    .output
                    .push_str(&format!("active {object}: {}\n", shown.join(",")));
            }
        }
        Action::Quit => outcome.quit = true,
    }
    Ok(())
}

/// Cross-checks after each change, so the error names the line that broke it.
fn validate(config: &Config, state: &State) -> Result<(), String> {
    let set_names = node_set::known_sets(config, state);
    crate::server::check_node_groups(config, &set_names)
        .map_err(|(key, why)| format!("{key}: {why}"))?;
    config.calendar.validate().map_err(|e| e.to_string())?;
    config.check_periods()?;
    if let Some(dq) = &config.server.default_queue
        && !config.queues.contains_key(dq)
    {
        return Err(format!(
            "default_queue \"{dq}\" does not exist; create it first or choose another"
        ));
    }
    crate::route::check(config)?;
    for q in config.queues.values() {
        if q.is_route() {
            let jobs = state.counts(&q.name).total();
            if jobs > 0 {
                return Err(format!(
                    "queue \"{}\" has {jobs} job(s) and a route queue keeps none; move them to another queue first (qmove)",
                    q.name
                ));
            }
        }
        for set in &q.node_sets {
            if !set_names.contains(&set.as_str()) {
                return Err(format!(
                    "queue \"{}\": node set \"{set}\" does not exist; node sets: {}",
                    q.name,
                    set_names.join(", ")
                ));
            }
        }
        if let (Some(min), Some(max)) = (q.min_nodes, q.max_nodes)
            && min > max
        {
            return Err(format!(
                "queue \"{}\": resources_min.nodes {min} is above resources_max.nodes {max}",
                q.name
            ));
        }
        if let Some(d) = q.default_nodes {
            if q.max_nodes.is_some_and(|max| d > max) || q.min_nodes.is_some_and(|min| d < min) {
                return Err(format!(
                    "queue \"{}\": resources_default.nodes {d} is outside the queue's node limits",
                    q.name
                ));
            }
        }
        if let (Some(d), Some(max)) = (q.default_walltime, q.max_walltime)
            && d > max
        {
            return Err(format!(
                "queue \"{}\": resources_default.walltime is above resources_max.walltime",
                q.name
            ));
        }
    }
    Ok(())
}
