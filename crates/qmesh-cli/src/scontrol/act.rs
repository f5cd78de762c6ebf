//! `scontrol hold|uhold|release|requeue|requeuehold|update`: Slurm's
//! verbs on jobs, sent as qhold, qrls, qrerun, qalter and qmove send them
//! (the daemon checks who may do what). Each job named is first looked up,
//! so that the common refusals read as Slurm's do ("Invalid job id
//! specified for job 12", "Job is pending execution for job 12"); what the
//! daemon refuses is printed in its own words. Nothing is printed when all
//! went well; the exit status is 1 when any job was refused.

use qmesh_proto::jobs_client::JobsClient;
use qmesh_proto::{JobInfo, JobsReply, JobsRequest, MoveRequest, RerunRequest, StatusRequest};
use tonic::transport::Channel;

use super::update::{self, Update};
use crate::client::{self, CliError};
use crate::scancel::qmesh_id;
use crate::squeue;

/// The verbs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    Hold,
    UserHold,
    Release,
    Requeue,
    RequeueHold,
}

/// The job ids of a job list: `12 13_4`, `12,13`.
pub fn job_list(words: &[String]) -> Vec<String> {
    words
        .iter()
        .flat_map(|w| w.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// The jobs the daemon knows, finished ones too, arrays' sub-jobs listed:
/// all of them, or those the Slurm ids name (a number may be a job or an
/// array, so both are asked; what does not exist is left out), and the
/// server's time.
pub async fn jobs_named(
    jobs: &mut JobsClient<Channel>,
    ids: &[String],
) -> Result<(Vec<JobInfo>, i64), CliError> {
    let mut names = Vec::new();
    for id in ids {
        if let Ok(q) = qmesh_id(id) {
            if !q.contains('[') {
                names.push(format!("{q}[]"));
            }
            names.push(q);
        }
    }
    if names.is_empty() && !ids.is_empty() {
        return Ok((Vec::new(), 0));
    }
    let reply = jobs
        .status(StatusRequest {
            job_ids: names,
            include_finished: true,
            expand_arrays: true,
            report_refused: true,
            ..StatusRequest::default()
        })
        .await?
        .into_inner();
    // A number that is an array's may come back under both names.
    let mut seen = std::collections::HashSet::new();
    let listed = reply
        .jobs
        .into_iter()
        .filter(|j| seen.insert(j.id.clone()))
        .collect();
    Ok((listed, reply.server_time))
}

/// The job a Slurm id names: `12` a job or an array, `13_4` a sub-job.
pub fn find<'a>(listed: &'a [JobInfo], id: &str) -> Option<&'a JobInfo> {
    let wanted = qmesh_id(id).ok()?;
    listed.iter().find(|j| {
        let seq = j.id.split('.').next().unwrap_or_default();
        seq == wanted || seq == format!("{wanted}[]")
    })
}

/// What is wrong with doing `verb` to a job in its state, in Slurm's words.
fn refusal(verb: Verb, job: &JobInfo) -> Option<String> {
    let (_, long) = squeue::state(job);
    let finished = matches!(long, "COMPLETED" | "FAILED" | "CANCELLED");
    let pending = long == "PENDING";
    match verb {
        _ if finished && verb != Verb::Requeue && verb != Verb::RequeueHold => {
            Some("Job has already finished".into())
        }
        Verb::Hold | Verb::UserHold if !pending => {
            Some("Job is no longer pending execution".into())
        }
        Verb::Requeue | Verb::RequeueHold if pending => Some("Job is pending execution".into()),
        Verb::Requeue | Verb::RequeueHold if finished => Some(
            "Requeue of a finished job is not supported by qmesh (it requeues running jobs); \
             submit it again with sbatch"
                .into(),
        ),
        _ => None,
    }
}

/// Runs a verb on the jobs named; whether all went well.
pub fn run(verb: Verb, ids: &[String]) -> Result<bool, CliError> {
    client::block_on(async {
        let mut jobs = client::jobs().await?;
        let (listed, _) = jobs_named(&mut jobs, ids).await?;
        let mut ok = true;
        let mut last_error = String::new();
        let mut chosen: Vec<String> = Vec::new();
        for id in ids {
            let Some(job) = find(&listed, id) else {
                eprintln!("Invalid job id specified for job {id}");
                last_error = "Invalid job id specified".into();
                ok = false;
                continue;
            };
            if let Some(why) = refusal(verb, job) {
                eprintln!("{why} for job {id}");
                last_error = why;
                ok = false;
                continue;
            }
            // Releasing a job that holds nothing is no error to Slurm.
            if verb == Verb::Release && matches!(job.hold_types.as_str(), "" | "n") {
                continue;
            }
            chosen.push(job.id.clone());
        }
        if !chosen.is_empty() {
            let request = JobsRequest {
                job_ids: chosen.clone(),
                hold_types: if verb == Verb::UserHold {
                    "u".into()
                } else {
                    String::new()
                },
                ..JobsRequest::default()
            };
            let reply = match verb {
                Verb::Hold | Verb::UserHold => jobs.hold(request).await?,
                Verb::Release => jobs.release(request).await?,
                // requeuehold: held by the daemon as it queues it again.
                Verb::Requeue | Verb::RequeueHold => {
                    jobs.rerun(RerunRequest {
                        job_ids: chosen.clone(),
                        force: false,
                        hold: verb == Verb::RequeueHold,
                    })
                    .await?
                }
            };
            let done = report(reply.into_inner(), &mut last_error);
            ok &= done.len() == chosen.len();
        }
        if !ok && matches!(verb, Verb::Hold | Verb::UserHold | Verb::Release) {
            eprintln!("slurm_suspend error: {last_error}");
        }
        Ok(ok)
    })
}

