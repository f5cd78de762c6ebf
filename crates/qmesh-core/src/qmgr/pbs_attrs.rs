//! The queue and server attributes of PBS's job-count limits and access
//! lists, as admin guides set them:
//!
//! ```text
//! set queue workq max_running = 20, max_user_run = 4, max_queuable = 500
//! set queue workq max_run = "[u:PBS_GENERIC=4],[u:alice=8]"
//! set server max_queued += "[o:PBS_ALL=10000]"
//! set queue workq acl_user_enable = True, acl_users = "alice,bob@*.example.com"
//! set queue workq acl_users += carol, acl_hosts = "*.example.com"
//! set server query_other_jobs = False
//! ```
//!
//! The meaning is in `limits.rs` and `acl.rs`; this file reads and writes
//! the values. Numbers take `+=` and `-=` as PBS's do (`max_running += 2`).

use super::values::{apply_to_list, parse_bool, scalar_only, show_bool};
use super::vocab::Op;
use crate::acl::{check_entry, entries};
use crate::limits::{JobLimits, LimitSet};
use crate::queue::Queue;
use crate::server::ServerAttrs;

/// Queue attributes handled here, in the order list and print show them.
pub const QUEUE_ATTRS: &[&str] = &[
    "max_running",
    "max_user_run",
    "max_group_run",
    "max_queuable",
    "max_user_queuable",
    "max_run",
    "max_queued",
    "acl_user_enable",
    "acl_users",
    "acl_group_enable",
    "acl_groups",
    "acl_host_enable",
    "acl_hosts",
    "acl_logic_or",
    "from_route_only",
    "comment",
];

/// Server attributes handled here (`max_user_run` and `max_group_run` are
/// the server's own, in `attrs.rs`).
pub const SERVER_ATTRS: &[&str] = &[
    "max_running",
    "max_queuable",
    "max_user_queuable",
    "max_run",
    "max_queued",
    "acl_user_enable",
    "acl_users",
    "acl_host_enable",
    "acl_hosts",
    "acl_roots",
    "query_other_jobs",
    "submit_hosts",
    "allow_node_submit",
    "comment",
];

/// PBS's `max_queued` on queues is also spelt `max_queueable` in some
/// guides; Torque's server `max_job_array_size` is elsewhere.
fn canonical(name: &str) -> String {
    let lower = name.to_ascii_lowercase();
    match lower.as_str() {
        "max_queueable" => "max_queuable".to_string(),
        "max_user_queueable" => "max_user_queuable".to_string(),
        _ => lower,
    }
}

fn parse_number(name: &str, value: &str) -> Result<u32, String> {
    value.trim().parse::<u32>().map_err(|_| {
        format!("\"{value}\" is not a value for {name}; write a whole number of jobs, 0 or more")
    })
}

/// `=`, `+=` or `-=` on a count (PBS: `set queue fast max_running += 2`).
fn update_number(slot: &mut Option<u32>, name: &str, op: Op, value: &str) -> Result<(), String> {
    let n = parse_number(name, value)?;
    *slot = Some(match op {
        Op::Assign => n,
        Op::Add => slot.unwrap_or(0).saturating_add(n),
        Op::Remove => slot.unwrap_or(0).checked_sub(n).ok_or_else(|| {
            format!(
                "{name} is {} and cannot go below 0",
                slot.map_or("unset".to_string(), |v| v.to_string())
            )
        })?,
    });
    Ok(())
}

fn update_set(set: &mut LimitSet, name: &str, op: Op, value: &str) -> Result<(), String> {
    let given = LimitSet::parse(name, value)?;
    match op {
        Op::Assign => *set = given,
        Op::Add => set.add(given),
        Op::Remove => set.remove(name, &given)?,
    }
    Ok(())
}

/// Applies `op value` to an access list, checking each entry.
fn update_acl(list: &mut Vec<String>, name: &str, op: Op, value: &str) -> Result<(), String> {
    let items = entries(value);
    for item in &items {
        check_entry(name, item)?;
    }
    apply_to_list(list, name, op, items)
}

/// The job-count limits (both objects). `None`: not a limit attribute.
fn set_limit(
    limits: &mut JobLimits,
    name: &str,
    op: Op,
    value: &str,
) -> Option<Result<(), String>> {
    Some(match name {
        "max_running" => update_number(&mut limits.max_running, name, op, value),
        "max_user_run" => update_number(&mut limits.max_user_run, name, op, value),
        "max_group_run" => update_number(&mut limits.max_group_run, name, op, value),
        "max_queuable" => update_number(&mut limits.max_queuable, name, op, value),
        "max_user_queuable" => update_number(&mut limits.max_user_queuable, name, op, value),
        "max_run" => update_set(&mut limits.max_run, name, op, value),
        "max_queued" => update_set(&mut limits.max_queued, name, op, value),
        _ => return None,
    })
}

