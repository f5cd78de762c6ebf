//! squeue's two format languages, as Slurm 22.05 reads them (checked
//! against the real one in tests/slurm): `-o` letters with widths
//! (`%.18i` right-justified, `%-8j` left, each cut to its width) and `-O`
//! names (`JobID:10,Name:.12,State`: 20 columns each unless a width is
//! given, `.` right-justifies, text after the width is printed after the
//! field, a bare `:` means no padding). Both come to the same fields.

use qmesh_proto::JobInfo;

use crate::slurm_format::Spec;

use super::{duration, limit, nodelist, reason, slurm_id, state, timestamp};

/// One piece of a format: text as written, or a field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    Field {
        field: &'static Field,
        width: Option<usize>,
        right: bool,
    },
}

/// A field: its `-o` letter (if it has one), its `-O` names and header.
#[derive(Debug, PartialEq, Eq)]
pub struct Field {
    pub letter: Option<char>,
    pub names: &'static [&'static str],
    pub header: &'static str,
}

macro_rules! fields {
    ($($letter:expr, [$($name:literal),*], $header:literal;)*) => {
        &[$(Field { letter: $letter, names: &[$($name),*], header: $header }),*]
    };
}

/// The fields known. `%A` is a job's own id and `%F`/`%K` an array's
/// number and index, as Slurm has them.
pub const FIELDS: &[Field] = fields![
    Some('i'), ["jobid", "jobarrayid"], "JOBID";
    Some('A'), [], "JOBID";
    Some('F'), ["arrayjobid"], "ARRAY_JOB_ID";
    Some('K'), ["arraytaskid"], "ARRAY_TASK_ID";
    Some('P'), ["partition"], "PARTITION";
    Some('j'), ["name"], "NAME";
    Some('u'), ["username"], "USER";
    Some('U'), ["userid"], "UID";
    Some('g'), ["groupname"], "GROUP";
    Some('a'), ["account"], "ACCOUNT";
    Some('t'), ["statecompact"], "ST";
    Some('T'), ["state"], "STATE";
    Some('M'), ["timeused"], "TIME";
    Some('l'), ["timelimit"], "TIME_LIMIT";
    Some('L'), ["timeleft"], "TIME_LEFT";
    Some('D'), ["numnodes"], "NODES";
    Some('C'), ["numcpus"], "CPUS";
    Some('R'), ["reasonlist"], "NODELIST(REASON)";
    Some('N'), ["nodelist"], "NODELIST";
    Some('r'), ["reason"], "REASON";
    Some('q'), ["qos"], "QOS";
    Some('p'), ["priority"], "PRIORITY";
    Some('Q'), ["prioritylong"], "PRIORITY";
    Some('V'), ["submittime"], "SUBMIT_TIME";
    Some('S'), ["starttime"], "START_TIME";
    Some('e'), ["endtime"], "END_TIME";
    Some('Z'), ["workdir"], "WORK_DIR";
    Some('E'), ["dependency"], "DEPENDENCY";
    Some('k'), ["comment"], "COMMENT";
    Some('m'), ["minmemory"], "MIN_MEMORY";
    Some('b'), ["tres-per-node"], "TRES_PER_NODE";
    Some('f'), ["feature"], "FEATURES";
    Some('Y'), ["schednodes"], "SCHEDNODES";
    None, ["stdout"], "STDOUT";
    None, ["stderr"], "STDERR";
    None, ["exit_code"], "EXIT_CODE";
];

fn by_letter(letter: char) -> Option<&'static Field> {
    FIELDS.iter().find(|f| f.letter == Some(letter))
}

fn by_name(name: &str) -> Option<&'static Field> {
    let name = name.to_ascii_lowercase();
    FIELDS.iter().find(|f| f.names.contains(&name.as_str()))
}

/// The fields the daemon's brief listing has (`StatusRequest.brief`):
/// a table of only these costs it a fraction of a full one, which works
/// out each pending job's explanation and expected start.
const BRIEF: &str = "iAFKPjutTMlLDRNrpQV";

impl Piece {
    /// Whether the brief listing has what this piece shows.
    pub fn brief(&self) -> bool {
        match self {
            Piece::Text(_) => true,
            Piece::Field { field, .. } => field.letter.is_some_and(|l| BRIEF.contains(l)),
        }
    }
}