/// Prints the daemon's refusals; the ids it did.
fn report(reply: JobsReply, last_error: &mut String) -> Vec<String> {
    let mut done = Vec::new();
    for r in reply.results {
        if r.ok {
            done.push(r.job_id);
        } else {
            eprintln!("scontrol: error: {}", r.error);
            *last_error = r.error;
        }
    }
    done
}

/// `scontrol update JobId=... KEY=VALUE...`; whether all went well.
pub fn update(words: &[String]) -> Result<bool, CliError> {
    let update: Update = update::parse(words).map_err(CliError::Msg)?;
    client::block_on(async {
        let mut jobs = client::jobs().await?;
        let (listed, _) = jobs_named(&mut jobs, &update.ids).await?;
        let mut ok = true;
        for id in &update.ids {
            let Some(job) = find(&listed, id) else {
                eprintln!("Invalid job id specified for job {id}");
                ok = false;
                continue;
            };
            let (_, long) = squeue::state(job);
            if matches!(long, "COMPLETED" | "FAILED" | "CANCELLED") {
                eprintln!("Job has already finished for job {id}");
                ok = false;
                continue;
            }
            if long != "PENDING" && update.needs_pending() {
                eprintln!("Job is no longer pending execution for job {id}");
                ok = false;
                continue;
            }
            let alter = match update::alter_for(&update, job) {
                Ok(a) => a,
                Err(e) => {
                    eprintln!("scontrol: error: {e}");
                    ok = false;
                    continue;
                }
            };
            let mut last = String::new();
            if let Some(request) = alter {
                let reply = jobs.alter(request).await?.into_inner();
                if report(reply, &mut last).is_empty() {
                    ok = false;
                    continue;
                }
            }
            if let Some(partition) = &update.partition {
                let reply = jobs
                    .r#move(MoveRequest {
                        destination: partition.clone(),
                        job_ids: vec![job.id.clone()],
                    })
                    .await?
                    .into_inner();
                ok &= !report(reply, &mut last).is_empty();
            }
        }
        Ok(ok)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: &str, letter: &str) -> JobInfo {
        JobInfo {
            id: id.into(),
            state_letter: letter.into(),
            ..JobInfo::default()
        }
    }

    #[test]
    fn slurm_ids_find_jobs_arrays_and_tasks() {
        let listed = vec![job("12.s", "Q"), job("13[].s", "B"), job("13[4].s", "R")];
        assert_eq!(find(&listed, "12").map(|j| j.id.as_str()), Some("12.s"));
        assert_eq!(find(&listed, "13").map(|j| j.id.as_str()), Some("13[].s"));
        assert_eq!(
            find(&listed, "13_4").map(|j| j.id.as_str()),
            Some("13[4].s")
        );
        assert!(find(&listed, "14").is_none());
        assert!(find(&listed, "x").is_none());
        assert_eq!(job_list(&["1,2".into(), "3".into()]), ["1", "2", "3"]);
    }

    #[test]
    fn refusals_in_slurms_words() {
        let pending = job("1.s", "Q");
        let running = job("2.s", "R");
        let done = JobInfo {
            exit_status: Some(0),
            ..job("3.s", "F")
        };
        assert_eq!(
            refusal(Verb::Requeue, &pending).as_deref(),
            Some("Job is pending execution")
        );
        assert_eq!(refusal(Verb::Requeue, &running), None);
        assert_eq!(
            refusal(Verb::Hold, &running).as_deref(),
            Some("Job is no longer pending execution")
        );
        assert_eq!(
            refusal(Verb::Release, &done).as_deref(),
            Some("Job has already finished")
        );
        assert!(
            refusal(Verb::Requeue, &done)
                .unwrap()
                .contains("submit it again")
        );
        assert_eq!(refusal(Verb::Hold, &pending), None);
    }
}
