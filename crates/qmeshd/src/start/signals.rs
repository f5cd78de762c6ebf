//! SIGTERM and SIGINT, watched once for the daemon's life: one that comes
//! while a standby takes over is kept until the daemon waits for it.

use anyhow::Context;
use tokio::signal::unix::{Signal, SignalKind, signal};

pub struct Signals {
    term: Signal,
    int: Signal,
}

impl Signals {
    pub fn watch() -> anyhow::Result<Signals> {
        Ok(Signals {
            term: signal(SignalKind::terminate()).context("watch SIGTERM")?,
            int: signal(SignalKind::interrupt()).context("watch SIGINT")?,
        })
    }

    /// The next one.
    pub async fn next(&mut self) {
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.int.recv() => {}
        }
    }
}
