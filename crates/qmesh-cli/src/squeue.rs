//! squeue: the jobs as Slurm lists them, whichever command submitted them.
//! The default table is Slurm 22.05's (`%.18i %.9P %.8j %.8u %.2t %.10M
//! %.6D %R`, checked against the real one's fixture); `-o` and `-O` are
//! Slurm's two format languages (`format.rs`), `-S` its sort (`sort.rs`),
//! `--json` its job records (`json.rs`).

use std::process::ExitCode;

use clap::Parser;
use qmesh_proto::{JobInfo, StatusRequest};

use crate::client::{self, CliError};

pub(crate) mod arrays;
mod format;
mod json;
mod sort;

pub use format::{Piece, line, parse_format, parse_long_format};

/// Slurm's default format.
pub const DEFAULT: &str = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R";
/// `-l`.
pub const LONG: &str = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R";
/// `--start`.
pub const START: &str = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R";

/// View the jobs (Slurm's squeue, to qmesh).
#[derive(Parser, Debug, Default)]
#[command(name = "squeue", disable_help_flag = true, disable_version_flag = true)]
pub struct Args {
    /// Only these users' jobs (comma list).
    #[arg(short = 'u', long = "user", value_name = "USERS")]
    pub users: Option<String>,
    /// Only your own jobs.
    #[arg(long = "me")]
    pub me: bool,
    /// Only these jobs (comma list of ids).
    #[arg(short = 'j', long = "jobs", value_name = "IDS")]
    pub jobs: Option<String>,
    /// Only jobs of these partitions (queues).
    #[arg(short = 'p', long = "partition", value_name = "PARTITIONS")]
    pub partitions: Option<String>,
    /// Only jobs of these names (comma list).
    #[arg(short = 'n', long = "name", value_name = "NAMES")]
    pub names: Option<String>,
    /// Accepted: qmesh's server is the one cluster.
    #[arg(short = 'M', long = "clusters", value_name = "CLUSTERS")]
    pub clusters: Option<String>,
    /// Only jobs in these states: PD, R, S, CG, CD, F, CA or their long
    /// names, or all.
    #[arg(short = 't', long = "states", value_name = "STATES")]
    pub states: Option<String>,
    /// Slurm's format letters, e.g. "%.18i %.9P %.8j %.2t".
    #[arg(short = 'o', long = "format", value_name = "FORMAT")]
    pub format: Option<String>,
    /// Slurm's format names, e.g. "JobID:10,Name:.12,State".
    #[arg(short = 'O', long = "Format", value_name = "FIELDS")]
    pub long_format: Option<String>,
    /// The order: format letters, each + or -, e.g. "P,t,-p" (the default).
    #[arg(
        short = 'S',
        long = "sort",
        value_name = "KEYS",
        allow_hyphen_values = true
    )]
    pub sort: Option<String>,
    /// Pending jobs with their expected start, soonest first.
    #[arg(long = "start")]
    pub start: bool,
    /// Slurm 22.05's JSON job records.
    #[arg(long = "json")]
    pub json: bool,
    /// The long table.
    #[arg(short = 'l', long = "long")]
    pub long: bool,
    /// No header line.
    #[arg(short = 'h', long = "noheader")]
    pub noheader: bool,
    /// One row per array task, pending ones too (otherwise they share one).
    #[arg(short = 'r', long = "array")]
    pub one_task_per_line: bool,
    /// Accepted (every partition is shown).
    #[arg(short = 'a', long = "all")]
    pub all: bool,
    #[arg(long = "help", action = clap::ArgAction::Help)]
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
            eprintln!("squeue: error: {err}");
            ExitCode::from(1)
        }
    }
}

/// The fields asked for: `-O`, `-o`, or the table the options name.
fn fields(args: &Args) -> Result<Vec<Piece>, String> {
    if let Some(names) = &args.long_format {
        return parse_long_format(names);
    }
    let format = match &args.format {
        Some(f) => f.as_str(),
        None if args.start => START,
        None if args.long => LONG,
        None => DEFAULT,
    };
    parse_format(format)
}

