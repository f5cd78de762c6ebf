//! PBS's access control lists: who may put jobs in a queue, or on the
//! server at all.
//!
//! Queues have `acl_users`, `acl_groups` and `acl_hosts`, each used only
//! while its `*_enable` is true; `acl_logic_or` lets a job pass on its
//! user or its group (else it must pass both); `from_route_only` takes
//! jobs only from route queues. The server has `acl_users`, `acl_hosts`
//! and `acl_roots` (which root's jobs, `root@host`, it takes).
//!
//! Entries are PBS's: `alice`, `alice@node1`, `alice@*.example.com`,
//! `*.example.com` for hosts; `+entry` allows and `-entry` denies; a lone
//! `+` or `-` says what happens to whom no entry names (deny unless told).
//! The first entry that matches decides, in the order written. Torque's
//! `h1+h2` lists are read as `h1,h2`. Host names compare from the end and
//! a leading `*` matches any prefix, as PBS's `hacl_match` does. Groups are
//! the job's group (Torque's rule; PBS Pro also looks at the user's other
//! groups, which qmesh does not).
//!
//! The host of a submission is the one qsub names (clients reach the daemon
//! on its local socket, whose peer has no host); at qmove, the job's.
//!
//! Checked at submission and at qmove ([`check_queue`], [`check_server`]);
//! a refusal is PBS's "Unauthorized Request", naming the queue, the list
//! and what to ask the administrator.

use serde::{Deserialize, Serialize};

use crate::access::Caller;
use crate::error::CoreError;
use crate::job::Job;
use crate::queue::Queue;
use crate::server::{Config, ServerAttrs};

/// The access lists of a queue.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QueueAcl {
    #[serde(skip_serializing_if = "is_false")]
    pub user_enable: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub users: Vec<String>,
    #[serde(skip_serializing_if = "is_false")]
    pub group_enable: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    #[serde(skip_serializing_if = "is_false")]
    pub host_enable: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// A job passes on its user or its group (else on both).
    #[serde(skip_serializing_if = "is_false")]
    pub logic_or: bool,
    /// Jobs come only through route queues, never straight from qsub.
    #[serde(skip_serializing_if = "is_false")]
    pub from_route_only: bool,
}

/// The server's access lists.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerAcl {
    #[serde(skip_serializing_if = "is_false")]
    pub user_enable: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub users: Vec<String>,
    #[serde(skip_serializing_if = "is_false")]
    pub host_enable: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// `root@host` entries: when set, root's jobs are taken only from the
    /// hosts listed. Unset, qmesh takes them (PBS refuses them all).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub roots: Vec<String>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl QueueAcl {
    pub fn is_empty(&self) -> bool {
        *self == QueueAcl::default()
    }
}

impl ServerAcl {
    pub fn is_empty(&self) -> bool {
        *self == ServerAcl::default()
    }
}

/// Who is asking to put a job in: the job's owner and the host it was
/// submitted from.
#[derive(Clone, Copy, Debug)]
pub struct Asker<'a> {
    pub user: &'a str,
    pub group: &'a str,
    pub uid: u32,
    pub host: &'a str,
}

/// Splits an ACL value into entries: commas, and Torque's `+` between
/// names (`h1+h2`; a leading `+` allows).
pub fn entries(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (sign, rest) = match item.strip_prefix(['+', '-']) {
            Some(rest) => (&item[..1], rest),
            None => ("", item),
        };
        if rest.is_empty() {
            out.push(item.to_string());
            continue;
        }
        for (i, part) in rest.split('+').filter(|p| !p.is_empty()).enumerate() {
            out.push(if i == 0 {
                format!("{sign}{part}")
            } else {
                part.to_string()
            });
        }
    }
    out
}

/// Checks one entry's form for the list `attr` (users: `name[@host]`;
/// groups: `name`; hosts: `host`, `*.domain`).
pub fn check_entry(attr: &str, entry: &str) -> Result<(), String> {
    let body = entry.strip_prefix(['+', '-']).unwrap_or(entry);
    if body.is_empty() {
        return Ok(());
    }
    let name_ok = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '$'))
    };
    let host_ok = |s: &str| {
        let s = s.strip_prefix('*').unwrap_or(s);
        s.is_empty()
            || s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
    };
    let ok = if attr.ends_with("hosts") {
        host_ok(body)
    } else if attr.ends_with("groups") {
        name_ok(body)
    } else {
        match body.split_once('@') {
            Some((user, host)) => name_ok(user) && host_ok(host),
            None => name_ok(body),
        }
    };
    if ok {
        Ok(())
    } else {
        let form = if attr.ends_with("hosts") {
            "host, *.domain"
        } else if attr.ends_with("groups") {
            "group"
        } else {
            "user, user@host, user@*.domain"
        };
        Err(format!(
            "{attr}: \"{entry}\" is not an entry; write {form}, with + to allow or - to deny"
        ))
    }
}

