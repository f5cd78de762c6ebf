//! `spq --watch [SECS]`: the operator's view kept up to date in place,
//! until Ctrl-C: the queue in plan order with the running jobs, then a
//! map of each node set.
//!
//! Each frame is drawn over the last one, line by line, each line cleared
//! to its end and what is left below cleared after, on the terminal's
//! alternate screen (crossterm's commands): nothing is erased before it
//! is redrawn, so nothing flickers, and over ssh a frame costs only its
//! own bytes. Lines are cut to the terminal's width and the frame to its
//! height, so it never scrolls. Ctrl-C leaves the alternate screen and
//! shows the cursor again, leaving the shell as it was. When standard
//! output is no terminal (a pipe, a log), frames follow one another,
//! separated by a blank line.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use chrono::Local;
use crossterm::{QueueableCommand, cursor, terminal};
use qmesh_proto::v1::{NodeInfo, NodesRequest, PlanRequest};

use crate::client::{self, CliError};
use crate::output::Output;
use crate::spq::{Args, Listing};

/// Runs until interrupted; frames every `every`.
pub fn run(args: &Args, every: Duration) -> ExitCode {
    let runtime = match client::runtime() {
        Ok(rt) => rt,
        Err(err) => return client::fail("spq", &err),
    };
    let on_terminal = std::io::stdout().is_terminal();
    let outcome = runtime.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        // Handled from the start, so the screen is always restored.
        let watch =
            |kind| signal(kind).map_err(|e| CliError::msg(format!("cannot handle signals: {e}")));
        let mut interrupt = watch(SignalKind::interrupt())?;
        let mut terminate = watch(SignalKind::terminate())?;
        let mut hangup = watch(SignalKind::hangup())?;
        let mut screen = Screen::open(on_terminal);
        loop {
            let frame = frame(args, every).await?;
            screen.draw(&frame);
            tokio::select! {
                _ = interrupt.recv() => return Ok(()),
                _ = terminate.recv() => return Ok(()),
                _ = hangup.recv() => return Ok(()),
                () = tokio::time::sleep(every) => {}
            }
        }
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => client::fail("spq", &err),
    }
}

/// One frame's text.
async fn frame(args: &Args, every: Duration) -> Result<String, CliError> {
    let mut jobs = client::jobs().await?;
    let mut reply = jobs.plan(PlanRequest {}).await?.into_inner();
    let nodes = jobs.nodes(NodesRequest::default()).await?.into_inner();
    if let Some(user) = &args.user {
        reply.running.retain(|e| &e.owner == user);
        reply.queued.retain(|e| &e.owner == user);
    }
    let server = reply.server.clone();
    let mut text = format!(
        "spq on {server}, every {} s: {}  (Ctrl-C to stop)\n\n",
        every.as_secs_f64(),
        Local::now().format("%H:%M:%S")
    );
    text.push_str(&Listing { reply, tz: Local }.text());
    for set in &nodes.sets {
        if args.map.as_ref().is_some_and(|wanted| wanted != &set.name) {
            continue;
        }
        let members: Vec<&NodeInfo> = nodes
            .nodes
            .iter()
            .filter(|n| n.node_set == set.name)
            .collect();
        text.push_str(&format!("\nnode set {}\n", set.name));
        text.push_str(&crate::spmap::draw(set, &members));
    }
    Ok(text)
}

/// Where frames go: the terminal's alternate screen, or plain output.
struct Screen {
    on_terminal: bool,
}

impl Screen {
    fn open(on_terminal: bool) -> Screen {
        if on_terminal {
            let mut out = std::io::stdout();
            let _ = out.queue(terminal::EnterAlternateScreen);
            let _ = out.queue(cursor::Hide);
            let _ = out.flush();
        }
        Screen { on_terminal }
    }

    fn draw(&mut self, frame: &str) {
        let mut out = std::io::stdout().lock();
        if !self.on_terminal {
            let _ = writeln!(out, "{frame}");
            let _ = out.flush();
            return;
        }
        let (cols, rows) = terminal::size().unwrap_or((80, 24));
        let _ = out.queue(cursor::MoveTo(0, 0));
        for (i, line) in frame.lines().take(rows as usize).enumerate() {
            if i > 0 {
                let _ = out.write_all(b"\r\n");
            }
            let cut: String = line.chars().take(cols as usize).collect();
            let _ = out.write_all(cut.as_bytes());
            let _ = out.queue(terminal::Clear(terminal::ClearType::UntilNewLine));
        }
        let _ = out.queue(terminal::Clear(terminal::ClearType::FromCursorDown));
        let _ = out.flush();
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        if self.on_terminal {
            let mut out = std::io::stdout();
            let _ = out.queue(cursor::Show);
            let _ = out.queue(terminal::LeaveAlternateScreen);
            let _ = out.flush();
        }
    }
}
