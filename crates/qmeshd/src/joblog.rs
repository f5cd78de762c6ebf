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
//! flushes (one write per batch) whenever the queue is empty, having
//! waited [`GATHER`] after the first line for more; a batch that
//! holds accounting records is fdatasynced before the store is told it
//! may forget them (`crate::task::joblog`), so a power cut loses none:
//! what the file lacks, the store still has. Server events and the audit
//! log are flushed, not synced, as PBS writes them. If the disk
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

/// How long the writer waits, once woken by a line, for more to come: at
/// 200 jobs a second, a job's three records and its events were a wake-up,
/// a write and a flush each.
const GATHER: Duration = Duration::from_millis(10);

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
        /// Its place in the store's outbox (`crate::task::joblog`).
        seq: u64,
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
    let days = match day_files(&dir) {
        Ok(days) => days,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
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
    out.sync()?;
    Ok(missing.len())
}

/// A log directory's day files, in day order.
fn day_files(dir: &Path) -> io::Result<Vec<(NaiveDate, PathBuf)>> {
    let listed = std::fs::read_dir(dir)?.flatten().map(|e| e.path());
    Ok(joblog::day_files(listed, None, None))
}

/// An accounting record as the store keeps it (its outbox) from the
/// batch of the change it records until the log is known to have it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Kept {
    pub at: Time,
    /// PBS's code: `Q`, `E`, `RL`...
    pub kind: String,
    pub id: String,
    pub text: String,
}

impl Kept {
    pub fn new(at: Time, kind: RecordType, id: &str, text: &str) -> Kept {
        Kept {
            at,
            kind: kind.code().to_string(),
            id: id.to_string(),
            text: text.to_string(),
        }
    }

    /// The line the writer makes of it, in the server's local time.
    fn line(&self) -> Option<(chrono::NaiveDateTime, String)> {
        let kind = RecordType::from_code(&self.kind)?;
        let local = self.at.with_timezone(&Local).naive_local();
        Some((
            local,
            joblog::accounting_line(local, kind, &self.id, &self.text),
        ))
    }
}

/// At start: the records the store kept (its outbox: the last records
/// handed to the log before a crash or a stop, which the log may or may
/// not have) that the log lacks are appended, in order, each once. The
/// log is read back from its end only as far as the oldest of them (less
/// two minutes). Returns how many were written; records the store kept
/// in a form this daemon cannot read are skipped with a warning.
pub fn recover_outbox(state_dir: &Path, kept: &[(u64, Vec<u8>)]) -> io::Result<usize> {
    let mut lines: Vec<(chrono::NaiveDateTime, String)> = Vec::with_capacity(kept.len());
    for (seq, bytes) in kept {
        match qmesh_store::decode::<Kept>(&format!("accounting record {seq}"), bytes)
            .ok()
            .and_then(|k| k.line())
        {
            Some(line) => lines.push(line),
            None => warn!(
                seq,
                "an accounting record kept in the store could not be read; skipped"
            ),
        }
    }
    let Some(oldest) = lines.iter().map(|(at, _)| *at).min() else {
        return Ok(0);
    };
    let dir = accounting_dir(state_dir);
    std::fs::create_dir_all(&dir)?;
    let since = oldest - chrono::Duration::seconds(120);
    let mut days = day_files(&dir)?;
    days.retain(|(day, _)| *day >= since.date());
    let wanted: std::collections::HashSet<&str> = lines.iter().map(|(_, l)| l.as_str()).collect();
    let mut present = std::collections::HashSet::new();
    'files: for (_, path) in days.iter().rev() {
        for line in std::fs::read_to_string(path)?.lines().rev() {
            if wanted.contains(line) {
                present.insert(line.to_string());
            } else if joblog::parse_accounting_line(line).is_some_and(|l| l.time < since) {
                break 'files;
            }
        }
    }
    let mut out = Day::new(dir);
    let mut written = 0;
    for (at, line) in &lines {
        // A record kept twice (it cannot be, but) is written once.
        if present.insert(line.clone()) {
            out.write(at.date(), line)?;
            written += 1;
        }
    }
    out.sync()?;
    Ok(written)
}

