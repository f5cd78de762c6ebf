//! What every command shares: finding and reaching the daemon, one
//! current-thread runtime per invocation, and the one-line error report.
//!
//! The commands are thin: the daemon knows who the caller is (the socket's
//! peer uid), checks the request and applies policy. A command gathers what
//! the user gave, sends it, and prints the answer; when the daemon refuses,
//! its message is printed as it is, because it is written to be read.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use qmesh_proto::admin_client::AdminClient;
use qmesh_proto::endpoint;
use qmesh_proto::jobs_client::JobsClient;
use tonic::transport::Channel;

/// Why a command failed; the text is the whole message after `CMD: `.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(
        "cannot reach qmeshd at {}: {reason}; is the daemon running? (set QMESH_SOCKET to its socket)",
        path.display()
    )]
    Unreachable { path: PathBuf, reason: String },
    /// The daemon refused or failed the request; its message, as it is.
    #[error("{}", status_text(.0))]
    Rpc(#[from] tonic::Status),
    /// Anything the command found wrong before sending, already phrased.
    #[error("{0}")]
    Msg(String),
}

impl CliError {
    pub fn msg(text: impl Into<String>) -> CliError {
        CliError::Msg(text.into())
    }
}

fn status_text(status: &tonic::Status) -> String {
    if status.message().is_empty() {
        // Only transport-level failures come without words from the daemon.
        format!("the request failed: {:?}", status.code())
    } else {
        status.message().to_string()
    }
}

/// A gRPC status whose message names one unknown or malformed thing, so a
/// command asking about several may retry them one by one.
pub fn is_per_item(status: &tonic::Status) -> bool {
    matches!(
        status.code(),
        tonic::Code::NotFound | tonic::Code::InvalidArgument
    )
}

/// Lets a command write into a closed pipe and die quietly (`qstat | head`),
/// as C programs do, instead of panicking in `println!`.
/// Reads a file the user named (`what`: "script file", "qmgr file"), with
/// an error that says which file and why.
pub fn read_named_file(path: &std::path::Path, what: &str) -> Result<Vec<u8>, CliError> {
    std::fs::read(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            CliError::msg(format!("{what} \"{}\" does not exist", path.display()))
        } else {
            CliError::msg(format!("cannot read {what} \"{}\": {e}", path.display()))
        }
    })
}

pub fn restore_sigpipe() {
    use nix::sys::signal::{SigHandler, Signal, signal};
    // SAFETY: setting the default disposition installs no Rust handler, and
    // it happens first thing in main, before any other thread exists.
    let _ = unsafe { signal(Signal::SIGPIPE, SigHandler::SigDfl) };
}

/// A current-thread runtime: a command makes one request or a few, in turn.
pub fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::msg(format!("cannot start the runtime: {e}")))
}

/// Runs a command's async body on a fresh [`runtime`].
pub fn block_on<T>(fut: impl Future<Output = Result<T, CliError>>) -> Result<T, CliError> {
    runtime()?.block_on(fut)
}

/// Prints `CMD: message` on stderr and gives the exit code for a refused
/// or failed request.
pub fn fail(cmd: &str, err: &CliError) -> ExitCode {
    eprintln!("{cmd}: {err}");
    ExitCode::FAILURE
}

/// The socket this user's commands talk to (`QMESH_SOCKET` first).
pub fn socket_path() -> PathBuf {
    endpoint::client_default_socket(nix::unistd::getuid().as_raw())
}

/// Opens a connection to the daemon.
pub async fn connect() -> Result<Channel, CliError> {
    let path = socket_path();
    connect_at(&path).await
}

async fn connect_at(path: &Path) -> Result<Channel, CliError> {
    endpoint::connect_unix(path)
        .await
        .map_err(|err| CliError::Unreachable {
            path: path.to_path_buf(),
            reason: root_cause(&err),
        })
}

/// The largest answer a command reads: tonic's default of 4 MiB is a
/// `qstat -t` of some 12,000 sub-jobs; a 100,000-task array's is 33 MB.
const MAX_REPLY: usize = 1 << 30;

pub async fn jobs() -> Result<JobsClient<Channel>, CliError> {
    Ok(JobsClient::new(connect().await?).max_decoding_message_size(MAX_REPLY))
}

pub async fn admin() -> Result<AdminClient<Channel>, CliError> {
    Ok(AdminClient::new(connect().await?).max_decoding_message_size(MAX_REPLY))
}

/// The innermost error's words ("No such file or directory (os error 2)"):
/// tonic's own outer message is only "transport error".
fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut inner = err;
    while let Some(source) = inner.source() {
        inner = source;
    }
    inner.to_string()
}

/// The local host name, as PBS records it (`submit_host`, `Job_Owner`).
/// The name of the user running the command (its uid's, else the number).
pub fn current_user() -> String {
    let uid = nix::unistd::getuid();
    nix::unistd::User::from_uid(uid)
        .ok()
        .flatten()
        .map_or_else(|| uid.to_string(), |u| u.name)
}

pub fn hostname() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "localhost".to_string())
}

/// The `qmesh-X` string reported as `pbs_version` in JSON documents.
pub fn version() -> String {
    format!("qmesh-{}", env!("CARGO_PKG_VERSION"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreachable_names_the_socket_and_what_to_do() {
        let err = block_on(connect_at(Path::new("/nonexistent/qmesh/sock"))).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("cannot reach qmeshd at /nonexistent/qmesh/sock: "),
            "{text}"
        );
        assert!(text.contains("No such file"), "{text}");
        assert!(text.ends_with("is the daemon running? (set QMESH_SOCKET to its socket)"));
    }

    #[test]
    fn daemon_messages_pass_as_they_are() {
        let err = CliError::from(tonic::Status::not_found(
            "job 99.server does not exist; see qstat",
        ));
        assert_eq!(err.to_string(), "job 99.server does not exist; see qstat");
    }
}
