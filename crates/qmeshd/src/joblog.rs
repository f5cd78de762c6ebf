//! The writer of PBS's job logs: the accounting log
//! (`STATE/server_priv/accounting/YYYYMMDD`) and the server's job events
//! (`STATE/server_logs/YYYYMMDD`), in the formats of
//! [`qmesh_core::joblog`] and laid out as PBS lays them out under its
//! home, so a site's accounting tools can read them as they are.
//!
//! How they are written. The scheduler task never touches the disk for
//! them: it hands each line's parts to [`JobLog::record`] or
//! [`JobLog::event`], which queue them on a bounded channel without
//! waiting. One thread takes what is queued, formats each line in the
//! server's local time, appends it to that day's file (opened for append,
//! created 0644; a new file at local midnight, as PBS switches), and
//! flushes (one write per batch) whenever the queue is empty. There is no
//! fsync, as in PBS (a line-buffered stdio stream): a crash of qmeshd
//! loses nothing written, a power cut may lose the last lines. If the disk
//! falls so far behind that [`QUEUED_LINES`] lines wait, further lines are
//! dropped and counted, and the count goes to the daemon's log: these
//! files are a record of what happened, the jobs themselves are in the
//! store, so a slow or full disk never holds up the scheduler or loses a
//! job. A write that fails is logged once, and again when writing works.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::time::Duration;

use chrono::{Local, NaiveDate};
use qmesh_core::Time;
use qmesh_core::joblog::{self, EventClass, RecordType};
use tracing::{error, info, warn};

/// Lines that may wait for the disk before new ones are dropped.
pub const QUEUED_LINES: usize = 65_536;

/// Where the two logs live under the state directory (PBS's layout).
pub fn accounting_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("server_priv").join("accounting")
}

pub fn events_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("server_logs")
}

/// qmgr's changes: who, when, what (`DATE;user@host;source;command`).
pub fn audit_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("server_priv").join("audit")
}

enum Line {
    Record {
        at: Time,
        kind: RecordType,
        id: String,
        text: String,
    },
    Event {
        at: Time,
        class: EventClass,
        id: String,
        text: String,
    },
    /// A qmgr command that changed the configuration.
    Audit {
        at: Time,
        who: String,
        source: String,
        command: String,
    },
    /// Everything queued before it is on disk: answer.
    Flushed(mpsc::Sender<()>),
}

/// After a crash, the records of the last durable changes may be missing
/// from the accounting log (they reach it after the store's flush):
/// appends those that `expected` (each job's `Q`, `S`, `E` as the store
/// has it: time, type, id, text) says were due since a little before the
/// log's last line and that the log lacks (`expected` is given that time
/// and what the log has, to format only what is missing). A record already there is not
/// written twice. Runs at start, before the writer thread writes; the
/// number of records written back.
pub fn recover<I>(
    state_dir: &Path,
    expected: impl FnOnce(Time, &dyn Fn(RecordType, &str) -> bool) -> I,
) -> io::Result<usize>
where
    I: IntoIterator<Item = (Time, RecordType, String, String)>,
{
    let dir = accounting_dir(state_dir);
    let mut days: Vec<(NaiveDate, PathBuf)> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .flatten()
            .filter_map(|e| {
                let path = e.path();
                let day = NaiveDate::parse_from_str(path.file_name()?.to_str()?, "%Y%m%d").ok()?;
                Some((day, path))
            })
            .collect(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    days.sort();
    let Some((_, last)) = days.last() else {
        return Ok(0);
    };
    let last_time = std::fs::read_to_string(last)?
        .lines()
        .rev()
        .find_map(joblog::parse_accounting_line)
        .map(|l| l.time);
    let Some(last_time) = last_time else {
        return Ok(0);
    };
    // Records are appended in the order their changes became durable, and
    // stamped when the task made them: what is missing came after the last
    // line, give or take the seconds between making and writing.
    let since = last_time - chrono::Duration::seconds(120);
    // What the log has since then: read from the end, newest first, until
    // a minute before (a busy day's file is read back only that far).
    let mut present = std::collections::HashSet::new();
    'files: for (_, path) in days.iter().rev().filter(|(d, _)| *d >= since.date()) {
        for line in std::fs::read_to_string(path)?.lines().rev() {
            let Some(l) = joblog::parse_accounting_line(line) else {
                continue;
            };
            if l.time < since - chrono::Duration::seconds(60) {
                break 'files;
            }
            if let joblog::LineKind::Record(kind) = l.kind {
                present.insert((kind, l.id));
            }
        }
    }
    let Some(since_utc) = since.and_local_timezone(Local).earliest() else {
        return Ok(0);
    };
    let is_present = |kind: RecordType, id: &str| present.contains(&(kind, id.to_string()));
    let mut missing: Vec<(chrono::NaiveDateTime, String)> =
        expected(since_utc.to_utc(), &is_present)
            .into_iter()
            .map(|(at, kind, id, text)| (at.with_timezone(&Local).naive_local(), kind, id, text))
            .filter(|(at, kind, id, _)| *at >= since && !is_present(*kind, id))
            .map(|(at, kind, id, text)| (at, joblog::accounting_line(at, kind, &id, &text)))
            .collect();
    missing.sort();
    let mut out = Day::new(dir);
    for (at, line) in &missing {
        out.write(at.date(), line)?;
    }
    out.flush()?;
    Ok(missing.len())
}

