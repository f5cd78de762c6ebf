use super::*;
use crate::access::acl::*;
use crate::error::CoreError;
use crate::queue::Queue;
use crate::server::ServerAttrs;

fn who<'a>(user: &'a str, group: &'a str, host: &'a str) -> Asker<'a> {
    Asker {
        user,
        group,
        uid: 1000,
        host,
    }
}

fn queue(acl: QueueAcl) -> Queue {
    let mut q = Queue::open("express");
    q.acl = acl;
    q
}

fn list(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_queue_without_lists_takes_everyone() {
    let q = Queue::open("batch");
    check_queue(&q, &who("alice", "staff", "n1"), false).unwrap();
    // A list that is not enabled is not used (PBS).
    let q = queue(QueueAcl {
        users: list(&["bob"]),
        ..QueueAcl::default()
    });
    check_queue(&q, &who("alice", "staff", "n1"), false).unwrap();
}

#[test]
fn user_lists_name_users_and_hosts_first_match_wins() {
    let q = queue(QueueAcl {
        user_enable: true,
        users: list(&["-bob@n9.example.com", "bob@*.example.com", "alice"]),
        ..QueueAcl::default()
    });
    check_queue(&q, &who("alice", "staff", "anywhere"), false).unwrap();
    check_queue(&q, &who("bob", "staff", "n1.example.com"), false).unwrap();
    let err = check_queue(&q, &who("bob", "staff", "n9.example.com"), false).unwrap_err();
    assert!(matches!(err, CoreError::Unauthorized { .. }));
    let err = check_queue(&q, &who("carol", "staff", "n1"), false)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "Unauthorized Request: queue \"express\" takes jobs only from the users in its acl_users \
         (acl_user_enable = True), and carol@n1 is not one of them; ask an administrator to add \
         you (qmgr -c \"set queue express acl_users += carol\"), or submit to another queue \
         (qstat -Q)"
    );
    // An enabled, empty list lets nobody in; a lone + lets everyone else in.
    let closed = queue(QueueAcl {
        user_enable: true,
        ..QueueAcl::default()
    });
    assert!(check_queue(&closed, &who("alice", "staff", "n1"), false).is_err());
    let open = queue(QueueAcl {
        user_enable: true,
        users: list(&["-mallory", "+"]),
        ..QueueAcl::default()
    });
    check_queue(&open, &who("alice", "staff", "n1"), false).unwrap();
    assert!(check_queue(&open, &who("mallory", "staff", "n1"), false).is_err());
}

#[test]
fn groups_hosts_and_logic_or() {
    let both = QueueAcl {
        user_enable: true,
        users: list(&["alice"]),
        group_enable: true,
        groups: list(&["physics"]),
        ..QueueAcl::default()
    };
    // Both lists must pass ...
    let q = queue(both.clone());
    assert!(check_queue(&q, &who("alice", "staff", "n1"), false).is_err());
    check_queue(&q, &who("alice", "physics", "n1"), false).unwrap();
    let err = check_queue(&q, &who("bob", "physics", "n1"), false).unwrap_err();
    assert!(err.to_string().contains("acl_users += bob"), "{err}");
    let err = check_queue(&q, &who("alice", "chem", "n1"), false).unwrap_err();
    assert!(
        err.to_string().contains("alice's group chem")
            && err.to_string().contains("acl_groups += chem"),
        "{err}"
    );
    // ... unless acl_logic_or says either will do.
    let q = queue(QueueAcl {
        logic_or: true,
        ..both
    });
    check_queue(&q, &who("alice", "staff", "n1"), false).unwrap();
    check_queue(&q, &who("bob", "physics", "n1"), false).unwrap();
    assert!(check_queue(&q, &who("bob", "staff", "n1"), false).is_err());

    let q = queue(QueueAcl {
        host_enable: true,
        hosts: list(&["*.Example.COM", "login1"]),
        ..QueueAcl::default()
    });
    check_queue(&q, &who("a", "g", "n3.example.com"), false).unwrap();
    check_queue(&q, &who("a", "g", "login1"), false).unwrap();
    let err = check_queue(&q, &who("a", "g", "laptop"), false).unwrap_err();
    assert!(err.to_string().contains("acl_hosts += laptop"), "{err}");
}

