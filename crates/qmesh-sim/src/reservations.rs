//! `--reservations FILE`: advance and standing reservations made during a
//! replay, as `pbs_rsub` makes them on a running server, so that a site
//! sees what they cost in utilization and wait before turning them on.
//!
//! The file has one reservation a line (`#` starts a comment):
//!
//! ```text
//! # SUBMIT  START      DURATION  NODES  [RRULE]                 [share=F] [set=NAME]
//! 0         1:00:00:00 4:00:00   32     FREQ=WEEKLY;COUNT=13    share=0.1
//! ```
//!
//! SUBMIT is when `pbs_rsub` runs and START when the first occurrence
//! begins: seconds after the trace's start (`3600`), the same as
//! `[[D:]H:]M:S` (`1:00:00:00` is a day), or an RFC 3339 date
//! (`1993-10-04T08:00:00Z`). DURATION is `[[H:]M:]S` (or `D:H:M:S`), each
//! occurrence's length; NODES how many it holds. RRULE (RFC 5545, read in
//! the calendar's zone) makes it a standing reservation; it must end
//! (COUNT or UNTIL). `share=F` (0 to 1, default 0) sends that share of
//! the trace's jobs that could use an occurrence to the reservation's
//! queue (see [`Booked::takes`]); `set=NAME` keeps it to one node set.
//!
//! The replay submits each line at its SUBMIT time as root: the core
//! confirms it (nodes found for every occurrence) or refuses it with its
//! reason, which the report counts and shows as it does skipped jobs.

use chrono::{DateTime, FixedOffset};

/// What a line holds, in order, for the error messages.
pub const FORMAT: &str = "SUBMIT START DURATION NODES [RRULE] [share=F] [set=NAME]";

/// An instant of the file: seconds after the trace's start, or a date.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Instant {
    After(i64),
    At(DateTime<FixedOffset>),
}

impl Instant {
    /// Seconds from the trace's start, the trace starting at Unix time
    /// `base`.
    pub fn secs(self, base: i64) -> i64 {
        match self {
            Instant::After(s) => s,
            Instant::At(t) => t.timestamp() - base,
        }
    }
}

/// One line of the file.
#[derive(Clone, Debug, PartialEq)]
pub struct ResvSpec {
    /// Its line in the file, from 1.
    pub line: usize,
    pub submit: Instant,
    pub start: Instant,
    /// Seconds each occurrence lasts.
    pub duration: u64,
    pub nodes: u32,
    pub rrule: Option<String>,
    /// The share of the jobs that could use it sent to its queue.
    pub share: f64,
    /// Only this node set.
    pub node_set: Option<String>,
}

/// A line that does not read, and what to write.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{origin}, line {line}: {message}")]
pub struct ParseError {
    pub origin: String,
    pub line: usize,
    pub message: String,
}

/// Reads a reservations file; `origin` names it in errors.
pub fn parse(text: &str, origin: &str) -> Result<Vec<ResvSpec>, ParseError> {
    let mut specs = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let content = raw.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let line = i + 1;
        let fail = |message: String| ParseError {
            origin: origin.to_string(),
            line,
            message,
        };
        specs.push(parse_line(content, line).map_err(fail)?);
    }
    Ok(specs)
}

