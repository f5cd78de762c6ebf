//! PBS's two logs of what happens to jobs, as text: the accounting log
//! (`server_priv/accounting/YYYYMMDD`, one record per line) and the
//! server's event log (`server_logs/YYYYMMDD`). Sites have tools that read
//! the first (usage reports, `pbsacct`); `tracejob` reads both.
//!
//! An accounting record is `MM/DD/YYYY HH:MM:SS;TYPE;ID;key=value ...`,
//! with PBS Pro's types and keys (read from its `accounting.c`): `Q`
//! queued, `S` started, `E` ended, `D` deleted (`requestor=user@host`),
//! `R` rerun (requeued after running), `A` aborted by the server (words),
//! `z` suspended and `r` resumed (`requestor=`, the wall time so far),
//! `a` altered, `M` moved to another server (qmesh has one server: never
//! written). `E` and `R` carry the job's `session`, `end`, `Exit_status`,
//! `resources_used.*` and `run_count`. Times in the keys are Unix seconds;
//! the line's own time is the server's local time, as PBS writes it.
//!
//! A server event is `MM/DD/YYYY HH:MM:SS;CODE;Server@HOST;Job;ID;words`,
//! CODE being PBS's event class in hex (`0008` job, `0010` job usage,
//! `0004` admin...), which `tracejob -f` filters on.
//!
//! Everything here is text in, text out: the daemon writes the lines and
//! reads them back (`qmeshd/src/joblog.rs`, `task/trace.rs`).

use chrono::NaiveDateTime;

use crate::job::Job;
use crate::time::format_hms;

/// The accounting record types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecordType {
    Queued,
    Started,
    Ended,
    Deleted,
    Rerun,
    Aborted,
    Altered,
    Moved,
    /// `H`: a hold was set (PBS Pro).
    Held,
    /// `RL`: holds were released (PBS Pro).
    Released,
    /// `z`: suspended (PBS Pro).
    Suspended,
    /// `r`: resumed after a suspension (PBS Pro).
    Resumed,
}

impl RecordType {
    pub const ALL: [RecordType; 12] = [
        RecordType::Queued,
        RecordType::Started,
        RecordType::Ended,
        RecordType::Deleted,
        RecordType::Rerun,
        RecordType::Aborted,
        RecordType::Altered,
        RecordType::Moved,
        RecordType::Held,
        RecordType::Released,
        RecordType::Suspended,
        RecordType::Resumed,
    ];

    /// The record's type as PBS writes it (one letter, or `RL`).
    pub fn code(self) -> &'static str {
        match self {
            RecordType::Queued => "Q",
            RecordType::Started => "S",
            RecordType::Ended => "E",
            RecordType::Deleted => "D",
            RecordType::Rerun => "R",
            RecordType::Aborted => "A",
            RecordType::Altered => "a",
            RecordType::Moved => "M",
            RecordType::Held => "H",
            RecordType::Released => "RL",
            RecordType::Suspended => "z",
            RecordType::Resumed => "r",
        }
    }

    pub fn from_code(code: &str) -> Option<RecordType> {
        RecordType::ALL.into_iter().find(|t| t.code() == code)
    }
}

/// PBS's classes of server events (`log.h`), by which `tracejob -f`
/// leaves lines out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventClass {
    Error,
    System,
    Admin,
    Job,
    JobUsage,
    Security,
    Sched,
    Debug,
}

impl EventClass {
    pub const ALL: [EventClass; 8] = [
        EventClass::Error,
        EventClass::System,
        EventClass::Admin,
        EventClass::Job,
        EventClass::JobUsage,
        EventClass::Security,
        EventClass::Sched,
        EventClass::Debug,
    ];

    /// The bit PBS writes (as four hex digits) in the second field.
    pub fn code(self) -> u32 {
        match self {
            EventClass::Error => 0x0001,
            EventClass::System => 0x0002,
            EventClass::Admin => 0x0004,
            EventClass::Job => 0x0008,
            EventClass::JobUsage => 0x0010,
            EventClass::Security => 0x0020,
            EventClass::Sched => 0x0040,
            EventClass::Debug => 0x0080,
        }
    }

