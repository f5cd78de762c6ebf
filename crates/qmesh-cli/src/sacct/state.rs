//! How a qmesh job's state and end read in Slurm's words, for the job's
//! line and its batch step's, as Slurm 22.05's sacct writes them (seen on
//! the rig, `tests/slurm/fixtures/sacct-states.txt`):
//!
//! | how it ended | job | step `.batch` |
//! |---|---|---|
//! | exit 0 | COMPLETED 0:0 | COMPLETED 0:0 |
//! | exit N | FAILED N:0 | FAILED N:0 |
//! | killed by signal S | FAILED 0:S | CANCELLED 0:S |
//! | deleted (qdel, scancel) | CANCELLED by UID 0:0 | CANCELLED 0:S |
//! | past its wall time | TIMEOUT 0:0 | CANCELLED 0:S |
//! | past its memory | OUT_OF_MEMORY 0:125 | OUT_OF_MEMORY 0:125 |
//! | its node lost | NODE_FAIL 0:0 | NODE_FAIL 0:0 |
//! | a run before a requeue (`-D`) | REQUEUED 0:0 | CANCELLED 0:S |
//!
//! `ExitCode` is Slurm's `CODE:SIGNAL`. A job the daemon no longer holds
//! is read from its records, which say the exit status and a deletion but
//! not a wall time or memory kill: a signal past the job's wall time is
//! taken for TIMEOUT there.

use qmesh_proto::v1::AccountedJob;

/// Slurm's job states, with sacct's abbreviations (`-s`).
pub const STATES: &[(&str, &str)] = &[
    ("PD", "PENDING"),
    ("R", "RUNNING"),
    ("S", "SUSPENDED"),
    ("CD", "COMPLETED"),
    ("CA", "CANCELLED"),
    ("F", "FAILED"),
    ("TO", "TIMEOUT"),
    ("NF", "NODE_FAIL"),
    ("PR", "PREEMPTED"),
    ("OOM", "OUT_OF_MEMORY"),
    ("RQ", "REQUEUED"),
    ("BF", "BOOT_FAIL"),
    ("DL", "DEADLINE"),
    ("RS", "RESIZING"),
    ("RV", "REVOKED"),
    ("SE", "SPECIAL_EXIT"),
];

/// A line's state and exit code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shown {
    /// The state's name (`CANCELLED`), what `-s` matches.
    pub state: &'static str,
    /// As printed: `CANCELLED by 0`.
    pub text: String,
    /// `ExitCode`: the code and the signal.
    pub code: i32,
    pub signal: i32,
}

impl Shown {
    fn new(state: &'static str, code: i32, signal: i32) -> Shown {
        Shown {
            state,
            text: state.to_string(),
            code,
            signal,
        }
    }

    /// `ExitCode`: `3:0`, `0:9`.
    pub fn exit_code(&self) -> String {
        format!("{}:{}", self.code, self.signal)
    }
}

/// The job's line and, if it started, its batch step's. `uid_of` turns
/// the deleter's name into the uid Slurm prints (`CANCELLED by 0`).
pub fn shown(job: &AccountedJob, uid_of: &dyn Fn(&str) -> Option<u32>) -> (Shown, Option<Shown>) {
    let started = job.start > 0;
    let running = |state| {
        let line = Shown::new(state, 0, 0);
        (line.clone(), started.then_some(line))
    };
    match job.state.as_str() {
        "R" | "E" | "B" => return running("RUNNING"),
        "S" => return running("SUSPENDED"),
        "F" => {}
        // Q H W T, and a job queued again after a run: waiting.
        _ => return (Shown::new("PENDING", 0, 0), None),
    }
    let status = job.exit_status;
    // The signal that ended it, and its code.
    let (code, signal) = match status {
        Some(s) if s > 256 => (0, s - 256),
        Some(s) if s >= 0 => (s, 0),
        _ => (0, 0),
    };
    let ended = |job_state, step_state| {
        (
            Shown::new(job_state, 0, 0),
            started.then(|| Shown::new(step_state, 0, signal)),
        )
    };
    match job.exit_cause.as_str() {
        "deleted" | "aborted" => {
            let mut line = Shown::new("CANCELLED", 0, 0);
            let who = job.deleted_by.split('@').next().unwrap_or_default();
            if !who.is_empty() {
                line.text = match uid_of(who) {
                    Some(uid) => format!("CANCELLED by {uid}"),
                    None => format!("CANCELLED by {who}"),
                };
            }
            (line, started.then(|| Shown::new("CANCELLED", 0, signal)))
        }
        "walltime" => ended("TIMEOUT", "CANCELLED"),
        "memory" => {
            let line = Shown::new("OUT_OF_MEMORY", 0, 125);
            (line.clone(), started.then_some(line))
        }
        "lost" => {
            let line = Shown::new("NODE_FAIL", 0, 0);
            (line.clone(), started.then_some(line))
        }
        "launch_failed" => {
            let line = Shown::new("FAILED", 0, 0);
            (line.clone(), started.then_some(line))
        }
        _ => match status {
            // Only the records are left: -2 is PBS's lost job.
            Some(-2) => {
                let line = Shown::new("NODE_FAIL", 0, 0);
                (line.clone(), started.then_some(line))
            }
            Some(s) if s < 0 => {
                let line = Shown::new("FAILED", 0, 0);
                (line.clone(), started.then_some(line))
            }
            _ if signal > 0 && job.exit_cause.is_empty() && past_limit(job) => {
                ended("TIMEOUT", "CANCELLED")
            }
            _ if signal > 0 => (
                Shown::new("FAILED", 0, signal),
                started.then(|| Shown::new("CANCELLED", 0, signal)),
            ),
            _ if code == 0 => {
                let line = Shown::new("COMPLETED", 0, 0);
                (line.clone(), started.then_some(line))
            }
            _ => {
                let line = Shown::new("FAILED", code, 0);
                (line.clone(), started.then_some(line))
            }
        },
    }
}

