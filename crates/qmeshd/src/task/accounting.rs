//! The daemon's half of sacct: the jobs of a time window, one entry per
//! job, from two sources. The accounting log (`server_priv/accounting`,
//! folded per job in `fold.rs`) has every job that was queued, ran or
//! ended, as long as the site keeps the files; the state has the jobs the
//! daemon still holds (those not finished, and the finished ones of the
//! history), and knows more of them than the records say: the live state
//! of a pending or running job, and why a finished one ended (its wall
//! time, its memory, a lost node), where the `E` record has only the
//! exit status. So a job the state holds is shown as the state has it,
//! with the log's word on who deleted it and how often it was requeued;
//! a job the state no longer holds, as its records say.
//!
//! Rights: a user sees their own jobs; operators and managers everyone's;
//! a user who asks for others' (`-a`, `-u`) sees them while the server's
//! `query_other_jobs` is true (qstat's rule, and Slurm's without
//! `PrivateData=jobs`), else only their own, as Slurm with it.
//!
//! The files are read on a thread of its own, once the log's writer has
//! written what was queued before the request (as tracejob's, `trace.rs`):
//! the task never waits for the disk. Only the days that can hold the
//! jobs asked for are read: from the window's first day, or from the day
//! the oldest job named was queued when the state still holds them all.

mod fold;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{Local, NaiveDate, TimeZone};
use qmesh_core::joblog;
use qmesh_core::{Caller, Job, Role};
use qmesh_proto::v1;
use qmesh_store::Store;

use super::SchedulerTask;
use crate::convert;
use crate::dispatch::Now;
use crate::error::TaskError;
use crate::event::Reply;
use crate::identity::Peer;

/// A job named to sacct: its number, and the sub-job's index if one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Named {
    seq: u64,
    index: Option<u32>,
}

impl Named {
    /// `12` or `12[3]` (with or without `.server`).
    fn parse(text: &str) -> Result<Named, TaskError> {
        let bad = || {
            TaskError::Invalid(format!(
                "\"{text}\" is not a job id; write a number (12) or an array's task (12[3])"
            ))
        };
        let short = text.trim().split('.').next().unwrap_or_default();
        let (number, index) = match short.split_once('[') {
            Some((n, rest)) => {
                let i = rest.strip_suffix(']').ok_or_else(bad)?;
                (n, Some(i.parse::<u32>().map_err(|_| bad())?))
            }
            None => (short, None),
        };
        Ok(Named {
            seq: number.parse().map_err(|_| bad())?,
            index,
        })
    }

    /// Whether it names the entry: the job itself, or (a plain number)
    /// every sub-job of that array.
    fn names(&self, entry: &v1::AccountedJob) -> bool {
        let (seq, index) = entry_id(entry);
        seq == self.seq && (self.index.is_none() || self.index == index)
    }
}

/// An entry's number and sub-job index, from its id (`13[4].srv`).
fn entry_id(entry: &v1::AccountedJob) -> (u64, Option<u32>) {
    let short = entry.id.split('.').next().unwrap_or_default();
    let number = short.split('[').next().unwrap_or_default();
    (number.parse().unwrap_or(0), entry.array_index)
}

/// What is asked, checked.
struct Query {
    named: Vec<Named>,
    /// `None`: every user's jobs.
    users: Option<Vec<String>>,
    start: i64,
    end: i64,
}

impl Query {
    fn new(
        request: &v1::AccountingRequest,
        caller: &Caller,
        others: bool,
    ) -> Result<Query, TaskError> {
        let named = request
            .job_ids
            .iter()
            .filter(|t| !t.trim().is_empty())
            .map(|t| Named::parse(t))
            .collect::<Result<Vec<_>, _>>()?;
        let privileged = caller.role >= Role::Operator;
        let asked: Vec<String> = request
            .users
            .iter()
            .map(|u| u.trim().to_string())
            .filter(|u| !u.is_empty())
            .collect();
        let users = if !privileged && !others {
            // query_other_jobs = False: only the caller's own, whatever
            // was asked (Slurm's PrivateData=jobs).
            Some(vec![caller.user.clone()])
        } else if !asked.is_empty() {
            Some(asked)
        } else if request.all_users || privileged || !named.is_empty() {
            None
        } else {
            Some(vec![caller.user.clone()])
        };
        Ok(Query {
            named,
            users,
            start: request.start,
            end: request.end,
        })
    }

    fn wants(&self, entry: &v1::AccountedJob) -> bool {
        let user_ok = match &self.users {
            None => true,
            Some(users) => users.contains(&entry.user),
        };
        let named_ok = self.named.is_empty() || self.named.iter().any(|n| n.names(entry));
        user_ok && named_ok && self.in_window(entry)
    }