    /// The name `tracejob -f` takes.
    pub fn name(self) -> &'static str {
        match self {
            EventClass::Error => "error",
            EventClass::System => "system",
            EventClass::Admin => "admin",
            EventClass::Job => "job",
            EventClass::JobUsage => "job_usage",
            EventClass::Security => "security",
            EventClass::Sched => "sched",
            EventClass::Debug => "debug",
        }
    }
}

/// `tracejob -f NAME`'s mask: a class name, PBS's other names (debug2,
/// resv, debug3, debug4, force), or a hex mask.
pub fn filter_mask(name: &str) -> Result<u32, String> {
    let extra = [
        ("debug2", 0x0100),
        ("resv", 0x0200),
        ("debug3", 0x0400),
        ("debug4", 0x0800),
        ("force", 0x8000),
    ];
    if let Some(class) = EventClass::ALL.iter().find(|c| c.name() == name) {
        return Ok(class.code());
    }
    if let Some((_, code)) = extra.iter().find(|(n, _)| *n == name) {
        return Ok(*code);
    }
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        let hex = name.trim_start_matches("0x");
        return u32::from_str_radix(hex, 16)
            .map_err(|_| format!("bad filter \"{name}\": a number is a hex mask, e.g. 0008"));
    }
    let names: Vec<&str> = EventClass::ALL
        .iter()
        .map(|c| c.name())
        .chain(extra.iter().map(|(n, _)| *n))
        .collect();
    Err(format!(
        "bad filter \"{name}\"; write one of {} or a hex mask",
        names.join(", ")
    ))
}

/// The date PBS writes at the head of every line: `MM/DD/YYYY HH:MM:SS`.
pub fn format_date(at: NaiveDateTime) -> String {
    at.format("%m/%d/%Y %H:%M:%S").to_string()
}

fn parse_date(text: &str) -> Option<NaiveDateTime> {
    NaiveDateTime::parse_from_str(text, "%m/%d/%Y %H:%M:%S").ok()
}

/// The file a day's lines go to: `YYYYMMDD`.
pub fn file_name(day: chrono::NaiveDate) -> String {
    day.format("%Y%m%d").to_string()
}

/// The day a log file's name says (`YYYYMMDD`), for the files of a log
/// directory; `None` for any other name.
pub fn file_day(name: &str) -> Option<chrono::NaiveDate> {
    chrono::NaiveDate::parse_from_str(name, "%Y%m%d").ok()
}

/// Of a log directory's files, as the caller listed them (the core reads
/// no directory), those named for a day from `from` to `to` (both
/// included; every day when not given), in day order. The daemon, qreport
/// and the simulator read their logs' days through it.
pub fn day_files(
    paths: impl IntoIterator<Item = std::path::PathBuf>,
    from: Option<chrono::NaiveDate>,
    to: Option<chrono::NaiveDate>,
) -> Vec<(chrono::NaiveDate, std::path::PathBuf)> {
    let mut days: Vec<(chrono::NaiveDate, std::path::PathBuf)> = paths
        .into_iter()
        .filter_map(|path| Some((file_day(path.file_name()?.to_str()?)?, path)))
        .filter(|(day, _)| from.is_none_or(|f| *day >= f) && to.is_none_or(|t| *day <= t))
        .collect();
    days.sort();
    days
}

/// One accounting line (without its newline). A newline in `text` would
/// split the record: it is written as a space.
pub fn accounting_line(at: NaiveDateTime, kind: RecordType, id: &str, text: &str) -> String {
    format!(
        "{};{};{id};{}",
        format_date(at),
        kind.code(),
        one_line(text)
    )
}

