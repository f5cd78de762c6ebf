//! qselect: the ids of the jobs that meet every selection option given,
//! one per line (PBS Pro's qselect(1B); Torque's options are a subset).
//!
//! It asks the daemon for the jobs (the Status call, finished ones too
//! with `-x` or `-H`) and decides here with the core's rules
//! ([`qmesh_core::select`]); date-times are read in this host's time zone.

use std::collections::BTreeMap;
use std::process::ExitCode;

use chrono::{DateTime, Datelike, Local, NaiveDate, TimeZone, Utc};
use clap::Parser;
use qmesh_core::Time;
use qmesh_core::select::{self, Candidate, History, Selection};
use qmesh_proto::{JobInfo, QueueStatusRequest, StatusRequest};

use crate::client::{self, CliError};
use crate::output::{self, Output, Tree};

/// List the ids of the jobs that meet every option given.
///
/// Each option filters; with none, every queued, held, waiting and running
/// job is listed. Comparisons are written between dots, before the value
/// or between a resource and its value: .eq. .ne. .ge. .gt. .le. .lt.
/// (none means .eq.), e.g. qselect -p.gt.5 -l walltime.gt.01:00:00,ncpus.ge.4.
/// Date-times are [[CC]YY]MMDDhhmm[.SS] in local time.
#[derive(Parser, Debug, Default)]
#[command(name = "qselect", version, disable_help_flag = true)]
pub struct Args {
    /// Print help.
    #[arg(long = "help", action = clap::ArgAction::Help)]
    pub help: Option<bool>,
    /// [op]DATETIME: the job's -a time (Execution_Time) compares so;
    /// twice for a range.
    #[arg(short = 'a', value_name = "[op]DATETIME")]
    pub execution: Vec<String>,
    /// Jobs charging this account.
    #[arg(short = 'A', value_name = "ACCOUNT")]
    pub account: Option<String>,
    /// [op]INTERVAL: the Checkpoint attribute compares so (n > s >
    /// c=minutes > c > u).
    #[arg(short = 'c', value_name = "[op]INTERVAL")]
    pub checkpoint: Vec<String>,
    /// Jobs whose holds are exactly these: n, or some of u o p s.
    #[arg(short = 'h', value_name = "HOLDS")]
    pub holds: Option<String>,
    /// Finished jobs only.
    #[arg(short = 'H')]
    pub finished_only: bool,
    /// Job arrays only.
    #[arg(short = 'J')]
    pub arrays: bool,
    /// RESOURCE.op.VALUE[,...]: Resource_List values compare so, e.g.
    /// walltime.gt.01:00:00,ncpus.ge.4.
    #[arg(short = 'l', value_name = "RESOURCE_LIST")]
    pub resources: Vec<String>,
    /// Jobs with this name.
    #[arg(short = 'N', value_name = "NAME")]
    pub name: Option<String>,
    /// [op]PRIORITY: the job's Priority compares so.
    #[arg(short = 'p', value_name = "[op]PRIORITY", allow_hyphen_values = true)]
    pub priority: Vec<String>,
    /// Jobs of this project.
    #[arg(short = 'P', value_name = "PROJECT")]
    pub project: Option<String>,
    /// QUEUE, QUEUE@SERVER or @SERVER: jobs in that queue.
    #[arg(short = 'q', value_name = "DESTINATION")]
    pub destination: Option<String>,
    /// y or n: rerunnable jobs, or not.
    #[arg(short = 'r', value_name = "y|n")]
    pub rerunnable: Option<String>,
    /// Jobs in any of these states, e.g. QR (B E F H M Q R S T U W X).
    #[arg(short = 's', value_name = "STATES")]
    pub states: Option<String>,
    /// LETTER[op]TIME: a time attribute compares so; LETTER is a
    /// (Execution_Time), c (ctime), e (etime), g (eligible_time, a
    /// duration), m (mtime), q (qtime), s (stime) or t (estimated start),
    /// e.g. -ts.gt.09251200; twice for a range.
    #[arg(short = 't', value_name = "LETTER[op]TIME")]
    pub times: Vec<String>,
    /// Jobs and sub-jobs of arrays, not the arrays themselves.
    #[arg(short = 'T')]
    pub not_arrays: bool,
    /// USER[@HOST][,...]: jobs of these users (a host may start with *).
    #[arg(short = 'u', value_name = "USER_LIST")]
    pub users: Option<String>,
    /// Finished jobs too.
    #[arg(short = 'x')]
    pub all: bool,
    /// Print the ids as a JSON list.
    #[arg(long)]
    pub json: bool,
}