/// `-D`: the job's runs before it was queued again, each as the job
/// that ran then (keyed by the job's id).
pub fn earlier_runs(job: &AccountedJob) -> Vec<(String, AccountedJob)> {
    job.earlier_runs
        .iter()
        .map(|run| {
            let copy = AccountedJob {
                state: "F".into(),
                start: run.start,
                end: run.end,
                exit_status: run.exit_status,
                exec_nodes: run.exec_nodes.clone(),
                ncpus: run.ncpus,
                nodes: run.exec_nodes.len() as u32,
                earlier_runs: Vec::new(),
                ..job.clone()
            };
            (job.id.clone(), copy)
        })
        .collect()
}

/// A run that ended with its job queued again: `REQUEUED 0:0`, its step
/// `CANCELLED 0:SIGNAL` (Slurm's, seen on the rig with `sacct -D`).
pub fn requeued(run: &AccountedJob) -> (Shown, Shown) {
    let signal = match run.exit_status {
        Some(s) if s > 256 => s - 256,
        _ => 0,
    };
    (
        Shown::new("REQUEUED", 0, 0),
        Shown::new("CANCELLED", 0, signal),
    )
}

/// Whether its run reached its wall time (records only: the daemon's own
/// word says walltime where it still holds the job).
fn past_limit(job: &AccountedJob) -> bool {
    job.walltime > 0 && job.used_walltime >= job.walltime
}

