//! spwhen: when one job will start given the current queue, and why it
//! does not start now. The estimate is the scheduler's own plan (the start
//! it reserved for the job), so it moves only when the queue does. Two
//! plans are made: one where every job runs its requested wall time (what
//! Slurm and PBS tell), and one where every job runs its predicted run
//! time, its owner's last two jobs' (`qmesh_core::predict`): the second is
//! shown when the server gives it, being closer, and spwhen says which it
//! shows.

use std::process::ExitCode;

use chrono::{Local, TimeZone};
use clap::Parser;
use qmesh_core::predict::Estimate;
use qmesh_proto::{PlanStatus, WhenReply, WhenRequest};

use crate::client::{self, CliError};
use crate::output::{self, Output, Tree};
use crate::spview;

/// Tell when a job will start given the current queue, and why not now.
///
/// The estimate comes from the scheduler's plan, where the jobs ahead keep
/// their places and every job runs its predicted run time (what its
/// owner's last two jobs ran; its wall time for a user with none), or,
/// from a server that does not predict, its requested wall time. The
/// answer says which, and gives the wall-time estimate too.
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
        let (start, estimate) = shown(r);
        out.push_str(&format!("expected start: {}\n", self.when(start, now)));
        if start > 0 {
            out.push_str(&format!("estimate from {}\n", estimate.as_str()));
        }
        if estimate == Estimate::PredictedRunTimes && r.expected_start > 0 {
            out.push_str(&format!(
                "from requested wall times: {}\n",
                self.when(r.expected_start, now)
            ));
        }
        if !r.reason.is_empty() {
            out.push_str(&format!("why not now: {} ({})\n", r.explanation, r.reason));
        }
        out
    }

    fn json(&self) -> Tree {
        let r = &self.reply;
        let job = r.job.clone().unwrap_or_default();
        let (start, estimate) = shown(r);
        let in_seconds = if start > 0 {
            Tree::int((start - r.server_time).max(0))
        } else {
            Tree::Null
        };
        Tree::Map(vec![
            ("timestamp".into(), Tree::int(r.server_time)),
            ("job_id".into(), Tree::text(&job.job_id)),
            ("status".into(), Tree::text(&job.status_text)),
            ("expected_start".into(), Tree::time(start)),
            ("in_seconds".into(), in_seconds),
            ("estimate".into(), Tree::text(estimate.key())),
            ("estimate_from".into(), Tree::text(estimate.as_str())),
            ("walltime_start".into(), Tree::time(r.expected_start)),
            ("reason".into(), Tree::text(&r.reason)),
            ("explanation".into(), Tree::text(&r.explanation)),
            ("job".into(), spview::entry_json(&job)),
        ])
    }
}

impl<Tz: TimeZone> Answer<Tz>
where
    Tz::Offset: std::fmt::Display,
{
    /// A start as the text says it: its date and how long until then.
    fn when(&self, start: i64, now: i64) -> String {
        if start > now {
            format!(
                "{} (in {})",
                spview::date(start, &self.tz),
                spview::span(start - now)
            )
        } else if start > 0 {
            "now".into()
        } else {
            "none can be foreseen now".into()
        }
    }
}

/// The start spwhen shows and the plan it is from: predicted run times'
/// when the server gave one, else requested wall times'.
fn shown(r: &WhenReply) -> (i64, Estimate) {
    if r.predicted_start > 0 {
        (r.predicted_start, Estimate::PredictedRunTimes)
    } else {
        (r.expected_start, Estimate::RequestedWallTimes)
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
            predicted_start: 0,
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
estimate from requested wall times
why not now: waiting for free nodes; it is next in line for them (Resources)
"
        );
    }

    #[test]
    fn the_estimate_from_predicted_run_times_is_shown_and_named() {
        let reply = WhenReply {
            predicted_start: T0 + 1200,
            ..blocked()
        };
        let answer = Answer { reply, tz: Utc };
        assert_eq!(
            answer.text(),
            "job 4.srv (32 nodes, 120 minutes) is Blocked
expected start: Sun Nov 22 10:20:00 2026 (in 20 min)
estimate from predicted run times (last two jobs of each user; their wall time for users with none)
from requested wall times: Sun Nov 22 11:00:00 2026 (in 60 min)
why not now: waiting for free nodes; it is next in line for them (Resources)
"
        );
        let doc: serde_json::Value =
            serde_json::from_str(&serde_json::to_string(&answer.json()).unwrap()).unwrap();
        assert_eq!(doc["expected_start"], T0 + 1200);
        assert_eq!(doc["in_seconds"], 1200);
        assert_eq!(doc["estimate"], "predicted");
        assert_eq!(doc["walltime_start"], T0 + 3600);
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
        assert_eq!(doc["estimate"], "walltime");
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
            predicted_start: 0,
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
