//! qstat: what the jobs, the queues and the server are doing, printed as
//! PBS Pro prints it (Torque's forms accepted too), because people and
//! tools read it: Parsl's Torque provider takes the state from the fifth
//! column of the default table, its PBS Pro provider reads
//! `qstat -x -f -F json`, scripts grep `qstat -f` and `qstat -u`.
//!
//! This file is the command line and the order of work: the options
//! become a [`options::Plan`] (what to ask, which form), [`fetch`] asks the
//! daemon, and one module per form prints: [`job_table`] (the default),
//! [`alternate`] (`-a` and its kin), [`nodes_view`] (qmesh's own table),
//! [`jobs`] (`-f` and JSON), [`queues`] (`-Q`), [`queue_alternate`]
//! (`-q`), [`server`] (`-B`), with [`full_text`] for `-f`'s text forms.
//!
//! Jobs and queues that cannot be listed are named on stderr in PBS's
//! words after what exists is printed, and the exit status is PBS's for
//! the last of them: 153 for an unknown job, 35 for a finished one asked
//! for without `-x`, 170 for an unknown queue, 1 otherwise; 2 for options
//! that do not go together.

mod alternate;
mod fetch;
mod full_text;
mod job_table;
mod jobs;
mod nodes_view;
mod options;
mod queue_alternate;
mod queues;
mod server;
mod sizes;
#[cfg(test)]
mod test_jobs;

use std::io::Write;
use std::process::ExitCode;

use chrono::Local;
use clap::Parser;

use crate::client::{self, CliError};
use options::{JobForm, Plan, QueueForm, ServerForm};

pub use jobs::{job_attrs, pbs_date_in};
pub use queues::queue_attrs;

/// Show the status of jobs, queues and the server, as PBS's qstat does.
///
/// Without options, PBS's job table (Job id, Name, User, Time Use, S,
/// Queue) of the jobs that have not finished. Operands are job ids (17 or
/// 17.server) or destinations (QUEUE, @SERVER, QUEUE@SERVER: the jobs in
/// that queue); with -Q or -q, queues; with -B, the server.
///
/// Exit status: 0, or PBS's for the last job or queue that could not be
/// shown: 153 unknown job, 35 finished job without -x, 170 unknown queue;
/// 1 for other failures, 2 for options that do not go together.
#[derive(Parser, Debug, Default)]
#[command(name = "qstat", version, verbatim_doc_comment)]
pub struct Args {
    /// Full display: every attribute of each job (or queue with -Q, the server with -B),
    /// long values folded at column 78 as PBS does (not with -w or -1).
    #[arg(short = 'f')]
    pub full: bool,
    /// Alternate job table: Username, Queue, Jobname, SessID, NDS, TSK, Memory,
    /// requested Time, S, elapsed Time.
    #[arg(short = 'a')]
    pub alternate: bool,
    /// Alternate table, with each job's nodes under it.
    #[arg(short = 'n')]
    pub nodes: bool,
    /// With -n: the nodes on the job's line; with -s: the comment too; with -f
    /// (Torque): attributes not folded.
    #[arg(short = '1')]
    pub one_line: bool,
    /// Alternate table, with each job's comment (why it waits, how it ended) under it.
    #[arg(short = 's')]
    pub comments: bool,
    /// Wide: wider columns that cut less; with -f, attributes not folded.
    #[arg(short = 'w')]
    pub wide: bool,
    /// Alternate table with the estimated start time of queued jobs (from the
    /// scheduler's plan, as spwhen gives it) instead of the elapsed time.
    #[arg(short = 'T')]
    pub estimated: bool,
    /// Default table with the percentage of its wall time each job has used
    /// instead of Time Use.
    #[arg(short = 'p')]
    pub percent: bool,
    /// Memory in gigabytes (alternate table).
    #[arg(short = 'G')]
    pub gigabytes: bool,
    /// Memory in megawords of 8 bytes (alternate table).
    #[arg(short = 'M')]
    pub megawords: bool,
    /// Torque: job names in full in the default table.
    #[arg(short = 'l')]
    pub long_names: bool,
    /// Only the jobs of these users (USER[@HOST][,USER...]); alternate table,
    /// unless with -f.
    #[arg(short = 'u', value_name = "USERS")]
    pub users: Vec<String>,
    /// Only jobs not running (queued, held, waiting, exiting); alternate table.
    #[arg(short = 'i')]
    pub idle: bool,
    /// Only running jobs; alternate table.
    #[arg(short = 'r')]
    pub running: bool,
    /// Finished jobs too, while the history keeps them (PBS Pro; Torque's XML
    /// output is not available: use -F json).
    #[arg(short = 'x')]
    pub history: bool,
    /// Only finished jobs; alternate table.
    #[arg(short = 'H')]
    pub history_only: bool,
    /// Each job array's sub-jobs after it (those left to start too).
    #[arg(short = 't')]
    pub subjobs: bool,
    /// Only job arrays (with -t, their sub-jobs too).
    #[arg(short = 'J')]
    pub arrays_only: bool,
    /// Torque: only jobs in execution queues (not in routing queues).
    #[arg(short = 'e')]
    pub execution_only: bool,
    /// Torque: completed jobs are not shown; they never are without -x.
    #[arg(short = 'c')]
    pub no_completed: bool,
    /// Named job ids in order of their numbers.
    #[arg(short = 'E')]
    pub sort_ids: bool,
    /// The server's status; operands name the server.
    #[arg(short = 'B')]
    pub server: bool,
    /// Queues; operands are queue names.
    #[arg(short = 'Q')]
    pub queues: bool,
    /// Queues in PBS's other listing: limits, running and waiting jobs, totals.
    #[arg(short = 'q')]
    pub queue_alternate: bool,
    /// Output format: json (PBS's JSON document, as -f), dsv (one line per
    /// object, attributes separated by -D), or default.
    #[arg(short = 'F', value_name = "FORMAT")]
    pub format: Option<String>,
    /// The delimiter of -F dsv (default |).
    #[arg(short = 'D', value_name = "DELIMITER")]
    pub delimiter: Option<String>,
    /// PBS's site options as letters: a i r H n s q G M 1, and u USERS (last).
    #[arg(short = 'W', value_name = "LETTERS")]
    pub site: Vec<String>,
    /// Torque's disk reservation columns; refused, qmesh reserves no disk.
    #[arg(short = 'R', hide = true)]
    pub disk_reservation: bool,
    /// PBS's JSON document (as qstat -f -F json).
    #[arg(long)]
    pub json: bool,
    /// qmesh's own table: Nodes, Walltime asked for, S and Elapsed, as wide as
    /// its cells (with -n, each job's nodes under it).
    #[arg(long)]
    pub nodes_view: bool,
    /// Job ids or destinations; queue names with -Q and -q; the server with -B.
    #[arg(value_name = "ID")]
    pub operands: Vec<String>,
}

