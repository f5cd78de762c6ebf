//! spwhen: when one job will start given the current queue, and why it
//! does not start now. The estimate is the scheduler's own plan (the start
//! it reserved for the job), so it moves only when the queue does.

use std::process::ExitCode;

use chrono::{Local, TimeZone};
use clap::Parser;
use qmesh_proto::{PlanStatus, WhenReply, WhenRequest};

use crate::client::{self, CliError};
use crate::output::{self, Output, Tree};
use crate::spview;

/// Tell when a job will start given the current queue, and why not now.
///
/// The estimate comes from the scheduler's plan: running jobs end when
/// their wall time runs out, and the jobs ahead keep their places.
#[derive(Parser, Debug)]
#[command(name = "spwhen", version)]
pub struct Args {
    /// Print the answer as JSON.
    #[arg(long)]
    pub json: bool,
    /// The job (17 or 17.server).
    #[arg(value_name = "ID")]
    pub id: String,
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    let reply = client::block_on(async {
        let mut jobs = client::jobs().await?;
        let request = WhenRequest { job_id: args.id };
        Ok(jobs.when(request).await?.into_inner())
    });
    let reply = match reply {
        Ok(reply) => reply,
        Err(err) => return client::fail("spwhen", &err),
    };
    match output::emit(&Answer { reply, tz: Local }, args.json) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => client::fail(
            "spwhen",
            &CliError::msg(format!("cannot write the answer: {e}")),
        ),
    }
}

/// The daemon's answer, ready to print; times in zone `tz`.
pub struct Answer<Tz: TimeZone> {
    pub reply: WhenReply,
    pub tz: Tz,
}

impl<Tz: TimeZone> Output for Answer<Tz>
where
    Tz::Offset: std::fmt::Display,
{
    fn text(&self) -> String {
        let r = &self.reply;
        let job = r.job.clone().unwrap_or_default();
        let now = r.server_time;
        if job.status() == PlanStatus::Running {
            let mut line = format!("job {} is running", job.job_id);
            if job.start > 0 {
                line.push_str(&format!(
                    " since {}",
                    spview::clock(job.start, now, &self.tz)
                ));
            }
            if job.expected_end > 0 {
                line.push_str(&format!(
                    "; its wall time ends {}",
                    spview::at(job.expected_end, now, &self.tz)
                ));
            }
            return format!("{line}\n");
        }
        let mut out = format!(
            "job {} ({} nodes, {} minutes) is {}\n",
            job.job_id,
            job.nodes,
            spview::minutes_up(job.walltime),
            job.status_text
        );
        if r.expected_start > now {
            out.push_str(&format!(
                "expected start: {} (in {})\n",
                spview::date(r.expected_start, &self.tz),
                spview::span(r.expected_start - now)
            ));
        } else if r.expected_start > 0 {
            out.push_str("expected start: now\n");
        } else {
            out.push_str("expected start: none can be foreseen now\n");
        }
        if !r.reason.is_empty() {
            out.push_str(&format!("why not now: {} ({})\n", r.explanation, r.reason));
        }
        out
    }

    fn json(&self) -> Tree {
        let r = &self.reply;
        let job = r.job.clone().unwrap_or_default();
        let in_seconds = if r.expected_start > 0 {
            Tree::int((r.expected_start - r.server_time).max(0))
        } else {
            Tree::Null
        };
        Tree::Map(vec![
            ("timestamp".into(), Tree::int(r.server_time)),
            ("job_id".into(), Tree::text(&job.job_id)),
            ("status".into(), Tree::text(&job.status_text)),
            ("expected_start".into(), Tree::time(r.expected_start)),
            ("in_seconds".into(), in_seconds),
            ("reason".into(), Tree::text(&r.reason)),
            ("explanation".into(), Tree::text(&r.explanation)),
            ("job".into(), spview::entry_json(&job)),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;
    use qmesh_proto::PlanEntry;

    const T0: i64 = 1_795_341_600;

    fn blocked() -> WhenReply {
        WhenReply {
            job: Some(PlanEntry {
                job_id: "4.srv".into(),
                nodes: 32,
                walltime: 7200,
                status: PlanStatus::Blocked as i32,
                status_text: "Blocked".into(),
                ..Default::default()
            }),
            expected_start: T0 + 3600,
            reason: "Resources".into(),
            explanation: "waiting for free nodes; it is next in line for them".into(),
            server_time: T0,
        }
    }

    #[test]
    fn a_planned_start_and_the_reason() {
        let text = Answer {
            reply: blocked(),
            tz: Utc,
        }
        .text();
        assert_eq!(
            text,
            "job 4.srv (32 nodes, 120 minutes) is Blocked
expected start: Sun Nov 22 11:00:00 2026 (in 60 min)
why not now: waiting for free nodes; it is next in line for them (Resources)
"
        );
    }

    #[test]
    fn no_estimate_is_said_plainly() {
        let reply = WhenReply {
            expected_start: 0,
            reason: "Held".into(),
            explanation: "job is held; qrls releases it".into(),
            ..blocked()
        };
        let answer = Answer { reply, tz: Utc };
        assert!(
            answer
                .text()
                .contains("expected start: none can be foreseen now\n")
        );
        let doc: serde_json::Value =
            serde_json::from_str(&serde_json::to_string(&answer.json()).unwrap()).unwrap();
        assert!(doc["expected_start"].is_null());
        assert!(doc["in_seconds"].is_null());
        assert_eq!(doc["reason"], "Held");
    }

    #[test]
    fn a_running_job_says_so() {
        let reply = WhenReply {
            job: Some(PlanEntry {
                job_id: "2.srv".into(),
                status: PlanStatus::Running as i32,
                start: T0,
                expected_end: T0 + 3600,
                ..Default::default()
            }),
            expected_start: T0,
            reason: String::new(),
            explanation: String::new(),
            server_time: T0 + 600,
        };
        assert_eq!(
            Answer { reply, tz: Utc }.text(),
            "job 2.srv is running since 10:00; its wall time ends 11:00 (in 50 min)\n"
        );
    }

    #[test]
    fn json_gives_the_start_and_the_wait() {
        let doc: serde_json::Value = serde_json::from_str(
            &serde_json::to_string(
                &Answer {
                    reply: blocked(),
                    tz: Utc,
                }
                .json(),
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(doc["expected_start"], T0 + 3600);
        assert_eq!(doc["in_seconds"], 3600);
        assert_eq!(doc["status"], "Blocked");
        assert_eq!(doc["job"]["nodes"], 32);
    }
}
