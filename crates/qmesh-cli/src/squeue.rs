//! squeue: the jobs as Slurm lists them, whichever command submitted them.
//! The default table is Slurm 22.05's (`%.18i %.9P %.8j %.8u %.2t %.10M
//! %.6D %R`, checked against the real one's fixture); `-o` takes Slurm's
//! format letters with their widths (`%.18i` right-justified, `%-8j`
//! left, each cut to its width as Slurm cuts it).

use std::process::ExitCode;

use clap::Parser;
use qmesh_proto::{JobInfo, StatusRequest};

use crate::client::{self, CliError};

/// Slurm's default format.
pub const DEFAULT: &str = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R";
/// `-l`.
pub const LONG: &str = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R";

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
    /// Only jobs in these states: PD, R, S, CG, CD, F, CA or their long
    /// names, or all.
    #[arg(short = 't', long = "states", value_name = "STATES")]
    pub states: Option<String>,
    /// Slurm's format letters, e.g. "%.18i %.9P %.8j %.2t".
    #[arg(short = 'o', long = "format", value_name = "FORMAT")]
    pub format: Option<String>,
    /// The long table.
    #[arg(short = 'l', long = "long")]
    pub long: bool,
    /// No header line.
    #[arg(short = 'h', long = "noheader")]
    pub noheader: bool,
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

fn run(args: &Args) -> Result<String, CliError> {
    let format = args
        .format
        .clone()
        .unwrap_or_else(|| if args.long { LONG } else { DEFAULT }.to_string());
    let fields = parse_format(&format).map_err(CliError::Msg)?;
    let states = wanted_states(args.states.as_deref()).map_err(CliError::Msg)?;
    let mut users: Vec<String> = list(args.users.as_deref());
    if args.me {
        users.push(client::current_user());
    }
    let ids: Vec<String> = list(args.jobs.as_deref());
    let partitions = list(args.partitions.as_deref());
    let reply = client::block_on(async {
        let mut jobs = client::jobs().await?;
        let request = StatusRequest {
            users,
            include_finished: states.iter().any(|s| matches!(*s, "CD" | "F" | "CA")),
            expand_arrays: true,
            report_refused: true,
            ..StatusRequest::default()
        };
        Ok(jobs.status(request).await?.into_inner())
    })?;
    let now = reply.server_time;
    let rows: Vec<&JobInfo> = reply
        .jobs
        .iter()
        .filter(|j| !(j.array && j.state_letter == "B"))
        .filter(|j| states.contains(&state(j).0))
        .filter(|j| partitions.is_empty() || partitions.contains(&j.queue))
        .filter(|j| ids.is_empty() || ids.iter().any(|i| *i == slurm_id(&j.id)))
        .collect();
    let mut out = String::new();
    if !args.noheader {
        out.push_str(&line(&fields, |f| f.header().to_string()));
    }
    for job in rows {
        out.push_str(&line(&fields, |f| f.value(job, now)));
    }
    Ok(out)
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

/// One piece of a format: text as written, or a field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    Field {
        letter: char,
        width: Option<usize>,
        right: bool,
    },
}

/// Reads Slurm's format: `%[.][-]WIDTHletter` fields between text.
pub fn parse_format(format: &str) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            text.push(c);
            continue;
        }
        let right = chars.next_if_eq(&'.').is_some();
        let _left = chars.next_if_eq(&'-').is_some();
        let mut digits = String::new();
        while let Some(d) = chars.next_if(|d| d.is_ascii_digit()) {
            digits.push(d);
        }
        let Some(letter) = chars.next() else {
            return Err(format!("--format \"{format}\" ends with an unfinished %"));
        };
        if letter == '%' {
            text.push('%');
            continue;
        }
        if header_of(letter).is_none() {
            return Err(format!(
                "--format \"{format}\": %{letter} is not a field qmesh's squeue knows; \
                 known: {}",
                KNOWN
                    .iter()
                    .map(|(l, _)| format!("%{l}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            ));
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(std::mem::take(&mut text)));
        }
        pieces.push(Piece::Field {
            letter,
            width: digits.parse().ok(),
            right,
        });
    }
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    Ok(pieces)
}

/// The fields known, with their headers.
const KNOWN: &[(char, &str)] = &[
    ('i', "JOBID"),
    ('A', "ARRAY_JOB_ID"),
    ('P', "PARTITION"),
    ('j', "NAME"),
    ('u', "USER"),
    ('a', "ACCOUNT"),
    ('t', "ST"),
    ('T', "STATE"),
    ('M', "TIME"),
    ('l', "TIME_LIMIT"),
    ('L', "TIME_LEFT"),
    ('D', "NODES"),
    ('C', "CPUS"),
    ('R', "NODELIST(REASON)"),
    ('N', "NODELIST"),
    ('r', "REASON"),
    ('q', "QOS"),
    ('Q', "PRIORITY"),
    ('V', "SUBMIT_TIME"),
    ('S', "START_TIME"),
    ('Z', "WORK_DIR"),
];

fn header_of(letter: char) -> Option<&'static str> {
    KNOWN.iter().find(|(l, _)| *l == letter).map(|(_, h)| *h)
}

