//! qalter: change the attributes of jobs (PBS Pro's options; Torque's are
//! a subset). The options are read here as qsub reads them; the daemon
//! checks and applies them, all of a job's changes or none.

use std::process::ExitCode;

use chrono::Local;
use clap::Parser;
use qmesh_proto::{AlterRequest, Resource};

use crate::action;
use crate::client::{self, CliError};
use crate::qsub::start::parse_start_after;
use crate::qsub::{without_host, workdir};

/// Change the attributes of jobs.
///
/// Each option given changes that attribute of every job named; a job
/// takes all the changes or none. A queued job may change anything here,
/// resources included (checked against its queue as at qsub); a running
/// job keeps its resources and account, and its paths, shell and the like
/// take effect if it runs again. A user alters their own jobs; operators
/// and managers any, and only they raise run_count or set an o hold.
/// Prints nothing when every job was altered; otherwise one line per job
/// that was not, and exits 1.
#[derive(Parser, Debug, Default)]
#[command(name = "qalter", version, disable_help_flag = true)]
pub struct Args {
    /// Print help.
    #[arg(long = "help", action = clap::ArgAction::Help)]
    pub help: Option<bool>,
    /// Not before [[[[CC]YY]MM]DD]hhmm[.SS] (local time).
    #[arg(short = 'a', value_name = "DATETIME")]
    pub start_after: Option<String>,
    /// The account to charge.
    #[arg(short = 'A', value_name = "ACCOUNT")]
    pub account: Option<String>,
    /// Checkpoint: n, s, c, c=MINUTES, w, w=MINUTES or u (recorded; qmesh
    /// does not checkpoint).
    #[arg(short = 'c', value_name = "INTERVAL")]
    pub checkpoint: Option<String>,
    /// The standard error file ([host:]path; relative to this directory).
    #[arg(short = 'e', value_name = "PATH")]
    pub stderr: Option<String>,
    /// Holds: u (user), o (operator), s (system), or n to release those
    /// one may.
    #[arg(short = 'h', value_name = "HOLD_LIST")]
    pub holds: Option<String>,
    /// Join the output streams: oe, eo or n.
    #[arg(short = 'j', value_name = "JOIN")]
    pub join: Option<String>,
    /// Keep_Files: o, e, oe, eo, d or n.
    #[arg(short = 'k', value_name = "KEEP")]
    pub keep: Option<String>,
    /// Resources, as qsub takes them: walltime=2:00:00, select=2:ncpus=4,
    /// nodes=2:ppn=8, place=scatter...
    #[arg(short = 'l', value_name = "RESOURCE_LIST")]
    pub resources: Vec<String>,
    /// Mail_Points: n, or some of a b e.
    #[arg(short = 'm', value_name = "MAIL_EVENTS")]
    pub mail_points: Option<String>,
    /// Mail_Users: user[@host][,...].
    #[arg(short = 'M', value_name = "USER_LIST")]
    pub mail_users: Option<String>,
    /// The job's name.
    #[arg(short = 'N', value_name = "NAME")]
    pub name: Option<String>,
    /// The standard output file ([host:]path; relative to this directory).
    #[arg(short = 'o', value_name = "PATH")]
    pub stdout: Option<String>,
    /// Priority, -1024 to 1023.
    #[arg(short = 'p', value_name = "PRIORITY", allow_hyphen_values = true)]
    pub priority: Option<i32>,
    /// The project.
    #[arg(short = 'P', value_name = "PROJECT")]
    pub project: Option<String>,
    /// Rerunnable: y or n.
    #[arg(short = 'r', value_name = "y|n")]
    pub rerunnable: Option<String>,
    /// Remove_Files (PBS Pro): refused, qmesh keeps the output files.
    #[arg(short = 'R', value_name = "REMOVE")]
    pub remove: Option<String>,
    /// The shell or interpreter: path[@host][,...].
    #[arg(short = 'S', value_name = "PATH_LIST")]
    pub shell: Option<String>,
    /// User_List: refused (a job runs as its owner).
    #[arg(short = 'u', value_name = "USER_LIST")]
    pub users: Option<String>,
    /// Further attributes: umask=NNN, run_count=N.
    #[arg(short = 'W', value_name = "ATTR=VALUE")]
    pub attributes: Vec<String>,
    /// Print the result for each job as JSON.
    #[arg(long)]
    pub json: bool,
    /// Jobs to alter (17 or 17.server).
    #[arg(value_name = "ID", required = true)]
    pub ids: Vec<String>,
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    let request = match request_of(&args) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("qalter: {e}");
            return ExitCode::from(2);
        }
    };
    let reply = client::block_on(async {
        let mut jobs = client::jobs().await?;
        Ok::<_, CliError>(jobs.alter(request).await?.into_inner())
    });
    action::report("qalter", reply, args.json)
}

