//! Persistent hooks (`set hook h1 persistent = true`, qmesh's own): one
//! process kept alive between calls, for sites whose filter must keep up
//! with thousands of submissions a second, where a fork and exec each
//! cost more than the filter's work.
//!
//! The line protocol: the hook is started with `QMESH_HOOK_PERSISTENT=1`;
//! each document arrives as one line of JSON; the hook answers each with
//! one line: empty (or `{}`) to accept, `{"reject": "message"}` to refuse,
//! or the changed job as in the one-shot form. One request at a time per
//! hook. A request past the alarm kills the process group, as does a
//! garbled answer; the next request starts the hook again.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::Mutex;
use tracing::info;

use super::run::{HookFailure, Run, command, judge_answer, kill_group, spawn};

/// The longest answer line read.
const MAX_LINE: usize = 1 << 20;

/// A hook's running process, started on first use.
#[derive(Default)]
pub struct Resident {
    process: Mutex<Option<Process>>,
}

struct Process {
    child: Child,
    pid: Option<u32>,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Drop for Process {
    fn drop(&mut self) {
        kill_group(self.pid);
    }
}

impl Resident {
    /// Asks the hook about `doc`: as [`super::run::run`] answers.
    pub async fn ask(&self, run: &Run<'_>, doc: &[u8]) -> Result<Option<Value>, HookFailure> {
        let mut slot = self.process.lock().await;
        if slot.is_none() {
            *slot = Some(start(run).await?);
        }
        let Some(p) = slot.as_mut() else {
            unreachable!("started above")
        };
        let mut line = String::new();
        let talk = async {
            p.input.write_all(doc).await?;
            p.input.write_all(b"\n").await?;
            p.input.flush().await?;
            let mut limited = (&mut p.output).take(MAX_LINE as u64);
            limited.read_line(&mut line).await
        };
        let alarm = Duration::from_secs(run.alarm.into());
        let read = tokio::time::timeout(alarm, talk).await;
        match read {
            Err(_) => {
                *slot = None;
                Err(HookFailure::TimedOut { alarm: run.alarm })
            }
            Ok(Ok(n)) if n > 0 && line.ends_with('\n') => {
                let answer = judge_answer(line.trim().as_bytes());
                if matches!(answer, Err(HookFailure::Garbage(_))) {
                    // Out of step with us: start afresh next time.
                    *slot = None;
                }
                answer
            }
            Ok(Ok(n)) if n >= MAX_LINE => {
                *slot = None;
                Err(HookFailure::Garbage(format!(
                    "printed a line of more than {} KiB",
                    MAX_LINE / 1024
                )))
            }
            Ok(_) => {
                // It closed its output: it ended, or is ending.
                let Some(mut p) = slot.take() else {
                    unreachable!("taken once")
                };
                let status = tokio::time::timeout(Duration::from_secs(1), p.child.wait()).await;
                if matches!(status, Ok(Ok(_))) {
                    // Reaped: its number is no longer its group's.
                    p.pid = None;
                }
                Err(match status {
                    Ok(Ok(status)) => ended(status),
                    _ => HookFailure::Garbage("closed its output and did not exit".into()),
                })
            }
        }
    }
}

fn ended(status: std::process::ExitStatus) -> HookFailure {
    use std::os::unix::process::ExitStatusExt;
    match status.signal() {
        Some(signal) => HookFailure::Crashed { signal },
        None => HookFailure::Garbage(format!(
            "exited (status {}) instead of answering; a persistent hook answers every line \
             and keeps reading",
            status.code().unwrap_or(-1)
        )),
    }
}

async fn start(run: &Run<'_>) -> Result<Process, HookFailure> {
    let mut cmd = command(run);
    cmd.env("QMESH_HOOK_PERSISTENT", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = spawn(&mut cmd).await?;
    let pid = child.id();
    let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(HookFailure::NotStarted("no pipes to it".into()));
    };
    if let Some(stderr) = child.stderr.take() {
        let name = run.name.to_string();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                info!(hook = %name, "{line}");
            }
        });
    }
    info!(hook = %run.name, pid, "persistent hook started");
    Ok(Process {
        child,
        pid,
        input,
        output: BufReader::new(output),
    })
}
