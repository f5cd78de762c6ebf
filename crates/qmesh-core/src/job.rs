//! A job: what was asked for, who asked, and what became of it.
//!
//! A job's record is small on purpose: the script and the environment, which
//! only the launch needs, travel separately ([`JobPayload`]), so that a daemon
//! with a hundred thousand jobs in its store starts in a moment.

pub mod options;
pub mod shown;
pub mod slurm;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::depend::Dependency;
use crate::error::CoreError;
use crate::ids::SEQ_MASK;
use crate::resources::Layout;
use crate::time::Time;

pub use crate::ids::{JobId, JobState};
pub use options::{JobOptions, Options};
pub use shown::NodeShare;

/// Reading a job id needs the error type, a floor above [`JobId`].
impl JobId {
    /// Reads `17` or `17.server` (the server part may be the short or the
    /// full host name). An id of another server is a job we do not have.
    pub fn parse(text: &str, server: &str) -> Result<JobId, CoreError> {
        let text = text.trim();
        let (seq, suffix) = match text.split_once('.') {
            Some((seq, suffix)) => (seq, Some(suffix)),
            None => (text, None),
        };
        let bad = || CoreError::BadJobId {
            text: text.to_string(),
            server: server.to_string(),
        };
        if seq.is_empty() || !seq.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let seq: u64 = seq
            .parse()
            .ok()
            .filter(|&n| n <= SEQ_MASK)
            .ok_or_else(bad)?;
        if let Some(suffix) = suffix {
            let same = suffix == server
                || server
                    .strip_prefix(suffix)
                    .is_some_and(|rest| rest.starts_with('.'))
                || suffix
                    .strip_prefix(server)
                    .is_some_and(|rest| rest.starts_with('.'));
            if !same {
                return Err(CoreError::NoSuchJob {
                    id: text.to_string(),
                });
            }
        }
        Ok(JobId(seq))
    }
}

/// Who submitted the job; the agent runs it as this user.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    pub uid: u32,
    pub gid: u32,
    pub user: String,
    pub group: String,
}

/// PBS hold types: a user hold (qhold by the owner, qsub -h), an operator
/// hold (qhold by an operator or manager), a system hold (set by the server).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holds {
    pub user: bool,
    pub operator: bool,
    pub system: bool,
}

impl Holds {
    pub fn any(self) -> bool {
        self.user || self.operator || self.system
    }

    /// The PBS `Hold_Types` string: some of `u`, `o`, `s`, or `n` for none.
    pub fn types(self) -> String {
        let mut out = String::new();
        if self.user {
            out.push('u');
        }
        if self.operator {
            out.push('o');
        }
        if self.system {
            out.push('s');
        }
        if out.is_empty() {
            out.push('n');
        }
        out
    }

    /// PBS's hold list of qhold and qrls (`-h uos`): the holds it names.
    pub fn parse_list(list: &str) -> Result<Holds, String> {
        let mut holds = Holds::default();
        for c in list.trim().chars() {
            match c {
                'u' => holds.user = true,
                'o' => holds.operator = true,
                's' => holds.system = true,
                _ => break,
            }
        }
        if !holds.any() || holds.types().len() != list.trim().chars().count() {
            return Err(format!(
                "-h {list}: write some of u (user), o (operator), s (system)"
            ));
        }
        Ok(holds)
    }

    /// Who may set or release these holds: a job's owner its user hold,
    /// an operator an operator hold, a manager a system hold (PBS).
    pub fn role_needed(self) -> crate::ids::Role {
        use crate::ids::Role;
        if self.system {
            Role::Manager
        } else if self.operator {
            Role::Operator
        } else {
            Role::User
        }
    }

    /// The holds of both.
    pub fn common(self, other: Holds) -> Holds {
        Holds {
            user: self.user && other.user,
            operator: self.operator && other.operator,
            system: self.system && other.system,
        }
    }
}

/// Why a job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExitCause {
    /// The script ended by itself.
    Exited,
    /// Killed for running past its wall time.
    Walltime,
    /// Killed by qdel.
    Deleted,
    /// The agent could not start it.
    LaunchFailed,
    /// The daemon lost track of it (its agent did not know it after a restart).
    Lost,
    /// Killed for using more memory than it asked for (its cgroup's
    /// limit on a host); `message` says where and how much.
    Memory,
    /// Killed for using more CPU time than it asked for (`-l cput`, all
    /// its processes together, measured in its cgroup).
    CpuTime,
}