fn unset_limit(limits: &mut JobLimits, name: &str) -> bool {
    match name {
        "max_running" => limits.max_running = None,
        "max_user_run" => limits.max_user_run = None,
        "max_group_run" => limits.max_group_run = None,
        "max_queuable" => limits.max_queuable = None,
        "max_user_queuable" => limits.max_user_queuable = None,
        "max_run" => limits.max_run = LimitSet::default(),
        "max_queued" => limits.max_queued = LimitSet::default(),
        _ => return false,
    }
    true
}

fn limit_values(limits: &JobLimits, out: &mut Vec<(String, String)>) {
    for (name, v) in [
        ("max_running", limits.max_running),
        ("max_user_run", limits.max_user_run),
        ("max_group_run", limits.max_group_run),
        ("max_queuable", limits.max_queuable),
        ("max_user_queuable", limits.max_user_queuable),
    ] {
        if let Some(v) = v {
            out.push((name.to_string(), v.to_string()));
        }
    }
    for (name, set) in [
        ("max_run", &limits.max_run),
        ("max_queued", &limits.max_queued),
    ] {
        if !set.is_empty() {
            out.push((name.to_string(), set.to_string()));
        }
    }
}

fn set_comment(slot: &mut Option<String>, name: &str, op: Op, value: &str) -> Result<(), String> {
    scalar_only(name, op)?;
    *slot = Some(value.to_string()).filter(|c| !c.is_empty());
    Ok(())
}

/// A queue attribute of this file; `None` if `name` is not one.
pub fn set_queue(
    q: &mut Queue,
    name: &str,
    op: Op,
    value: &str,
    _warnings: &mut Vec<String>,
) -> Option<Result<(), String>> {
    let name = canonical(name);
    let name = name.as_str();
    if let Some(result) = set_limit(&mut q.limits, name, op, value) {
        return Some(result);
    }
    let acl = &mut q.acl;
    let flag = |slot: &mut bool| -> Result<(), String> {
        scalar_only(name, op)?;
        *slot = parse_bool(name, value)?;
        Ok(())
    };
    Some(match name {
        "acl_user_enable" => flag(&mut acl.user_enable),
        "acl_group_enable" => flag(&mut acl.group_enable),
        "acl_host_enable" => flag(&mut acl.host_enable),
        "acl_logic_or" => flag(&mut acl.logic_or),
        "from_route_only" => flag(&mut acl.from_route_only),
        "acl_users" => update_acl(&mut acl.users, name, op, value),
        "acl_groups" => update_acl(&mut acl.groups, name, op, value),
        "acl_hosts" => update_acl(&mut acl.hosts, name, op, value),
        "comment" => set_comment(&mut q.comment, name, op, value),
        _ => return None,
    })
}

/// Unsets a queue attribute of this file; false if `name` is not one.
pub fn unset_queue(q: &mut Queue, name: &str) -> bool {
    let name = canonical(name);
    if unset_limit(&mut q.limits, &name) {
        return true;
    }
    let acl = &mut q.acl;
    match name.as_str() {
        "acl_user_enable" => acl.user_enable = false,
        "acl_group_enable" => acl.group_enable = false,
        "acl_host_enable" => acl.host_enable = false,
        "acl_logic_or" => acl.logic_or = false,
        "from_route_only" => acl.from_route_only = false,
        "acl_users" => acl.users.clear(),
        "acl_groups" => acl.groups.clear(),
        "acl_hosts" => acl.hosts.clear(),
        "comment" => q.comment = None,
        _ => return false,
    }
    true
}

/// The attributes of this file a queue has set, with their values.
pub fn queue_values(q: &Queue) -> Vec<(String, String)> {
    let mut out = Vec::new();
    limit_values(&q.limits, &mut out);
    let acl = &q.acl;
    let mut flag = |name: &str, on: bool| {
        if on {
            out.push((name.to_string(), show_bool(true)));
        }
    };
    flag("acl_user_enable", acl.user_enable);
    let lists = |out: &mut Vec<(String, String)>, name: &str, list: &[String]| {
        if !list.is_empty() {
            out.push((name.to_string(), list.join(",")));
        }
    };
    lists(&mut out, "acl_users", &acl.users);
    if acl.group_enable {
        out.push(("acl_group_enable".into(), show_bool(true)));
    }
    lists(&mut out, "acl_groups", &acl.groups);
    if acl.host_enable {
        out.push(("acl_host_enable".into(), show_bool(true)));
    }
    lists(&mut out, "acl_hosts", &acl.hosts);
    for (name, on) in [
        ("acl_logic_or", acl.logic_or),
        ("from_route_only", acl.from_route_only),
    ] {
        if on {
            out.push((name.into(), show_bool(true)));
        }
    }
    if let Some(c) = &q.comment {
        out.push(("comment".into(), c.clone()));
    }
    out
}