/// PBS's host match: from the end, any case; a leading `*` in the entry
/// matches any prefix.
pub fn host_matches(host: &str, entry: &str) -> bool {
    let host = host.to_ascii_lowercase();
    let entry = entry.to_ascii_lowercase();
    match entry.strip_prefix('*') {
        Some(suffix) => host.ends_with(suffix),
        None => host == entry,
    }
}

/// A user entry: the name exactly, then the host if the entry has one.
fn user_matches(user: &str, host: &str, entry: &str) -> bool {
    match entry.split_once('@') {
        Some((name, entry_host)) => name == user && host_matches(host, entry_host),
        None => entry == user,
    }
}

/// Whether the list lets `candidate` in: the first entry that matches
/// decides; a lone `+` or `-` sets what happens when none does (deny).
fn allows(list: &[String], matches: impl Fn(&str) -> bool) -> bool {
    let mut default = false;
    for entry in list {
        let (allow, body) = match entry.strip_prefix('-') {
            Some(body) => (false, body),
            None => (true, entry.strip_prefix('+').unwrap_or(entry)),
        };
        if body.is_empty() {
            default = allow;
            continue;
        }
        if matches(body) {
            return allow;
        }
    }
    default
}

fn users_allow(list: &[String], who: &Asker) -> bool {
    allows(list, |e| user_matches(who.user, who.host, e))
}

fn groups_allow(list: &[String], who: &Asker) -> bool {
    allows(list, |e| e == who.group)
}

fn hosts_allow(list: &[String], who: &Asker) -> bool {
    allows(list, |e| host_matches(who.host, e))
}

fn refuse(why: String) -> CoreError {
    CoreError::Unauthorized { why }
}

/// Whether `queue`'s lists let `who` put a job in it. `routed` says the
/// job comes through a route queue (`from_route_only`).
pub fn check_queue(queue: &Queue, who: &Asker, routed: bool) -> Result<(), CoreError> {
    let acl = &queue.acl;
    if acl.is_empty() {
        return Ok(());
    }
    let q = &queue.name;
    if acl.from_route_only && !routed {
        return Err(refuse(format!(
            "queue \"{q}\" takes jobs only from route queues (from_route_only = True); \
             submit to one of the route queues that send jobs to it (qstat -Q)"
        )));
    }
    if acl.host_enable && !hosts_allow(&acl.hosts, who) {
        return Err(refuse(format!(
            "queue \"{q}\" takes jobs only from the hosts in its acl_hosts \
             (acl_host_enable = True), and {} is not one of them; submit from another host, \
             or ask an administrator to add it (qmgr -c \"set queue {q} acl_hosts += {}\")",
            who.host, who.host
        )));
    }
    let user_ok = !acl.user_enable || users_allow(&acl.users, who);
    let group_ok = !acl.group_enable || groups_allow(&acl.groups, who);
    let passes = if acl.logic_or && acl.user_enable && acl.group_enable {
        user_ok || group_ok
    } else {
        user_ok && group_ok
    };
    if passes {
        return Ok(());
    }
    let user_words = || {
        format!(
            "queue \"{q}\" takes jobs only from the users in its acl_users \
             (acl_user_enable = True), and {}@{} is not one of them",
            who.user, who.host
        )
    };
    let group_words = || {
        format!(
            "queue \"{q}\" takes jobs only from the groups in its acl_groups \
             (acl_group_enable = True), and {}'s group {} is not one of them",
            who.user, who.group
        )
    };
    let (why, ask) = match (user_ok, group_ok) {
        (false, true) => (user_words(), format!("acl_users += {}", who.user)),
        (true, false) => (group_words(), format!("acl_groups += {}", who.group)),
        _ => (
            format!(
                "{}; nor is the group {} in its acl_groups",
                user_words(),
                who.group
            ),
            format!("acl_users += {}", who.user),
        ),
    };
    Err(refuse(format!(
        "{why}; ask an administrator to add you (qmgr -c \"set queue {q} {ask}\"), \
         or submit to another queue (qstat -Q)"
    )))
}