/// What a running job has used, as its agent measures it in its cgroup:
/// CPU seconds, and the peaks of memory and of memory and swap (bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UsedSoFar {
    pub cput: Option<u64>,
    pub mem: Option<u64>,
    pub vmem: Option<u64>,
}

/// How a job ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobExit {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub cause: ExitCause,
    #[serde(default)]
    pub message: String,
    /// CPU seconds its processes used, as its agent measured them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cput: Option<u64>,
    /// The largest resident set among its processes, in bytes (in a
    /// cgroup: the peak of all of them together).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rss: Option<u64>,
    /// The largest virtual memory its processes held together, in bytes
    /// (sampled by its agent where the job ran in a cgroup).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vmem: Option<u64>,
}

impl JobExit {
    /// PBS `exit_status`: the exit code; 256 + N when signal N ended it;
    /// -1 when it could not be started; -2 when it was lost.
    pub fn exit_status(&self) -> i32 {
        match (self.code, self.signal, self.cause) {
            (_, _, ExitCause::LaunchFailed) => -1,
            (_, _, ExitCause::Lost) => -2,
            (_, Some(sig), _) => 256 + sig,
            (Some(code), None, _) => code,
            (None, None, _) => -2,
        }
    }

    /// One line for `comment` and logs.
    pub fn describe(&self, walltime: u64) -> String {
        let how = match (self.code, self.signal) {
            (_, Some(sig)) => format!("killed by signal {sig}"),
            (Some(code), None) => format!("exit status {code}"),
            (None, None) => String::from("no exit status"),
        };
        let mut line = match self.cause {
            ExitCause::Exited => format!("job ended: {how}"),
            ExitCause::Walltime => format!(
                "job exceeded its wall time {}; {how}",
                crate::time::format_hms(walltime)
            ),
            ExitCause::Deleted => format!("job deleted while running; {how}"),
            ExitCause::LaunchFailed => String::from("job could not be started"),
            ExitCause::Lost => String::from("job lost"),
            ExitCause::Memory => format!("job exceeded its memory limit; {how}"),
            ExitCause::CpuTime => format!("job exceeded its CPU time limit; {how}"),
        };
        if !self.message.is_empty() {
            line.push_str(": ");
            line.push_str(&self.message);
        }
        line
    }
}

/// What the launch needs and the scheduler does not: kept out of [`Job`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobPayload {
    #[serde(with = "script_text")]
    pub script: Vec<u8>,
    pub env: Vec<(String, String)>,
}

/// Scripts are nearly always text; store them readably, and bytes otherwise.
mod script_text {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    enum Repr {
        Text(String),
        Bytes(Vec<u8>),
    }

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(bytes) {
            Ok(text) => Repr::Text(text.to_string()).serialize(s),
            Err(_) => Repr::Bytes(bytes.to_vec()).serialize(s),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        Ok(match Repr::deserialize(d)? {
            Repr::Text(text) => text.into_bytes(),
            Repr::Bytes(bytes) => bytes,
        })
    }
}

