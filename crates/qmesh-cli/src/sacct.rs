//! sacct: the jobs of a time window as Slurm's accounting shows them, for
//! every job of the server whichever command submitted it. The daemon
//! answers from its accounting log and the jobs it holds (`Accounting`,
//! one entry per job); this side reads the options, turns the entries
//! into Slurm's lines (each job, and its `.batch` step once it started),
//! states and exit codes (`sacct/state.rs`), fields (`sacct/fields.rs`)
//! and prints them as Slurm 22.05 does: the table with its `---` line, or
//! `-p`/`-P` (`|`-separated), or `--json`.
//!
//! Tools run it as they would at a Slurm site: submitit
//! `sacct -o JobID,State,NodeList --parsable2 -j ID[,ID...]`, Snakemake
//! `sacct -X --parsable2 --noheader --format=JobIdRaw,State --starttime
//! T --endtime now --name NAME`, Parsl `sacct -X --noheader
//! --format=jobid,state --job 'ID,ID'`.

mod fields;
mod json;
mod state;
mod table;
mod window;

use std::process::ExitCode;

use clap::Parser;
use qmesh_proto::v1::{AccountedJob, AccountingRequest};

use crate::client::{self, CliError};
use fields::Line;
use table::{grouped, header, helpformat, row};

/// Display accounting data of jobs (Slurm's sacct, to qmesh).
#[derive(Parser, Debug, Default)]
#[command(
    name = "sacct",
    disable_help_flag = true,
    disable_version_flag = true,
    infer_long_args = true
)]
pub struct Args {
    /// Only these jobs: 12, 13_4 (an array's task), 13 (every task of
    /// array 13), 12.batch (the step alone); a comma list.
    #[arg(short = 'j', long = "jobs", value_name = "IDS")]
    pub jobs: Vec<String>,
    /// Fields to print, comma list, any case, with widths: JobName%30.
    #[arg(short = 'o', long = "format", value_name = "FIELDS")]
    pub format: Option<String>,
    /// JobID, State and ExitCode.
    #[arg(short = 'b', long = "brief")]
    pub brief: bool,
    /// Jobs pending, running or ended from this time on (default: 00:00
    /// today; with -j, always).
    #[arg(short = 'S', long = "starttime", value_name = "TIME")]
    pub start: Option<String>,
    /// ... up to this time (default: now).
    #[arg(short = 'E', long = "endtime", value_name = "TIME")]
    pub end: Option<String>,
    /// Only these users' jobs (names or uids, comma list).
    #[arg(short = 'u', long = "user", alias = "uid", value_name = "USERS")]
    pub users: Option<String>,
    /// Every user's jobs.
    #[arg(short = 'a', long = "allusers")]
    pub all_users: bool,
    /// Only the jobs' own lines, no steps.
    #[arg(short = 'X', long = "allocations")]
    pub allocations: bool,
    /// No header.
    #[arg(short = 'n', long = "noheader")]
    pub noheader: bool,
    /// Fields separated by |, one after the last too.
    #[arg(short = 'p', long = "parsable")]
    pub parsable: bool,
    /// Fields separated by |.
    #[arg(short = 'P', long = "parsable2")]
    pub parsable2: bool,
    /// The separator of -p and -P.
    #[arg(long = "delimiter", value_name = "TEXT")]
    pub delimiter: Option<String>,
    /// Only jobs in these states (CD, F, CA, TO, PD, R... or their names).
    #[arg(short = 's', long = "state", value_name = "STATES")]
    pub states: Option<String>,
    /// Only jobs of these names (comma list).
    #[arg(long = "name", value_name = "NAMES")]
    pub names: Option<String>,
    /// Only jobs of these partitions (queues).
    #[arg(short = 'r', long = "partition", value_name = "PARTITIONS")]
    pub partitions: Option<String>,
    /// Each earlier run of a job queued again too, as REQUEUED.
    #[arg(short = 'D', long = "duplicates")]
    pub duplicates: bool,
    /// Slurm's JSON.
    #[arg(long = "json")]
    pub json: bool,
    /// Accepted: qmesh's server is the one cluster (Snakemake asks
    /// `--clusters all`).
    #[arg(short = 'M', long = "clusters", value_name = "CLUSTERS")]
    pub clusters: Option<String>,
    /// Accepted, as -M.
    #[arg(short = 'L', long = "allclusters")]
    pub all_clusters: bool,
    /// The fields -o knows.
    #[arg(short = 'e', long = "helpformat")]
    pub helpformat: bool,
    #[arg(short = 'h', long = "help", action = clap::ArgAction::Help)]
    pub help: Option<bool>,
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    match run(&args) {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("sacct: error: {err}");
            ExitCode::from(1)
        }
    }
}

fn list(text: Option<&str>) -> Vec<String> {
    text.map(|t| {
        t.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    })
    .unwrap_or_default()
}