/// One server event line (without its newline).
pub fn event_line(
    at: NaiveDateTime,
    class: EventClass,
    server: &str,
    id: &str,
    text: &str,
) -> String {
    format!(
        "{};{:04x};Server@{server};Job;{id};{}",
        format_date(at),
        class.code(),
        one_line(text)
    )
}

fn one_line(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
}

/// A line of either log, read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogLine {
    /// As written: `MM/DD/YYYY HH:MM:SS`.
    pub date: String,
    pub time: NaiveDateTime,
    /// The job's (or object's) id.
    pub id: String,
    /// What `tracejob` shows after the date and source letter.
    pub message: String,
    pub kind: LineKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineKind {
    /// An accounting record of this type.
    Record(RecordType),
    /// A server event with this class code.
    Event(u32),
}

/// Reads an accounting line; `None` for anything else.
pub fn parse_accounting_line(line: &str) -> Option<LogLine> {
    let mut fields = line.splitn(4, ';');
    let date = fields.next()?;
    let kind = RecordType::from_code(fields.next()?)?;
    let id = fields.next()?;
    let message = fields.next().unwrap_or("");
    Some(LogLine {
        date: date.to_string(),
        time: parse_date(date)?,
        id: id.to_string(),
        message: message.to_string(),
        kind: LineKind::Record(kind),
    })
}

/// A record's `key=value` words, in order; a value may be double-quoted
/// with spaces inside (`jobname="two words"`), as `quoted` writes it.
pub fn record_keys(message: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    for c in message.chars().chain(std::iter::once(' ')) {
        match c {
            '"' => quoted = !quoted,
            ' ' if !quoted => {
                if let Some((k, v)) = word.split_once('=') {
                    out.push((k.to_string(), v.to_string()));
                }
                word.clear();
            }
            _ => word.push(c),
        }
    }
    out
}

/// Reads a server event line; `None` for anything else.
pub fn parse_event_line(line: &str) -> Option<LogLine> {
    let mut fields = line.splitn(6, ';');
    let date = fields.next()?;
    let code = u32::from_str_radix(fields.next()?, 16).ok()?;
    let _object = fields.next()?;
    let _object_type = fields.next()?;
    let id = fields.next()?;
    let message = fields.next().unwrap_or("");
    Some(LogLine {
        date: date.to_string(),
        time: parse_date(date)?,
        id: id.to_string(),
        message: message.to_string(),
        kind: LineKind::Event(code),
    })
}

/// A value as PBS writes it in a record: quoted when it holds a space
/// (with `'` if it holds a `"`).
fn quoted(value: &str) -> String {
    if !value.contains(' ') {
        value.to_string()
    } else if value.contains('"') {
        format!("'{value}'")
    } else {
        format!("\"{value}\"")
    }
}

/// The keys every job record starts with (PBS's `acct_job`): who, which
/// account, name, queue, the times, then (with `ran`) where it ran, then
/// what it asked for.
fn job_keys(job: &Job, server: &str, ran: bool, depend: bool) -> Vec<String> {
    let mut keys = vec![
        format!("user={}", job.owner.user),
        format!("group={}", job.owner.group),
    ];
    if let Some(account) = &job.account {
        keys.push(format!("account=\"{account}\""));
    }
    if let Some(project) = &job.project {
        keys.push(format!("project={}", quoted(project)));
    }
    keys.push(format!("jobname={}", quoted(&job.name)));
    keys.push(format!("queue={}", job.queue));
    // qmesh keeps one time for creation, queueing and eligibility.
    let qtime = job.qtime.timestamp();
    keys.push(format!("ctime={qtime}"));
    keys.push(format!("qtime={qtime}"));
    keys.push(format!("etime={qtime}"));
    if ran {
        keys.push(format!("start={}", job.stime.map_or(0, |t| t.timestamp())));
        if !job.exec_nodes.is_empty() {
            keys.push(format!("exec_host={}", job.exec_host()));
            keys.push(format!("exec_vnode={}", job.exec_vnode()));
        }
    } else if depend && !job.depend.is_empty() {
        keys.push(format!(
            "depend={}",
            crate::depend::format(&job.depend, server)
        ));
    }
    for (name, value) in job.shown_resource_list() {
        keys.push(format!("Resource_List.{name}={}", quoted(&value)));
    }
    keys
}

