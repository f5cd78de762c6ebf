//! Checking PBS's access control lists ([`crate::acl`]) against who asks:
//! at submission and at qmove, a queue's lists and the server's; a relayed
//! submission's host. A refusal is PBS's "Unauthorized Request", naming the
//! queue, the list and what to ask the administrator.

use crate::access::Caller;
use crate::acl::host_matches;
use crate::error::CoreError;
use crate::job::Job;
use crate::queue::Queue;
use crate::server::{Config, ServerAttrs};

/// Who is asking to put a job in: the job's owner and the host it was
/// submitted from.
#[derive(Clone, Copy, Debug)]
pub struct Asker<'a> {
    pub user: &'a str,
    pub group: &'a str,
    pub uid: u32,
    pub host: &'a str,
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
    check_reservation(config, landed, &who)
}

/// A reservation's queue takes jobs from its owner and its
/// `Authorized_Users` and `Authorized_Groups` only (pbs_rsub -U, -G).
fn check_reservation(config: &Config, queue: &str, who: &Asker) -> Result<(), CoreError> {
    let Some(id) = config.queue(queue).and_then(|q| q.reservation) else {
        return Ok(());
    };
    match config.reservations.get(&id) {
        Some(r) if r.admits(who.user, who.group) => Ok(()),
        Some(r) => Err(refuse(format!(
            "reservation R{id} is for {} (its Authorized_Users{}), and {} is not one of them; \
             ask its owner {} to add you (pbs_ralter -U), or submit to another queue",
            r.users.join(","),
            if r.groups.is_empty() {
                String::new()
            } else {
                format!(" and groups {}", r.groups.join(","))
            },
            who.user,
            r.owner
        ))),
        None => Err(refuse(format!(
            "reservation R{id} has ended or was deleted; its queue takes no more jobs"
        ))),
    }
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
    check_reservation(config, landed, &who)
}
