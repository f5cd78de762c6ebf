//! printjob: a job as the server keeps it, for an administrator (PBS).
//! PBS's printjob reads the job's file on the server's host; qmesh's asks
//! the daemon, so it works from any host a client can reach it from. It
//! prints the job's id and state with PBS's state number, then its
//! attributes (as `qstat -f` names them) and its script. A user may print
//! their own jobs; operators and managers any job.

use std::process::ExitCode;

use chrono::Local;
use clap::Parser;
use qmesh_proto::{JobInfo, StatusRequest};

use crate::client::{self, CliError};
use crate::output::{self, Output, Tree};
use crate::qstat::job_attrs;

/// Print a job's stored record: its state, attributes and script.
///
/// Jobs are named by id (17 or 17.server); finished jobs still in the
/// history are found too. `-a` leaves the script out, `-s` prints the
/// script alone.
#[derive(Parser, Debug)]
#[command(name = "printjob", version)]
pub struct Args {
    /// The attributes only, no script.
    #[arg(short = 'a', conflicts_with = "script_only")]
    pub attributes_only: bool,
    /// The script only.
    #[arg(short = 's')]
    pub script_only: bool,
    /// Print the jobs as JSON.
    #[arg(long)]
    pub json: bool,
    /// The jobs (17 or 17.server).
    #[arg(value_name = "ID", required = true)]
    pub ids: Vec<String>,
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    let reply = client::block_on(async {
        let mut jobs = client::jobs().await?;
        let request = StatusRequest {
            job_ids: args.ids.clone(),
            include_finished: true,
            with_script: !args.attributes_only,
            ..StatusRequest::default()
        };
        Ok(jobs.status(request).await?.into_inner())
    });
    let reply = match reply {
        Ok(r) => r,
        Err(e) => return client::fail("printjob", &e),
    };
    let printed = Printed {
        jobs: &reply.jobs,
        server: &reply.server,
        now: reply.server_time,
        form: if args.script_only {
            Form::Script
        } else if args.attributes_only {
            Form::Attributes
        } else {
            Form::Whole
        },
    };
    match output::emit(&printed, args.json) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => client::fail("printjob", &CliError::msg(e.to_string())),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    Whole,
    Attributes,
    Script,
}

struct Printed<'a> {
    jobs: &'a [JobInfo],
    server: &'a str,
    now: i64,
    form: Form,
}

/// PBS's number for a state (its `JOB_STATE_*`), as printjob shows it.
fn pbs_state_number(letter: &str) -> u32 {
    match letter {
        "T" => 0,
        "Q" => 1,
        "H" => 2,
        "W" => 3,
        "R" => 4,
        "E" => 5,
        "B" => 7,
        _ => 9,
    }
}

const RULE: &str = "---------------------------------------------------";

impl Output for Printed<'_> {
    fn text(&self) -> String {
        let mut out = String::new();
        for job in self.jobs {
            if self.form == Form::Script {
                out.push_str(&String::from_utf8_lossy(&job.script));
                continue;
            }
            let state = pbs_state_number(&job.state_letter);
            out.push_str(&format!(
                "{RULE}\njobid:\t\t{}\n{RULE}\nstate:\t\t0x{state:x} ({})\nqueue:\t\t{}\nowner:\t\t{}\n",
                job.id, job.state_letter, job.queue, job.owner
            ));
            out.push_str("\n--attributes--\n");
            for (name, value) in job_attrs(job, self.server, self.now, &Local).iter() {
                out.push_str(&format!("{name} = {value}\n"));
            }
            if self.form == Form::Whole {
                out.push_str("\n--script--\n");
                out.push_str(&String::from_utf8_lossy(&job.script));
                if !job.script.ends_with(b"\n") {
                    out.push('\n');
                }
            }
            out.push('\n');
        }
        out
    }

    fn json(&self) -> Tree {
        let jobs = self
            .jobs
            .iter()
            .map(|job| {
                let mut entry = Vec::new();
                if self.form != Form::Script {
                    entry.push((
                        "state".to_string(),
                        Tree::int(pbs_state_number(&job.state_letter).into()),
                    ));
                    let attrs = job_attrs(job, self.server, self.now, &Local);
                    entry.push((
                        "attributes".to_string(),
                        Tree::Map(
                            attrs
                                .iter()
                                .map(|(n, v)| (n.to_string(), Tree::Leaf(v.clone())))
                                .collect(),
                        ),
                    ));
                }
                if self.form != Form::Attributes {
                    entry.push((
                        "script".to_string(),
                        Tree::text(String::from_utf8_lossy(&job.script)),
                    ));
                }
                (job.id.clone(), Tree::Map(entry))
            })
            .collect();
        output::document(self.now, self.server, "Jobs", jobs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> JobInfo {
        JobInfo {
            id: "17.srv".into(),
            name: "job.sh".into(),
            owner: "alice@login".into(),
            queue: "batch".into(),
            state_letter: "R".into(),
            script: b"#!/bin/sh\necho hi\n".to_vec(),
            ..JobInfo::default()
        }
    }

    #[test]
    fn the_header_attributes_and_script_in_pbs_order() {
        let jobs = [job()];
        let p = |form| Printed {
            jobs: &jobs,
            server: "srv",
            now: 0,
            form,
        };
        let text = p(Form::Whole).text();
        assert!(
            text.starts_with(&format!(
                "{RULE}\njobid:\t\t17.srv\n{RULE}\nstate:\t\t0x4 (R)\n"
            )),
            "{text}"
        );
        let attrs = text
            .find("--attributes--\nJob_Name = job.sh\n")
            .expect("attributes");
        let script = text
            .find("--script--\n#!/bin/sh\necho hi\n")
            .expect("script");
        assert!(attrs < script, "{text}");
        assert!(!p(Form::Attributes).text().contains("--script--"));
        assert_eq!(p(Form::Script).text(), "#!/bin/sh\necho hi\n");
    }

    #[test]
    fn a_and_s_exclude_each_other() {
        assert!(Args::try_parse_from(["printjob", "-a", "-s", "17"]).is_err());
        assert!(Args::try_parse_from(["printjob"]).is_err());
        let a = Args::try_parse_from(["printjob", "-s", "17", "18.srv"]).unwrap();
        assert!(a.script_only && !a.attributes_only);
    }
}