/// `Q`: the job was queued.
pub fn queued(job: &Job, server: &str) -> String {
    job_keys(job, server, false, true).join(" ")
}

/// `S`: the job started.
pub fn started(job: &Job, server: &str) -> String {
    job_keys(job, server, true, false).join(" ")
}

/// `E` (it ended) and `R` (it ran, and is queued again): where it ran,
/// how it ended and what it used. `run` is the run that ended: for a
/// requeued job, its start and nodes are already gone from the record.
pub fn ended(job: &Job, server: &str, run: &EndedRun) -> String {
    let mut keys = job_keys(job, server, false, false);
    // The run's own keys, in acct_job's places.
    let at = keys
        .iter()
        .position(|k| k.starts_with("Resource_List."))
        .unwrap_or(keys.len());
    let mut ran = vec![format!("start={}", run.start)];
    if !run.exec_host.is_empty() {
        ran.push(format!("exec_host={}", run.exec_host));
        ran.push(format!("exec_vnode={}", run.exec_vnode));
    }
    keys.splice(at..at, ran);
    keys.push(format!("session={}", run.session));
    keys.push(format!("end={}", run.end));
    keys.push(format!("Exit_status={}", run.exit_status));
    // resources_used.*, in PBS's (alphabetical) order.
    let end = chrono::DateTime::from_timestamp(run.end, 0).unwrap_or_default();
    let walltime = (run.end.saturating_sub(run.start).max(0) as u64)
        .saturating_sub(run.suspension.secs_at(end));
    if let Some(cput) = run.cput {
        keys.push(format!(
            "resources_used.cpupercent={}",
            crate::job::shown::cpupercent(cput, walltime)
        ));
        keys.push(format!("resources_used.cput={}", format_hms(cput)));
    }
    if let Some(rss) = run.max_rss {
        keys.push(format!("resources_used.mem={}kb", rss.div_ceil(1024)));
    }
    if run.ncpus > 0 {
        keys.push(format!("resources_used.ncpus={}", run.ncpus));
    }
    if let Some(vmem) = run.vmem {
        keys.push(format!("resources_used.vmem={}kb", vmem.div_ceil(1024)));
    }
    keys.push(format!("resources_used.walltime={}", format_hms(walltime)));
    keys.push(format!("run_count={}", job.run_count));
    keys.join(" ")
}

/// What `ended` needs of the run that just ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EndedRun {
    pub start: i64,
    pub end: i64,
    pub exec_host: String,
    pub exec_vnode: String,
    pub exit_status: i32,
    /// The job's session id where it ran; 0 when not known.
    pub session: i64,
    /// CPUs it held, and what its agent measured: CPU seconds, the
    /// largest resident set (bytes).
    pub ncpus: u32,
    pub cput: Option<u64>,
    pub max_rss: Option<u64>,
    /// The largest virtual memory of all its processes (bytes), where it
    /// ran in a cgroup.
    pub vmem: Option<u64>,
    /// Its time suspended, left out of its wall time.
    pub suspension: crate::job::Suspension,
}

impl EndedRun {
    /// The run of an active job, read before its end is recorded; the
    /// caller adds the end and what the exit says.
    pub fn of(job: &Job) -> EndedRun {
        EndedRun {
            start: job.stime.map_or(0, |t| t.timestamp()),
            exec_host: job.exec_host(),
            exec_vnode: job.exec_vnode(),
            session: job.session_id.map_or(0, i64::from),
            ncpus: job.node_shares().iter().map(|s| s.cpus).sum(),
            suspension: job.suspension,
            ..EndedRun::default()
        }
    }

