//! One run of a hook's executable: the document on its standard input,
//! its answer read from its standard output, its message from its
//! standard error, all within its alarm. The process runs in a process
//! group of its own, so a hook that forks and hangs is killed whole.

use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

/// The most a hook may print on either output.
const MAX_OUTPUT: u64 = 1 << 20;
/// The longest message of a rejection shown to the user.
const MAX_MESSAGE: usize = 2000;

/// Why a run did not accept.
#[derive(Debug, PartialEq, Eq)]
pub enum HookFailure {
    /// It exited non-zero: the site's refusal, with its message.
    Rejected { message: String, status: i32 },
    /// It ran past its alarm and was killed.
    TimedOut { alarm: u32 },
    /// A signal ended it.
    Crashed { signal: i32 },
    /// It exited 0 but printed what is not a JSON object, or too much.
    Garbage(String),
    /// It could not be started.
    NotStarted(String),
}

impl HookFailure {
    /// The sentence for the user and the log: what the hook did and, for
    /// a fault, who fixes it.
    pub fn explain(&self, hook: &str) -> String {
        match self {
            HookFailure::Rejected { message, status } if message.is_empty() => {
                format!("rejected by hook \"{hook}\" (exit status {status})")
            }
            HookFailure::Rejected { message, .. } => message.clone(),
            HookFailure::TimedOut { alarm } => format!(
                "hook \"{hook}\" did not answer within its alarm ({alarm} s) and was killed; \
                 nothing was done: tell the administrator (qmgr -c \"list hook {hook}\")"
            ),
            HookFailure::Crashed { signal } => format!(
                "hook \"{hook}\" was killed by signal {signal}; nothing was done: tell the \
                 administrator"
            ),
            HookFailure::Garbage(why) => format!(
                "hook \"{hook}\" {why}; nothing was done: tell the administrator (a hook \
                 prints nothing to accept, or the job as a JSON object)"
            ),
            HookFailure::NotStarted(why) => format!(
                "hook \"{hook}\" could not be started: {why}; nothing was done: tell the \
                 administrator"
            ),
        }
    }

    /// Whether the site meant it (a rejection) rather than a fault.
    pub fn is_rejection(&self) -> bool {
        matches!(self, HookFailure::Rejected { .. })
    }
}

/// How the file is started: directly when it says how (`#!`, ELF), by
/// python3 when imported as Python without a `#!`, by sh otherwise; in
/// a clean environment and a process group of its own, in the hooks'
/// directory.
pub(super) fn command(run: &Run<'_>) -> Command {
    let direct = run.content.starts_with(b"#!") || run.content.starts_with(b"\x7fELF");
    let mut cmd = if direct {
        Command::new(run.file)
    } else {
        let mut c = Command::new(if run.content_type == "application/x-python" {
            "python3"
        } else {
            "/bin/sh"
        });
        c.arg(run.file);
        c
    };
    cmd.env_clear()
        .env(
            "PATH",
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        )
        .env("QMESH_HOOK_NAME", run.name)
        .env("QMESH_HOOK_EVENT", run.event)
        .current_dir(run.file.parent().unwrap_or(Path::new("/")))
        .process_group(0)
        .kill_on_drop(true);
    cmd
}

/// What a run needs to know of its hook.
pub struct Run<'a> {
    pub name: &'a str,
    pub event: &'a str,
    pub file: &'a Path,
    pub content: &'a [u8],
    pub content_type: &'a str,
    pub alarm: u32,
}