/// The task's handle on the writer; [`JobLog::disabled`] writes nothing.
pub struct JobLog {
    tx: Option<SyncSender<Line>>,
    dropped: Arc<AtomicU64>,
    done: Option<Receiver<()>>,
    dirs: Option<(PathBuf, PathBuf)>,
}

impl JobLog {
    pub fn disabled() -> JobLog {
        JobLog {
            tx: None,
            dropped: Arc::new(AtomicU64::new(0)),
            done: None,
            dirs: None,
        }
    }

    /// Creates the directories and starts the writer thread.
    pub fn open(state_dir: &Path, server: &str) -> io::Result<JobLog> {
        let accounting = accounting_dir(state_dir);
        let events = events_dir(state_dir);
        let audit = audit_dir(state_dir);
        for dir in [&accounting, &events, &audit] {
            std::fs::create_dir_all(dir)?;
        }
        let (tx, rx) = mpsc::sync_channel(QUEUED_LINES);
        let (done_tx, done) = mpsc::channel();
        let dropped = Arc::new(AtomicU64::new(0));
        let mut writer = Writer {
            server: server.to_string(),
            accounting: Day::new(accounting.clone()),
            events: Day::new(events.clone()),
            audit: Day::new(audit),
            dropped: dropped.clone(),
            failing: false,
        };
        std::thread::Builder::new()
            .name("qmeshd-joblog".into())
            .spawn(move || {
                writer.run(rx);
                let _ = done_tx.send(());
            })?;
        Ok(JobLog {
            tx: Some(tx),
            dropped,
            done: Some(done),
            dirs: Some((accounting, events)),
        })
    }

    /// The accounting and event directories, if the logs are written.
    pub fn dirs(&self) -> Option<(PathBuf, PathBuf)> {
        self.dirs.clone()
    }

    /// Queues an audit line: `who` (user@host) changed the configuration
    /// with `command` (from `source`: -c, stdin, a file).
    pub fn audit(&self, at: Time, who: &str, source: &str, command: &str) {
        self.send(Line::Audit {
            at,
            who: who.to_string(),
            source: source.to_string(),
            command: command.to_string(),
        });
    }

    /// Queues a server event about job `id`.
    pub fn event(&self, at: Time, class: EventClass, id: &str, text: String) {
        self.send(Line::Event {
            at,
            class,
            id: id.to_string(),
            text,
        });
    }