/// A server attribute of this file; `None` if `name` is not one.
pub fn set_server(
    s: &mut ServerAttrs,
    name: &str,
    op: Op,
    value: &str,
    _warnings: &mut Vec<String>,
) -> Option<Result<(), String>> {
    let name = canonical(name);
    let name = name.as_str();
    if matches!(name, "max_user_run" | "max_group_run") {
        return None;
    }
    if let Some(result) = set_limit(&mut s.limits, name, op, value) {
        return Some(result);
    }
    let flag = |slot: &mut bool| -> Result<(), String> {
        scalar_only(name, op)?;
        *slot = parse_bool(name, value)?;
        Ok(())
    };
    Some(match name {
        "acl_user_enable" => flag(&mut s.acl.user_enable),
        "acl_host_enable" => flag(&mut s.acl.host_enable),
        "query_other_jobs" => flag(&mut s.query_other_jobs),
        "allow_node_submit" => flag(&mut s.allow_node_submit),
        "submit_hosts" => update_acl(&mut s.submit_hosts, name, op, value),
        "acl_users" => update_acl(&mut s.acl.users, name, op, value),
        "acl_hosts" => update_acl(&mut s.acl.hosts, name, op, value),
        "acl_roots" => update_acl(&mut s.acl.roots, name, op, value),
        "comment" => set_comment(&mut s.comment, name, op, value),
        _ => return None,
    })
}

/// Unsets a server attribute of this file; false if `name` is not one.
pub fn unset_server(s: &mut ServerAttrs, name: &str) -> bool {
    let name = canonical(name);
    if matches!(name.as_str(), "max_user_run" | "max_group_run") {
        return false;
    }
    if unset_limit(&mut s.limits, &name) {
        return true;
    }
    match name.as_str() {
        "acl_user_enable" => s.acl.user_enable = false,
        "acl_host_enable" => s.acl.host_enable = false,
        "query_other_jobs" => s.query_other_jobs = ServerAttrs::default().query_other_jobs,
        "allow_node_submit" => s.allow_node_submit = ServerAttrs::default().allow_node_submit,
        "submit_hosts" => s.submit_hosts.clear(),
        "acl_users" => s.acl.users.clear(),
        "acl_hosts" => s.acl.hosts.clear(),
        "acl_roots" => s.acl.roots.clear(),
        "comment" => s.comment = None,
        _ => return false,
    }
    true
}

