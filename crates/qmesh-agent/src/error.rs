//! The agent's errors. Each names the thing that failed and, where there is
//! one, what to do about it; the text goes to the log or to stderr as it is.
//!
//! Launch problems are not here: they are a job's fate, not the agent's, and
//! travel to the daemon as a `JobFinished` (see [`crate::plan::LaunchError`]).

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// Another live agent holds the spool lock. The exit code is 3.
    #[error("another agent already serves spool {} (pid {})", spool.display(), pid_text(*pid))]
    LockHeld { spool: PathBuf, pid: Option<u32> },

    #[error("cannot {what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("cannot parse {}: {source}; remove or repair the file", path.display())]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },

    #[error("{0}")]
    Config(String),

    /// `detail` is the whole error chain: tonic's own text is only
    /// "transport error".
    #[error("cannot connect to the daemon at {url}: {detail}; is qmeshd running there?")]
    Connect { url: String, detail: String },

    #[error("the daemon at {url} refused the session: {code:?}: {message}")]
    Refused {
        url: String,
        code: tonic::Code,
        message: String,
    },

    #[error("cannot enrol with the daemon at {url}: {why}")]
    Enrol { url: String, why: String },

    #[error("the session with the daemon broke: {code:?}: {message}")]
    Stream { code: tonic::Code, message: String },

    #[error("the daemon broke the protocol: {0}")]
    Protocol(String),

    #[error("timed out after {secs} s {what}")]
    Timeout { what: &'static str, secs: u64 },

    #[error("the connection to the daemon closed")]
    Closed,
}

/// An error's text and its sources', joined by ": ", each once (layers
/// often repeat their source's text).
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut source = e.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if parts.last() != Some(&text) {
            parts.push(text);
        }
        source = cause.source();
    }
    parts.join(": ")
}

fn pid_text(pid: Option<u32>) -> String {
    pid.map_or_else(|| "unknown".to_string(), |p| p.to_string())
}

impl AgentError {
    /// An I/O error while doing `what` to `path`.
    pub fn io(what: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        AgentError::Io {
            what,
            path: path.into(),
            source,
        }
    }

    pub fn connect(url: &str, e: &tonic::transport::Error) -> Self {
        AgentError::Connect {
            url: url.to_string(),
            detail: chain(e),
        }
    }

    /// The session was refused: a status from the daemon, or the TLS
    /// layer's (the reason is in its sources: tonic's own text is only
    /// "transport error").
    pub fn refused(url: &str, status: &tonic::Status) -> Self {
        let message = match std::error::Error::source(status) {
            Some(source) => format!("{}: {}", status.message(), chain(source)),
            None => status.message().to_string(),
        };
        AgentError::Refused {
            url: url.to_string(),
            code: status.code(),
            message,
        }
    }

    pub fn stream(status: &tonic::Status) -> Self {
        AgentError::Stream {
            code: status.code(),
            message: status.message().to_string(),
        }
    }

    /// The process exit code for this error when it ends the agent.
    pub fn exit_code(&self) -> u8 {
        match self {
            AgentError::LockHeld { .. } => 3,
            _ => 1,
        }
    }
}

pub type Result<T, E = AgentError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_held_message_is_the_documented_line() {
        let e = AgentError::LockHeld {
            spool: PathBuf::from("/var/spool/qmesh"),
            pid: Some(42),
        };
        assert_eq!(
            e.to_string(),
            "another agent already serves spool /var/spool/qmesh (pid 42)"
        );
        assert_eq!(e.exit_code(), 3);
    }
}
