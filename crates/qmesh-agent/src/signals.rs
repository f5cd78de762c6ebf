//! Signals for a running job (qsig, period-end warnings), passed from the
//! agent to the job's shepherd through the spool.
//!
//! The agent writes each request as a file in `JOBDIR/signals/` and then
//! rings the shepherd's doorbell (SIGURG); the shepherd takes the files in
//! the order they were written and sends each signal to the job's process
//! group. The file, not the doorbell, carries the request, so:
//! - any signal can be sent, SIGKILL and SIGSTOP too, and the shepherd's own
//!   signals keep their meaning (SIGTERM and SIGINT: kill the job with its
//!   grace; SIGALRM: its wall time);
//! - nothing is lost if the agent dies between writing and ringing: the
//!   next agent rings for every shepherd it adopts with requests waiting.
//!
//! `signals/` is made with the job's directory, so a job directory without
//! it belongs to a shepherd of an older agent, which does not forward: the
//! agent says so instead of posting. (The shepherd's blocked-signal mask
//! cannot tell: while it sits in sigwait the kernel shows the waited-for
//! signals unblocked.) SIGURG is ignored by default, so ringing such a
//! shepherd would do no harm anyway.

use std::fs;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use nix::sys::signal::Signal;
use tracing::{debug, info, warn};

use crate::error::{AgentError, Result};
use crate::record::{SIGNAL_VERSION, SIGNALS_DIR, SignalRequest, write_atomic};
use crate::spool::JobDir;

/// Tells a shepherd to look in [`SIGNALS_DIR`].
pub const DOORBELL: Signal = Signal::SIGURG;

/// What a request asks of the job: a signal, or (`qsig -s suspend`,
/// `resume`) to stop or continue the whole job with its wall-time limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    Signal(Signal),
    Suspend,
    Resume,
}

impl Order {
    /// A signal's canonical name (`SIGUSR1`), `suspend` or `resume`.
    pub fn parse(name: &str) -> Option<Order> {
        match name {
            "suspend" => Some(Order::Suspend),
            "resume" => Some(Order::Resume),
            _ => Signal::from_str(name).ok().map(Order::Signal),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Order::Signal(sig) => sig.as_str(),
            Order::Suspend => "suspend",
            Order::Resume => "resume",
        }
    }

    /// What the job's other processes (pbsdsh's tasks) are sent for it.
    pub fn as_signal(self) -> Signal {
        match self {
            Order::Signal(sig) => sig,
            Order::Suspend => Signal::SIGSTOP,
            Order::Resume => Signal::SIGCONT,
        }
    }
}

/// Files posted within one nanosecond still sort in posting order.
static POSTED: AtomicU64 = AtomicU64::new(0);

fn dir_of(job: &JobDir) -> PathBuf {
    job.file(SIGNALS_DIR)
}

/// Writes a request for `order` into the job's directory.
pub fn post(job: &JobDir, order: Order, reason: &str) -> Result<PathBuf> {
    let dir = dir_of(job);
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let n = POSTED.fetch_add(1, Ordering::Relaxed) % 1_000_000;
    let path = dir.join(format!("{:020}-{n:06}.json", since.as_nanos()));
    let request = SignalRequest {
        version: SIGNAL_VERSION,
        signal: order.name().to_string(),
        reason: reason.to_string(),
        time: i64::try_from(since.as_secs()).unwrap_or(i64::MAX),
    };
    let json = serde_json::to_vec_pretty(&request).map_err(|e| AgentError::Json {
        path: path.clone(),
        source: e,
    })?;
    write_atomic(&path, &json, 0o600)?;
    Ok(path)
}

/// The waiting request files, oldest first (temporary files excluded).
fn waiting(job: &JobDir) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir_of(job)) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| !n.starts_with('.') && n.ends_with(".json"))
        })
        .collect();
    files.sort();
    files
}

/// Whether requests wait for the shepherd.
pub fn pending(job: &JobDir) -> bool {
    !waiting(job).is_empty()
}

/// A request the shepherd took: what to do, or why it cannot be done.
pub type Taken = std::result::Result<(Order, SignalRequest), String>;