    /// Pending, running or ended at some time of `[start, end]`. A held
    /// job is not eligible, so in no window (Slurm's rule: only `-j`
    /// shows it).
    fn in_window(&self, entry: &v1::AccountedJob) -> bool {
        if entry.state == "H" && self.named.is_empty() {
            return false;
        }
        let since = entry.eligible.max(entry.submit);
        let began_in_time = self.end <= 0 || since == 0 || since <= self.end;
        let not_over_before = self.start <= 0 || entry.end == 0 || entry.end >= self.start;
        began_in_time && not_over_before
    }
}

impl SchedulerTask {
    pub(super) fn accounting(
        &mut self,
        peer: &Peer,
        request: v1::AccountingRequest,
        reply: Reply<v1::AccountingReply>,
        now: Now,
    ) {
        let caller = self.caller(peer);
        let others = self.state.config().server.query_other_jobs;
        let query = match Query::new(&request, &caller, others) {
            Ok(q) => q,
            Err(e) => {
                let _ = reply.send(Err(e));
                return;
            }
        };
        let server = self.state.server_name().to_string();
        let live = self.live_entries(&query, now);
        let answer = move |jobs: Vec<v1::AccountedJob>| v1::AccountingReply {
            jobs,
            server,
            server_time: now.wall.timestamp(),
        };
        let Some((accounting_dir, _)) = self.logs.writer().dirs() else {
            let _ = reply.send(Ok(answer(live.into_values().collect())));
            return;
        };
        let today = now.wall.with_timezone(&Local).date_naive();
        let first_day = self.first_day(&query);
        let records = self.logs.writer().records();
        let (marker_tx, marker) = std::sync::mpsc::channel();
        self.durability.store().on_durable(Box::new(move |_| {
            let _ = marker_tx.send(records.flushed());
        }));
        // Read on a thread of its own: the task never waits for the disk.
        let reader = move || {
            if let Ok(flushed) = marker.recv_timeout(Duration::from_secs(10)) {
                let _ = flushed.recv_timeout(Duration::from_secs(10));
            }
            let result = read_days(&accounting_dir, first_day, today)
                .map(|logged| answer(merge(live, logged, &query)));
            let _ = reply.send(result);
        };
        if let Err(e) = std::thread::Builder::new()
            .name("qmeshd-sacct".into())
            .spawn(reader)
        {
            tracing::error!(error = %e, "could not start a thread to read the accounting log");
        }
    }

    /// The jobs the state holds that the query wants, by full id: each
    /// job and sub-job (those left to start too), not the arrays' own
    /// records.
    fn live_entries(&self, query: &Query, now: Now) -> BTreeMap<String, v1::AccountedJob> {
        let mut out = BTreeMap::new();
        let server = self.state.server_name();
        let mut add = |job: &Job| {
            // Cheap refusals first: a listing of a big history builds
            // entries only for the jobs it may show.
            let named = query.named.is_empty() || query.named.iter().any(|n| n.seq == job.id.seq());
            let owned = query
                .users
                .as_ref()
                .is_none_or(|users| users.contains(&job.owner.user));
            if !named || !owned {
                return;
            }
            let reason = job
                .state
                .is_pending()
                .then(|| self.pending_reason(job, now.wall));
            let entry = live_entry(job, server, reason.map(|r| r.as_str()), now.wall);
            if query.wants(&entry) {
                out.insert(entry.id.clone(), entry);
            }
        };
        for job in self.state.jobs() {
            if job.array.is_none() {
                add(job);
                continue;
            }
            for (index, record) in self.state.sub_jobs(job.id) {
                if record.is_none()
                    && let Some(view) = self.state.unstarted_view(job.id.sub_job(index))
                {
                    add(&view);
                }
            }
        }
        out
    }

    /// The first day of the log to read: the window's, or with jobs named
    /// and all held by the state, the day the oldest of them was queued;
    /// `None`: every day there is.
    fn first_day(&self, query: &Query) -> Option<NaiveDate> {
        let day = |secs: i64| {
            Local
                .timestamp_opt(secs, 0)
                .earliest()
                .map(|t| t.date_naive())
        };
        if !query.named.is_empty() {
            // A job (or an array) the state holds was queued at its qtime:
            // its records are all from that day on.
            let queued: Option<Vec<i64>> = query
                .named
                .iter()
                .map(|n| {
                    self.state
                        .job(qmesh_core::JobId(n.seq))
                        .map(|j| j.qtime.timestamp())
                })
                .collect();
            return queued.and_then(|q| q.into_iter().min()).and_then(day);
        }
        if query.start > 0 {
            day(query.start)
        } else {
            None
        }
    }
}