/// A job as the server keeps it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    pub id: JobId,
    pub name: String,
    pub owner: Owner,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    pub queue: String,
    pub nodes: u32,
    /// Seconds.
    pub walltime: u64,
    /// The run time (seconds) predicted at submission from its owner's
    /// last jobs (`predict.rs`); `None` when the owner had none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_run: Option<u64>,
    /// Bytes per node, if asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem: Option<u64>,
    /// CPUs per node, if asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ncpus: Option<u32>,
    /// Features every node must have, if asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub features: Vec<String>,
    /// GPUs per node, if asked for (`ngpus`, Torque's `gpus=`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus: Option<u32>,
    /// The site's host-level resources it needs of every node
    /// (`select=1:scratch=100gb`, `-l model=skylake`; `node_resources.rs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_resources: Vec<crate::site_resources::HostResource>,
    /// Its chunks and `place=`, when it asked for more than a number of
    /// nodes: what each node's share is, and which nodes may serve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<Box<Layout>>,
    /// What it asked for, as PBS shows it (`Resource_List.select`, ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resource_list: BTreeMap<String, String>,
    /// `qsub -p`: its priority among the jobs of its queue, -1024..1023.
    #[serde(default, skip_serializing_if = "is_zero_i32")]
    pub priority: i32,
    /// `qsub -P`: the project it belongs to (PBS Pro).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// The rest of what qsub's PBS options asked of its run.
    #[serde(default, skip_serializing_if = "Options::is_default")]
    pub options: Options,
    /// The queue it was submitted to, when a route queue sent it on
    /// (`PBS_O_QUEUE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submit_queue: Option<String>,
    /// Its process group while it runs (PBS `session_id`), as its agent
    /// reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<i32>,
    /// What it has used so far in this run, as its agent last measured it
    /// (heartbeats; kept in memory only, like `session_id`).
    #[serde(skip)]
    pub used_so_far: Option<UsedSoFar>,
    pub workdir: String,
    pub stdout_path: String,
    pub stderr_path: String,
    #[serde(default, skip_serializing_if = "is_false")]
    pub join_output: bool,
    #[serde(default = "yes")]
    pub rerunnable: bool,
    #[serde(default)]
    pub submit_host: String,
    #[serde(default, skip_serializing_if = "no_holds")]
    pub holds: Holds,
    pub state: JobState,
    /// When it was queued.
    pub qtime: Time,
    /// When it last changed.
    pub mtime: Time,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stime: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<Time>,
    /// What of this run was spent suspended (`qsig -s suspend`).
    #[serde(default, skip_serializing_if = "Suspension::is_none")]
    pub suspension: Suspension,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exec_nodes: Vec<crate::node::NodeName>,
    /// How its node set's topology placed it: mesh blocks, a subtorus.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placement: Vec<qmesh_alloc::Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<JobExit>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub run_count: u32,
    /// The last thing that happened to it, in words (PBS `comment`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub comment: String,
    /// The jobs it waits for (`qsub -W depend=`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depend: Vec<Dependency>,
    /// The jobs it made wait for it (`-W depend=beforeok:ID`): each gained
    /// the `after*` dependency kept here, naming the job it waits on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub before: Vec<Dependency>,
    /// `-W depend=on:N`: how many more jobs must still name it in a
    /// `before*` dependency before it may start.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub depend_on: u32,
    /// Whether any one dependency will do, and Slurm's `singleton`.
    #[serde(default, skip_serializing_if = "crate::depend::DependHow::is_plain")]
    pub depend_how: crate::depend::DependHow,
    /// Not to start before this (`qsub -a`, PBS `Execution_Time`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_after: Option<Time>,
    /// Its place in its queue when the queue was reordered (EPCC's group
    /// cascade); `None`: its id, so submission order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u64>,
    /// Set when the server ends it because its queue's period ended (or
    /// its node set left the queue's group): what happens when it is gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period_stop: Option<PeriodStop>,
    /// An array's index list and what became of its sub-jobs (`array.rs`);
    /// `None` for a plain job and for a sub-job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub array: Option<Box<crate::array::JobArray>>,
    /// The id the submitting client gave this submission (qsub makes a
    /// random one): a submission sent again with it (a retry across a
    /// failover) is answered with this job instead of making another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submission_id: Option<String>,
}

/// The time a run spent suspended: its wall time, its charge and its
/// planned end leave it out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Suspension {
    /// Seconds of suspensions that have ended.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub secs: u64,
    /// When the suspension under way began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<Time>,
    /// Suspended by preemption: its nodes are lent to this job, and it
    /// holds none until they are all free again (`preempt.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lent_to: Option<JobId>,
}

impl Suspension {
    fn is_none(&self) -> bool {
        *self == Suspension::default()
    }

    /// Seconds suspended up to `now`.
    pub fn secs_at(&self, now: Time) -> u64 {
        let current = self
            .since
            .map_or(0, |since| (now - since).num_seconds().max(0) as u64);
        self.secs.saturating_add(current)
    }

    /// Ends the suspension under way at `now`, if any (and the lending
    /// of its nodes).
    pub fn end(&mut self, now: Time) {
        self.secs = self.secs_at(now);
        self.since = None;
        self.lent_to = None;
    }
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

/// A running job being ended at a period's end.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeriodStop {
    /// What ended it, as a noun phrase: `the end of period "DAY"`.
    pub what: String,
    /// Queued again once it is gone (else it is finished).
    pub requeue: bool,
    /// Ended by preemption: the job that preempted it, which waits until
    /// it is gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preempted_by: Option<JobId>,
    /// Requeued with a user hold (`scontrol requeuehold`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hold: bool,
}

fn yes() -> bool {
    true
}

// Defaults are not written: a new job's record is a third smaller, and the
// store copies every byte of it.
fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_zero_i32(n: &i32) -> bool {
    *n == 0
}

fn no_holds(h: &Holds) -> bool {
    !h.any()
}