/// A job named with `-j`, as the daemon reads it, and whether only its
/// batch step was asked for.
fn named(text: &str) -> Result<(String, bool), String> {
    let (id, step) = match text.split_once('.') {
        Some((id, "batch")) => (id, true),
        Some((_, other)) => {
            return Err(format!(
                "Invalid job id \"{text}\": qmesh's jobs have one step, .batch (not .{other})"
            ));
        }
        None => (text, false),
    };
    let ok = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let wire = match id.split_once('_') {
        Some((job, task)) if ok(job) && ok(task) => format!("{job}[{task}]"),
        None if ok(id) => id.to_string(),
        _ => {
            return Err(format!(
                "Invalid job id \"{text}\"; write a job's number (12), an array's task \
                 (12_3) or a step (12.batch)"
            ));
        }
    };
    Ok((wire, step))
}

fn run(args: &Args) -> Result<String, CliError> {
    if args.helpformat {
        return Ok(helpformat());
    }
    let format = args.format.clone().unwrap_or_else(|| {
        if args.brief {
            fields::BRIEF
        } else {
            fields::DEFAULT
        }
        .to_string()
    });
    let columns = fields::parse_format(&format).map_err(CliError::Msg)?;
    let ids: Vec<(String, bool)> = args
        .jobs
        .iter()
        .flat_map(|j| list(Some(j)))
        .map(|t| named(&t))
        .collect::<Result<_, _>>()
        .map_err(CliError::Msg)?;
    let states = match &args.states {
        Some(s) => Some(state::wanted(s).map_err(CliError::Msg)?),
        None => None,
    };
    let now = chrono::Local::now();
    let (start, end) = window::window(
        args.start.as_deref(),
        args.end.as_deref(),
        (!ids.is_empty(), states.is_some()),
        now,
    )
    .map_err(CliError::Msg)?;
    let users = list(args.users.as_deref())
        .into_iter()
        .map(|u| user_name(&u))
        .collect();
    let request = AccountingRequest {
        start,
        end,
        job_ids: ids.iter().map(|(id, _)| id.clone()).collect(),
        users,
        all_users: args.all_users,
    };
    let reply = client::block_on(async {
        let mut jobs = client::jobs().await?;
        Ok(jobs.accounting(request).await?.into_inner())
    })?;
    let names = list(args.names.as_deref());
    let partitions = list(args.partitions.as_deref());
    let jobs: Vec<&AccountedJob> = reply
        .jobs
        .iter()
        .filter(|j| names.is_empty() || names.contains(&j.name))
        .filter(|j| partitions.is_empty() || partitions.contains(&j.queue))
        .collect();
    let steps_only = !ids.is_empty() && ids.iter().all(|(_, step)| *step);
    // -D: each earlier run as a job of its own, shown before the job.
    let shows_requeued = states.as_ref().is_none_or(|s| s.contains(&"REQUEUED"));
    let earlier: Vec<(String, AccountedJob)> = if args.duplicates && shows_requeued {
        jobs.iter()
            .flat_map(|job| state::earlier_runs(job))
            .collect()
    } else {
        Vec::new()
    };
    let mut lines = Vec::new();
    for (job, id) in grouped(&jobs) {
        for (_, run) in earlier.iter().filter(|(of, _)| *of == job.id) {
            let (shown, step) = state::requeued(run);
            lines.push((
                Line {
                    job: run,
                    step: false,
                    raw_id: id.clone(),
                    id: id.clone(),
                    shown,
                    now: reply.server_time,
                    cluster: &reply.server,
                    uid: run.uid.or_else(|| uid_of(&run.user)),
                    gid: run.gid.or_else(|| gid_of(&run.group)),
                },
                None,
            ));
            let line = lines.last().map(|(l, _)| l.clone());
            if let (Some(line), false) = (line, args.allocations) {
                let last = lines.len() - 1;
                lines[last].1 = Some(Line {
                    step: true,
                    id: format!("{id}.batch"),
                    raw_id: format!("{id}.batch"),
                    shown: step,
                    ..line
                });
            }
        }
        let (shown, step) = state::shown(job, &uid_of);
        if states.as_ref().is_some_and(|s| !s.contains(&shown.state)) {
            continue;
        }
        let owner = |known: Option<u32>, by_name: fn(&str) -> Option<u32>, name: &str| {
            known.or_else(|| by_name(name))
        };
        let line = Line {
            job,
            step: false,
            raw_id: id.clone(),
            id,
            shown,
            now: reply.server_time,
            cluster: &reply.server,
            uid: owner(job.uid, uid_of, &job.user),
            gid: owner(job.gid, gid_of, &job.group),
        };
        let step = step.filter(|_| !args.allocations).map(|shown| Line {
            step: true,
            id: format!("{}.batch", line.id),
            raw_id: format!("{}.batch", line.raw_id),
            shown,
            ..line.clone()
        });
        lines.push((line, step));
    }
    if args.json {
        let doc = json::document(&lines);
        let text = serde_json::to_string_pretty(&doc)
            .map_err(|e| CliError::msg(format!("cannot write the JSON: {e}")))?;
        return Ok(text + "\n");
    }
    let separator = match (args.parsable, args.parsable2) {
        (false, false) => None,
        (trailing, _) => Some((
            args.delimiter.clone().unwrap_or_else(|| "|".into()),
            trailing,
        )),
    };
    let mut out = String::new();
    if !args.noheader {
        out.push_str(&header(&columns, separator.as_ref()));
    }
    for (line, step) in &lines {
        if !steps_only {
            out.push_str(&row(&columns, separator.as_ref(), line));
        }
        if let Some(step) = step {
            out.push_str(&row(&columns, separator.as_ref(), step));
        }
    }
    Ok(out)
}