#[test]
fn from_route_only_takes_routed_jobs() {
    let q = queue(QueueAcl {
        from_route_only: true,
        ..QueueAcl::default()
    });
    check_queue(&q, &who("a", "g", "h"), true).unwrap();
    let err = check_queue(&q, &who("a", "g", "h"), false).unwrap_err();
    assert!(err.to_string().contains("from_route_only"), "{err}");
}

#[test]
fn the_server_lists_and_acl_roots() {
    let mut server = ServerAttrs::default();
    check_server(&server, &who("alice", "staff", "n1")).unwrap();
    server.acl.user_enable = true;
    server.acl.users = list(&["alice@*.example.com"]);
    check_server(&server, &who("alice", "staff", "n1.example.com")).unwrap();
    let err = check_server(&server, &who("alice", "staff", "laptop")).unwrap_err();
    assert!(
        err.to_string()
            .contains("the server takes jobs only from the users"),
        "{err}"
    );
    let mut server = ServerAttrs::default();
    server.acl.roots = list(&["root@adm1"]);
    let root = |host| Asker {
        user: "root",
        group: "root",
        uid: 0,
        host,
    };
    check_server(&server, &root("adm1")).unwrap();
    let err = check_server(&server, &root("n7")).unwrap_err();
    assert!(err.to_string().contains("acl_roots"), "{err}");
    // Others are not root.
    check_server(&server, &who("alice", "staff", "n7")).unwrap();
}

#[test]
fn entries_read_pbs_and_torque_lists() {
    assert_eq!(
        entries("alice, -bob,+carol@h"),
        list(&["alice", "-bob", "+carol@h"])
    );
    assert_eq!(entries("h1+h2+h3"), list(&["h1", "h2", "h3"]));
    assert_eq!(entries("+,-"), list(&["+", "-"]));
    assert!(check_entry("acl_users", "bob@*.example.com").is_ok());
    assert!(check_entry("acl_hosts", "*.example.com").is_ok());
    assert!(check_entry("acl_groups", "bad group").is_err());
    assert!(host_matches("N1.example.com", "*.example.com"));
    assert!(!host_matches("example.com.evil", "*.example.com"));
}

#[test]
fn qmove_checks_the_destinations_lists_for_the_jobs_owner() {
    use crate::access::Role;
    use crate::state::tests::{caller, state, submit, t};
    let mut s = state(2);
    let mut config = s.config().clone();
    let mut q = Queue::open("express");
    q.acl.user_enable = true;
    q.acl.users = list(&["u1"]);
    config.queues.insert("express".into(), q);
    config.server.default_queue = Some("batch".into());
    s.set_config(config);
    let theirs = submit(&mut s, 2, 1);
    // An operator moves u2's job: u2 is who the list must admit.
    let err = s
        .move_job(theirs, "express", &caller(9, Role::Operator), t(1))
        .unwrap_err();
    assert!(err.to_string().contains("u2@"), "{err}");
    let mine = submit(&mut s, 1, 1);
    s.move_job(mine, "express", &caller(1, Role::User), t(1))
        .unwrap();
}

#[test]
fn relayed_hosts_are_compute_hosts_and_submit_hosts_unless_acl_hosts_decides() {
    let mut server = ServerAttrs::default();
    assert!(check_relayed_host(&server, "h1", true).is_ok());
    let err = check_relayed_host(&server, "login1", false).unwrap_err();
    assert!(err.contains("host login1 may not use this server"), "{err}");
    assert!(err.contains("set server submit_hosts += login1"), "{err}");
    server.submit_hosts = vec!["login*".into(), "*.login.example.com".into()];
    // A leading * is a suffix match: "login*" is a literal name.
    assert!(check_relayed_host(&server, "login1", false).is_err());
    assert!(check_relayed_host(&server, "a.login.example.com", false).is_ok());
    server.submit_hosts = vec!["login1".into()];
    assert!(check_relayed_host(&server, "LOGIN1", false).is_ok());
    server.allow_node_submit = false;
    let err = check_relayed_host(&server, "h1", true).unwrap_err();
    assert!(err.contains("allow_node_submit = False"), "{err}");
    server.acl.host_enable = true;
    server.acl.hosts = vec!["h1".into()];
    assert!(check_relayed_host(&server, "h1", true).is_ok());
    let err = check_relayed_host(&server, "login1", false).unwrap_err();
    assert!(err.contains("acl_hosts += login1"), "{err}");
}