impl Piece {
    fn header(&self) -> &str {
        match self {
            Piece::Text(t) => t,
            Piece::Field { letter, .. } => header_of(*letter).unwrap_or(""),
        }
    }

    fn value(&self, job: &JobInfo, now: i64) -> String {
        let Piece::Field { letter, .. } = self else {
            return self.header().to_string();
        };
        let running = !job.exec_nodes.is_empty() && job.stime > 0;
        let used = if running {
            let end = if job.end_time > 0 { job.end_time } else { now };
            (end - job.stime).max(0) as u64
        } else {
            0
        };
        match letter {
            'i' => slurm_id(&job.id),
            'A' => slurm_id(&job.id)
                .split('_')
                .next()
                .unwrap_or_default()
                .to_string(),
            'P' => job.queue.clone(),
            'j' => job.name.clone(),
            'u' => job.owner.split('@').next().unwrap_or_default().to_string(),
            'a' => job.account.clone(),
            't' => state(job).0.to_string(),
            'T' => state(job).1.to_string(),
            'M' => duration(used),
            'l' => limit(job.walltime),
            'L' => {
                if job.walltime == 0 {
                    "UNLIMITED".into()
                } else {
                    duration(job.walltime.saturating_sub(used))
                }
            }
            'D' => {
                let n = if running {
                    job.exec_nodes.len() as u32
                } else {
                    job.nodes
                };
                n.max(1).to_string()
            }
            'C' => (job.ncpus.unwrap_or(1) * job.nodes.max(1)).to_string(),
            'N' => nodelist(job),
            'R' => {
                if running {
                    nodelist(job)
                } else {
                    format!("({})", reason(job))
                }
            }
            'r' => reason(job),
            'q' => job
                .resource_list
                .get("qos")
                .cloned()
                .unwrap_or_else(|| "normal".into()),
            'Q' => job.job_priority.to_string(),
            'V' => timestamp(job.qtime),
            'S' => timestamp(if running {
                job.stime
            } else {
                job.expected_start
            }),
            'Z' => job.workdir.clone(),
            _ => String::new(),
        }
    }
}

/// A line of the pieces: each field padded (or cut) to its width.
fn line(pieces: &[Piece], value: impl Fn(&Piece) -> String) -> String {
    let mut out = String::new();
    for piece in pieces {
        let text = value(piece);
        match piece {
            Piece::Text(_) => out.push_str(&text),
            Piece::Field { width, right, .. } => {
                let cut: String = match width {
                    Some(w) => text.chars().take(*w).collect(),
                    None => text,
                };
                match (width, right) {
                    (Some(w), true) => out.push_str(&format!("{cut:>w$}")),
                    (Some(w), false) => out.push_str(&format!("{cut:<w$}")),
                    (None, _) => out.push_str(&cut),
                }
            }
        }
    }
    out.push('\n');
    out
}

/// A qmesh id as Slurm writes it: `12.srv` 12, `13[4].srv` 13_4,
/// `13[].srv` 13_[...].
pub fn slurm_id(id: &str) -> String {
    let seq = id.split('.').next().unwrap_or(id);
    match seq.split_once('[') {
        Some((base, rest)) => {
            let index = rest.trim_end_matches(']');
            if index.is_empty() {
                format!("{base}_[]")
            } else {
                format!("{base}_{index}")
            }
        }
        None => seq.to_string(),
    }
}

/// Slurm's compact and long state names.
fn state(job: &JobInfo) -> (&'static str, &'static str) {
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
fn wanted_states(text: Option<&str>) -> Result<Vec<&'static str>, String> {
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
fn reason(job: &JobInfo) -> String {
    match job.reason.as_str() {
        "" => "None".into(),
        "Held" if job.hold_types.contains('u') && job.hold_types.len() == 1 => "JobHeldUser".into(),
        "Held" => "JobHeldAdmin".into(),
        "QueueStopped" => "PartitionDown".into(),
        "NodesDown" => "ReqNodeNotAvail".into(),
        other => other.to_string(),
    }
}

fn nodelist(job: &JobInfo) -> String {
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

fn limit(secs: u64) -> String {
    if secs == 0 {
        "UNLIMITED".into()
    } else {
        duration(secs)
    }
}

fn timestamp(secs: i64) -> String {
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