fn uid_of(name: &str) -> Option<u32> {
    nix::unistd::User::from_name(name)
        .ok()
        .flatten()
        .map(|u| u.uid.as_raw())
}

fn gid_of(name: &str) -> Option<u32> {
    nix::unistd::Group::from_name(name)
        .ok()
        .flatten()
        .map(|g| g.gid.as_raw())
}

/// `-u 0` is root: a uid given is sent as its user's name.
fn user_name(text: &str) -> String {
    text.parse::<u32>()
        .ok()
        .and_then(|uid| {
            nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
                .ok()
                .flatten()
        })
        .map_or_else(|| text.to_string(), |u| u.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: &str, state: &str, start: i64) -> AccountedJob {
        let short = id.split('.').next().unwrap_or_default();
        let (array_job, index) = match short.split_once('[') {
            Some((n, r)) => (n.parse().unwrap(), r.trim_end_matches(']').parse().ok()),
            None => (0, None),
        };
        AccountedJob {
            id: id.into(),
            name: "ok".into(),
            user: "root".into(),
            queue: "debug".into(),
            state: state.into(),
            start,
            end: if state == "F" { start + 1 } else { 0 },
            exit_status: (state == "F").then_some(0),
            exit_cause: if state == "F" {
                "exited".into()
            } else {
                String::new()
            },
            ncpus: 1,
            nodes: 1,
            exec_nodes: if start > 0 {
                vec!["n1".into()]
            } else {
                Vec::new()
            },
            array_job,
            array_index: index,
            ..AccountedJob::default()
        }
    }

    #[test]
    fn ids_as_slurm_writes_them() {
        assert_eq!(named("12").unwrap(), ("12".into(), false));
        assert_eq!(named("13_4").unwrap(), ("13[4]".into(), false));
        assert_eq!(named("12.batch").unwrap(), ("12".into(), true));
        assert!(named("12.extern").unwrap_err().contains("one step, .batch"));
        assert!(
            named("x")
                .unwrap_err()
                .contains("write a job's number (12)")
        );
        let jobs = [
            job("7.s", "F", 10),
            job("9[3].s", "Q", 0),
            job("9[1].s", "F", 10),
            job("9[4].s", "Q", 0),
            job("9[6].s", "Q", 0),
        ];
        let refs: Vec<&AccountedJob> = jobs.iter().collect();
        let ids: Vec<String> = grouped(&refs).into_iter().map(|(_, id)| id).collect();
        assert_eq!(ids, ["7", "9_1", "9_[3-4,6]"]);
    }

    /// The default table of a completed job and one that ran `exit 3`,
    /// as `tests/slurm/fixtures/sacct.txt` has it.
    #[test]
    fn the_default_table_is_slurms() {
        let columns = fields::parse_format(fields::DEFAULT).unwrap();
        let mut failed = job("3.s", "F", 10);
        failed.name = "oracle-fail".into();
        failed.exit_status = Some(3);
        let (shown, step) = state::shown(&failed, &uid_of);
        let line = Line {
            job: &failed,
            step: false,
            id: "3".into(),
            raw_id: "3".into(),
            shown,
            now: 20,
            cluster: "oracle",
            uid: Some(0),
            gid: Some(0),
        };
        let step = Line {
            step: true,
            id: "3.batch".into(),
            raw_id: "3.batch".into(),
            shown: step.unwrap(),
            ..line.clone()
        };
        let text =
            header(&columns, None) + &row(&columns, None, &line) + &row(&columns, None, &step);
        assert_eq!(
            text,
            "JobID           JobName  Partition    Account  AllocCPUS      State ExitCode \n\
             ------------ ---------- ---------- ---------- ---------- ---------- -------- \n\
             3            oracle-fa+      debug       root          1     FAILED      3:0 \n\
             3.batch           batch                  root          1     FAILED      3:0 \n"
        );
        let sep = ("|".to_string(), false);
        assert_eq!(
            row(&columns, Some(&sep), &step),
            "3.batch|batch||root|1|FAILED|3:0\n"
        );
        let sep = ("|".to_string(), true);
        assert_eq!(
            header(&columns, Some(&sep)),
            "JobID|JobName|Partition|Account|AllocCPUS|State|ExitCode|\n"
        );
    }
}
