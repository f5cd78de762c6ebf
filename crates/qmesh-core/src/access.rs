//! Who may do what. The daemon learns the caller's uid from the socket; the
//! role comes from the server's managers and operators lists.
//!
//! Rules (PBS): a user acts on their own jobs; operators act on every job and
//! set attributes; managers also create and delete. Root is always a
//! manager, and so is the user the daemon runs as (the one who started it).

pub mod acl;

pub use crate::ids::Role;
use crate::job::Job;
use crate::server::ServerAttrs;

/// The identified caller of a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    pub uid: u32,
    pub gid: u32,
    pub user: String,
    pub group: String,
    pub role: Role,
}

impl Caller {
    /// Works out the caller's role from the server's lists. `daemon_uid` is
    /// the uid the daemon itself runs as.
    pub fn identify(
        uid: u32,
        gid: u32,
        user: &str,
        group: &str,
        server: &ServerAttrs,
        daemon_uid: u32,
    ) -> Caller {
        let manager = uid == 0 || uid == daemon_uid || listed(&server.managers, user);
        Caller::with_role(
            uid,
            gid,
            user,
            group,
            manager,
            listed(&server.operators, user),
        )
    }

    fn with_role(
        uid: u32,
        gid: u32,
        user: &str,
        group: &str,
        manager: bool,
        operator: bool,
    ) -> Caller {
        let role = if manager {
            Role::Manager
        } else if operator {
            Role::Operator
        } else {
            Role::User
        };
        Caller {
            uid,
            gid,
            user: user.to_string(),
            group: group.to_string(),
            role,
        }
    }

    /// The role of a caller whose host's agent relayed the request: only
    /// the managers and operators lists count, with their host part
    /// checked (`root@login1`); being root or the daemon's user on another
    /// host gives nothing, as PBS's default managers are `root@` the
    /// server's own host.
    pub fn identify_remote(
        uid: u32,
        gid: u32,
        user: &str,
        group: &str,
        host: &str,
        server: &ServerAttrs,
    ) -> Caller {
        let on = |list: &[String]| {
            list.iter().any(|entry| match entry.split_once('@') {
                Some((name, entry_host)) => {
                    name == user && crate::acl::host_matches(host, entry_host)
                }
                None => entry == user && uid != 0,
            })
        };
        Caller::with_role(
            uid,
            gid,
            user,
            group,
            on(&server.managers),
            on(&server.operators),
        )
    }

    /// Whether the caller may delete, hold or release this job.
    pub fn may_act_on(&self, job: &Job) -> bool {
        self.role >= Role::Operator || job.owner.uid == self.uid
    }
}

/// Lists hold `user` or `user@host` (PBS form; the host part is not checked:
/// identity comes from the local socket, not from a host name).
fn listed(list: &[String], user: &str) -> bool {
    list.iter()
        .any(|entry| entry.split('@').next().is_some_and(|name| name == user))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::tests::{state, submit};

    fn job_of(uid: u32) -> Job {
        let mut s = state(1);
        let id = submit(&mut s, uid, 1);
        s.job(id).unwrap().clone()
    }

    #[test]
    fn a_user_may_act_only_on_their_own_jobs() {
        let server = ServerAttrs::default();
        let alice = Caller::identify(1001, 1001, "alice", "staff", &server, 0);
        assert_eq!(alice.role, Role::User);
        assert!(alice.may_act_on(&job_of(1001)));
        assert!(!alice.may_act_on(&job_of(1002)));
    }

    #[test]
    fn a_relayed_root_is_a_manager_only_where_the_list_names_its_host() {
        let server = ServerAttrs {
            managers: vec!["root@adm1".into(), "carol".into()],
            operators: vec!["bob@*.example.com".into()],
            ..ServerAttrs::default()
        };
        let root = Caller::identify_remote(0, 0, "root", "root", "login1", &server);
        assert_eq!(root.role, Role::User);
        let root = Caller::identify_remote(0, 0, "root", "root", "adm1", &server);
        assert_eq!(root.role, Role::Manager);
        let carol = Caller::identify_remote(1003, 1003, "carol", "staff", "login1", &server);
        assert_eq!(carol.role, Role::Manager);
        let bob = Caller::identify_remote(1002, 1002, "bob", "staff", "l1.example.com", &server);
        assert_eq!(bob.role, Role::Operator);
        let bob = Caller::identify_remote(1002, 1002, "bob", "staff", "login1", &server);
        assert_eq!(bob.role, Role::User);
    }

    #[test]
    fn operators_managers_root_and_the_daemon_owner_act_on_all() {
        let server = ServerAttrs {
            managers: vec!["carol@*".into()],
            operators: vec!["bob".into()],
            ..ServerAttrs::default()
        };
        let bob = Caller::identify(1002, 1002, "bob", "staff", &server, 0);
        assert_eq!(bob.role, Role::Operator);
        assert!(bob.may_act_on(&job_of(1001)));
        let carol = Caller::identify(1003, 1003, "carol", "staff", &server, 0);
        assert_eq!(carol.role, Role::Manager);
        let root = Caller::identify(0, 0, "root", "root", &server, 500);
        assert_eq!(root.role, Role::Manager);
        let owner = Caller::identify(500, 500, "qmesh", "qmesh", &server, 500);
        assert_eq!(owner.role, Role::Manager);
        assert!(owner.may_act_on(&job_of(1001)));
    }
}
