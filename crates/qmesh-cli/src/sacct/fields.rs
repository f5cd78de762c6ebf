//! sacct's fields: their names (any case, `-o JobName%30`), widths and
//! sides as Slurm 22.05 prints them (read on the rig: `JobID` 12 wide on
//! the left, the others on the right; a width given is on the right,
//! `%-N` on the left), and each one's value on a job's line or on its
//! batch step's. A value longer than its column is cut with `+`, a header
//! is cut bare.

use chrono::{Local, TimeZone};
use qmesh_proto::v1::AccountedJob;

use super::state::Shown;

/// Each field: its name as Slurm writes it, and its width (negative: on
/// the left).
pub const FIELDS: &[(&str, i32)] = &[
    ("Account", 10),
    ("AllocCPUS", 10),
    ("AllocNodes", 10),
    ("Cluster", 10),
    ("Comment", 14),
    ("CPUTime", 10),
    ("CPUTimeRAW", 10),
    ("DerivedExitCode", 15),
    ("Elapsed", 10),
    ("ElapsedRaw", 10),
    ("Eligible", 19),
    ("End", 19),
    ("ExitCode", 8),
    ("GID", 6),
    ("Group", 9),
    ("JobID", -12),
    ("JobIDRaw", -12),
    ("JobName", 10),
    ("MaxRSS", 10),
    ("NCPUS", 10),
    ("NNodes", 8),
    ("NodeList", 15),
    ("Partition", 10),
    ("Priority", 10),
    ("QOS", 10),
    ("Reason", 22),
    ("ReqCPUS", 8),
    ("ReqMem", 10),
    ("ReqNodes", 8),
    ("Start", 19),
    ("State", 10),
    ("Submit", 19),
    ("Suspended", 10),
    ("Timelimit", 10),
    ("TimelimitRaw", 10),
    ("TotalCPU", 10),
    ("UID", 6),
    ("User", 9),
    ("WorkDir", 20),
];

/// Slurm's default `--format`.
pub const DEFAULT: &str = "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode";
/// `-b/--brief`.
pub const BRIEF: &str = "JobID,State,ExitCode";

/// A column: the field and how wide (negative: on the left; 0: empty).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Column {
    pub name: &'static str,
    pub width: i32,
}

/// `-o`: `JobID,JobName%30,State%-8`, names in any case.
pub fn parse_format(text: &str) -> Result<Vec<Column>, String> {
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (name, width) = match item.split_once('%') {
            Some((n, w)) => {
                let width: i32 = w.parse().map_err(|_| {
                    format!(
                        "Invalid field width in \"{item}\": write a number after %, e.g. {n}%20 \
                         (on the right) or {n}%-20 (on the left)"
                    )
                })?;
                (n, Some(width))
            }
            None => (item, None),
        };
        let Some(&(known, default)) = FIELDS.iter().find(|(f, _)| f.eq_ignore_ascii_case(name))
        else {
            return Err(format!(
                "Invalid field requested: \"{name}\"; sacct --helpformat lists the fields"
            ));
        };
        out.push(Column {
            name: known,
            width: width.unwrap_or(default),
        });
    }
    if out.is_empty() {
        return Err(format!(
            "--format \"{text}\" names no field; write e.g. {DEFAULT}"
        ));
    }
    Ok(out)
}

/// One line of the output: a job, or its batch step.
#[derive(Clone)]
pub struct Line<'a> {
    pub job: &'a AccountedJob,
    /// `Some`: the batch step's line.
    pub step: bool,
    /// Slurm's id: `12`, `13_4`, `13_[1-3]` (pending tasks together).
    pub id: String,
    pub raw_id: String,
    pub shown: Shown,
    /// The server's time (elapsed time of what runs).
    pub now: i64,
    pub cluster: &'a str,
    /// The owner's uid and gid, when known.
    pub uid: Option<u32>,
    pub gid: Option<u32>,
}

