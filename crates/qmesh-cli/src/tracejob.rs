//! tracejob: what happened to a job, from the daemon's job logs (PBS's
//! accounting records, `A`, and server events, `S`), in PBS's layout:
//! a `Job: ID` header, then `MM/DD/YYYY HH:MM:SS  L    message` lines.
//!
//! PBS's tracejob reads the log files itself; here the daemon reads them
//! (the Trace call) and checks who asks, so users need no access to the
//! state directory. qmesh keeps no scheduler or MoM logs: -l and -m have
//! nothing to leave out.

use std::collections::HashMap;
use std::process::ExitCode;

use clap::Parser;
use qmesh_core::joblog::filter_mask;
use qmesh_proto::{TraceLine, TraceReply, TraceRequest};

use crate::client::{self, CliError};
use crate::output::{self, Output, Tree};

/// Show what happened to jobs: their accounting records and server events.
///
/// Lines come from the last -n days of the logs, today included. A job's
/// owner, operators and managers may trace it. Exits 1 when a job has no
/// line in those days.
#[derive(Parser, Debug)]
#[command(name = "tracejob", version)]
pub struct Args {
    /// Days to look back, today included.
    #[arg(short = 'n', value_name = "DAYS", default_value_t = 1)]
    pub days: u32,
    /// Leave out server events of this class: error, system, admin, job,
    /// job_usage, security, sched, debug (debug2, resv, debug3, debug4,
    /// force), or a hex mask; may be given again.
    #[arg(short = 'f', value_name = "FILTER")]
    pub filters: Vec<String>,
    /// Leave out the accounting records.
    #[arg(short = 'a')]
    pub no_accounting: bool,
    /// Leave out the server events.
    #[arg(short = 's')]
    pub no_server: bool,
    /// Accepted (PBS: leave out the scheduler's log; qmesh keeps none).
    #[arg(short = 'l')]
    pub no_scheduler: bool,
    /// Accepted (PBS: leave out the MoMs' logs; qmesh keeps none).
    #[arg(short = 'm')]
    pub no_mom: bool,
    /// Leave out messages repeated more than -c times.
    #[arg(short = 'z')]
    pub filter_excessive: bool,
    /// How many repeats -z allows.
    #[arg(short = 'c', value_name = "COUNT", default_value_t = 15)]
    pub excessive_count: usize,
    /// Wrap messages at this many columns (0: no wrapping).
    #[arg(short = 'w', value_name = "COLUMNS", default_value_t = 0)]
    pub columns: usize,
    /// Accepted (PBS: PBS_HOME); the daemon reads its own logs.
    #[arg(short = 'p', value_name = "PATH")]
    pub path: Option<String>,
    /// Accepted (PBS: more error messages).
    #[arg(short = 'v')]
    pub verbose: bool,
    /// Print the lines as JSON.
    #[arg(long)]
    pub json: bool,
    /// Jobs to trace (17 or 17.server).
    #[arg(value_name = "ID", required = true)]
    pub ids: Vec<String>,
}