fn run(args: &Args) -> Result<String, CliError> {
    let fields = fields(args).map_err(CliError::Msg)?;
    let sort_keys = sort::parse(args.sort.as_deref().unwrap_or(if args.start {
        sort::BY_START
    } else {
        sort::DEFAULT
    }))
    .map_err(CliError::Msg)?;
    let states = match (&args.states, args.start) {
        (None, true) => vec!["PD"],
        _ => wanted_states(args.states.as_deref()).map_err(CliError::Msg)?,
    };
    let mut users: Vec<String> = list(args.users.as_deref());
    if args.me {
        users.push(client::current_user());
    }
    let ids: Vec<String> = list(args.jobs.as_deref());
    let partitions = list(args.partitions.as_deref());
    let names = list(args.names.as_deref());
    let reply = client::block_on(async {
        let mut jobs = client::jobs().await?;
        let request = StatusRequest {
            users,
            include_finished: states.iter().any(|s| matches!(*s, "CD" | "F" | "CA")),
            expand_arrays: true,
            report_refused: true,
            brief: !args.json
                && fields.iter().all(Piece::brief)
                && sort_keys.iter().all(sort::Key::brief),
            ..StatusRequest::default()
        };
        Ok(jobs.status(request).await?.into_inner())
    })?;
    let now = reply.server_time;
    let folded = arrays::fold(&reply.jobs, args.one_task_per_line);
    let mut rows: Vec<&JobInfo> = folded
        .iter()
        .filter(|j| !(j.array && j.state_letter == "B"))
        .filter(|j| states.contains(&state(j).0))
        .filter(|j| partitions.is_empty() || partitions.contains(&j.queue))
        .filter(|j| names.is_empty() || names.contains(&j.name))
        .filter(|j| ids.is_empty() || ids.iter().any(|i| id_matches(i, j)))
        .collect();
    sort::sort(&mut rows, &sort_keys, now);
    if args.json {
        let cluster = reply.server.split('.').next().unwrap_or("qmesh");
        return Ok(json::document(&rows, cluster));
    }
    let mut out = String::new();
    if args.long && args.format.is_none() && args.long_format.is_none() {
        // Slurm's -l begins with the time, as ctime(3) writes it.
        if let Some(t) = chrono::DateTime::from_timestamp(now, 0) {
            let local = t.with_timezone(&chrono::Local);
            out.push_str(&format!("{}\n", local.format("%a %b %e %H:%M:%S %Y")));
        }
    }
    if !args.noheader {
        out.push_str(&line(&fields, |f| f.header().to_string()));
    }
    for job in rows {
        out.push_str(&line(&fields, |f| f.value(job, now)));
    }
    Ok(out)
}

/// Whether `-j ID` names the job: `12`, `13_4`, or `13` for all of an
/// array's tasks.
fn id_matches(asked: &str, job: &JobInfo) -> bool {
    let id = slurm_id(&job.id);
    id == asked || id.split_once('_').is_some_and(|(base, _)| base == asked)
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

/// A qmesh id as Slurm writes it: `12.srv` 12, `13[4].srv` 13_4,
/// `13[2-5%2].srv` (tasks left to start) 13_[2-5%2].
pub fn slurm_id(id: &str) -> String {
    let seq = id.split('.').next().unwrap_or(id);
    match seq.split_once('[') {
        Some((base, rest)) => {
            let index = rest.trim_end_matches(']');
            if index.is_empty() || index.contains(['-', ',', '%']) {
                // An array, or the tasks of one left to start.
                format!("{base}_[{index}]")
            } else {
                format!("{base}_{index}")
            }
        }
        None => seq.to_string(),
    }
}

/// Slurm's compact and long state names.
pub fn state(job: &JobInfo) -> (&'static str, &'static str) {
    match job.state_letter.as_str() {
        "R" | "B" => ("R", "RUNNING"),
        "S" => ("S", "SUSPENDED"),
        "E" => ("CG", "COMPLETING"),
        "F" | "X" => match job.exit_status {
            Some(0) => ("CD", "COMPLETED"),
            Some(s) if !(0..=256).contains(&s) => ("CA", "CANCELLED"),
            _ => ("F", "FAILED"),
        },
        _ => ("PD", "PENDING"),
    }
}

/// The states `-t` asks for (compact names); the default: those not done.
pub fn wanted_states(text: Option<&str>) -> Result<Vec<&'static str>, String> {
    let Some(text) = text else {
        return Ok(vec!["PD", "R", "S", "CG"]);
    };
    let mut out = Vec::new();
    for word in text.split(',').map(|w| w.trim().to_ascii_uppercase()) {
        let states: &[&'static str] = match word.as_str() {
            "ALL" => &["PD", "R", "S", "CG", "CD", "F", "CA"],
            "PD" | "PENDING" => &["PD"],
            "R" | "RUNNING" => &["R"],
            "S" | "SUSPENDED" => &["S"],
            "CG" | "COMPLETING" => &["CG"],
            "CD" | "COMPLETED" => &["CD"],
            "F" | "FAILED" => &["F"],
            "CA" | "CANCELLED" => &["CA"],
            _ => {
                return Err(format!(
                    "--states={text}: \"{word}\" is not a state; write PD, R, S, CG, CD, F, CA \
                     or all"
                ));
            }
        };
        out.extend_from_slice(states);
    }
    Ok(out)
}