/// Whether the server's lists let `who` submit at all.
pub fn check_server(server: &ServerAttrs, who: &Asker) -> Result<(), CoreError> {
    let acl = &server.acl;
    if acl.is_empty() {
        return Ok(());
    }
    if acl.host_enable && !hosts_allow(&acl.hosts, who) {
        return Err(refuse(format!(
            "the server takes jobs only from the hosts in its acl_hosts (acl_host_enable = True), \
             and {} is not one of them; submit from another host, or ask an administrator to \
             add it (qmgr -c \"set server acl_hosts += {}\")",
            who.host, who.host
        )));
    }
    if acl.user_enable && !users_allow(&acl.users, who) {
        return Err(refuse(format!(
            "the server takes jobs only from the users in its acl_users (acl_user_enable = True), \
             and {}@{} is not one of them; ask an administrator to add you \
             (qmgr -c \"set server acl_users += {}\")",
            who.user, who.host, who.user
        )));
    }
    if who.uid == 0 && !acl.roots.is_empty() && !users_allow(&acl.roots, who) {
        return Err(refuse(format!(
            "the server takes root's jobs only from the hosts its acl_roots lists, and \
             root@{} is not among them; submit as another user, or ask an administrator \
             (qmgr -c \"set server acl_roots += root@{}\")",
            who.host, who.host
        )));
    }
    Ok(())
}

/// Whether the agent of `host` may relay its users' commands to the
/// server (`runs_nodes`: the host has nodes in the node sets). With
/// `acl_host_enable` the server's `acl_hosts` decides, as PBS's does for
/// every request; otherwise compute hosts may while `allow_node_submit`
/// holds (jobs submit jobs), and other hosts (login nodes) only when
/// `submit_hosts` names them (Torque). The daemon's own host never asks:
/// its commands use the local socket.
pub fn check_relayed_host(
    server: &ServerAttrs,
    host: &str,
    runs_nodes: bool,
) -> Result<(), String> {
    let acl = &server.acl;
    if acl.host_enable {
        if allows(&acl.hosts, |e| host_matches(host, e)) {
            return Ok(());
        }
        return Err(format!(
            "host {host} may not use this server: the server takes requests only from the hosts in \
             its acl_hosts (acl_host_enable = True); ask an administrator to add it \
             (qmgr -c \"set server acl_hosts += {host}\")"
        ));
    }
    if runs_nodes && server.allow_node_submit {
        return Ok(());
    }
    if allows(&server.submit_hosts, |e| host_matches(host, e)) {
        return Ok(());
    }
    let why = if runs_nodes {
        "its nodes may not submit (allow_node_submit = False) and it is not in the server's submit_hosts"
    } else {
        "it is not in the server's submit_hosts"
    };
    Err(format!(
        "host {host} may not use this server: {why}; ask an administrator to add it \
         (qmgr -c \"set server submit_hosts += {host}\")"
    ))
}

/// The lists a submission passes: the server's, the queue it names (the
/// server's default when it names none) and, if a route queue sent it on,
/// the queue it lands in.
pub fn check_submit(
    config: &Config,
    named: Option<&str>,
    landed: &str,
    caller: &Caller,
    host: &str,
) -> Result<(), CoreError> {
    let who = Asker {
        user: &caller.user,
        group: &caller.group,
        uid: caller.uid,
        host,
    };
    check_server(&config.server, &who)?;
    let named = named.or(config.default_queue()).unwrap_or(landed);
    if let Some(q) = config.queue(named) {
        check_queue(q, &who, false)?;
    }
    if named != landed
        && let Some(q) = config.queue(landed)
    {
        check_queue(q, &who, true)?;
    }
    Ok(())
}

/// The lists a job moved by qmove passes: those of the queue named and,
/// if it routes, of the queue it lands in, for the job's owner and the
/// host it was submitted from.
pub fn check_move(config: &Config, job: &Job, dest: &str, landed: &str) -> Result<(), CoreError> {
    let who = Asker {
        user: &job.owner.user,
        group: &job.owner.group,
        uid: job.owner.uid,
        host: &job.submit_host,
    };
    if let Some(q) = config.queue(dest) {
        check_queue(q, &who, false)?;
    }
    if dest != landed
        && let Some(q) = config.queue(landed)
    {
        check_queue(q, &who, true)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
