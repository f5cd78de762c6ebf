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
//! The lists and how an entry matches live here; checking them against who
//! asks, at submission and at qmove, is `access::acl`'s.

use serde::{Deserialize, Serialize};

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

#[cfg(test)]
mod tests;