fn parse_line(content: &str, line: usize) -> Result<ResvSpec, String> {
    let fields: Vec<&str> = content.split_whitespace().collect();
    if fields.len() < 4 {
        return Err(format!(
            "{} field(s) where at least four are needed; write {FORMAT}, \
             e.g. \"0 3600 4:00:00 32 FREQ=WEEKLY;COUNT=10 share=0.1\"",
            fields.len()
        ));
    }
    let submit = instant(fields[0], "SUBMIT")?;
    let start = instant(fields[1], "START")?;
    let duration = qmesh_core::time::parse_duration(fields[2]).map_err(|e| match e {
        qmesh_core::CoreError::BadDuration { why, .. } => format!(
            "DURATION \"{}\" does not read: {why}; write [[hours:]minutes:]seconds, e.g. 4:00:00",
            fields[2]
        ),
        other => other.to_string(),
    })?;
    if duration == 0 {
        return Err("DURATION is 0; a reservation lasts at least a second, e.g. 4:00:00".into());
    }
    let nodes: u32 = fields[3].parse().ok().filter(|&n| n > 0).ok_or_else(|| {
        format!(
            "NODES \"{}\" is not a whole number above 0; write how many nodes it holds, e.g. 32",
            fields[3]
        )
    })?;
    if let (Instant::After(s), Instant::After(t)) = (submit, start)
        && t < s
    {
        return Err(format!(
            "START ({t}) is before SUBMIT ({s}); a reservation is made before it begins"
        ));
    }
    let mut spec = ResvSpec {
        line,
        submit,
        start,
        duration,
        nodes,
        rrule: None,
        share: 0.0,
        node_set: None,
    };
    for field in &fields[4..] {
        if let Some(value) = field.strip_prefix("share=") {
            spec.share = value
                .parse::<f64>()
                .ok()
                .filter(|f| (0.0..=1.0).contains(f))
                .ok_or_else(|| {
                    format!(
                        "share \"{value}\" is not a number from 0 to 1; write e.g. share=0.1 \
                         (a tenth of the jobs that could use it go to its queue)"
                    )
                })?;
        } else if let Some(value) = field.strip_prefix("set=") {
            if value.is_empty() {
                return Err("set= names no node set; write e.g. set=batch".into());
            }
            spec.node_set = Some(value.to_string());
        } else if field.to_ascii_uppercase().contains("FREQ=") {
            if spec.rrule.is_some() {
                return Err(format!(
                    "a second recurrence rule \"{field}\"; give one RRULE (no spaces in it)"
                ));
            }
            spec.rrule = Some(field.to_string());
        } else {
            return Err(format!(
                "\"{field}\" is neither a recurrence rule (FREQ=...;COUNT=N) nor share=F nor set=NAME; \
                 write {FORMAT}"
            ));
        }
    }
    Ok(spec)
}

/// `3600`, `1:00:00:00` or `1993-10-04T08:00:00Z`.
fn instant(text: &str, what: &str) -> Result<Instant, String> {
    if text.contains('T') || text.contains('-') {
        return DateTime::parse_from_rfc3339(text)
            .map(Instant::At)
            .map_err(|e| {
                format!(
                    "{what} \"{text}\" is not an RFC 3339 date ({e}); write e.g. \
                     1993-10-04T08:00:00Z, or seconds after the trace's start"
                )
            });
    }
    let secs = qmesh_core::time::parse_duration(text).map_err(|_| {
        format!(
            "{what} \"{text}\" is not seconds after the trace's start ([[D:]H:]M:S) \
             nor an RFC 3339 date; write e.g. 86400, 1:00:00:00 or 1993-10-04T08:00:00Z"
        )
    })?;
    i64::try_from(secs)
        .map(Instant::After)
        .map_err(|_| format!("{what} \"{text}\" is too large"))
}

/// One occurrence of a confirmed reservation, in seconds from the trace's
/// start.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Span {
    pub start: i64,
    pub end: i64,
    /// Its nodes' names (left out of the JSON: the set and the count say
    /// enough there).
    #[serde(skip)]
    pub nodes: Vec<String>,
}

impl Span {
    /// Node-seconds it holds.
    pub fn held(&self) -> f64 {
        self.nodes.len() as f64 * (self.end - self.start) as f64
    }
}

/// What became of one line of the file.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Outcome {
    pub line: usize,
    /// When it was submitted, seconds from the trace's start.
    pub submit: i64,
    pub nodes: u32,
    pub share: f64,
    /// Its number once confirmed: it is `R{id}`, its queue too.
    pub id: Option<u64>,
    /// The core's reason, if refused.
    pub refused: Option<String>,
    pub node_set: Option<String>,
    pub occurrences: Vec<Span>,
    /// Jobs sent to its queue, those that ran there, and those still
    /// queued when its last occurrence ended (deleted, as PBS does).
    pub jobs: usize,
    pub ran: usize,
    pub deleted: usize,
    /// Node-seconds its jobs ran.
    pub used: f64,
}

