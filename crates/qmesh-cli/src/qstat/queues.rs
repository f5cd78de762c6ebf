//! Queues as `qstat -Q` shows them: PBS's fixed-width table, the `-Q -f`
//! attribute form and the JSON document, the attributes built once per
//! queue ([`queue_attrs`]).
//!
//! ```text
//! Queue              Max   Tot Ena Str   Que   Run   Hld   Wat   Trn   Ext Type
//! ---------------- ----- ----- --- --- ----- ----- ----- ----- ----- ----- ----
//! batch                0     5 yes yes     2     3     0     0     0     0 Exec
//! ```
//!
//! Max is PBS's `max_running`, 0 while the queue has no such limit.

use qmesh_core::time::format_hms;
use qmesh_proto::QueueInfo;

use super::full_text::{FullStyle, write_object};
use crate::output::{self, Attrs, Tree, truncate};

/// The `-Q` table (nothing when there are no queues).
pub fn queue_table(queues: &[QueueInfo]) -> String {
    if queues.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "Queue              Max   Tot Ena Str   Que   Run   Hld   Wat   Trn   Ext Type\n\
         ---------------- ----- ----- --- --- ----- ----- ----- ----- ----- ----- ----\n",
    );
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    let count = |n: u32| truncate(&n.to_string(), Some(5));
    for q in queues {
        out.push_str(&format!(
            "{:<16} {:>5} {:>5} {:>3} {:>3} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5} {:<4}\n",
            truncate(&q.name, Some(16)),
            0,
            count(q.total),
            yes_no(q.enabled),
            yes_no(q.started),
            count(q.queued),
            count(q.running),
            count(q.held),
            count(q.waiting),
            count(q.transit),
            count(q.exiting),
            short_type(&q.queue_type),
        ));
    }
    out
}

/// The queues in `-Q -f`'s text form.
pub fn queues_full(queues: &[QueueInfo], style: &FullStyle) -> String {
    let mut out = String::new();
    for queue in queues {
        write_object(
            &format!("Queue: {}", queue.name),
            &queue_attrs(queue),
            style,
            &mut out,
        );
    }
    out
}

/// PBS's JSON document of the queues (`qstat -Q -f -F json`).
pub fn queues_document(queues: &[QueueInfo], server: &str, time: i64) -> Tree {
    let entries = queues
        .iter()
        .map(|q| (q.name.clone(), queue_attrs(q).json()))
        .collect();
    output::document(time, server, "Queue", entries)
}

/// PBS's four-letter type column: `Exec`, `Rout`.
fn short_type(queue_type: &str) -> String {
    match queue_type.to_ascii_lowercase().as_str() {
        "execution" | "e" => "Exec".to_string(),
        "route" | "r" => "Rout".to_string(),
        other => other.chars().take(4).collect(),
    }
}

/// `execution` as PBS prints it: `Execution`.
fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Every attribute `qstat -Q -f` shows for `q`, in PBS's order.
pub fn queue_attrs(q: &QueueInfo) -> Attrs {
    let mut a = Attrs::new();
    a.text("queue_type", capitalized(&q.queue_type));
    a.int("priority", q.priority);
    a.int("total_jobs", q.total);
    a.text(
        "state_count",
        format!(
            "Transit:{} Queued:{} Held:{} Waiting:{} Running:{} Exiting:{} Begun:0",
            q.transit, q.queued, q.held, q.waiting, q.running, q.exiting
        ),
    );
    if let Some(n) = q.max_nodes {
        a.int("resources_max.nodes", n);
    }
    if let Some(t) = q.max_walltime {
        a.text("resources_max.walltime", format_hms(t));
    }
    if let Some(n) = q.min_nodes {
        a.int("resources_min.nodes", n);
    }
    if let Some(n) = q.default_nodes {
        a.int("resources_default.nodes", n);
    }
    if let Some(t) = q.default_walltime {
        a.text("resources_default.walltime", format_hms(t));
    }
    // The nodes its node sets hold: the largest job it could ever run.
    a.int("resources_available.nodes", q.capacity_nodes);
    if !q.node_sets.is_empty() {
        a.text("node_sets", q.node_sets.join(","));
    }
    if !q.route_destinations.is_empty() {
        a.text("route_destinations", q.route_destinations.join(","));
    }
    if !q.default_destination.is_empty() {
        a.text("default_destination", q.default_destination.clone());
    }
    if !q.holding_queue.is_empty() {
        a.text("holding_queue", q.holding_queue.clone());
    }
    a.flag("enabled", q.enabled);
    a.flag("started", q.started);
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch() -> QueueInfo {
        QueueInfo {
            name: "batch".into(),
            queue_type: "execution".into(),
            priority: 10,
            enabled: true,
            started: true,
            max_nodes: Some(64),
            max_walltime: Some(86_400),
            default_walltime: Some(3600),
            node_sets: vec!["rack1".into(), "rack2".into()],
            total: 5,
            queued: 2,
            running: 3,
            capacity_nodes: 128,
            ..Default::default()
        }
    }

    fn debug() -> QueueInfo {
        QueueInfo {
            name: "debug".into(),
            queue_type: "execution".into(),
            enabled: false,
            started: true,
            held: 1,
            total: 1,
            ..Default::default()
        }
    }

    #[test]
    fn the_table() {
        assert_eq!(
            queue_table(&[batch(), debug()]),
            "\
Queue              Max   Tot Ena Str   Que   Run   Hld   Wat   Trn   Ext Type
---------------- ----- ----- --- --- ----- ----- ----- ----- ----- ----- ----
batch                0     5 yes yes     2     3     0     0     0     0 Exec
debug                0     1  no yes     0     0     1     0     0     0 Exec
"
        );
        assert_eq!(queue_table(&[]), "");
    }

    #[test]
    fn the_full_form() {
        let text = queues_full(&[batch(), debug()], &FullStyle::Folded);
        assert!(
            text.starts_with(
                "Queue: batch
    queue_type = Execution
    priority = 10
    total_jobs = 5
    state_count = Transit:0 Queued:2 Held:0 Waiting:0 Running:3 Exiting:0 Begun\n\t:0
    resources_max.nodes = 64
    resources_max.walltime = 24:00:00
    resources_default.walltime = 01:00:00
    resources_available.nodes = 128
    node_sets = rack1,rack2
    enabled = True
    started = True

Queue: debug
"
            ),
            "{text}"
        );
        assert!(text.contains("    enabled = False\n"));
        assert!(!text.contains("resources_min"));
    }

    #[test]
    fn the_json_document() {
        let doc: serde_json::Value = serde_json::from_str(
            &serde_json::to_string(&queues_document(
                &[batch(), debug()],
                "server",
                1_700_000_000,
            ))
            .unwrap(),
        )
        .unwrap();
        assert_eq!(doc["pbs_server"], "server");
        assert_eq!(doc["timestamp"], 1_700_000_000);
        let batch = &doc["Queue"]["batch"];
        assert_eq!(batch["resources_max"]["nodes"], 64);
        assert_eq!(batch["resources_max"]["walltime"], "24:00:00");
        assert_eq!(batch["enabled"], "True");
        assert_eq!(doc["Queue"]["debug"]["enabled"], "False");
    }
}