/// The task's handle on the writer; [`JobLog::disabled`] writes nothing.
pub struct JobLog {
    tx: Option<SyncSender<Line>>,
    dropped: Arc<AtomicU64>,
    done: Option<Receiver<()>>,
    dirs: Option<(PathBuf, PathBuf)>,
    confirmed: Arc<Confirmed>,
}

/// How far the accounting log is known to hold the records handed to it,
/// by outbox sequence number: the task tells the store to forget those.
#[derive(Debug)]
pub struct Confirmed {
    /// The highest sequence written and flushed.
    written: AtomicU64,
    /// The lowest sequence dropped or not written (a full queue, a failed
    /// write): nothing from there on is confirmed again by this process,
    /// and the next start writes what the store still holds.
    lost_from: AtomicU64,
}

impl Default for Confirmed {
    fn default() -> Confirmed {
        Confirmed {
            written: AtomicU64::new(0),
            lost_from: AtomicU64::new(u64::MAX),
        }
    }
}

impl Confirmed {
    /// Every record up to this sequence is in the log.
    pub fn upto(&self) -> u64 {
        let lost = self.lost_from.load(Ordering::Acquire);
        self.written
            .load(Ordering::Acquire)
            .min(lost.saturating_sub(1))
    }

    fn lost(&self, seq: u64) {
        self.lost_from.fetch_min(seq, Ordering::AcqRel);
    }
}

impl JobLog {
    pub fn disabled() -> JobLog {
        JobLog {
            tx: None,
            dropped: Arc::new(AtomicU64::new(0)),
            done: None,
            dirs: None,
            confirmed: Arc::default(),
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
        let confirmed: Arc<Confirmed> = Arc::default();
        let mut writer = Writer {
            server: server.to_string(),
            accounting: Day::new(accounting.clone()),
            events: Day::new(events.clone()),
            audit: Day::new(audit),
            dropped: dropped.clone(),
            failing: false,
            confirmed: confirmed.clone(),
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
            confirmed,
        })
    }

    /// Whether records are written at all (a disabled log keeps none in
    /// the store either).
    pub fn writes_records(&self) -> bool {
        self.tx.is_some()
    }