/// Synopsis printed after a usage error, as PBS does.
const USAGE: &str = "usage:
qstat [-f [-w|-1]] [-J] [-p] [-t] [-x] [-E] [-F json|dsv [-D delim]] [job_identifier... | destination...]
qstat [-a|-i|-r|-H|-T] [-J] [-t] [-u user] [-n] [-s] [-G|-M] [-1] [-w] [job_identifier... | destination...]
qstat --nodes-view [-n] [-x|-H|-i|-r] [-u user] [job_identifier... | destination...]
qstat -Q [-f] [-F json|dsv [-D delim]] [destination...]
qstat -q [-G|-M] [destination...]
qstat -B [-f] [-F json|dsv [-D delim]] [server_name...]
qstat --version";

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    let plan = match options::plan(&args) {
        Ok(plan) => plan,
        Err(err) => {
            eprintln!("qstat: {err}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match client::block_on(run(plan)) {
        Ok(code) => ExitCode::from(code),
        Err(err) => client::fail("qstat", &err),
    }
}

/// Prints what the plan asks for; the exit status is that of the last
/// refusal (already on stderr), 0 when there was none.
async fn run(plan: Plan) -> Result<u8, CliError> {
    let mut jobs_client = client::jobs().await?;
    let (text, refusals) = match &plan {
        Plan::Jobs(query, form) => {
            let found = fetch::jobs(&mut jobs_client, query).await?;
            (render_jobs(form, &found)?, found.refusals)
        }
        Plan::Queues(names, form) => {
            let found = fetch::queues(&mut jobs_client, names).await?;
            let (queues, server) = (&found.queues, found.server.as_str());
            let text = match form {
                QueueForm::Json => json(&queues::queues_document(queues, server, found.time))?,
                QueueForm::Full(style) => queues::queues_full(queues, style),
                QueueForm::Table => queues::queue_table(queues),
                QueueForm::Alternate => queue_alternate::queue_alternate(queues, server),
            };
            (text, found.refusals)
        }
        Plan::Server(names, form) => {
            let (status, refusals) = fetch::server(&mut jobs_client, names).await?;
            let text = match (form, &status) {
                (_, None) => String::new(),
                (ServerForm::Json, Some(s)) => json(&server::server_document(s))?,
                (ServerForm::Full(style), Some(s)) => server::server_full(s, style),
                (ServerForm::Table, Some(s)) => server::server_table(s),
            };
            (text, refusals)
        }
    };
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(|e| CliError::msg(format!("cannot write the listing: {e}")))?;
    for refusal in &refusals {
        eprintln!("qstat: {}", refusal.message);
    }
    Ok(refusals.last().map_or(0, |r| r.exit_status))
}

fn render_jobs(form: &JobForm, found: &fetch::FoundJobs) -> Result<String, CliError> {
    let (jobs, server, time) = (&found.jobs, found.server.as_str(), found.time);
    Ok(match form {
        JobForm::Json => json(&jobs::jobs_document(jobs, server, time, &Local))?,
        JobForm::Full(style) => jobs::full_text(jobs, server, time, style, &Local),
        JobForm::Table(style) => job_table::job_table(jobs, style, time),
        JobForm::Alternate(style) => alternate::alternate(jobs, server, style, time, &Local),
        JobForm::NodesView { nodes } => nodes_view::nodes_view(jobs, time, *nodes),
    })
}

/// A JSON document as qstat prints it.
fn json(tree: &crate::output::Tree) -> Result<String, CliError> {
    let mut text = serde_json::to_string_pretty(tree)
        .map_err(|e| CliError::msg(format!("cannot write the JSON document: {e}")))?;
    text.push('\n');
    Ok(text)
}