impl Line<'_> {
    /// The field's value on this line.
    pub fn value(&self, name: &str) -> String {
        let job = self.job;
        let step = self.step;
        let started = job.start > 0;
        let ended = job.end > 0 && job.state == "F";
        let elapsed = if started {
            let end = if ended { job.end } else { self.now };
            (end - job.start).max(0) as u64
        } else {
            0
        };
        let cpus = job.ncpus.max(1);
        let job_only = |v: String| if step { String::new() } else { v };
        match name {
            "Account" => {
                if job.account.is_empty() {
                    job.user.clone()
                } else {
                    job.account.clone()
                }
            }
            "AllocCPUS" | "NCPUS" => cpus.to_string(),
            "AllocNodes" => if started { job.nodes.max(1) } else { 0 }.to_string(),
            "Cluster" => self.cluster.to_string(),
            "Comment" => String::new(),
            "CPUTime" => duration(elapsed * u64::from(cpus)),
            "CPUTimeRAW" => (elapsed * u64::from(cpus)).to_string(),
            "DerivedExitCode" => job_only("0:0".into()),
            "Elapsed" => duration(elapsed),
            "ElapsedRaw" => elapsed.to_string(),
            "Eligible" if step => time(job.start, "Unknown"),
            "Eligible" => {
                if job.state == "H" {
                    "Unknown".into()
                } else {
                    time(job.eligible.max(job.submit), "Unknown")
                }
            }
            "End" => {
                if ended {
                    time(job.end, "Unknown")
                } else {
                    "Unknown".into()
                }
            }
            "ExitCode" => self.shown.exit_code(),
            "GID" => job_only(self.gid.map(|g| g.to_string()).unwrap_or_default()),
            "Group" => job_only(job.group.clone()),
            "JobID" => self.id.clone(),
            "JobIDRaw" => self.raw_id.clone(),
            "JobName" => {
                if step {
                    "batch".into()
                } else {
                    job.name.clone()
                }
            }
            "MaxRSS" if step => job
                .max_rss
                .map(|b| format!("{}K", b.div_ceil(1024)))
                .unwrap_or_default(),
            "MaxRSS" => String::new(),
            "NNodes" | "ReqNodes" => job.nodes.max(1).to_string(),
            "NodeList" => {
                if started && !job.exec_nodes.is_empty() {
                    let nodes = if step {
                        &job.exec_nodes[..1]
                    } else {
                        &job.exec_nodes[..]
                    };
                    qmesh_core::job::slurm::compressed(nodes)
                } else {
                    "None assigned".into()
                }
            }
            "Partition" => job_only(job.queue.clone()),
            "Priority" => job_only(job.priority.to_string()),
            "QOS" => job_only(
                job.resource_list
                    .get("qos")
                    .cloned()
                    .unwrap_or_else(|| "normal".into()),
            ),
            "Reason" => job_only(reason(job)),
            "ReqCPUS" => cpus.to_string(),
            "ReqMem" => job_only(req_mem(job)),
            "Start" if step => time(job.start, "Unknown"),
            "Start" => {
                if started {
                    time(job.start, "Unknown")
                } else if job.state == "F" {
                    "None".into()
                } else {
                    "Unknown".into()
                }
            }
            "State" => self.shown.text.clone(),
            "Submit" if step => time(job.start, "Unknown"),
            "Submit" => time(job.submit, "Unknown"),
            "Suspended" => "00:00:00".into(),
            "Timelimit" => job_only(limit(job, duration)),
            "TimelimitRaw" => job_only(limit(job, |s| s.div_ceil(60).to_string())),
            "TotalCPU" => job.cput.map(duration).unwrap_or_else(|| "00:00:00".into()),
            "UID" => job_only(self.uid.map(|u| u.to_string()).unwrap_or_default()),
            "User" => job_only(job.user.clone()),
            "WorkDir" => job_only(job.workdir.clone()),
            _ => String::new(),
        }
    }
}