pub fn main() -> ExitCode {
    client::restore_sigpipe();
    let args = Args::parse();
    let now = Local::now();
    let (selection, server) = match selection_of(&args, now) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("qselect: {e}");
            return ExitCode::from(2);
        }
    };
    let history = selection.history;
    let queue = selection.queue.clone();
    let subjobs = args.not_arrays;
    let reply = client::block_on(async {
        let mut jobs = client::jobs().await?;
        if let Some(queue) = queue {
            // PBS refuses a queue that does not exist rather than listing
            // nothing.
            let names = vec![queue];
            jobs.queue_status(QueueStatusRequest { names }).await?;
        }
        // -T: sub-jobs too (those left to start), arrays left out below.
        let request = StatusRequest {
            include_finished: history != History::Current,
            expand_arrays: subjobs,
            ..StatusRequest::default()
        };
        Ok::<_, CliError>(jobs.status(request).await?.into_inner())
    });
    let reply = match reply {
        Ok(reply) => reply,
        Err(e) => return client::fail("qselect", &e),
    };
    if let Some(wanted) = &server
        && !same_server(wanted, &reply.server)
    {
        return client::fail(
            "qselect",
            &CliError::msg(format!(
                "server \"{wanted}\" is not this daemon's (\"{}\"); qmesh selects from one server",
                reply.server
            )),
        );
    }
    let ids: Vec<String> = reply
        .jobs
        .iter()
        .filter(|job| !(subjobs && job.array))
        .filter(|job| {
            let resources = resource_list(job);
            selection.matches(&candidate(job, &resources))
        })
        .map(|job| job.id.clone())
        .collect();
    match output::emit(&Ids(ids), args.json) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => client::fail(
            "qselect",
            &CliError::msg(format!("cannot write the ids: {e}")),
        ),
    }
}

/// The selection the options describe, and the server `-q` names if any.
pub fn selection_of(
    args: &Args,
    now: DateTime<Local>,
) -> Result<(Selection, Option<String>), String> {
    let at = |text: &str| parse_datetime(text, now);
    let mut s = Selection {
        history: match (args.finished_only, args.all) {
            (true, _) => History::FinishedOnly,
            (false, true) => History::All,
            (false, false) => History::Current,
        },
        arrays_only: args.arrays,
        account: args.account.clone(),
        name: args.name.clone(),
        project: args.project.clone(),
        ..Selection::default()
    };
    for text in &args.execution {
        s.times.push(select::parse_execution_test(text, &at)?);
    }
    for text in &args.times {
        s.times.push(select::parse_time_test(text, &at)?);
    }
    for text in &args.checkpoint {
        s.checkpoint.push(select::parse_checkpoint(text)?);
    }
    for text in &args.priority {
        s.priority.push(select::parse_priority(text)?);
    }
    for text in &args.resources {
        s.resources.extend(select::parse_resources(text)?);
    }
    if let Some(text) = &args.holds {
        s.holds = Some(select::parse_holds(text)?);
    }
    if let Some(text) = &args.states {
        s.states = Some(select::parse_states(text)?);
    }
    if let Some(text) = &args.users {
        s.users = select::parse_users(text)?;
    }
    if let Some(text) = &args.rerunnable {
        s.rerunnable = Some(select::parse_rerunnable(text)?);
    }
    let mut server = None;
    if let Some(dest) = &args.destination {
        let (queue, at_server) = match dest.split_once('@') {
            Some((q, srv)) => (q, Some(srv)),
            None => (dest.as_str(), None),
        };
        if queue.is_empty() && at_server.is_none_or(str::is_empty) {
            return Err("-q: name a queue, QUEUE@SERVER or @SERVER".into());
        }
        if !queue.is_empty() {
            s.queue = Some(queue.to_string());
        }
        server = at_server.filter(|srv| !srv.is_empty()).map(str::to_string);
    }
    Ok((s, server))
}