/// The request the options describe, checked as far as the command can.
pub fn request_of(args: &Args) -> Result<AlterRequest, String> {
    if args.users.is_some() {
        return Err(
            "-u: a job runs as its owner in qmesh; qdel it and qsub it as the other user".into(),
        );
    }
    if args.remove.is_some() {
        return Err("-R: qmesh keeps a job's output files; remove them after it ends".into());
    }
    let mut request = AlterRequest {
        job_ids: args.ids.clone(),
        account: args.account.clone(),
        checkpoint: args.checkpoint.clone(),
        hold_list: args.holds.clone(),
        join: args.join.clone(),
        keep_files: args.keep.clone(),
        mail_points: args.mail_points.clone(),
        mail_users: args.mail_users.clone(),
        name: args.name.clone(),
        priority: args.priority,
        project: args.project.clone(),
        shell: args.shell.clone(),
        stdout_path: args.stdout.as_deref().map(without_host),
        stderr_path: args.stderr.as_deref().map(without_host),
        ..AlterRequest::default()
    };
    if request.stdout_path.is_some() || request.stderr_path.is_some() {
        request.workdir = workdir().map_err(|e| e.to_string())?;
    }
    if let Some(text) = &args.start_after {
        request.start_after = Some(parse_start_after(text, Local::now())?.timestamp());
    }
    if let Some(text) = &args.rerunnable {
        request.rerunnable = Some(match text.trim() {
            "y" | "Y" => true,
            "n" | "N" => false,
            other => return Err(format!("-r {other}: write y or n")),
        });
    }
    for list in &args.resources {
        request.resources.extend(parse_resources(list)?);
    }
    for value in args.attributes.iter().flat_map(|v| v.split(',')) {
        let (name, val) = value.split_once('=').unwrap_or((value, ""));
        match name.trim() {
            "umask" => request.umask = Some(val.trim().to_string()),
            "run_count" => {
                request.run_count = Some(val.trim().parse().map_err(|_| {
                    format!("-W {value}: run_count is a whole number, e.g. -W run_count=0")
                })?)
            }
            other @ ("depend" | "group_list" | "stagein" | "stageout" | "sandbox") => {
                return Err(format!(
                    "-W {other}: qalter does not change {other} in qmesh; qdel the job and qsub it again with -W {other}="
                ));
            }
            _ => {
                return Err(format!(
                    "-W {value}: qalter takes -W umask=NNN and -W run_count=N"
                ));
            }
        }
    }
    Ok(request)
}

/// `-l name=value[,name=value...]`; a comma inside a select's chunks does
/// not occur, so the list splits on commas.
fn parse_resources(list: &str) -> Result<Vec<Resource>, String> {
    let mut out = Vec::new();
    for item in list.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let Some((name, value)) = item.split_once('=') else {
            return Err(format!(
                "bad resource \"{item}\" in -l {list}: write NAME=VALUE, e.g. -l walltime=2:00:00"
            ));
        };
        if name.trim().is_empty() {
            return Err(format!(
                "bad resource \"{item}\" in -l {list}: the name is missing"
            ));
        }
        if name.trim() == "walltime" {
            qmesh_core::time::parse_duration(value).map_err(|e| e.to_string())?;
        }
        out.push(Resource {
            name: name.trim().to_string(),
            value: value.trim().to_string(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(argv: &[&str]) -> Result<AlterRequest, String> {
        let mut full = vec!["qalter"];
        full.extend_from_slice(argv);
        request_of(&Args::try_parse_from(full).unwrap())
    }

    #[test]
    fn options_become_the_fields_to_change() {
        let r = request(&[
            "-l",
            "walltime=2:00:00,select=2:ncpus=4",
            "-N",
            "renamed",
            "-p",
            "-5",
            "-h",
            "u",
            "-r",
            "n",
            "-W",
            "run_count=0,umask=022",
            "17",
        ])
        .unwrap();
        assert_eq!(r.resources.len(), 2);
        assert_eq!(r.resources[1].value, "2:ncpus=4");
        assert_eq!(r.name.as_deref(), Some("renamed"));
        assert_eq!(r.priority, Some(-5));
        assert_eq!(r.hold_list.as_deref(), Some("u"));
        assert_eq!(r.rerunnable, Some(false));
        assert_eq!((r.run_count, r.umask.as_deref()), (Some(0), Some("022")));
        assert_eq!(r.account, None, "what is not given is left alone");
        assert_eq!(r.workdir, "", "no path, no directory needed");
        let r = request(&["-o", "login1:/scratch/out", "17"]).unwrap();
        assert_eq!(r.stdout_path.as_deref(), Some("/scratch/out"));
        assert!(r.workdir.starts_with('/'));
    }

    #[test]
    fn what_qmesh_does_not_change_is_refused_with_what_to_do() {
        let err = request(&["-W", "depend=afterok:3", "17"]).unwrap_err();
        assert!(err.contains("qdel the job and qsub it again"), "{err}");
        assert!(request(&["-u", "bob", "17"]).is_err());
        assert!(request(&["-l", "walltime=soon", "17"]).is_err());
        assert!(request(&["-r", "maybe", "17"]).is_err());
        assert!(request(&["-W", "colour=red", "17"]).is_err());
    }
}