/// Runs the hook on `doc`: `Ok(None)` it accepted as is, `Ok(Some(v))`
/// it printed `v`.
pub async fn run(run: &Run<'_>, doc: &[u8]) -> Result<Option<Value>, HookFailure> {
    let mut cmd = command(run);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = spawn(&mut cmd).await?;
    let pid = child.id();
    let mut stdin = child.stdin.take();
    let mut stdout = child.stdout.take().map(|s| s.take(MAX_OUTPUT + 1));
    let mut stderr = child.stderr.take().map(|s| s.take(MAX_OUTPUT + 1));
    let talk = async {
        let write = async {
            if let Some(mut input) = stdin.take() {
                // A hook that does not read its input may close it first.
                let _ = input.write_all(doc).await;
            }
        };
        let mut out = Vec::new();
        let mut err = Vec::new();
        let read_out = async {
            if let Some(s) = stdout.as_mut() {
                let _ = s.read_to_end(&mut out).await;
            }
        };
        let read_err = async {
            if let Some(s) = stderr.as_mut() {
                let _ = s.read_to_end(&mut err).await;
            }
        };
        tokio::join!(write, read_out, read_err);
        let status = child.wait().await;
        (status, out, err)
    };
    let alarm = Duration::from_secs(run.alarm.into());
    let (status, out, err) = match tokio::time::timeout(alarm, talk).await {
        Ok(done) => done,
        Err(_) => {
            kill_group(pid);
            return Err(HookFailure::TimedOut { alarm: run.alarm });
        }
    };
    // Its group is not killed now: the leader is reaped, and a number no
    // process holds may be any new process's.
    let status = status.map_err(|e| HookFailure::NotStarted(format!("waiting for it: {e}")))?;
    judge(status, &out, &err)
}

/// Spawns, again while the file is busy: another thread's fork may hold
/// the file open for writing between its fork and exec.
pub(super) async fn spawn(cmd: &mut Command) -> Result<tokio::process::Child, HookFailure> {
    let mut tries = 0;
    loop {
        match cmd.spawn() {
            Ok(child) => return Ok(child),
            Err(e) if e.raw_os_error() == Some(libc_etxtbsy()) && tries < 20 => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Err(e) => return Err(HookFailure::NotStarted(e.to_string())),
        }
    }
}

fn libc_etxtbsy() -> i32 {
    nix::errno::Errno::ETXTBSY as i32
}

/// Kills the group `pid` leads: only while the leader is not reaped,
/// so the number is still its.
pub(super) fn kill_group(pid: Option<u32>) {
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// The verdict of an ended run.
fn judge(status: ExitStatus, out: &[u8], err: &[u8]) -> Result<Option<Value>, HookFailure> {
    use std::os::unix::process::ExitStatusExt;
    if let Some(signal) = status.signal() {
        return Err(HookFailure::Crashed { signal });
    }
    let code = status.code().unwrap_or(-1);
    if code != 0 {
        let said = if err.iter().any(|b| !b.is_ascii_whitespace()) {
            err
        } else {
            out
        };
        return Err(HookFailure::Rejected {
            message: clip(String::from_utf8_lossy(said).trim().to_string()),
            status: code,
        });
    }
    if out.len() as u64 > MAX_OUTPUT {
        return Err(HookFailure::Garbage(format!(
            "printed more than {} KiB",
            MAX_OUTPUT / 1024
        )));
    }
    parse_output(out)
}

/// A persistent hook's answer line: as a one-shot hook's output, and
/// `{}` accepts, `{"reject": "message"}` refuses.
pub(super) fn judge_answer(line: &[u8]) -> Result<Option<Value>, HookFailure> {
    match parse_output(line)? {
        Some(Value::Object(map)) if map.is_empty() => Ok(None),
        Some(Value::Object(map)) if map.contains_key("reject") => {
            let message = match &map["reject"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            Err(HookFailure::Rejected {
                message: clip(message.trim().to_string()),
                status: 0,
            })
        }
        answer => Ok(answer),
    }
}

/// Standard output read as an answer: nothing, or a JSON object.
fn parse_output(out: &[u8]) -> Result<Option<Value>, HookFailure> {
    if out.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    match serde_json::from_slice::<Value>(out) {
        Ok(v @ Value::Object(_)) => Ok(Some(v)),
        Ok(_) => Err(HookFailure::Garbage(
            "printed JSON that is not an object".into(),
        )),
        Err(e) => {
            let start: String = String::from_utf8_lossy(out).chars().take(60).collect();
            Err(HookFailure::Garbage(format!(
                "printed what is not JSON ({e}), starting \"{}\"",
                start.trim()
            )))
        }
    }
}

/// A message cut to [`MAX_MESSAGE`] bytes.
fn clip(mut message: String) -> String {
    if message.len() > MAX_MESSAGE {
        let mut cut = MAX_MESSAGE;
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        message.truncate(cut);
        message.push_str(" ...");
    }
    message
}