/// Reads `-o`: `%[.][-]WIDTHletter` fields between text.
pub fn parse_format(format: &str) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    for spec in crate::slurm_format::specs(format)? {
        let (letter, width, right) = match spec {
            Spec::Text(t) => {
                pieces.push(Piece::Text(t));
                continue;
            }
            Spec::Field {
                letter,
                width,
                right,
                ..
            } => (letter, width, right),
        };
        let Some(field) = by_letter(letter) else {
            let known: Vec<String> = FIELDS
                .iter()
                .filter_map(|f| f.letter.map(|l| format!("%{l}")))
                .collect();
            return Err(format!(
                "--format \"{format}\": %{letter} is not a field qmesh's squeue knows; \
                 known: {}",
                known.join(" ")
            ));
        };
        pieces.push(Piece::Field {
            field,
            width,
            right,
        });
    }
    Ok(pieces)
}

/// Reads `-O`: `name[:[.][width][suffix]]` joined by commas.
pub fn parse_long_format(format: &str) -> Result<Vec<Piece>, String> {
    let refuse = |why: String| {
        let names: Vec<&str> = FIELDS
            .iter()
            .flat_map(|f| f.names.iter().copied())
            .collect();
        format!(
            "Invalid job format specification: {format} ({why}; known: {})",
            names.join(",")
        )
    };
    let mut pieces = Vec::new();
    for spec in format.split(',').filter(|s| !s.is_empty()) {
        let (name, shape) = match spec.split_once(':') {
            Some((name, shape)) => (name, Some(shape)),
            None => (spec, None),
        };
        let field = by_name(name.trim())
            .ok_or_else(|| refuse(format!("\"{name}\" is not a field qmesh's squeue knows")))?;
        let (width, right, suffix) = match shape {
            None => (Some(20), false, String::new()),
            Some(shape) => {
                let right = shape.starts_with('.');
                let rest = shape.trim_start_matches('.');
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                let suffix = rest[digits.len()..].to_string();
                if right && digits.is_empty() {
                    return Err(refuse(format!("\"{spec}\": a . needs a width after it")));
                }
                (digits.parse().ok(), right, suffix)
            }
        };
        pieces.push(Piece::Field {
            field,
            width,
            right,
        });
        if !suffix.is_empty() {
            pieces.push(Piece::Text(suffix));
        }
    }
    if pieces.is_empty() {
        return Err(refuse("no field named".into()));
    }
    Ok(pieces)
}

/// Whether the job holds nodes now.
pub fn running(job: &JobInfo) -> bool {
    !job.exec_nodes.is_empty() && job.stime > 0
}

/// Seconds the job has run, its suspensions left out.
pub fn used(job: &JobInfo, now: i64) -> u64 {
    if !running(job) {
        return 0;
    }
    let end = if job.end_time > 0 { job.end_time } else { now };
    ((end - job.stime).max(0) as u64).saturating_sub(job.suspended_secs)
}

fn or_null(text: &str) -> String {
    if text.is_empty() {
        "(null)".into()
    } else {
        text.to_string()
    }
}

impl Piece {
    pub fn header(&self) -> &str {
        match self {
            Piece::Text(t) => t,
            Piece::Field { field, .. } => field.header,
        }
    }