impl Job {
    /// What it needs of each node: only sets that have it may run it.
    pub fn needs(&self) -> crate::node::NodeNeeds<'_> {
        crate::node::NodeNeeds {
            mem: self.mem,
            cpus: self.ncpus,
            gpus: self.gpus,
            features: &self.features,
            resources: &self.node_resources,
        }
    }

    /// Whether a node must have room for it beyond a job slot: it uses
    /// GPUs, or a resource consumed per node (flags `n`, `f`), which the
    /// jobs of a shared node share without overlap.
    pub fn consumes_on_nodes(&self) -> bool {
        self.gpus.is_some_and(|g| g > 0)
            || self
                .node_resources
                .iter()
                .any(|r| r.consumed != crate::site_resources::Consumed::No)
    }

    /// Whether it asked to be alone on its nodes (`place=excl`), which
    /// matters on shared node sets.
    pub fn wants_sole_nodes(&self) -> bool {
        self.layout.as_ref().is_some_and(|l| l.place.exclusive())
    }

    /// Seconds it has run since it started (for active jobs), or that it
    /// ran: its wall time, without the time it was suspended.
    pub fn elapsed(&self, now: Time) -> Option<u64> {
        let start = self.stime?;
        let end = self.end_time.unwrap_or(now);
        let span = (end - start).num_seconds().max(0) as u64;
        Some(span.saturating_sub(self.suspension.secs_at(end)))
    }

    /// The whole seconds of wall clock from its start's second to `end`'s
    /// (as qstat shows `stime` and the end), less the time it was
    /// suspended: what its account is charged for.
    pub fn charged_seconds(&self, end: Time) -> u64 {
        let Some(start) = self.stime else {
            return 0;
        };
        let span = (end.timestamp() - start.timestamp()).max(0) as u64;
        span.saturating_sub(self.suspension.secs_at(end))
    }

    /// Its id as users see it: `17.server`, `12[].server` for an array,
    /// `12[3].server` for a sub-job.
    pub fn full_id(&self, server: &str) -> String {
        if self.array.is_some() {
            format!("{}[].{server}", self.id)
        } else {
            self.id.full(server)
        }
    }

    /// The letter qstat shows: an array some of whose sub-jobs started is
    /// `B` while others still wait.
    pub fn state_letter(&self) -> char {
        match &self.array {
            Some(a) if self.state.is_pending() && a.tally.begun > 0 => 'B',
            _ => self.state.letter(),
        }
    }

    /// The state it has when not running: held if any hold is set.
    pub(crate) fn pending_state(&self) -> JobState {
        if self.holds.any() {
            JobState::Held
        } else {
            JobState::Queued
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_ids_parse_with_and_without_the_server() {
        assert_eq!(JobId::parse("17", "sp").unwrap(), JobId(17));
        assert_eq!(JobId::parse("17.sp", "sp").unwrap(), JobId(17));
        assert_eq!(JobId::parse("17.sp", "sp.example.org").unwrap(), JobId(17));
        assert_eq!(JobId::parse("17.sp.example.org", "sp").unwrap(), JobId(17));
        assert!(matches!(
            JobId::parse("17.other", "sp"),
            Err(CoreError::NoSuchJob { .. })
        ));
        for bad in ["", "abc", "-1", ".sp", "1x.sp"] {
            assert!(
                matches!(JobId::parse(bad, "sp"), Err(CoreError::BadJobId { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn exit_status_follows_pbs() {
        let exit = |code, signal, cause| JobExit {
            code,
            signal,
            cause,
            message: String::new(),
            cput: None,
            max_rss: None,
            vmem: None,
        };
        assert_eq!(exit(Some(3), None, ExitCause::Exited).exit_status(), 3);
        assert_eq!(exit(None, Some(15), ExitCause::Walltime).exit_status(), 271);
        assert_eq!(exit(None, None, ExitCause::LaunchFailed).exit_status(), -1);
        assert_eq!(exit(None, None, ExitCause::Lost).exit_status(), -2);
    }

    #[test]
    fn binary_scripts_survive_the_round_trip() {
        let payload = JobPayload {
            script: vec![0xff, 0xfe, b'\n'],
            env: vec![],
        };
        let json = serde_json::to_string(&payload).unwrap();
        assert_eq!(serde_json::from_str::<JobPayload>(&json).unwrap(), payload);
        let text = JobPayload {
            script: b"#!/bin/sh\necho hi\n".to_vec(),
            env: vec![("A".into(), "1".into())],
        };
        let json = serde_json::to_string(&text).unwrap();
        assert!(json.contains("echo hi"));
        assert_eq!(serde_json::from_str::<JobPayload>(&json).unwrap(), text);
    }
}