impl Outcome {
    pub fn new(spec: &ResvSpec, submit: i64) -> Outcome {
        Outcome {
            line: spec.line,
            submit,
            nodes: spec.nodes,
            share: spec.share,
            id: None,
            refused: None,
            node_set: None,
            occurrences: Vec::new(),
            jobs: 0,
            ran: 0,
            deleted: 0,
            used: 0.0,
        }
    }

    /// Node-seconds held over all its occurrences.
    pub fn held(&self) -> f64 {
        self.occurrences.iter().map(Span::held).sum()
    }
}

/// A confirmed reservation as the replay's arrivals see it: which jobs go
/// to its queue.
#[derive(Clone, Debug)]
pub struct Booked {
    /// Its index among the outcomes.
    pub outcome: usize,
    pub id: u64,
    pub queue: String,
    pub nodes: u32,
    pub share: f64,
    /// Per occurrence: from when a job submitted is meant for it, its
    /// start and its end.
    windows: Vec<(i64, i64, i64)>,
    /// Jobs that could have used it so far.
    eligible: u64,
}

impl Booked {
    /// Made at `submit` with `spans` (start, end): each occurrence takes
    /// the jobs submitted from as long before its start as the first's
    /// start was after `submit` (not before the previous one's end), to
    /// its end. The first's window is thus [SUBMIT, END).
    pub fn new(
        outcome: usize,
        id: u64,
        nodes: u32,
        share: f64,
        submit: i64,
        spans: &[(i64, i64)],
    ) -> Booked {
        let lead = spans.first().map_or(0, |s| (s.0 - submit).max(0));
        let mut previous_end = submit;
        let windows = spans
            .iter()
            .map(|&(start, end)| {
                let from = (start - lead).max(previous_end).max(submit);
                previous_end = end;
                (from, start, end)
            })
            .collect();
        Booked {
            outcome,
            id,
            queue: format!("R{id}"),
            nodes,
            share,
            windows,
            eligible: 0,
        }
    }