    /// With the end and what the agent reported of it.
    pub fn ended(mut self, end: i64, exit: &crate::job::JobExit) -> EndedRun {
        self.end = end;
        self.exit_status = exit.exit_status();
        self.cput = exit.cput;
        self.max_rss = exit.max_rss;
        self.vmem = exit.vmem;
        self
    }
}

/// `D`: who asked for the deletion, PBS's `requestor=user@host`.
pub fn deleted(user: &str, host: &str) -> String {
    format!("requestor={user}@{host}")
}

/// The `Q`, `S` and `E` records a job's stored state says were written,
/// with their times: what a start after a crash checks the log for.
pub fn expected_records(job: &Job, server: &str) -> Vec<(crate::time::Time, RecordType, String)> {
    let mut out = vec![(job.qtime, RecordType::Queued, queued(job, server))];
    if let Some(start) = job.stime {
        out.push((start, RecordType::Started, started(job, server)));
        if let (Some(end), Some(exit)) = (job.end_time, &job.exit) {
            let run = EndedRun::of(job).ended(end.timestamp(), exit);
            out.push((end, RecordType::Ended, ended(job, server, &run)));
        }
    }
    out
}

/// `z` and `r`: who suspended or resumed the job, and the wall time it has
/// run so far.
pub fn pause_changed(user: &str, host: &str, job: &Job, now: crate::time::Time) -> String {
    let walltime = job.elapsed(now).unwrap_or(0);
    format!(
        "requestor={user}@{host} resources_used.walltime={}",
        format_hms(walltime)
    )
}

