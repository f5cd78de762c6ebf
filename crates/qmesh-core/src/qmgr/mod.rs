//! qmgr, the administrator's language (PBS grammar, NQS's `per_request`).
//!
//! A script is parsed whole, then applied command by command to a copy of
//! the configuration; the first error stops it and names the line, and the
//! caller keeps the old configuration. So a script applies all or nothing.

mod account;
mod attrs;
mod calendar;
mod inert;
mod lex;
mod node;
mod node_group;
mod node_set;
mod parse;
mod pbs_attrs;
mod print;
mod resource;
mod shutdown;
mod values;
mod vocab;

pub use calendar::import_holidays_commands;
pub use parse::parse_script;
pub use print::{print_server, print_server_over};
pub use values::parse_bool;
pub use vocab::{
    Action, Assignment, Command, MAX_COMMANDS, MAX_SCRIPT_BYTES, Op, Outcome, QmgrError,
    ShutdownAction,
};

/// Sets one queue attribute as qmgr would (`period_end = kill`), for
/// configuration read from elsewhere (the daemon's file).
pub fn set_queue_attr(queue: &mut Queue, name: &str, value: &str) -> Result<(), String> {
    let resources = std::collections::BTreeMap::new();
    let mut warnings = Vec::new();
    let mut ctx = attrs::Ctx {
        resources: &resources,
        warnings: &mut warnings,
    };
    attrs::set_queue_named(queue, name, Op::Assign, value, &mut ctx)
}