/// Whether `wanted` names the daemon's server (short or full name).
fn same_server(wanted: &str, server: &str) -> bool {
    wanted == server
        || server
            .strip_prefix(wanted)
            .is_some_and(|rest| rest.starts_with('.'))
        || wanted
            .strip_prefix(server)
            .is_some_and(|rest| rest.starts_with('.'))
}

/// `[[CC]YY]MMDDhhmm[.SS]` (also `hhmm` today, `DDhhmm` this month) in
/// the zone of `now`; a date left without its year is this year's.
pub fn parse_datetime<Tz: TimeZone>(text: &str, now: DateTime<Tz>) -> Result<Time, String> {
    let bad = |why: &str| {
        format!("bad date-time \"{text}\": {why}; write [[CC]YY]MMDDhhmm[.SS], e.g. 09251200")
    };
    let (digits, secs) = match text.trim().split_once('.') {
        Some((main, secs)) => (main, Some(secs)),
        None => (text.trim(), None),
    };
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(digits) || ![4, 6, 8, 10, 12].contains(&digits.len()) {
        return Err(bad("it must be 4, 6, 8, 10 or 12 digits"));
    }
    let second: u32 = match secs {
        None => 0,
        Some(s) if s.len() == 2 && all_digits(s) => s.parse().unwrap_or(60),
        Some(_) => return Err(bad("the seconds after '.' must be two digits")),
    };
    let field = |from_right: usize| -> Option<u32> {
        let end = digits.len().checked_sub(2 * from_right)?;
        digits.get(end.checked_sub(2)?..end)?.parse().ok()
    };
    let today = now.naive_local().date();
    let minute = field(0).unwrap_or(0);
    let hour = field(1).unwrap_or(0);
    let day = field(2).unwrap_or(today.day());
    let month = field(3).unwrap_or(today.month());
    let year = match digits.len() {
        12 => (field(5).unwrap_or(0) * 100 + field(4).unwrap_or(0)) as i32,
        10 => today.year() / 100 * 100 + field(4).unwrap_or(0) as i32,
        _ => today.year(),
    };
    let local = NaiveDate::from_ymd_opt(year, month, day)
        .and_then(|d| d.and_hms_opt(hour, minute, second))
        .ok_or_else(|| bad("there is no such date or time"))?;
    now.timezone()
        .from_local_datetime(&local)
        .earliest()
        .map(|t| t.with_timezone(&Utc))
        .ok_or_else(|| bad("that local time does not exist here (the clock skips it)"))
}

/// The job's Resource_List by name, as qstat -f shows it (from what it
/// asked for, for a daemon that does not send the list).
pub fn resource_list(job: &JobInfo) -> BTreeMap<String, String> {
    if !job.resource_list.is_empty() {
        return job
            .resource_list
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
    }
    let mut list = BTreeMap::new();
    list.insert("nodes".to_string(), job.nodes.to_string());
    list.insert("nodect".to_string(), job.nodes.to_string());
    list.insert(
        "walltime".to_string(),
        qmesh_core::time::format_hms(job.walltime),
    );
    if let Some(mem) = job.mem {
        list.insert("mem".to_string(), qmesh_core::resources::format_size(mem));
    }
    if let Some(ncpus) = job.ncpus {
        list.insert("ncpus".to_string(), ncpus.to_string());
    }
    if !job.features.is_empty() {
        list.insert("feature".to_string(), job.features.join(":"));
    }
    list
}

fn instant(secs: i64) -> Option<Time> {
    (secs != 0).then(|| Utc.timestamp_opt(secs, 0).single())?
}

/// What the selection reads of a job.
pub fn candidate<'a>(job: &'a JobInfo, resources: &'a BTreeMap<String, String>) -> Candidate<'a> {
    let waited_until = if job.stime != 0 {
        job.stime
    } else {
        job.server_time
    };
    Candidate {
        state: job.state_letter.chars().next().unwrap_or('?'),
        name: &job.name,
        owner: &job.owner,
        owner_host: &job.submit_host,
        account: &job.account,
        project: &job.project,
        priority: i64::from(job.job_priority),
        checkpoint: &job.checkpoint,
        queue: &job.queue,
        rerunnable: job.rerunnable,
        hold_types: &job.hold_types,
        resources,
        execution_time: instant(job.start_after),
        ctime: instant(job.qtime),
        etime: instant(job.qtime),
        eligible_for: (job.qtime != 0 && waited_until >= job.qtime)
            .then(|| (waited_until - job.qtime) as u64),
        mtime: instant(job.mtime),
        qtime: instant(job.qtime),
        stime: instant(job.stime),
        estimated_start: instant(job.expected_start),
        is_array: job.array,
    }
}