/// Why a pending job waits, in Slurm's words.
pub fn reason(job: &JobInfo) -> String {
    match job.reason.as_str() {
        "" => "None".into(),
        "Held" if job.hold_types.contains('u') && job.hold_types.len() == 1 => "JobHeldUser".into(),
        "Held" => "JobHeldAdmin".into(),
        "QueueStopped" => "PartitionDown".into(),
        "NodesDown" => "ReqNodeNotAvail".into(),
        other => other.to_string(),
    }
}

pub fn nodelist(job: &JobInfo) -> String {
    qmesh_core::job::slurm::compressed(&job.exec_nodes)
}

/// Slurm's elapsed time: `M:SS`, `H:MM:SS`, `D-HH:MM:SS`.
pub fn duration(secs: u64) -> String {
    let (d, h, m, s) = (
        secs / 86400,
        secs % 86400 / 3600,
        secs % 3600 / 60,
        secs % 60,
    );
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

pub fn limit(secs: u64) -> String {
    if secs == 0 {
        "UNLIMITED".into()
    } else {
        duration(secs)
    }
}

pub fn timestamp(secs: i64) -> String {
    if secs <= 0 {
        return "N/A".into();
    }
    chrono::DateTime::from_timestamp(secs, 0)
        .map(|t| {
            t.with_timezone(&chrono::Local)
                .format("%Y-%m-%dT%H:%M:%S")
                .to_string()
        })
        .unwrap_or_else(|| "N/A".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The real squeue's header (tests/slurm/fixtures/squeue.txt).
    const SLURM_HEADER: &str =
        "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)\n";

    #[test]
    fn the_default_header_is_slurms() {
        let fields = parse_format(DEFAULT).unwrap();
        assert_eq!(line(&fields, |f| f.header().to_string()), SLURM_HEADER);
    }

    #[test]
    fn a_running_and_a_pending_row_as_slurm_prints_them() {
        let fields = parse_format(DEFAULT).unwrap();
        let running = JobInfo {
            id: "6.srv".into(),
            name: "waiter-with-a-long-name".into(),
            owner: "root@h".into(),
            queue: "debug".into(),
            state_letter: "R".into(),
            nodes: 1,
            stime: 1000,
            exec_nodes: vec!["n1".into()],
            ..JobInfo::default()
        };
        assert_eq!(
            line(&fields, |f| f.value(&running, 1000 + 3725)),
            "                 6     debug waiter-w     root  R    1:02:05      1 n1\n"
        );
        let pending = JobInfo {
            id: "7[3].srv".into(),
            state_letter: "Q".into(),
            reason: "Held".into(),
            hold_types: "u".into(),
            nodes: 2,
            stime: 0,
            exec_nodes: Vec::new(),
            ..running.clone()
        };
        let row = line(&fields, |f| f.value(&pending, 0));
        assert!(row.starts_with("               7_3"), "{row}");
        assert!(
            row.ends_with(" PD       0:00      2 (JobHeldUser)\n"),
            "{row}"
        );
    }

    #[test]
    fn formats_widths_and_refusals() {
        let fields = parse_format("%i|%-6j|%.3D%%").unwrap();
        let job = JobInfo {
            id: "12.s".into(),
            name: "ab".into(),
            nodes: 4,
            ..JobInfo::default()
        };
        assert_eq!(line(&fields, |f| f.value(&job, 0)), "12|ab    |  4%\n");
        assert!(
            parse_format("%y")
                .unwrap_err()
                .contains("%y is not a field")
        );
        assert_eq!(duration(59), "0:59");
        assert_eq!(duration(90061), "1-01:01:01");
        assert_eq!(wanted_states(Some("pd,running")).unwrap(), ["PD", "R"]);
        assert!(wanted_states(Some("zz")).is_err());
    }
}