/// Every server attribute of this file with its value (list), and
/// whether it differs from the default (print).
pub fn server_values(s: &ServerAttrs) -> Vec<(String, String, bool)> {
    let mut set = Vec::new();
    limit_values(&s.limits, &mut set);
    let mut out: Vec<(String, String, bool)> = Vec::new();
    for name in [
        "max_running",
        "max_queuable",
        "max_user_queuable",
        "max_run",
        "max_queued",
    ] {
        match set.iter().find(|(n, _)| n == name) {
            Some((_, v)) => out.push((name.to_string(), v.clone(), true)),
            None => out.push((name.to_string(), String::new(), false)),
        }
    }
    let acl = &s.acl;
    out.push((
        "acl_user_enable".into(),
        show_bool(acl.user_enable),
        acl.user_enable,
    ));
    out.push((
        "acl_users".into(),
        acl.users.join(","),
        !acl.users.is_empty(),
    ));
    out.push((
        "acl_host_enable".into(),
        show_bool(acl.host_enable),
        acl.host_enable,
    ));
    out.push((
        "acl_hosts".into(),
        acl.hosts.join(","),
        !acl.hosts.is_empty(),
    ));
    out.push((
        "acl_roots".into(),
        acl.roots.join(","),
        !acl.roots.is_empty(),
    ));
    let default = ServerAttrs::default().query_other_jobs;
    out.push((
        "query_other_jobs".into(),
        show_bool(s.query_other_jobs),
        s.query_other_jobs != default,
    ));
    out.push((
        "submit_hosts".into(),
        s.submit_hosts.join(","),
        !s.submit_hosts.is_empty(),
    ));
    let default = ServerAttrs::default().allow_node_submit;
    out.push((
        "allow_node_submit".into(),
        show_bool(s.allow_node_submit),
        s.allow_node_submit != default,
    ));
    out.push((
        "comment".into(),
        s.comment.clone().unwrap_or_default(),
        s.comment.is_some(),
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::run_as;
    use crate::access::Role;
    use crate::state::tests::state;

    #[test]
    fn limits_in_both_styles_are_set_listed_and_unset() {
        let st = state(2);
        let mut config = st.config().clone();
        let out = run_as(
            Role::Manager,
            "set queue batch max_running = 10, max_user_run = 2, max_queuable = 100\n\
             set queue batch max_running += 5, max_user_queuable = 8\n\
             set queue batch max_run = [u:PBS_GENERIC=3],[u:alice=6]\n\
             set queue batch max_run += \"[g:staff=4]\"\n\
             set queue batch max_queued = \"[o:PBS_ALL=50], [p:PBS_GENERIC=5]\"\n\
             set server max_run = \"[u:PBS_GENERIC=7]\", max_running = 40\n\
             list queue batch",
            &mut config,
            &st,
        )
        .unwrap();
        let limits = &config.queues["batch"].limits;
        assert_eq!(limits.max_running, Some(15));
        assert_eq!(limits.max_user_run, Some(2));
        assert_eq!(limits.max_queuable, Some(100));
        assert_eq!(limits.max_user_queuable, Some(8));
        assert_eq!(
            limits.max_run.to_string(),
            "[u:PBS_GENERIC=3],[u:alice=6],[g:staff=4]"
        );
        assert_eq!(
            config.server.limits.max_run.to_string(),
            "[u:PBS_GENERIC=7]"
        );
        assert!(
            out.output
                .contains("    max_run = [u:PBS_GENERIC=3],[u:alice=6],[g:staff=4]\n"),
            "{}",
            out.output
        );
        assert!(
            !out.output.contains("WARNING"),
            "project entries count jobs' -P: {}",
            out.output
        );
        run_as(
            Role::Manager,
            "set queue batch max_run -= [u:alice=0]\nunset queue batch max_running, max_queued",
            &mut config,
            &st,
        )
        .unwrap();
        let limits = &config.queues["batch"].limits;
        assert_eq!(limits.max_run.to_string(), "[u:PBS_GENERIC=3],[g:staff=4]");
        assert_eq!(limits.max_running, None);
        assert!(limits.max_queued.is_empty());
        for (script, says) in [
            ("set queue batch max_run = 5", "in brackets"),
            ("set queue batch max_run = [x:bob=1]", "not o, u, g or p"),
            ("set queue batch max_run = [o:bob=1]", "o:PBS_ALL"),
            ("set queue batch max_run = [u:PBS_ALL=1]", "u:PBS_GENERIC"),
            (
                "set queue batch max_run = [u:bob=many]",
                "not a whole number",
            ),
            ("set queue batch max_user_run -= 9", "cannot go below 0"),
            (
                "set queue batch max_run -= [u:zed=1]",
                "no entry [u:zed=...]",
            ),
        ] {
            let err = run_as(Role::Manager, script, &mut config.clone(), &st).unwrap_err();
            assert!(err.message.contains(says), "{script}: {err}");
        }
    }

    #[test]
    fn access_lists_take_pbs_and_torque_forms() {
        let st = state(2);
        let mut config = st.config().clone();
        run_as(
            Role::Manager,
            "set queue batch acl_user_enable = True, acl_users = \"alice,-bob,carol@*.example.com\"\n\
             set queue batch acl_users += dave, acl_hosts = h1+h2\n\
             set queue batch acl_group_enable = t, acl_groups = staff, acl_logic_or = true\n\
             set server acl_roots = root@adm1, query_other_jobs = False",
            &mut config,
            &st,
        )
        .unwrap();
        let acl = &config.queues["batch"].acl;
        assert!(acl.user_enable && acl.group_enable && acl.logic_or);
        assert_eq!(
            acl.users,
            vec!["alice", "-bob", "carol@*.example.com", "dave"]
        );
        assert_eq!(acl.hosts, vec!["h1", "h2"]);
        assert_eq!(config.server.acl.roots, vec!["root@adm1"]);
        assert!(!config.server.query_other_jobs);
        let err = run_as(
            Role::Manager,
            "set queue batch acl_users += \"al ice\"",
            &mut config.clone(),
            &st,
        )
        .unwrap_err();
        assert!(err.message.contains("not an entry"), "{err}");
        run_as(
            Role::Manager,
            "set queue batch acl_users -= -bob\nunset server query_other_jobs",
            &mut config,
            &st,
        )
        .unwrap();
        assert_eq!(
            config.queues["batch"].acl.users,
            vec!["alice", "carol@*.example.com", "dave"]
        );
        assert!(config.server.query_other_jobs);
    }
}