/// Where the date and the source letter end: the message starts here.
const MESSAGE_COLUMN: usize = 26;

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    let mut mask = 0;
    for f in &args.filters {
        match filter_mask(f) {
            Ok(m) => mask |= m,
            Err(e) => {
                eprintln!("tracejob: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let replies = client::block_on(async {
        let mut jobs = client::jobs().await?;
        let mut replies = Vec::new();
        for id in &args.ids {
            let request = TraceRequest {
                job_id: id.clone(),
                days: args.days,
            };
            replies.push(jobs.trace(request).await.map(|r| r.into_inner()));
        }
        Ok::<_, CliError>(replies)
    });
    let replies = match replies {
        Ok(r) => r,
        Err(e) => return client::fail("tracejob", &e),
    };
    let mut failed = false;
    let mut traces = Vec::new();
    for (id, reply) in args.ids.iter().zip(replies) {
        let mut reply = match reply {
            Ok(reply) => reply,
            Err(status) => {
                failed = true;
                eprintln!("tracejob: {}", CliError::from(status));
                continue;
            }
        };
        reply.lines = shown(reply.lines, &args, mask);
        if reply.lines.is_empty() {
            failed = true;
            let full = if reply.job_id.is_empty() {
                id.as_str()
            } else {
                &reply.job_id
            };
            eprintln!(
                "\ntracejob: Couldn't find Job Id {full} in logs of past {} day{}\n",
                args.days,
                if args.days == 1 { "" } else { "s" }
            );
            continue;
        }
        traces.push(reply);
    }
    let listing = Traces {
        traces,
        columns: args.columns,
    };
    if let Err(e) = output::emit(&listing, args.json) {
        return client::fail(
            "tracejob",
            &CliError::msg(format!("cannot write the trace: {e}")),
        );
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The lines the options keep.
fn shown(lines: Vec<TraceLine>, args: &Args, mask: u32) -> Vec<TraceLine> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    if args.filter_excessive {
        for line in &lines {
            *counts.entry(line.message.clone()).or_default() += 1;
        }
    }
    lines
        .into_iter()
        .filter(|l| {
            let record = l.source == "A";
            !(record && args.no_accounting
                || !record && args.no_server
                || l.event_class & mask != 0
                || counts
                    .get(&l.message)
                    .is_some_and(|&n| n > args.excessive_count))
        })
        .collect()
}

/// Every traced job, in PBS's layout or as JSON.
struct Traces {
    traces: Vec<TraceReply>,
    columns: usize,
}

impl Output for Traces {
    fn text(&self) -> String {
        let mut out = String::new();
        for trace in &self.traces {
            out.push_str(&format!("\nJob: {}\n\n", trace.job_id));
            for line in &trace.lines {
                out.push_str(&format!("{:<20} {:<5}", line.date, line.source));
                out.push_str(&wrap(&line.message, MESSAGE_COLUMN, self.columns));
                out.push('\n');
            }
        }
        out
    }

    fn json(&self) -> Tree {
        Tree::List(
            self.traces
                .iter()
                .map(|t| {
                    let lines = t
                        .lines
                        .iter()
                        .map(|l| {
                            let mut entry = vec![
                                ("date".to_string(), Tree::text(&l.date)),
                                ("source".to_string(), Tree::text(&l.source)),
                            ];
                            if l.source == "A" {
                                entry.push(("record_type".into(), Tree::text(&l.record_type)));
                            } else {
                                entry.push((
                                    "event_class".into(),
                                    Tree::text(format!("{:04x}", l.event_class)),
                                ));
                            }
                            entry.push(("message".into(), Tree::text(&l.message)));
                            Tree::Map(entry)
                        })
                        .collect();
                    Tree::Map(vec![
                        ("job_id".into(), Tree::text(&t.job_id)),
                        ("lines".into(), Tree::List(lines)),
                    ])
                })
                .collect(),
        )
    }
}

/// `message` wrapped at word boundaries so no line passes `columns` (0:
/// no wrapping), the lines after the first indented to `start`, as PBS's
/// tracejob does.
fn wrap(message: &str, start: usize, columns: usize) -> String {
    if columns <= start || start + message.len() <= columns {
        return message.to_string();
    }
    let width = columns - start;
    let mut lines: Vec<String> = vec![String::new()];
    for word in message.split(' ') {
        let Some(current) = lines.last_mut() else {
            break;
        };
        if !current.is_empty() && current.len() + 1 + word.len() > width {
            lines.push(word.to_string());
        } else {
            if !current.is_empty() {
                current.push(' ');
            }
            current.push_str(word);
        }
    }
    lines.join(&format!("\n{}", " ".repeat(start)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(source: &str, class: u32, message: &str) -> TraceLine {
        TraceLine {
            date: "03/04/2026 05:06:07".into(),
            source: source.into(),
            record_type: if source == "A" {
                "Q".into()
            } else {
                String::new()
            },
            event_class: class,
            message: message.into(),
        }
    }

    #[test]
    fn pbs_layout_header_then_date_letter_message() {
        let t = Traces {
            traces: vec![TraceReply {
                job_id: "7.srv".into(),
                lines: vec![line("S", 8, "Job Queued"), line("A", 0, "queue=batch")],
                days: 1,
            }],
            columns: 0,
        };
        assert_eq!(
            t.text(),
            "\nJob: 7.srv\n\n03/04/2026 05:06:07  S    Job Queued\n03/04/2026 05:06:07  A    queue=batch\n"
        );
    }

    #[test]
    fn filters_leave_out_sources_classes_and_repeats() {
        let lines = vec![
            line("S", 8, "Job Queued"),
            line("S", 0x10, "Exit_status=0"),
            line("A", 0, "queue=batch"),
        ];
        let args = |extra: &[&str]| {
            let mut argv = vec!["tracejob"];
            argv.extend_from_slice(extra);
            argv.push("7");
            Args::try_parse_from(argv).unwrap()
        };
        assert_eq!(shown(lines.clone(), &args(&[]), 0).len(), 3);
        assert_eq!(shown(lines.clone(), &args(&["-a"]), 0).len(), 2);
        assert_eq!(shown(lines.clone(), &args(&["-s"]), 0).len(), 1);
        let kept = shown(lines.clone(), &args(&[]), filter_mask("job").unwrap());
        assert_eq!(kept.len(), 2, "records are never filtered");
        let repeated = vec![line("S", 8, "x"); 3];
        assert_eq!(
            shown(repeated.clone(), &args(&["-z", "-c", "2"]), 0).len(),
            0
        );
        assert_eq!(shown(repeated, &args(&["-z", "-c", "3"]), 0).len(), 3);
    }

    #[test]
    fn long_messages_wrap_under_the_message_column() {
        let text = wrap("aaaa bbbb cccc", 26, 34);
        assert_eq!(
            text,
            format!("aaaa\n{}bbbb\n{}cccc", " ".repeat(26), " ".repeat(26))
        );
        assert_eq!(wrap("short", 26, 80), "short");
        assert_eq!(wrap("no wrap at all", 26, 0), "no wrap at all");
    }
}