/// A job the state holds, as sacct reads it.
fn live_entry(
    job: &Job,
    server: &str,
    reason: Option<&str>,
    now: qmesh_core::Time,
) -> v1::AccountedJob {
    let brief = convert::job_brief(job, server, reason, now);
    let exit = job.exit.as_ref();
    let running = !job.exec_nodes.is_empty();
    let ncpus: u32 = job.node_shares().iter().map(|s| s.cpus).sum();
    let eligible = job.start_after.map_or(job.qtime, |a| a.max(job.qtime));
    v1::AccountedJob {
        id: brief.id,
        name: job.name.clone(),
        user: job.owner.user.clone(),
        group: job.owner.group.clone(),
        uid: Some(job.owner.uid),
        gid: Some(job.owner.gid),
        account: job.account.clone().unwrap_or_default(),
        queue: job.queue.clone(),
        submit: job.qtime.timestamp(),
        eligible: eligible.timestamp(),
        start: convert::unix(job.stime),
        end: convert::unix(job.end_time),
        state: brief.state_letter,
        exit_status: exit.map(|e| e.exit_status()),
        exit_cause: exit
            .map(|e| cause_word(e.cause))
            .unwrap_or_default()
            .to_string(),
        deleted_by: String::new(),
        requeues: 0,
        earlier_runs: Vec::new(),
        ncpus,
        nodes: if running {
            job.exec_nodes.len() as u32
        } else {
            job.nodes
        },
        exec_nodes: job.exec_nodes.iter().map(|n| n.to_string()).collect(),
        walltime: job.walltime,
        used_walltime: job.elapsed(now).unwrap_or(0),
        cput: exit
            .and_then(|e| e.cput)
            .or(job.used_so_far.and_then(|u| u.cput)),
        max_rss: exit
            .and_then(|e| e.max_rss)
            .or(job.used_so_far.and_then(|u| u.mem)),
        workdir: job.workdir.clone(),
        comment: job.comment.clone(),
        reason: reason.unwrap_or_default().to_string(),
        priority: job.priority,
        resource_list: job.shown_resource_list().into_iter().collect(),
        array_index: job.id.array_index(),
        array_job: job.id.array_parent().map_or(0, |p| p.seq()),
    }
}

/// The words of `AccountedJob.exit_cause`.
fn cause_word(cause: qmesh_core::job::ExitCause) -> &'static str {
    use qmesh_core::job::ExitCause;
    match cause {
        ExitCause::Exited => "exited",
        ExitCause::Walltime => "walltime",
        ExitCause::Deleted => "deleted",
        ExitCause::LaunchFailed => "launch_failed",
        ExitCause::Lost => "lost",
        ExitCause::Memory => "memory",
        ExitCause::CpuTime => "cpu_time",
    }
}

/// The accounting log's days from `first` (every day when `None`) to
/// `last`, folded per job.
fn read_days(
    dir: &Path,
    first: Option<NaiveDate>,
    last: NaiveDate,
) -> Result<BTreeMap<String, v1::AccountedJob>, TaskError> {
    let listed: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries.flatten().map(|e| e.path()).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => {
            return Err(TaskError::Unavailable(format!(
                "cannot list the accounting log {}: {e}",
                dir.display()
            )));
        }
    };
    let mut lines = Vec::new();
    for (_, path) in joblog::day_files(listed, first, Some(last)) {
        let text = std::fs::read_to_string(&path).map_err(|e| {
            TaskError::Unavailable(format!(
                "cannot read the accounting log {}: {e}",
                path.display()
            ))
        })?;
        lines.extend(text.lines().filter_map(joblog::parse_accounting_line));
    }
    Ok(fold::fold(lines, |at| {
        Local
            .from_local_datetime(&at)
            .earliest()
            .map_or(0, |t| t.timestamp())
    }))
}