/// `H` and `RL`: who held or released the job, and which holds (PBS Pro's
/// `requestor=` and `holdtype=`).
pub fn hold_changed(user: &str, host: &str, holds: &str) -> String {
    format!("requestor={user}@{host} holdtype={holds}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::tests::{state, submit, t};

    fn at() -> NaiveDateTime {
        chrono::NaiveDate::from_ymd_opt(2026, 3, 4)
            .unwrap()
            .and_hms_opt(5, 6, 7)
            .unwrap()
    }

    #[test]
    fn day_files_keeps_the_days_asked_for_in_day_order() {
        let listed = [
            "logs/20260305",
            "logs/notes.txt",
            "logs/20260303",
            "logs/20260304",
        ]
        .map(std::path::PathBuf::from);
        let day = |d| chrono::NaiveDate::from_ymd_opt(2026, 3, d).unwrap();
        let days: Vec<_> = day_files(listed.clone(), None, None)
            .into_iter()
            .map(|(d, _)| d)
            .collect();
        assert_eq!(days, [day(3), day(4), day(5)], "other names left out");
        let some = day_files(listed, Some(day(4)), Some(day(4)));
        assert_eq!(
            some,
            [(day(4), std::path::PathBuf::from("logs/20260304"))],
            "both ends included"
        );
    }

    #[test]
    fn each_record_type_has_pbs_s_letter_and_reads_back() {
        let letters: String = RecordType::ALL.iter().map(|t| t.code()).collect();
        assert_eq!(letters, "QSEDRAaMHRLzr");
        for kind in RecordType::ALL {
            let line = accounting_line(at(), kind, "17.srv", "user=alice\nqueue=batch");
            assert!(
                line.starts_with(&format!("03/04/2026 05:06:07;{};17.srv;", kind.code())),
                "{line}"
            );
            assert!(!line.contains('\n'), "one record, one line: {line}");
            let back = parse_accounting_line(&line).unwrap();
            assert_eq!(back.kind, LineKind::Record(kind));
            assert_eq!(RecordType::from_code(kind.code()), Some(kind));
            assert_eq!(back.id, "17.srv");
            assert_eq!(back.message, "user=alice queue=batch");
            assert_eq!(back.time, at());
        }
    }

    #[test]
    fn a_job_s_records_carry_pbs_keys() {
        let mut s = state(4);
        let id = submit(&mut s, 1000, 2);
        let job = s.job(id).unwrap().clone();
        let q = queued(&job, "srv");
        assert_eq!(
            q,
            format!(
                "user=u1000 group=g1000 jobname=job.sh queue=batch ctime={0} qtime={0} etime={0} \
                 Resource_List.ncpus=2 Resource_List.nodect=2 Resource_List.nodes=2 \
                 Resource_List.select=2:ncpus=1 Resource_List.walltime=01:00:00",
                t(0).timestamp()
            )
        );
        s.start(id, &[0, 1], t(10)).unwrap();
        let job = s.job(id).unwrap().clone();
        let started_text = started(&job, "srv");
        assert!(
            started_text.contains(&format!(
                "start={} exec_host=n0/0*1+n1/0*1 exec_vnode=(n0:ncpus=1)+(n1:ncpus=1) \
                 Resource_List.ncpus=2",
                t(10).timestamp()
            )),
            "{started_text}"
        );
        let exit = crate::job::JobExit {
            code: Some(3),
            signal: None,
            cause: crate::job::ExitCause::Exited,
            message: String::new(),
            cput: Some(42),
            max_rss: Some(5000),
            vmem: Some(10_000),
        };
        let run = EndedRun::of(&job).ended(t(70).timestamp(), &exit);
        let e = ended(&job, "srv", &run);
        assert!(
            e.contains(
                "exec_host=n0/0*1+n1/0*1 exec_vnode=(n0:ncpus=1)+(n1:ncpus=1) Resource_List."
            ),
            "{e}"
        );
        assert!(
            e.ends_with(&format!(
                "session=0 end={} Exit_status=3 resources_used.cpupercent=70 \
                 resources_used.cput=00:00:42 resources_used.mem=5kb \
                 resources_used.ncpus=2 resources_used.vmem=10kb \
                 resources_used.walltime=00:01:00 run_count=1",
                t(70).timestamp()
            )),
            "{e}"
        );
        assert_eq!(deleted("alice", "head"), "requestor=alice@head");
        let mut job = job;
        job.project = Some("climate".into());
        assert!(queued(&job, "srv").contains(" project=climate jobname="));
    }

    #[test]
    fn values_with_spaces_are_quoted_and_accounts_always() {
        let mut s = state(1);
        let id = submit(&mut s, 1000, 1);
        let mut job = s.job(id).unwrap().clone();
        job.name = "my job".into();
        job.account = Some("c1".into());
        let q = queued(&job, "srv");
        assert!(
            q.contains("account=\"c1\" jobname=\"my job\" queue="),
            "{q}"
        );
        job.name = "say \"hi\" now".into();
        assert!(queued(&job, "srv").contains("jobname='say \"hi\" now'"));
    }

    #[test]
    fn server_events_read_back_with_their_class() {
        let line = event_line(at(), EventClass::Job, "srv", "17.srv", "Job Queued; ok");
        assert_eq!(
            line,
            "03/04/2026 05:06:07;0008;Server@srv;Job;17.srv;Job Queued; ok"
        );
        let back = parse_event_line(&line).unwrap();
        assert_eq!(back.kind, LineKind::Event(8));
        assert_eq!(back.id, "17.srv");
        assert_eq!(back.message, "Job Queued; ok", "a ';' in the words stays");
        assert!(parse_event_line("garbage").is_none());
        assert!(parse_accounting_line("garbage").is_none());
        assert!(parse_accounting_line("03/04/2026 05:06:07;QQ;1.s;x").is_none());
    }

    #[test]
    fn tracejob_filters_by_name_or_mask() {
        assert_eq!(filter_mask("job").unwrap(), 8);
        assert_eq!(filter_mask("job_usage").unwrap(), 0x10);
        assert_eq!(filter_mask("debug2").unwrap(), 0x100);
        assert_eq!(filter_mask("0018").unwrap(), 0x18);
        let err = filter_mask("jobs").unwrap_err();
        assert!(
            err.starts_with("bad filter \"jobs\"; write one of error,"),
            "{err}"
        );
    }
}
