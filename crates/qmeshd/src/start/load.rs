//! Start-up, before anything listens: the state directory taken (one
//! daemon per directory), the store opened and loaded, the configuration
//! chosen (the store's, which qmgr has changed, over the file's), the state
//! rebuilt, and the job logs brought in line with the store.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use qmesh_core::joblog::RecordType;
use qmesh_core::{Config, State};
use qmesh_store::Store;
use tracing::{info, warn};

use super::store::OpenStore;
use crate::args::Args;
use crate::{joblog, paths, task};
use qmesh_config::Settings;

/// The state directory, held for the daemon's life.
pub struct Dirs {
    pub state: PathBuf,
    /// Where the job logs are (`server_priv/accounting` and `audit`
    /// under it): the state directory, or `[daemon] job_logs_dir`, which
    /// the qmeshd of one queue on etcd share (docs/HA.md).
    pub logs: PathBuf,
    pub store: PathBuf,
    _lock: paths::StateLock,
}

/// The state directory (the command line's, the file's, or the default
/// for `uid`), created and locked, with the store's directory in it.
pub fn take_dirs(args: &Args, settings: &Settings, uid: u32) -> anyhow::Result<Dirs> {
    let state = args
        .state_dir
        .clone()
        .or(settings.state_dir.clone())
        .unwrap_or_else(|| paths::default_state_dir(uid));
    paths::ensure_dir(&state, 0o755)?;
    let lock = paths::StateLock::take(&state)?;
    let store = state.join("store");
    paths::ensure_dir(&store, 0o700)?;
    let logs = settings
        .job_logs_dir
        .clone()
        .unwrap_or_else(|| state.clone());
    paths::ensure_dir(&logs, 0o755)?;
    Ok(Dirs {
        logs,
        state,
        store,
        _lock: lock,
    })
}

/// What start-up loaded, ready for the scheduler task.
pub struct Loaded {
    pub store: OpenStore,
    pub state: State,
    pub server_name: String,
    /// The next accounting record's number (above every one the store
    /// still keeps).
    pub next_record: u64,
}

/// Loads the opened store and rebuilds the state from it; every job is
/// loaded (scripts are read when a launch needs them).
pub fn load(dirs: &Dirs, settings: &Settings, opened: OpenStore) -> anyhow::Result<Loaded> {
    let loading = Instant::now();
    let store: Arc<dyn Store> = opened.as_store();
    let loaded = store.load().context("load the store")?;
    let mut config = match loaded.config {
        Some(stored) => {
            if stored != settings.initial {
                info!(
                    "the store's queues and server attributes differ from the configuration file's; \
                     the store's (qmgr's) are used; see qmgr -c \"print server\""
                );
            }
            stored
        }
        None => {
            store.put_config(&settings.initial)?;
            settings.initial.clone()
        }
    };
    // Node sets made with qmgr that the file now overlaps are left out.
    let (_, dropped) = qmesh_core::server::merge_sets(&settings.node_sets, &mut config);
    for warning in &dropped {
        warn!("{warning}");
    }
    let server_name = server_name(settings);
    let mut state = new_state(&server_name, config, settings)?;
    let job_count = loaded.jobs.len();
    let warnings = state.restore(loaded.jobs, loaded.next_id);
    let next_record = recover_job_logs(&dirs.logs, store.as_ref(), &state, &loaded.outbox);
    if let Some(usage) = loaded.usage {
        state.restore_usage(usage);
    }
    task::log_restore_warnings(&warnings);
    store.sync().context("flush the store")?;
    info!(
        jobs = job_count,
        ms = loading.elapsed().as_millis() as u64,
        store = %opened.describe(dirs),
        "state loaded"
    );
    Ok(Loaded {
        store: opened,
        state,
        server_name,
        next_record,
    })
}

fn new_state(server_name: &str, config: Config, settings: &Settings) -> anyhow::Result<State> {
    State::new(server_name.to_string(), config, settings.node_sets.clone())
        .context("build the node sets")
}

/// The server's name: the file's, or this host's short name.
pub fn server_name(settings: &Settings) -> String {
    settings.server_name.clone().unwrap_or_else(short_hostname)
}

/// The host's short name, the server's name when the file gives none.
pub fn short_hostname() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .map(|h| h.split('.').next().unwrap_or("").to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

/// Brings the accounting log in line with the store: the records the
/// store kept (its outbox, `task/joblog.rs`) that a crash kept from the
/// log are written now and the store forgets them; then each recent job's
/// `Q`, `S` and `E` are checked against the log (a store from before the
/// outbox, or lines lost from the files). Returns the next record's
/// number. A failure here is logged, never fatal: the records stay in the
/// store for the next start.
fn recover_job_logs(
    state_dir: &std::path::Path,
    store: &dyn Store,
    state: &State,
    outbox: &[(u64, Vec<u8>)],
) -> u64 {
    let kept_upto = outbox.iter().map(|(seq, _)| *seq).max().unwrap_or(0);
    match joblog::recover_outbox(state_dir, outbox) {
        Ok(n) => {
            if n > 0 {
                warn!(
                    records = n,
                    "accounting records of changes the store had were missing from the log after a crash; written now"
                );
            }
            if kept_upto > 0 {
                store.write(vec![qmesh_store::Change::OutboxWritten(kept_upto)], None);
            }
        }
        Err(e) => warn!(
            error = %e,
            "could not write the accounting records the store kept; they stay there for the next start"
        ),
    }
    let server = state.server_name();
    let expected = |since: qmesh_core::Time, present: &dyn Fn(RecordType, &str) -> bool| {
        let mut out = Vec::new();
        for job in state.jobs() {
            let due = |at: Option<qmesh_core::Time>| at.is_some_and(|t| t >= since);
            let (q, s, e) = (Some(job.qtime), job.stime, job.end_time);
            if !(due(q) || due(s) || due(e)) {
                continue;
            }
            let id = job.id.full(server);
            let lacking = [
                (q, RecordType::Queued),
                (s, RecordType::Started),
                (e, RecordType::Ended),
            ]
            .iter()
            .any(|(at, kind)| due(*at) && !present(*kind, &id));
            if lacking {
                for (at, kind, text) in qmesh_core::joblog::expected_records(job, server) {
                    out.push((at, kind, id.clone(), text));
                }
            }
        }
        out
    };
    match joblog::recover(state_dir, expected) {
        Ok(0) => {}
        Ok(n) => warn!(
            records = n,
            "accounting records the last run did not write were written back"
        ),
        Err(e) => warn!(error = %e, "could not check the accounting log against the store"),
    }
    kept_upto + 1
}