/// The state's entries, with the log's word on deletions and requeues,
/// then the log's jobs the state no longer holds; in id order.
fn merge(
    mut live: BTreeMap<String, v1::AccountedJob>,
    logged: BTreeMap<String, v1::AccountedJob>,
    query: &Query,
) -> Vec<v1::AccountedJob> {
    for (id, entry) in logged {
        match live.get_mut(&id) {
            Some(held) => {
                held.deleted_by = entry.deleted_by;
                held.requeues = entry.requeues;
                held.earlier_runs = entry.earlier_runs;
            }
            None if query.wants(&entry) => {
                live.insert(id, entry);
            }
            None => {}
        }
    }
    let mut jobs: Vec<v1::AccountedJob> = live.into_values().collect();
    jobs.sort_by_key(|e| {
        let (seq, index) = entry_id(e);
        (seq, index)
    });
    jobs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, user: &str, submit: i64, end: i64) -> v1::AccountedJob {
        let short = id.split('.').next().unwrap_or_default();
        let index = short
            .split_once('[')
            .and_then(|(_, r)| r.trim_end_matches(']').parse().ok());
        v1::AccountedJob {
            id: id.into(),
            user: user.into(),
            submit,
            end,
            array_index: index,
            ..v1::AccountedJob::default()
        }
    }

    fn query(named: &[&str], users: Option<&[&str]>, start: i64, end: i64) -> Query {
        Query {
            named: named.iter().map(|n| Named::parse(n).unwrap()).collect(),
            users: users.map(|u| u.iter().map(|s| s.to_string()).collect()),
            start,
            end,
        }
    }

    #[test]
    fn ids_name_a_job_or_every_task_of_an_array() {
        let q = query(&["12", "13[2]"], None, 0, 0);
        assert!(q.wants(&entry("12.srv", "a", 1, 0)));
        assert!(
            q.wants(&entry("12[5].srv", "a", 1, 0)),
            "12: the array's tasks"
        );
        assert!(q.wants(&entry("13[2].srv", "a", 1, 0)));
        assert!(!q.wants(&entry("13[3].srv", "a", 1, 0)));
        assert!(!q.wants(&entry("14.srv", "a", 1, 0)));
        assert!(Named::parse("12.srv").is_ok());
        for bad in ["x", "12[", "12[a]", ""] {
            let err = Named::parse(bad).unwrap_err().to_string();
            assert!(err.contains("is not a job id; write a number"), "{err}");
        }
    }

    #[test]
    fn the_window_keeps_jobs_pending_running_or_ended_within_it() {
        let q = query(&[], None, 100, 200);
        assert!(q.wants(&entry("1.s", "a", 50, 150)), "ended inside");
        assert!(q.wants(&entry("2.s", "a", 50, 0)), "still going");
        assert!(q.wants(&entry("3.s", "a", 150, 300)), "began inside");
        assert!(!q.wants(&entry("4.s", "a", 10, 90)), "over before");
        assert!(!q.wants(&entry("5.s", "a", 250, 0)), "submitted after");
        let mut held = entry("6.s", "a", 50, 0);
        held.state = "H".into();
        assert!(!q.wants(&held), "never eligible");
        assert!(query(&["6"], None, 0, 0).wants(&held), "unless named");
    }

    #[test]
    fn users_see_their_own_unless_others_may_be_seen() {
        let caller = |role| Caller {
            uid: 1000,
            gid: 1000,
            user: "alice".into(),
            group: "staff".into(),
            role,
        };
        let all = v1::AccountingRequest {
            all_users: true,
            ..Default::default()
        };
        let plain = v1::AccountingRequest::default();
        let users = |r: &v1::AccountingRequest, role, others| {
            Query::new(r, &caller(role), others).unwrap().users
        };
        assert_eq!(users(&plain, Role::User, true), Some(vec!["alice".into()]));
        assert_eq!(users(&all, Role::User, true), None);
        assert_eq!(
            users(&all, Role::User, false),
            Some(vec!["alice".into()]),
            "query_other_jobs = False: only their own"
        );
        assert_eq!(users(&plain, Role::Manager, false), None);
        let bob = v1::AccountingRequest {
            users: vec!["bob".into()],
            ..Default::default()
        };
        assert_eq!(users(&bob, Role::User, true), Some(vec!["bob".into()]));
    }

    #[test]
    fn the_state_wins_and_keeps_the_logs_deleter_and_requeues() {
        let mut held = entry("7.srv", "a", 1, 0);
        held.state = "R".into();
        let live = BTreeMap::from([(held.id.clone(), held)]);
        let mut logged_7 = entry("7.srv", "a", 1, 0);
        logged_7.state = "Q".into();
        logged_7.requeues = 2;
        logged_7.deleted_by = "root@h".into();
        let logged = BTreeMap::from([
            ("7.srv".to_string(), logged_7),
            ("3.srv".to_string(), entry("3.srv", "a", 1, 5)),
            ("4.srv".to_string(), entry("4.srv", "b", 1, 5)),
        ]);
        let jobs = merge(live, logged, &query(&[], Some(&["a"]), 0, 0));
        let ids: Vec<&str> = jobs.iter().map(|j| j.id.as_str()).collect();
        assert_eq!(ids, ["3.srv", "7.srv"], "in id order, b's left out");
        assert_eq!(jobs[1].state, "R");
        assert_eq!(
            (jobs[1].requeues, jobs[1].deleted_by.as_str()),
            (2, "root@h")
        );
    }
}