    /// Every record up to this outbox sequence is in the log.
    pub fn confirmed(&self) -> u64 {
        self.confirmed.upto()
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
            confirmed: self.confirmed.clone(),
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
    confirmed: Arc<Confirmed>,
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

    /// Queues record `seq` of the outbox.
    pub fn record(&self, seq: u64, at: Time, kind: RecordType, id: String, text: String) {
        let Some(tx) = &self.tx else {
            return;
        };
        let line = Line::Record {
            seq,
            at,
            kind,
            id,
            text,
        };
        if let Err(TrySendError::Full(_)) = tx.try_send(line) {
            self.confirmed.lost(seq);
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
            let existed = path.exists();
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o644)
                .open(&path)?;
            if !existed {
                file.sync_all()?;
                File::open(&self.dir)?.sync_all()?;
            }
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

    /// Flushes, then `fdatasync`s the day's file: what was written is on
    /// the disk itself (a new day's file was synced with its directory
    /// when it was made).
    fn sync(&mut self) -> io::Result<()> {
        self.flush()?;
        match &self.open {
            Some((_, out)) => out.get_ref().sync_data(),
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
    confirmed: Arc<Confirmed>,
}

impl Writer {
    fn run(&mut self, rx: Receiver<Line>) {
        while let Ok(first) = rx.recv() {
            // Lines come one step of a job at a time: a moment's wait
            // gathers them into one write and one fdatasync, and while this
            // thread sleeps the task queues lines without waking it. A
            // caller waiting for the files (tracejob, sacct) is not kept.
            if !matches!(first, Line::Flushed(_)) {
                std::thread::sleep(GATHER);
            }
            let mut waiting = Vec::new();
            let mut next = Some(first);
            // The records of this batch, by outbox sequence: the lowest and
            // the highest.
            let mut seqs: Option<(u64, u64)> = None;
            while let Some(line) = next {
                match line {
                    Line::Flushed(reply) => waiting.push(reply),
                    line => {
                        let seq = match &line {
                            Line::Record { seq, .. } if *seq > 0 => Some(*seq),
                            _ => None,
                        };
                        let result = self.write(line);
                        if let Some(seq) = seq {
                            if result.is_err() {
                                self.confirmed.lost(seq);
                            }
                            seqs = Some(
                                seqs.map_or((seq, seq), |(lo, hi)| (lo.min(seq), hi.max(seq))),
                            );
                        }
                        self.note(result);
                    }
                }
                next = rx.try_recv().ok();
            }
            // Records the store forgets once confirmed must be on the disk
            // itself first: the accounting file is fdatasynced then.
            let accounting = if seqs.is_some() {
                self.accounting.sync()
            } else {
                self.accounting.flush()
            };
            let result = accounting.and(self.events.flush()).and(self.audit.flush());
            if let Some((lo, hi)) = seqs {
                match &result {
                    Ok(()) => {
                        self.confirmed.written.fetch_max(hi, Ordering::AcqRel);
                    }
                    Err(_) => self.confirmed.lost(lo),
                }
            }
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
            Line::Record {
                at, kind, id, text, ..
            } => {
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
        for (seq, kind) in (1..).zip(RecordType::ALL) {
            log.records().record(
                seq,
                at,
                kind,
                "7.srv".into(),
                format!("kind={}", kind.code()),
            );
        }
        log.event(at, EventClass::Job, "7.srv", "Job Queued".into());
        log.records().flushed().recv().unwrap();
        assert_eq!(
            log.confirmed(),
            RecordType::ALL.len() as u64,
            "written and flushed: the store may forget them"
        );
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
            confirmed: Arc::default(),
        };
        let at = chrono::Utc::now();
        for seq in 1..=5 {
            log.records().record(
                seq,
                at,
                RecordType::Queued,
                "1.srv".into(),
                "queue=batch".into(),
            );
        }
        assert_eq!(log.dropped.load(Ordering::Relaxed), 3);
        log.confirmed.written.store(2, Ordering::Release);
        assert_eq!(
            log.confirmed(),
            2,
            "records 3 to 5 were dropped: the store keeps them for the next start"
        );
        log.confirmed.written.store(5, Ordering::Release);
        assert_eq!(log.confirmed(), 2, "never past a dropped record");
        // A flush request on a full queue answers at once.
        log.records()
            .flushed()
            .recv_timeout(Duration::from_secs(1))
            .unwrap();
    }

    /// The store's outbox at a start: what the log has is not written
    /// again, what it lacks is written once, in order.
    #[test]
    fn kept_records_the_log_lacks_are_written_once() {
        let dir = tempfile::tempdir().unwrap();
        let at = chrono::Utc.with_ymd_and_hms(2026, 3, 4, 12, 0, 0).unwrap();
        let kept: Vec<(u64, Vec<u8>)> = [
            (1, RecordType::Queued, "queue=batch"),
            (2, RecordType::Held, "requestor=root@h holdtype=u"),
            (3, RecordType::Released, "requestor=root@h holdtype=u"),
            (4, RecordType::Held, "requestor=root@h holdtype=u"),
            (5, RecordType::Deleted, "requestor=root@h"),
        ]
        .iter()
        .map(|(seq, kind, text)| {
            let k = Kept::new(
                at + chrono::Duration::seconds(*seq as i64),
                *kind,
                "9.srv",
                text,
            );
            (*seq, qmesh_store::encode(&k).unwrap())
        })
        .collect();
        // The log got the first three before the crash.
        let mut log = JobLog::open(dir.path(), "srv").unwrap();
        for (seq, bytes) in &kept[..3] {
            let k: Kept = qmesh_store::decode("k", bytes).unwrap();
            let kind = RecordType::from_code(&k.kind).unwrap();
            log.records().record(*seq, k.at, kind, k.id, k.text);
        }
        log.close(Duration::from_secs(5));
        assert_eq!(recover_outbox(dir.path(), &kept).unwrap(), 2);
        assert_eq!(recover_outbox(dir.path(), &kept).unwrap(), 0, "once");
        let day = at.with_timezone(&Local).date_naive();
        let text = std::fs::read_to_string(accounting_dir(dir.path()).join(joblog::file_name(day)))
            .unwrap();
        let kinds: Vec<&str> = text.lines().map(|l| l.split(';').nth(1).unwrap()).collect();
        assert_eq!(kinds, ["Q", "H", "RL", "H", "D"], "{text}");
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
