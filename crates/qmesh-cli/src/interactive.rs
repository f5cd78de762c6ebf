//! `qsub -I`: the user's terminal wired to the interactive job's shell.
//!
//! qsub submits the job, says it waits, and opens `Jobs.Attach`; the
//! daemon answers when the job has started and the agent of its first
//! node has reached the job's terminal. From then on the terminal is in
//! raw mode: every key goes to the job as typed (Ctrl-C reaches the
//! job's foreground process through its own terminal, Ctrl-D ends the
//! shell), and a window size change follows. The terminal is restored
//! however qsub ends. If qsub goes away first, the daemon deletes the job
//! (PBS does the same).

use std::io::Write;
use std::os::fd::AsFd;

use nix::sys::termios::{self, SetArg, Termios};
use qmesh_proto::v1;
use qmesh_proto::v1::task_frame::Kind;
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::client::CliError;

fn frame(kind: Kind) -> v1::TaskFrame {
    v1::TaskFrame { kind: Some(kind) }
}

/// The terminal's window, if stdin is one.
fn window_size() -> Option<v1::WindowSize> {
    let mut size = nix::libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one winsize into the struct we own.
    let ok = unsafe { nix::libc::ioctl(0, nix::libc::TIOCGWINSZ, &mut size) } == 0;
    (ok && size.ws_row > 0).then_some(v1::WindowSize {
        rows: size.ws_row.into(),
        cols: size.ws_col.into(),
    })
}

/// Raw mode while it lives; the saved settings come back on drop.
struct RawMode {
    saved: Termios,
}

impl RawMode {
    fn enter() -> Option<RawMode> {
        let stdin = std::io::stdin();
        let saved = termios::tcgetattr(stdin.as_fd()).ok()?;
        let mut raw = saved.clone();
        termios::cfmakeraw(&mut raw);
        termios::tcsetattr(stdin.as_fd(), SetArg::TCSANOW, &raw).ok()?;
        Some(RawMode { saved })
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        let _ = termios::tcsetattr(std::io::stdin().as_fd(), SetArg::TCSANOW, &self.saved);
    }
}

/// An interactive job's terminal, attached: the job has started.
pub struct Terminal {
    tx: mpsc::Sender<v1::TaskFrame>,
    inbound: tonic::Streaming<v1::TaskFrame>,
    /// The host of the job's first node, where the shell runs.
    pub host: String,
}

/// Opens `job_id`'s terminal: answers once the job has started (the
/// daemon holds the attach until then). While it is open the job lives;
/// should this process go away, the daemon deletes the job.
pub async fn open(
    mut jobs: qmesh_proto::jobs_client::JobsClient<tonic::transport::Channel>,
    job_id: &str,
    env: Vec<v1::EnvVar>,
) -> Result<Terminal, CliError> {
    let (tx, rx) = mpsc::channel(64);
    let open = v1::TaskOpen {
        job_id: job_id.to_string(),
        interactive: true,
        window: window_size(),
        env,
        ..Default::default()
    };
    let _ = tx.send(frame(Kind::Open(open))).await;
    let mut inbound = jobs.attach(ReceiverStream::new(rx)).await?.into_inner();
    // Nothing comes before the job has started: then `started`.
    match inbound.message().await? {
        Some(v1::TaskFrame {
            kind: Some(Kind::Started(host)),
        }) => Ok(Terminal { tx, inbound, host }),
        Some(v1::TaskFrame {
            kind: Some(Kind::Error(why)),
        }) => Err(CliError::msg(why)),
        _ => Err(CliError::msg(format!(
            "job {job_id}: the daemon ended the attach before the job started"
        ))),
    }
}

impl Terminal {
    /// Ends the job's shell as if `exit CODE` were typed (what the
    /// terminal shows is not read); the shell's exit status. srun and
    /// salloc hold their allocation this way and give it their status.
    pub async fn end(mut self, code: i32) -> Result<i32, CliError> {
        let line = format!("\nexit {}\n", code.clamp(0, 255));
        let _ = self.tx.send(frame(Kind::Stdin(line.into_bytes()))).await;
        loop {
            match self.inbound.message().await? {
                Some(v1::TaskFrame {
                    kind: Some(Kind::Exit(code)),
                }) => return Ok(code),
                Some(v1::TaskFrame {
                    kind: Some(Kind::Error(why)),
                }) => return Err(CliError::msg(why)),
                Some(_) => {}
                None => {
                    return Err(CliError::msg(
                        "the job's terminal closed without an exit status",
                    ));
                }
            }
        }
    }
}

/// Attaches to `job_id`'s terminal until its shell ends; the shell's exit
/// status.
pub async fn attach(
    jobs: qmesh_proto::jobs_client::JobsClient<tonic::transport::Channel>,
    job_id: &str,
    env: Vec<v1::EnvVar>,
) -> Result<i32, CliError> {
    attach_as("qsub", jobs, job_id, env).await
}

/// [`attach`], for the command `cmd` (qsub, srun --pty), which says so.
pub async fn attach_as(
    cmd: &str,
    jobs: qmesh_proto::jobs_client::JobsClient<tonic::transport::Channel>,
    job_id: &str,
    env: Vec<v1::EnvVar>,
) -> Result<i32, CliError> {
    let Terminal {
        tx,
        mut inbound,
        host,
    } = open(jobs, job_id, env).await?;
    eprintln!("{cmd}: job {job_id} ready (on {host})\n");
    let raw = RawMode::enter();
    let keys = tokio::spawn(forward_keys(tx.clone()));
    let windows = tokio::spawn(forward_windows(tx.clone()));
    drop(tx);
    let mut stdout = std::io::stdout();
    let mut stderr = std::io::stderr();
    let outcome = loop {
        match inbound.message().await {
            Ok(Some(v1::TaskFrame { kind: Some(kind) })) => match kind {
                Kind::Stdout(bytes) => {
                    let _ = stdout.write_all(&bytes);
                    let _ = stdout.flush();
                }
                Kind::Stderr(bytes) => {
                    let _ = stderr.write_all(&bytes);
                    let _ = stderr.flush();
                }
                Kind::Exit(code) => break Ok(code),
                Kind::Error(why) => break Err(CliError::msg(why)),
                _ => {}
            },
            Ok(Some(_)) => {}
            Ok(None) => {
                break Err(CliError::msg(format!(
                    "job {job_id}: the terminal closed without an exit status"
                )));
            }
            Err(status) => break Err(status.into()),
        }
    };
    keys.abort();
    windows.abort();
    drop(raw);
    if outcome.is_ok() {
        eprintln!("\n{cmd}: job {job_id} completed");
    }
    outcome
}

/// Every byte typed, as it comes; end of input is said once.
async fn forward_keys(tx: mpsc::Sender<v1::TaskFrame>) {
    let mut stdin = tokio::io::stdin();
    let mut buf = vec![0u8; 4096];
    loop {
        match stdin.read(&mut buf).await {
            Ok(0) | Err(_) => {
                let _ = tx.send(frame(Kind::StdinClosed(true))).await;
                return;
            }
            Ok(n) => {
                if tx
                    .send(frame(Kind::Stdin(buf[..n].to_vec())))
                    .await
                    .is_err()
                {
                    return;
                }
            }
        }
    }
}

/// The new window size whenever the terminal says it changed.
async fn forward_windows(tx: mpsc::Sender<v1::TaskFrame>) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut changes) = signal(SignalKind::window_change()) else {
        return;
    };
    while changes.recv().await.is_some() {
        if let Some(size) = window_size()
            && tx.send(frame(Kind::Window(size))).await.is_err()
        {
            return;
        }
    }
}