/// The shepherd's side: every waiting request, oldest first, each removed
/// from the spool as it is taken.
pub fn take(job: &JobDir) -> Vec<Taken> {
    let mut taken = Vec::new();
    for path in waiting(job) {
        let request = fs::read(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))
            .and_then(|bytes| {
                serde_json::from_slice::<SignalRequest>(&bytes)
                    .map_err(|e| format!("cannot parse {}: {e}", path.display()))
            })
            .and_then(|r| match Order::parse(&r.signal) {
                Some(order) => Ok((order, r)),
                None => Err(format!(
                    "{} asks for \"{}\", which is not a signal on this host",
                    path.display(),
                    r.signal
                )),
            });
        if let Err(e) = fs::remove_file(&path) {
            // Left in place it would be sent again at the next ring.
            taken.push(Err(format!(
                "cannot remove {} ({e}); its signal is not sent",
                path.display()
            )));
            continue;
        }
        taken.push(request);
    }
    taken
}

/// The agent's side: writes the request and rings the job's shepherd.
/// Problems are logged; the daemon has already answered the request.
pub fn deliver(job: &JobDir, shepherd: i32, name: &str, reason: &str) {
    let Some(order) = Order::parse(name) else {
        warn!(
            signal = name,
            "the daemon asked for a signal this host does not know; not sent"
        );
        return;
    };
    if !dir_of(job).is_dir() {
        warn!(
            shepherd,
            signal = name,
            "this job's shepherd was started by an agent without signal forwarding; \
             the signal is not sent (qdel still works)"
        );
        return;
    }
    if let Err(e) = post(job, order, reason) {
        warn!("{e}; the signal is not sent");
        return;
    }
    ring(shepherd);
    info!(
        shepherd,
        signal = name,
        reason,
        "signal passed to the shepherd"
    );
}

/// Rings a shepherd that has requests waiting (after an agent restart).
pub fn ring_if_pending(job: &JobDir, shepherd: i32) {
    if pending(job) {
        debug!(shepherd, "signal requests waiting; ringing the shepherd");
        ring(shepherd);
    }
}

fn ring(shepherd: i32) {
    if let Err(e) = nix::sys::signal::kill(nix::unistd::Pid::from_raw(shepherd), DOORBELL) {
        // It ended meanwhile: its watcher reports the end.
        debug!(shepherd, "cannot ring the shepherd ({e})");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spool::Spool;

    fn job() -> (tempfile::TempDir, JobDir) {
        let tmp = tempfile::tempdir().unwrap();
        let spool = Spool::open(tmp.path()).unwrap();
        let launch = qmesh_proto::v1::LaunchJob {
            job: 3,
            job_id: "3.s".into(),
            script: b"exit 0\n".to_vec(),
            ..Default::default()
        };
        let dir = spool
            .prepare_order(launch, Default::default())
            .unwrap()
            .unwrap();
        (tmp, dir)
    }

    #[test]
    fn requests_are_taken_once_in_the_order_they_were_posted() {
        let (_tmp, dir) = job();
        assert!(!pending(&dir));
        assert!(take(&dir).is_empty());
        let orders = [
            Order::Signal(Signal::SIGSTOP),
            Order::Suspend,
            Order::Resume,
            Order::Signal(Signal::SIGUSR1),
        ];
        for order in orders {
            post(&dir, order, "qsig by alice").unwrap();
        }
        // A half-written file of a writer that died is not a request.
        fs::write(dir_of(&dir).join(".x.json.1.tmp"), "{").unwrap();
        assert!(pending(&dir));
        let taken: Vec<Order> = take(&dir).into_iter().map(|t| t.unwrap().0).collect();
        assert_eq!(taken, orders);
        assert!(!pending(&dir));
        assert!(take(&dir).is_empty());
    }

    #[test]
    fn a_request_that_cannot_be_understood_is_reported_and_dropped() {
        let (_tmp, dir) = job();
        post(&dir, Order::Signal(Signal::SIGUSR2), "").unwrap();
        let bad = dir_of(&dir).join("00000000000000000000-000000.json");
        fs::write(&bad, r#"{"signal": "SIGNOPE"}"#).unwrap();
        let taken = take(&dir);
        assert_eq!(taken.len(), 2);
        let e = taken[0].as_ref().unwrap_err();
        assert!(e.contains("SIGNOPE") && e.contains("not a signal"), "{e}");
        assert_eq!(taken[1].as_ref().unwrap().0, Order::Signal(Signal::SIGUSR2));
        assert!(!pending(&dir));
    }
}