    fn send(&self, line: Line) {
        let Some(tx) = &self.tx else {
            return;
        };
        if let Err(TrySendError::Full(_)) = tx.try_send(line) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A handle that queues accounting records from another thread (the
    /// store's writer, once the changes they record are durable).
    pub fn records(&self) -> RecordSender {
        RecordSender {
            tx: self.tx.clone(),
            dropped: self.dropped.clone(),
        }
    }

    /// Stops the writer once it has written what is queued, waiting at
    /// most `wait` (a stuck disk must not hold up the daemon's exit).
    pub fn close(&mut self, wait: Duration) {
        self.tx = None;
        if let Some(done) = self.done.take()
            && done.recv_timeout(wait).is_err()
        {
            warn!(
                secs = wait.as_secs(),
                "the job logs were not written out in time; their last lines may be missing"
            );
        }
    }
}

/// Queues accounting records for the writer thread; see
/// [`JobLog::records`].
pub struct RecordSender {
    tx: Option<SyncSender<Line>>,
    dropped: Arc<AtomicU64>,
}

impl RecordSender {
    /// A receiver that answers once every line queued so far through
    /// this handle's queue is written (at once when nothing is written,
    /// or the queue is full).
    pub fn flushed(&self) -> Receiver<()> {
        let (tx, rx) = mpsc::channel();
        match &self.tx {
            Some(queue) => {
                if let Err(TrySendError::Full(Line::Flushed(tx))) =
                    queue.try_send(Line::Flushed(tx))
                {
                    let _ = tx.send(());
                }
            }
            None => {
                let _ = tx.send(());
            }
        }
        rx
    }

    pub fn record(&self, at: Time, kind: RecordType, id: String, text: String) {
        let Some(tx) = &self.tx else {
            return;
        };
        if let Err(TrySendError::Full(_)) = tx.try_send(Line::Record { at, kind, id, text }) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Drop for JobLog {
    fn drop(&mut self) {
        self.tx = None;
    }
}

/// One log's file of the day.
struct Day {
    dir: PathBuf,
    open: Option<(NaiveDate, BufWriter<File>)>,
}

impl Day {
    fn new(dir: PathBuf) -> Day {
        Day { dir, open: None }
    }

    fn write(&mut self, day: NaiveDate, line: &str) -> io::Result<()> {
        if self.open.as_ref().is_none_or(|(d, _)| *d != day) {
            self.flush()?;
            let path = self.dir.join(joblog::file_name(day));
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o644)
                .open(&path)?;
            self.open = Some((day, BufWriter::new(file)));
        }
        if let Some((_, out)) = &mut self.open {
            out.write_all(line.as_bytes())?;
            out.write_all(b"\n")?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.open {
            Some((_, out)) => out.flush(),
            None => Ok(()),
        }
    }
}

struct Writer {
    server: String,
    accounting: Day,
    events: Day,
    audit: Day,
    dropped: Arc<AtomicU64>,
    /// A write failed and has not worked since.
    failing: bool,
}

impl Writer {
    fn run(&mut self, rx: Receiver<Line>) {
        while let Ok(first) = rx.recv() {
            let mut waiting = Vec::new();
            let mut next = Some(first);
            while let Some(line) = next {
                match line {
                    Line::Flushed(reply) => waiting.push(reply),
                    line => {
                        let result = self.write(line);
                        self.note(result);
                    }
                }
                next = rx.try_recv().ok();
            }
            let result = self
                .accounting
                .flush()
                .and(self.events.flush())
                .and(self.audit.flush());
            self.note(result);
            for reply in waiting {
                let _ = reply.send(());
            }
            let lost = self.dropped.swap(0, Ordering::Relaxed);
            if lost > 0 {
                warn!(
                    lines = lost,
                    "job log lines were dropped: the disk under the state directory did not keep up"
                );
            }
        }
        let result = self
            .accounting
            .flush()
            .and(self.events.flush())
            .and(self.audit.flush());
        self.note(result);
    }

    fn write(&mut self, line: Line) -> io::Result<()> {
        match line {
            Line::Record { at, kind, id, text } => {
                let local = at.with_timezone(&Local).naive_local();
                let text = joblog::accounting_line(local, kind, &id, &text);
                self.accounting.write(local.date(), &text)
            }
            Line::Event {
                at,
                class,
                id,
                text,
            } => {
                let local = at.with_timezone(&Local).naive_local();
                let text = joblog::event_line(local, class, &self.server, &id, &text);
                self.events.write(local.date(), &text)
            }
            Line::Audit {
                at,
                who,
                source,
                command,
            } => {
                let local = at.with_timezone(&Local).naive_local();
                let text = format!(
                    "{};{who};{source};{}",
                    joblog::format_date(local),
                    command.replace(['\n', '\r'], " ")
                );
                self.audit.write(local.date(), &text)
            }
            Line::Flushed(reply) => {
                let _ = reply.send(());
                Ok(())
            }
        }
    }

    fn note(&mut self, result: io::Result<()>) {
        match result {
            Err(e) if !self.failing => {
                self.failing = true;
                error!(error = %e, dir = %self.accounting.dir.display(),
                    "cannot write the job logs (accounting, server events); lines are lost until it works again");
            }
            Ok(()) if self.failing => {
                self.failing = false;
                info!("the job logs are written again");
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn each_record_type_lands_in_the_day_s_file_one_per_line() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = JobLog::open(dir.path(), "srv").unwrap();
        let at = chrono::Utc.with_ymd_and_hms(2026, 3, 4, 12, 0, 0).unwrap();
        for kind in RecordType::ALL {
            log.records()
                .record(at, kind, "7.srv".into(), format!("kind={}", kind.code()));
        }
        log.event(at, EventClass::Job, "7.srv", "Job Queued".into());
        log.records().flushed().recv().unwrap();
        let day = at.with_timezone(&Local).date_naive();
        let text = std::fs::read_to_string(accounting_dir(dir.path()).join(joblog::file_name(day)))
            .unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), RecordType::ALL.len());
        for (line, kind) in lines.iter().zip(RecordType::ALL) {
            let back = joblog::parse_accounting_line(line).unwrap();
            assert_eq!(back.kind, joblog::LineKind::Record(kind));
            assert_eq!(back.message, format!("kind={}", kind.code()));
        }
        let events =
            std::fs::read_to_string(events_dir(dir.path()).join(joblog::file_name(day))).unwrap();
        assert!(
            events.ends_with(";0008;Server@srv;Job;7.srv;Job Queued\n"),
            "{events}"
        );
        log.close(Duration::from_secs(5));
    }

    #[test]
    fn a_full_queue_drops_lines_and_never_waits() {
        // No thread reads this queue: the disk "never" keeps up.
        let (tx, _rx) = mpsc::sync_channel(2);
        let log = JobLog {
            tx: Some(tx),
            dropped: Arc::new(AtomicU64::new(0)),
            done: None,
            dirs: None,
        };
        let at = chrono::Utc::now();
        for _ in 0..5 {
            log.records()
                .record(at, RecordType::Queued, "1.srv".into(), "queue=batch".into());
        }
        assert_eq!(log.dropped.load(Ordering::Relaxed), 3);
        // A flush request on a full queue answers at once.
        log.records()
            .flushed()
            .recv_timeout(Duration::from_secs(1))
            .unwrap();
    }

    #[test]
    fn a_day_that_cannot_be_written_is_reported_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let mut day = Day::new(dir.path().join("missing"));
        let date = NaiveDate::from_ymd_opt(2026, 3, 4).unwrap();
        assert!(day.write(date, "x").is_err());
        std::fs::create_dir(dir.path().join("missing")).unwrap();
        day.write(date, "x").unwrap();
        day.flush().unwrap();
    }
}