/// Sets one server attribute as qmgr would (`job_order = priority_aging`),
/// for configuration read from elsewhere (the daemon's file).
pub fn set_server_attr(
    server: &mut crate::server::ServerAttrs,
    name: &str,
    value: &str,
) -> Result<(), String> {
    let mut warnings = Vec::new();
    if let Some(result) = pbs_attrs::set_server(server, name, Op::Assign, value, &mut warnings) {
        return result;
    }
    attrs::set_server(server, name, Op::Assign, value)
}

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
        if cmd.action.changes() || matches!(cmd.action, Action::ReorderQueue(_)) {
            check_rights(&cmd.action, caller).map_err(fail)?;
        }
        let mut warnings = Vec::new();
        apply(
            &cmd.action,
            config,
            state,
            &mut outcome,
            file,
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
    file: &Config,
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
                queue_mut(config, name)?;
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
        Action::PrintServer => outcome.output.push_str(&print_server_over(config, file)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::tests::{caller, state, submit};

    pub(super) fn run_as(
        role: Role,
        script: &str,
        config: &mut Config,
        st: &State,
    ) -> Result<Outcome, QmgrError> {
        let cmds = parse_script(script)?;
        run(&cmds, config, st, &caller(7, role))
    }

    #[test]
    fn max_array_size_bounds_arrays_in_both_names() {
        let st = state(4);
        let mut config = st.config().clone();
        assert_eq!(config.server.max_array_size, 100_000);
        run_as(
            Role::Manager,
            "set server max_job_array_size = 500",
            &mut config,
            &st,
        )
        .unwrap();
        assert_eq!(config.server.max_array_size, 500);
        let printed = run_as(Role::Manager, "print server", &mut config, &st).unwrap();
        assert!(
            printed.output.contains("set server max_array_size = 500"),
            "{}",
            printed.output
        );
        assert!(
            run_as(
                Role::Manager,
                "set server max_array_size = 0",
                &mut config,
                &st
            )
            .is_err()
        );
        run_as(
            Role::Manager,
            "unset server max_array_size",
            &mut config,
            &st,
        )
        .unwrap();
        assert_eq!(config.server.max_array_size, 100_000);
    }

    #[test]
    fn creates_and_sets_a_queue() {
        let st = state(4);
        let mut config = st.config().clone();
        let out = run_as(
            Role::Manager,
            "create queue fast priority=10\nset queue fast enabled=true, started = t\nset per_request ncpus = 2 fast\nset queue fast max_walltime = 1:00:00",
            &mut config,
            &st,
        )
        .unwrap();
        assert_eq!(out.applied, 4);
        let q = &config.queues["fast"];
        assert_eq!((q.priority, q.enabled, q.started), (10, true, true));
        assert_eq!(q.default_nodes, Some(2));
        assert_eq!(q.max_walltime, Some(3600));
    }

    #[test]
    fn an_error_names_the_line_and_the_word() {
        let st = state(4);
        let mut config = st.config().clone();
        let err = run_as(
            Role::Manager,
            "create queue a\nset queue a prioirty = 3",
            &mut config,
            &st,
        )
        .unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.message.contains("\"prioirty\""), "{err}");
        let err = run_as(
            Role::Manager,
            "set queue nosuch priority = 1",
            &mut config,
            &st,
        )
        .unwrap_err();
        assert!(
            err.message.contains("queue \"nosuch\" does not exist"),
            "{err}"
        );
        let err = run_as(
            Role::Manager,
            "set queue batch node_sets = mars",
            &mut config,
            &st,
        )
        .unwrap_err();
        assert!(err.message.contains("node set \"mars\""), "{err}");
        let err = run_as(
            Role::Manager,
            "set server default_queue = nosuch",
            &mut config,
            &st,
        )
        .unwrap_err();
        assert!(err.message.contains("nosuch"), "{err}");
    }

    #[test]
    fn rights_are_checked() {
        let st = state(4);
        let mut config = st.config().clone();
        let err = run_as(Role::User, "set queue batch priority = 1", &mut config, &st).unwrap_err();
        assert!(err.message.contains("operator rights"), "{err}");
        run_as(
            Role::Operator,
            "set queue batch priority = 1",
            &mut config,
            &st,
        )
        .unwrap();
        let err = run_as(Role::Operator, "create queue x", &mut config, &st).unwrap_err();
        assert!(err.message.contains("manager rights"), "{err}");
        let err = run_as(
            Role::Operator,
            "set server managers += eve",
            &mut config,
            &st,
        )
        .unwrap_err();
        assert!(err.message.contains("manager rights"), "{err}");
        run_as(Role::User, "list queue\nprint server", &mut config, &st).unwrap();
    }

    #[test]
    fn a_queue_with_jobs_is_not_deleted() {
        let mut st = state(4);
        submit(&mut st, 1, 1);
        let mut config = st.config().clone();
        let err = run_as(Role::Manager, "delete queue batch", &mut config, &st).unwrap_err();
        assert!(err.message.contains("still has 1 job"), "{err}");
    }

    #[test]
    fn reorder_says_what_it_does_and_needs_operator_rights() {
        let mut st = state(4);
        for uid in [1, 1, 2] {
            submit(&mut st, uid, 1);
        }
        let mut config = st.config().clone();
        let err = run_as(Role::User, "reorder queue batch", &mut config, &st).unwrap_err();
        assert!(err.message.contains("operator rights"), "{err}");
        let out = run_as(Role::Operator, "reorder queue batch", &mut config, &st).unwrap();
        assert_eq!(
            out.output,
            "queue batch: 3 jobs reordered across 2 groups\n"
        );
        assert_eq!(out.reorder, vec!["batch"]);
        assert_eq!(out.applied, 0, "the configuration is unchanged");
        let err = run_as(Role::Operator, "reorder queue nosuch", &mut config, &st).unwrap_err();
        assert!(err.message.contains("\"nosuch\" does not exist"), "{err}");
    }

    #[test]
    fn reorder_times_are_set_sorted_and_checked() {
        let st = state(1);
        let mut config = st.config().clone();
        run_as(
            Role::Operator,
            "set queue batch reorder_times = \"20:00,8:00\"\nset queue batch reorder_times += 12:30",
            &mut config,
            &st,
        )
        .unwrap();
        let times: Vec<String> = config.queues["batch"]
            .reorder_times
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(times, vec!["08:00", "12:30", "20:00"]);
        let printed = print_server(&config);
        assert!(
            printed.contains("set queue batch reorder_times = \"08:00,12:30,20:00\"\n"),
            "{printed}"
        );
        let err = run_as(
            Role::Operator,
            "set queue batch reorder_times = 25:00",
            &mut config,
            &st,
        )
        .unwrap_err();
        assert!(
            err.message.contains("\"25:00\" is not a time of day"),
            "{err}"
        );
        run_as(
            Role::Operator,
            "unset queue batch reorder_times",
            &mut config,
            &st,
        )
        .unwrap();
        assert!(config.queues["batch"].reorder_times.is_empty());
    }

    #[test]
    fn lists_add_and_remove() {
        let st = state(1);
        let mut config = st.config().clone();
        run_as(Role::Manager, "set server managers = \"a@*,b@*\"\nset server managers += c\nset server managers -= a@*", &mut config, &st).unwrap();
        assert_eq!(config.server.managers, vec!["b@*", "c"]);
        let err = run_as(
            Role::Manager,
            "set server managers -= zed",
            &mut config,
            &st,
        )
        .unwrap_err();
        assert!(err.message.contains("\"zed\" is not in managers"), "{err}");
        let err = run_as(
            Role::Manager,
            "set queue batch priority += 1",
            &mut config,
            &st,
        )
        .unwrap_err();
        assert!(err.message.contains("works on lists"), "{err}");
    }

    #[test]
    fn list_shows_attributes_and_counts() {
        let mut st = state(4);
        submit(&mut st, 1, 1);
        let mut config = st.config().clone();
        let out = run_as(Role::User, "list queue batch", &mut config, &st).unwrap();
        assert!(out.output.starts_with("Queue batch\n"), "{}", out.output);
        assert!(
            out.output.contains("    total_jobs = 1\n"),
            "{}",
            out.output
        );
        assert!(
            out.output.contains("    enabled = True\n"),
            "{}",
            out.output
        );
    }
}