    pub fn value(&self, job: &JobInfo, now: i64) -> String {
        let Piece::Field { field, .. } = self else {
            return self.header().to_string();
        };
        let running = running(job);
        let used = used(job, now);
        let id = slurm_id(&job.id);
        let key = field.letter.unwrap_or('\0');
        match (key, field.names.first().copied()) {
            ('i' | 'A', _) => id,
            ('F', _) => id.split('_').next().unwrap_or_default().to_string(),
            ('K', _) => match id.split_once('_') {
                Some((_, index)) => index.to_string(),
                None => "N/A".into(),
            },
            ('P', _) => job.queue.clone(),
            ('j', _) => job.name.clone(),
            ('u', _) => job.owner.split('@').next().unwrap_or_default().to_string(),
            ('U', _) => nix::unistd::User::from_name(job.owner.split('@').next().unwrap_or(""))
                .ok()
                .flatten()
                .map(|u| u.uid.to_string())
                .unwrap_or_else(|| "N/A".into()),
            ('g', _) => job.group.clone(),
            ('a', _) => job.account.clone(),
            ('t', _) => state(job).0.to_string(),
            ('T', _) => state(job).1.to_string(),
            ('M', _) => duration(used),
            ('l', _) => limit(job.walltime),
            ('L', _) => {
                if job.walltime == 0 {
                    "UNLIMITED".into()
                } else {
                    duration(job.walltime.saturating_sub(used))
                }
            }
            ('D', _) => {
                let n = if running {
                    job.exec_nodes.len() as u32
                } else {
                    job.nodes
                };
                n.max(1).to_string()
            }
            ('C', _) => (job.ncpus.unwrap_or(1) * job.nodes.max(1)).to_string(),
            ('N', _) => nodelist(job),
            ('R', _) => {
                if running {
                    nodelist(job)
                } else {
                    format!("({})", reason(job))
                }
            }
            ('r', _) => {
                if running {
                    "None".into()
                } else {
                    reason(job)
                }
            }
            ('q', _) => job
                .resource_list
                .get("qos")
                .cloned()
                .unwrap_or_else(|| "normal".into()),
            // Slurm's normalised priority: a fraction with 14 decimals.
            ('p', _) => format!("{:.14}", f64::from(job.job_priority.max(0)) / 1024.0),
            ('Q', _) => job.job_priority.to_string(),
            ('V', _) => timestamp(job.qtime),
            ('S', _) => timestamp(if running {
                job.stime
            } else {
                job.expected_start
            }),
            ('e', _) => {
                if job.end_time > 0 {
                    timestamp(job.end_time)
                } else if running && job.walltime > 0 {
                    timestamp(job.stime + job.walltime as i64 + job.suspended_secs as i64)
                } else {
                    "N/A".into()
                }
            }
            ('Z', _) => job.workdir.clone(),
            ('E', _) => or_null(&job.depend),
            ('k', _) => or_null(&job.comment),
            ('m', _) => job
                .mem
                .map(|m| format!("{}M", m / (1024 * 1024)))
                .unwrap_or_else(|| "0".into()),
            ('b', _) => {
                if job.gpus > 0 {
                    format!("gres:gpu:{}", job.gpus)
                } else {
                    "N/A".into()
                }
            }
            ('f', _) => {
                if job.features.is_empty() {
                    "(null)".into()
                } else {
                    job.features.join("&")
                }
            }
            ('Y', _) => "(null)".into(),
            (_, Some("stdout")) => or_null(&job.stdout_path),
            (_, Some("stderr")) => {
                if job.join_output {
                    or_null(&job.stdout_path)
                } else {
                    or_null(&job.stderr_path)
                }
            }
            (_, Some("exit_code")) => job
                .exit_status
                .map(|s| s.clamp(0, 255).to_string())
                .unwrap_or_else(|| "0".into()),
            _ => String::new(),
        }
    }
}

/// A line of the pieces: each field padded (or cut) to its width.
pub fn line(pieces: &[Piece], value: impl Fn(&Piece) -> String) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> JobInfo {
        JobInfo {
            id: "2.srv".into(),
            name: "pend".into(),
            state_letter: "Q".into(),
            reason: "Resources".into(),
            ..JobInfo::default()
        }
    }

    #[test]
    fn long_names_take_twenty_columns_unless_told() {
        // What the real squeue printed for -O "jobid:10,name:.12,state"
        // and "jobid:|".
        let p = parse_long_format("jobid:10,name:.12,state").unwrap();
        assert_eq!(
            line(&p, |f| f.header().to_string()),
            "JOBID             NAMESTATE               \n"
        );
        assert_eq!(
            line(&p, |f| f.value(&job(), 0)),
            "2                 pendPENDING             \n"
        );
        let p = parse_long_format("JobID:|").unwrap();
        assert_eq!(line(&p, |f| f.value(&job(), 0)), "2|\n");
        let p = parse_long_format("JobID,Partition,StateCompact,ReasonList").unwrap();
        assert_eq!(
            line(&p, |f| f.header().to_string()),
            format!(
                "{:<20}{:<20}{:<20}{:<20}\n",
                "JOBID", "PARTITION", "ST", "NODELIST(REASON)"
            )
        );
        assert!(
            parse_long_format("jobid|")
                .unwrap_err()
                .starts_with("Invalid job format specification: jobid|")
        );
        assert!(parse_long_format("bogus").is_err());
    }

    #[test]
    fn array_letters_are_slurms() {
        let task = JobInfo {
            id: "13[4].srv".into(),
            ..job()
        };
        let p = parse_format("%i %A %F %K").unwrap();
        assert_eq!(line(&p, |f| f.value(&task, 0)), "13_4 13_4 13 4\n");
        assert_eq!(line(&p, |f| f.value(&job(), 0)), "2 2 2 N/A\n");
    }
}
