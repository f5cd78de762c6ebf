//! Periodic hooks: each enabled one runs every `freq` seconds, first
//! `freq` seconds after it is enabled (or the daemon leads), never twice at
//! once. What it prints is logged; a failure is logged and the next run
//! comes as planned.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use qmesh_core::hook::{HookEvent, running_at};
use serde_json::{Map, json};
use tokio::time::Instant;
use tracing::info;

use super::SiteHooks;

/// Runs periodic hooks until the table's publisher (the task) is gone.
pub async fn run(hooks: SiteHooks) {
    let mut table = hooks.watch();
    // Each hook's next run, by name, with the frequency it was planned at.
    let mut next: HashMap<String, (Instant, u32)> = HashMap::new();
    let running: Arc<std::sync::Mutex<std::collections::HashSet<String>>> = Arc::default();
    loop {
        let now = Instant::now();
        let current = hooks.table();
        let due = running_at(&current.hooks, HookEvent::Periodic);
        next.retain(|name, _| due.iter().any(|h| &h.name == name));
        for hook in &due {
            let plan = next
                .entry(hook.name.clone())
                .or_insert((now + secs(hook.freq), hook.freq));
            if plan.1 != hook.freq {
                *plan = (now + secs(hook.freq), hook.freq);
            }
            if plan.0 <= now {
                plan.0 = now + secs(hook.freq);
                let busy = !running
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(hook.name.clone());
                if busy {
                    info!(hook = %hook.name, "periodic hook still running; this run is skipped");
                    continue;
                }
                let hooks = hooks.clone();
                let hook = (*hook).clone();
                let server = current.server.clone();
                let running = running.clone();
                tokio::spawn(async move {
                    let mut d = Map::new();
                    d.insert("event".into(), json!("periodic"));
                    d.insert("hook".into(), json!(hook.name));
                    d.insert("server".into(), json!(server));
                    d.insert("time".into(), json!(chrono::Utc::now().timestamp()));
                    if let Ok(Some(answer)) = hooks.run(&hook, HookEvent::Periodic, d).await {
                        info!(hook = %hook.name, output = %answer, "periodic hook");
                    }
                    running
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .remove(&hook.name);
                });
            }
        }
        let wake = next.values().map(|(at, _)| *at).min();
        tokio::select! {
            changed = table.changed() => {
                if changed.is_err() {
                    return;
                }
            }
            () = sleep_until(wake) => {}
        }
    }
}

fn secs(n: u32) -> Duration {
    Duration::from_secs(n.into())
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