/// `-s`: the state names asked for (`CD,F` or `completed,failed`).
pub fn wanted(text: &str) -> Result<Vec<&'static str>, String> {
    let mut out = Vec::new();
    for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        let upper = word.to_ascii_uppercase();
        let found = STATES
            .iter()
            .find(|(short, long)| *short == upper || *long == upper)
            .map(|(_, long)| *long);
        match found {
            Some(state) => out.push(state),
            None => {
                return Err(format!(
                    "unrecognized job state value '{word}'; write one of {}",
                    STATES
                        .iter()
                        .map(|(s, l)| format!("{l} ({s})"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(status: i32, cause: &str) -> AccountedJob {
        AccountedJob {
            id: "5.srv".into(),
            state: "F".into(),
            start: 100,
            end: 200,
            exit_status: Some(status),
            exit_cause: cause.into(),
            ..AccountedJob::default()
        }
    }

    fn words(job: &AccountedJob) -> (String, String, Option<(String, String)>) {
        let uid_of = |name: &str| (name == "root").then_some(0);
        let (line, step) = shown(job, &uid_of);
        (
            line.text.clone(),
            line.exit_code(),
            step.map(|s| (s.text.clone(), s.exit_code())),
        )
    }

    fn w(
        state: &str,
        code: &str,
        step: Option<(&str, &str)>,
    ) -> (String, String, Option<(String, String)>) {
        (
            state.into(),
            code.into(),
            step.map(|(s, c)| (s.to_string(), c.to_string())),
        )
    }

    #[test]
    fn ends_read_as_slurm_writes_them() {
        let ok = w("COMPLETED", "0:0", Some(("COMPLETED", "0:0")));
        assert_eq!(words(&ended(0, "exited")), ok);
        assert_eq!(words(&ended(0, "")), ok, "from the records alone");
        assert_eq!(
            words(&ended(3, "exited")),
            w("FAILED", "3:0", Some(("FAILED", "3:0")))
        );
        assert_eq!(
            words(&ended(256 + 9, "exited")),
            w("FAILED", "0:9", Some(("CANCELLED", "0:9"))),
            "killed by a signal"
        );
        let mut deleted = ended(256 + 15, "deleted");
        deleted.deleted_by = "root@head".into();
        assert_eq!(
            words(&deleted),
            w("CANCELLED by 0", "0:0", Some(("CANCELLED", "0:15")))
        );
        deleted.deleted_by = "nosuchuser@head".into();
        assert_eq!(words(&deleted).0, "CANCELLED by nosuchuser");
        assert_eq!(
            words(&ended(256 + 15, "walltime")),
            w("TIMEOUT", "0:0", Some(("CANCELLED", "0:15")))
        );
        assert_eq!(
            words(&ended(256 + 9, "memory")),
            w("OUT_OF_MEMORY", "0:125", Some(("OUT_OF_MEMORY", "0:125")))
        );
        assert_eq!(words(&ended(-2, "lost")).0, "NODE_FAIL");
        assert_eq!(words(&ended(-2, "")).0, "NODE_FAIL", "PBS's lost job");
        assert_eq!(words(&ended(-1, "launch_failed")).0, "FAILED");
    }

    #[test]
    fn a_signal_past_the_wall_time_is_a_timeout_in_the_records() {
        let mut job = ended(256 + 15, "");
        job.walltime = 60;
        job.used_walltime = 61;
        assert_eq!(words(&job).0, "TIMEOUT");
        job.used_walltime = 30;
        assert_eq!(words(&job).0, "FAILED");
    }

    #[test]
    fn jobs_not_ended_and_jobs_deleted_before_they_started() {
        let mut job = AccountedJob {
            state: "Q".into(),
            ..AccountedJob::default()
        };
        assert_eq!(words(&job), w("PENDING", "0:0", None));
        job.state = "H".into();
        assert_eq!(words(&job).0, "PENDING");
        job.state = "R".into();
        job.start = 5;
        assert_eq!(words(&job), w("RUNNING", "0:0", Some(("RUNNING", "0:0"))));
        job.state = "S".into();
        assert_eq!(words(&job).0, "SUSPENDED");
        let gone = AccountedJob {
            state: "F".into(),
            exit_cause: "deleted".into(),
            deleted_by: "root@h".into(),
            ..AccountedJob::default()
        };
        assert_eq!(words(&gone), w("CANCELLED by 0", "0:0", None), "no step");
    }

    #[test]
    fn earlier_runs_are_requeued_with_a_cancelled_step() {
        let job = AccountedJob {
            id: "10.srv".into(),
            state: "Q".into(),
            earlier_runs: vec![qmesh_proto::v1::AccountedRun {
                start: 5,
                end: 9,
                exit_status: Some(256 + 15),
                exec_nodes: vec!["n1".into()],
                ncpus: 2,
            }],
            ..AccountedJob::default()
        };
        let runs = earlier_runs(&job);
        assert_eq!(runs.len(), 1);
        let (of, run) = &runs[0];
        assert_eq!(
            (of.as_str(), run.start, run.end, run.ncpus),
            ("10.srv", 5, 9, 2)
        );
        let (line, step) = requeued(run);
        assert_eq!(
            (line.text.as_str(), line.exit_code()),
            ("REQUEUED", "0:0".into())
        );
        assert_eq!(
            (step.text.as_str(), step.exit_code()),
            ("CANCELLED", "0:15".into())
        );
    }

    #[test]
    fn states_by_name_or_abbreviation() {
        assert_eq!(wanted("CD,f").unwrap(), ["COMPLETED", "FAILED"]);
        assert_eq!(
            wanted("cancelled,TO,oom").unwrap(),
            ["CANCELLED", "TIMEOUT", "OUT_OF_MEMORY"]
        );
        let err = wanted("bogus").unwrap_err();
        assert!(
            err.starts_with("unrecognized job state value 'bogus'; write one of PENDING (PD)"),
            "{err}"
        );
    }
}