    /// Whether a job submitted at `submit` for `nodes` nodes and
    /// `walltime` seconds goes to the reservation's queue. It could use
    /// it if it is submitted in an occurrence's window, is no larger than
    /// the reservation and would end by the occurrence's end if started
    /// at its start (or at once, if it is on). Of those, `share` go, every
    /// k-th in arrival order (with share 0.25, the 4th, 8th...): as
    /// deterministic as the trace, and the share exact.
    pub fn takes(&mut self, submit: i64, nodes: u32, walltime: u64) -> bool {
        if self.share <= 0.0 || nodes > self.nodes {
            return false;
        }
        let Some(&(_, start, end)) = self
            .windows
            .iter()
            .find(|&&(from, _, end)| from <= submit && submit < end)
        else {
            return false;
        };
        let walltime = i64::try_from(walltime).unwrap_or(i64::MAX);
        if submit.max(start).saturating_add(walltime) > end {
            return false;
        }
        let k = self.eligible as f64;
        self.eligible += 1;
        ((k + 1.0) * self.share).floor() > (k * self.share).floor()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_comments_and_optional_fields() {
        let text = "\
# a comment
0 3600 4:00:00 32   # trailing comment

100  1:00:00:00  1:00:00 8 FREQ=WEEKLY;BYDAY=MO;COUNT=10 share=0.25 set=batch
1993-10-01T08:00:00Z 1993-10-04T08:00:00-07:00 90 1
";
        let specs = parse(text, "r.txt").unwrap();
        assert_eq!(specs.len(), 3);
        assert_eq!(
            specs[0],
            ResvSpec {
                line: 2,
                submit: Instant::After(0),
                start: Instant::After(3600),
                duration: 4 * 3600,
                nodes: 32,
                rrule: None,
                share: 0.0,
                node_set: None,
            }
        );
        let weekly = &specs[1];
        assert_eq!(weekly.line, 4);
        assert_eq!(weekly.start, Instant::After(86_400));
        assert_eq!(weekly.duration, 3600);
        assert_eq!(
            weekly.rrule.as_deref(),
            Some("FREQ=WEEKLY;BYDAY=MO;COUNT=10")
        );
        assert_eq!(weekly.share, 0.25);
        assert_eq!(weekly.node_set.as_deref(), Some("batch"));
        let dated = &specs[2];
        assert_eq!(dated.line, 5);
        // 1993-10-01T00:00:00Z is Unix time 749433600.
        assert_eq!(dated.submit.secs(749_433_600), 8 * 3600);
        assert_eq!(
            dated.start.secs(749_433_600),
            3 * 86_400 + 15 * 3600,
            "08:00 at UTC-7"
        );
        assert_eq!(dated.duration, 90);
    }

    #[test]
    fn errors_name_the_line_and_say_what_to_write() {
        let err = |text: &str| parse(text, "r.txt").unwrap_err();
        let e = err("# header\n0 3600 4:00:00\n");
        assert_eq!(e.line, 2);
        assert!(
            e.to_string().starts_with("r.txt, line 2: 3 field(s)"),
            "{e}"
        );
        assert!(e.message.contains(FORMAT), "{e}");
        let e = err("0 3600 4:00:00 32\n0 3600 4:xx:00 32\n");
        assert_eq!(e.line, 2);
        assert!(e.message.contains("DURATION \"4:xx:00\""), "{e}");
        assert!(e.message.contains("e.g. 4:00:00"), "{e}");
        let e = err("0 3600 0 32\n");
        assert!(e.message.contains("DURATION is 0"), "{e}");
        let e = err("0 3600 60 none\n");
        assert!(e.message.contains("NODES \"none\""), "{e}");
        let e = err("0 3600 60 0\n");
        assert!(e.message.contains("above 0"), "{e}");
        let e = err("soon 3600 60 4\n");
        assert!(e.message.contains("SUBMIT \"soon\""), "{e}");
        let e = err("0 1993-13-01T00:00:00Z 60 4\n");
        assert!(e.message.contains("START \"1993-13-01T00:00:00Z\""), "{e}");
        assert!(e.message.contains("RFC 3339"), "{e}");
        let e = err("7200 3600 60 4\n");
        assert!(e.message.contains("before SUBMIT"), "{e}");
        let e = err("0 3600 60 4 share=2\n");
        assert!(e.message.contains("from 0 to 1"), "{e}");
        let e = err("0 3600 60 4 weekly\n");
        assert!(e.message.contains("\"weekly\" is neither"), "{e}");
        let e = err("0 3600 60 4 FREQ=DAILY;COUNT=2 FREQ=WEEKLY;COUNT=2\n");
        assert!(e.message.contains("a second recurrence rule"), "{e}");
        let e = err("\n\n0 3600 60 4 set=\n");
        assert_eq!(e.line, 3);
    }

    #[test]
    fn an_empty_file_has_no_reservations() {
        assert_eq!(parse("# nothing\n\n", "r.txt").unwrap(), []);
    }

    #[test]
    fn jobs_that_could_use_an_occurrence_go_by_share() {
        // Made at 100 for 1000..2000 and 5000..6000 (lead 900: the
        // second takes jobs from 4100).
        let mut b = Booked::new(0, 1, 4, 0.5, 100, &[(1000, 2000), (5000, 6000)]);
        assert_eq!(b.queue, "R1");
        assert!(!b.takes(50, 1, 60), "before it was made");
        assert!(!b.takes(200, 8, 60), "larger than it");
        assert!(!b.takes(200, 1, 1500), "longer than an occurrence");
        assert!(!b.takes(1900, 1, 200), "would outlast the occurrence on");
        assert!(!b.takes(3000, 1, 60), "between the windows");
        // The eligible ones: every second goes.
        let taken: Vec<bool> = [200, 1500, 4100, 5500]
            .iter()
            .map(|&t| b.takes(t, 2, 300))
            .collect();
        assert_eq!(taken, [false, true, false, true]);
        assert!(!b.takes(6000, 1, 1), "after the last end");
        let mut none = Booked::new(0, 2, 4, 0.0, 0, &[(0, 100)]);
        assert!(!none.takes(0, 1, 1));
        let mut all = Booked::new(0, 3, 4, 1.0, 0, &[(0, 100)]);
        assert!((0..5).all(|t| all.takes(t, 1, 1)));
    }
}