/// Why a pending job waits, in Slurm's words; `None` otherwise.
fn reason(job: &AccountedJob) -> String {
    match job.reason.as_str() {
        "" => "None".into(),
        "Held" => "JobHeldUser".into(),
        "QueueStopped" => "PartitionDown".into(),
        "NodesDown" => "ReqNodeNotAvail".into(),
        other => other.to_string(),
    }
}

/// `ReqMem`: the job's `mem` in Slurm's units (`100M`, `4G`).
fn req_mem(job: &AccountedJob) -> String {
    let Some(mem) = job.resource_list.get("mem") else {
        return "0".into();
    };
    match qmesh_core::resources::parse_size(mem) {
        Ok(bytes) if bytes % (1 << 30) == 0 && bytes > 0 => format!("{}G", bytes >> 30),
        Ok(bytes) => format!("{}M", bytes.div_ceil(1 << 20)),
        Err(_) => mem.clone(),
    }
}

/// `Timelimit`: `UNLIMITED` without one, `Partition_Limit` while a job
/// without one waits (Slurm's words).
fn limit(job: &AccountedJob, form: impl Fn(u64) -> String) -> String {
    match job.walltime {
        0 if job.start == 0 && job.state != "F" => "Partition_Limit".into(),
        0 => "UNLIMITED".into(),
        secs => form(secs),
    }
}

/// Slurm's elapsed times: `HH:MM:SS`, `D-HH:MM:SS`.
pub fn duration(secs: u64) -> String {
    let (d, h, m, s) = (
        secs / 86400,
        secs % 86400 / 3600,
        secs % 3600 / 60,
        secs % 60,
    );
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else {
        format!("{h:02}:{m:02}:{s:02}")
    }
}

/// A time as sacct prints it, local: `2026-11-27T11:10:46`.
pub fn time(secs: i64, none: &str) -> String {
    if secs <= 0 {
        return none.into();
    }
    Local
        .timestamp_opt(secs, 0)
        .earliest()
        .map(|t| t.format("%Y-%m-%dT%H:%M:%S").to_string())
        .unwrap_or_else(|| none.into())
}

/// The table's cell: padded to its width on its side, or cut with `+`.
pub fn cell(text: &str, width: i32, header: bool) -> String {
    let w = width.unsigned_abs() as usize;
    let len = text.chars().count();
    let cut: String = if len > w {
        if header || w == 0 {
            text.chars().take(w).collect()
        } else {
            text.chars()
                .take(w - 1)
                .chain(std::iter::once('+'))
                .collect()
        }
    } else {
        text.to_string()
    };
    if width < 0 {
        format!("{cut:<w$}")
    } else {
        format!("{cut:>w$}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_in_any_case_with_widths() {
        let cols = parse_format("jobid,JobName%30,state%-4,CPUTIMERAW").unwrap();
        assert_eq!(
            cols,
            [
                Column {
                    name: "JobID",
                    width: -12
                },
                Column {
                    name: "JobName",
                    width: 30
                },
                Column {
                    name: "State",
                    width: -4
                },
                Column {
                    name: "CPUTimeRAW",
                    width: 10
                },
            ]
        );
        assert_eq!(
            parse_format("JobID,Foo").unwrap_err(),
            "Invalid field requested: \"Foo\"; sacct --helpformat lists the fields"
        );
        assert!(parse_format("JobID%x").unwrap_err().contains("JobID%20"));
    }

    #[test]
    fn cells_are_cut_with_a_plus_and_headers_bare() {
        assert_eq!(cell("oracle-fail", 10, false), "oracle-fa+");
        assert_eq!(cell("TimelimitRaw", 10, true), "TimelimitR");
        assert_eq!(cell("1", -12, false), "1           ");
        assert_eq!(cell("1", 5, false), "    1");
        assert_eq!(cell("1.batch", 5, false), "1.ba+");
        assert_eq!(cell("COMPLETED", 4, false), "COM+");
        assert_eq!(cell("x", 0, false), "");
        assert_eq!(duration(84), "00:01:24");
        assert_eq!(duration(90061), "1-01:01:01");
    }
}
