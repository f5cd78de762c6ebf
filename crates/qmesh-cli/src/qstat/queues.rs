//! Queues as `qstat -Q` shows them: PBS's table, the `-Q -f` attribute form
//! and the JSON document, the attributes built once per queue.

use qmesh_core::time::format_hms;
use qmesh_proto::QueueInfo;

use crate::output::{self, Attrs, Column, Output, Tree};

/// The queues of one QueueStatus reply, ready to print.
pub struct QueueListing {
    pub server: String,
    pub time: i64,
    pub queues: Vec<QueueInfo>,
    /// `-f`: the attribute form instead of the table.
    pub full: bool,
}

const COLUMNS: [Column; 12] = [
    Column::left("Queue").at_most(16),
    Column::right("Max"),
    Column::right("Tot"),
    Column::left("Ena"),
    Column::left("Str"),
    Column::right("Que"),
    Column::right("Run"),
    Column::right("Hld"),
    Column::right("Wat"),
    Column::right("Trn"),
    Column::right("Ext"),
    Column::left("Type"),
];

impl Output for QueueListing {
    fn text(&self) -> String {
        if self.queues.is_empty() {
            return String::new();
        }
        if self.full {
            let mut out = String::new();
            for queue in &self.queues {
                queue_attrs(queue).write_full(&format!("Queue: {}", queue.name), &mut out);
            }
            return out;
        }
        let yes_no = |b: bool| if b { "yes" } else { "no" }.to_string();
        let rows: Vec<Vec<String>> = self
            .queues
            .iter()
            .map(|q| {
                vec![
                    q.name.clone(),
                    q.max_nodes.unwrap_or(0).to_string(),
                    q.total.to_string(),
                    yes_no(q.enabled),
                    yes_no(q.started),
                    q.queued.to_string(),
                    q.running.to_string(),
                    q.held.to_string(),
                    q.waiting.to_string(),
                    q.transit.to_string(),
                    q.exiting.to_string(),
                    short_type(&q.queue_type),
                ]
            })
            .collect();
        output::table(&COLUMNS, &rows)
    }

    fn json(&self) -> Tree {
        let entries = self
            .queues
            .iter()
            .map(|q| (q.name.clone(), queue_attrs(q).json()))
            .collect();
        output::document(self.time, &self.server, "Queue", entries)
    }
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
            "Transit:{} Queued:{} Held:{} Waiting:{} Running:{} Exiting:{}",
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

    fn listing(full: bool) -> QueueListing {
        QueueListing {
            server: "server".into(),
            time: 1_700_000_000,
            queues: vec![batch(), debug()],
            full,
        }
    }

    #[test]
    fn the_table() {
        assert_eq!(
            listing(false).text(),
            "\
Queue Max Tot Ena Str Que Run Hld Wat Trn Ext Type
----- --- --- --- --- --- --- --- --- --- --- ----
batch  64   5 yes yes   2   3   0   0   0   0 Exec
debug   0   1 no  yes   0   0   1   0   0   0 Exec
"
        );
    }

    #[test]
    fn the_full_form() {
        let text = listing(true).text();
        assert!(
            text.starts_with(
                "Queue: batch
    queue_type = Execution
    priority = 10
    total_jobs = 5
    state_count = Transit:0 Queued:2 Held:0 Waiting:0 Running:3 Exiting:0
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
        let doc: serde_json::Value =
            serde_json::from_str(&serde_json::to_string(&listing(false).json()).unwrap()).unwrap();
        assert_eq!(doc["pbs_server"], "server");
        assert_eq!(doc["timestamp"], 1_700_000_000);
        let batch = &doc["Queue"]["batch"];
        assert_eq!(batch["resources_max"]["nodes"], 64);
        assert_eq!(batch["resources_max"]["walltime"], "24:00:00");
        assert_eq!(batch["enabled"], "True");
        assert_eq!(doc["Queue"]["debug"]["enabled"], "False");
    }
}
