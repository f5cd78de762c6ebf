//! `qstat -B`: the server's own status, as PBS's table, `-B -f`'s
//! attributes and the JSON document, the attributes built once
//! ([`server_attrs`]).
//!
//! ```text
//! Server             Max   Tot   Que   Run   Hld   Wat   Trn   Ext Status
//! ---------------- ----- ----- ----- ----- ----- ----- ----- ----- -----------
//! server               0     5     2     3     0     0     0     0 Active
//! ```
//!
//! Max is PBS's server-wide `max_running`, which qmesh does not have (its
//! limits are per user and group: `max_user_run`, `max_group_run`).

use qmesh_core::time::format_hms;
use qmesh_proto::ServerStatusReply;

use super::full_text::{FullStyle, write_object};
use crate::output::{self, Attrs, Tree, truncate};

/// The `-B` table.
pub fn server_table(s: &ServerStatusReply) -> String {
    let count = |n: u32| truncate(&n.to_string(), Some(5));
    format!(
        "Server             Max   Tot   Que   Run   Hld   Wat   Trn   Ext Status\n\
         ---------------- ----- ----- ----- ----- ----- ----- ----- ----- -----------\n\
         {:<16} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5} {:<10}\n",
        truncate(&s.server, Some(16)),
        0,
        count(s.total_jobs),
        count(s.queued),
        count(s.running),
        count(s.held),
        count(s.waiting),
        count(s.transit),
        count(s.exiting),
        truncate(&s.server_state, Some(10)),
    )
}

/// The server in `-B -f`'s text form.
pub fn server_full(s: &ServerStatusReply, style: &FullStyle) -> String {
    let mut out = String::new();
    write_object(
        &format!("Server: {}", s.server),
        &server_attrs(s),
        style,
        &mut out,
    );
    out
}

/// PBS's JSON document of the server (`qstat -B -f -F json`).
pub fn server_document(s: &ServerStatusReply) -> Tree {
    let entries = vec![(s.server.clone(), server_attrs(s).json())];
    output::document(s.server_time, &s.server, "Server", entries)
}

/// Every attribute `qstat -B -f` shows, in PBS's order.
pub fn server_attrs(s: &ServerStatusReply) -> Attrs {
    let mut a = Attrs::new();
    a.text("server_state", &s.server_state);
    if !s.server_host.is_empty() {
        a.text("server_host", &s.server_host);
    }
    a.flag("scheduling", s.scheduling);
    a.int("total_jobs", s.total_jobs);
    a.text(
        "state_count",
        format!(
            "Transit:{} Queued:{} Held:{} Waiting:{} Running:{} Exiting:{} Begun:0",
            s.transit, s.queued, s.held, s.waiting, s.running, s.exiting
        ),
    );
    if !s.default_queue.is_empty() {
        a.text("default_queue", &s.default_queue);
    }
    if !s.managers.is_empty() {
        a.text("managers", s.managers.join(","));
    }
    if !s.operators.is_empty() {
        a.text("operators", s.operators.join(","));
    }
    for (name, limit) in [
        ("max_user_run", s.max_user_run),
        ("max_group_run", s.max_group_run),
        ("max_user_queued", s.max_user_queued),
        ("max_group_queued", s.max_group_queued),
    ] {
        if let Some(n) = limit {
            a.int(name, n);
        }
    }
    a.text("resources_default.walltime", format_hms(s.default_walltime));
    let mut available: Vec<(&String, &String)> = s.resources_available.iter().collect();
    available.sort();
    for (name, value) in available {
        a.text(&format!("resources_available.{name}"), value);
    }
    a.int("resources_available.nodect", s.nodes_total);
    let mut assigned: Vec<(&String, &String)> = s.resources_assigned.iter().collect();
    assigned.sort();
    for (name, value) in assigned {
        a.text(&format!("resources_assigned.{name}"), value);
    }
    a.int("resources_assigned.nodect", s.nodes_assigned);
    a.int("scheduler_iteration", s.scheduler_iteration as i64);
    a.flag("job_history_enable", true);
    a.text("job_history_duration", format_hms(s.job_history_duration));
    a.text("pbs_version", &s.version);
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status() -> ServerStatusReply {
        ServerStatusReply {
            server: "server".into(),
            server_time: 1_700_000_000,
            server_state: "Active".into(),
            server_host: "server.example.org".into(),
            scheduling: true,
            total_jobs: 5,
            queued: 2,
            running: 3,
            finished: 7,
            default_queue: "batch".into(),
            scheduler_iteration: 10,
            job_history_duration: 14 * 86_400,
            default_walltime: 3600,
            nodes_total: 16,
            nodes_assigned: 12,
            max_user_run: Some(4),
            version: "qmesh-0.1.0".into(),
            ..Default::default()
        }
    }

    #[test]
    fn the_table_as_pbs_prints_it() {
        assert_eq!(
            server_table(&status()),
            "\
Server             Max   Tot   Que   Run   Hld   Wat   Trn   Ext Status
---------------- ----- ----- ----- ----- ----- ----- ----- ----- -----------
server               0     5     2     3     0     0     0     0 Active    \n"
        );
    }

    #[test]
    fn the_full_form() {
        // PBS folds state_count after "Begun", its value being that long.
        assert_eq!(
            server_full(&status(), &FullStyle::Folded),
            "Server: server
    server_state = Active
    server_host = server.example.org
    scheduling = True
    total_jobs = 5
    state_count = Transit:0 Queued:2 Held:0 Waiting:0 Running:3 Exiting:0 Begun\n\t:0
    default_queue = batch
    max_user_run = 4
    resources_default.walltime = 01:00:00
    resources_available.nodect = 16
    resources_assigned.nodect = 12
    scheduler_iteration = 10
    job_history_enable = True
    job_history_duration = 336:00:00
    pbs_version = qmesh-0.1.0

"
        );
        let idle = ServerStatusReply {
            server_state: "Idle".into(),
            scheduling: false,
            ..status()
        };
        assert!(server_table(&idle).contains(" Idle"));
        assert!(server_full(&idle, &FullStyle::Folded).contains("    scheduling = False\n"));
    }

    #[test]
    fn licences_show_as_available_and_assigned() {
        let mut s = status();
        s.resources_available.insert("matlab".into(), "4".into());
        s.resources_assigned.insert("matlab".into(), "2".into());
        let text = server_full(&s, &FullStyle::Folded);
        assert!(
            text.contains(
                "    resources_available.matlab = 4\n    resources_available.nodect = 16\n    \
                 resources_assigned.matlab = 2\n    resources_assigned.nodect = 12\n"
            ),
            "{text}"
        );
        let doc: serde_json::Value =
            serde_json::from_str(&serde_json::to_string(&server_document(&s)).unwrap()).unwrap();
        assert_eq!(doc["Server"]["server"]["resources_assigned"]["matlab"], "2");
    }

    #[test]
    fn the_json_document() {
        let doc: serde_json::Value =
            serde_json::from_str(&serde_json::to_string(&server_document(&status())).unwrap())
                .unwrap();
        assert_eq!(doc["pbs_server"], "server");
        let server = &doc["Server"]["server"];
        assert_eq!(server["server_state"], "Active");
        assert_eq!(server["total_jobs"], 5);
        assert_eq!(server["default_queue"], "batch");
        assert_eq!(server["resources_assigned"]["nodect"], 12);
    }
}