/// The selected ids: one per line, or a JSON list.
struct Ids(Vec<String>);

impl Output for Ids {
    fn text(&self) -> String {
        self.0.iter().map(|id| format!("{id}\n")).collect()
    }

    fn json(&self) -> Tree {
        Tree::List(self.0.iter().map(Tree::text).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 9, 1, 8, 0, 0).unwrap()
    }

    #[test]
    fn pbs_option_forms_parse_and_help_is_long_only() {
        let args = Args::try_parse_from([
            "qselect",
            "-p.gt.5",
            "-l",
            "walltime.gt.01:00:00,ncpus.ge.4",
            "-s",
            "QR",
            "-h",
            "n",
            "-ts.gt.09251200",
            "-q",
            "batch@srv",
            "-u",
            "alice",
            "-x",
        ])
        .unwrap();
        let (s, server) = selection_of(&args, now().with_timezone(&Local)).unwrap();
        assert_eq!(s.priority.len(), 1);
        assert_eq!(s.resources.len(), 2);
        assert_eq!(s.queue.as_deref(), Some("batch"));
        assert_eq!(server.as_deref(), Some("srv"));
        assert_eq!(s.history, History::All);
        assert!(Args::try_parse_from(["qselect", "-p", "-5"]).is_ok());
    }

    #[test]
    fn bad_options_say_what_to_write() {
        let args = Args::try_parse_from(["qselect", "-l", "walltime>1"]).unwrap();
        let err = selection_of(&args, now().with_timezone(&Local)).unwrap_err();
        assert!(err.contains("RESOURCE.OP.VALUE"), "{err}");
        let args = Args::try_parse_from(["qselect", "-s", "Z"]).unwrap();
        assert!(selection_of(&args, now().with_timezone(&Local)).is_err());
    }

    #[test]
    fn date_times_take_this_year_unless_written() {
        let t = parse_datetime("09251200", now()).unwrap();
        assert_eq!(t, Utc.with_ymd_and_hms(2026, 9, 25, 12, 0, 0).unwrap());
        let t = parse_datetime("2701011200.30", now()).unwrap();
        assert_eq!(t, Utc.with_ymd_and_hms(2027, 1, 1, 12, 0, 30).unwrap());
        let t = parse_datetime("203001011200", now()).unwrap();
        assert_eq!(t, Utc.with_ymd_and_hms(2030, 1, 1, 12, 0, 0).unwrap());
        let t = parse_datetime("0930", now()).unwrap();
        assert_eq!(t, Utc.with_ymd_and_hms(2026, 9, 1, 9, 30, 0).unwrap());
        let err = parse_datetime("13011200", now()).unwrap_err();
        assert!(err.contains("no such date"), "{err}");
        assert!(parse_datetime("12", now()).is_err());
    }

    #[test]
    fn a_job_s_resources_and_times_are_read_by_name() {
        let job = JobInfo {
            id: "3.srv".into(),
            state_letter: "R".into(),
            nodes: 2,
            walltime: 7200,
            mem: Some(4 << 30),
            ncpus: Some(8),
            qtime: 1000,
            stime: 1600,
            server_time: 2000,
            ..JobInfo::default()
        };
        let res = resource_list(&job);
        assert_eq!(res["walltime"], "02:00:00");
        assert_eq!(res["mem"], "4gb");
        let c = candidate(&job, &res);
        assert_eq!(c.state, 'R');
        assert_eq!(c.eligible_for, Some(600), "it waited from qtime to stime");
        assert_eq!(c.execution_time, None);
        assert!(same_server("srv", "srv.example.org") && !same_server("other", "srv"));
        let listed = JobInfo {
            resource_list: [("select".to_string(), "2:ncpus=4".to_string())].into(),
            job_priority: 7,
            ..job
        };
        let res = resource_list(&listed);
        assert_eq!(res.len(), 1, "PBS's own list when the daemon sends it");
        assert_eq!(candidate(&listed, &res).priority, 7);
    }
}
