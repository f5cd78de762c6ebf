//! PBS's alternate job table (`-a`, and the options that imply it: `-i`,
//! `-r`, `-H`, `-u`, `-n`, `-s`, `-T`, `-G`, `-M`):
//!
//! ```text
//!
//! server:
//!                                                             Req'd  Req'd   Elap
//! Job ID          Username Queue    Jobname    SessID NDS TSK Memory Time  S Time
//! --------------- -------- -------- ---------- ------ --- --- ------ ----- - -----
//! 17.server       alice    batch    solver        --    3 --     --  01:00 R 00:12
//! ```
//!
//! Fixed widths as PBS prints them (wider with `-w`), cells cut with `*`;
//! `-n` puts each job's nodes under it (on its line with `-1`), `-s` its
//! comment, `-T` the estimated start instead of the elapsed time.
//! NDS, TSK, Memory and Time are the job's `Resource_List` (nodect, ncpus,
//! mem, walltime); Elap its `resources_used.walltime`; a cell PBS has no
//! value for shows `--`.

use chrono::{Datelike, TimeZone};
use qmesh_proto::JobInfo;

use super::jobs::{exec_host, lookup, now_for, resource_list, resources_used, state_letter};
use super::sizes::{SizeUnit, size};

/// What the alternate table adds and how wide it is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AltStyle {
    /// `-w`.
    pub wide: bool,
    /// `-n`: the nodes under each job.
    pub nodes: bool,
    /// `-1`: the nodes on the job's line.
    pub one_line: bool,
    /// `-s`: the comment under each job.
    pub comments: bool,
    /// `-T`: the estimated start of queued jobs.
    pub estimated: bool,
    /// `-G`, `-M`.
    pub sizes: SizeUnit,
}

/// PBS's cell for "no value".
const BLANK: &str = " -- ";

/// Widths of the cells that are cut with `*`: id, user, queue, name,
/// session, nodes, tasks.
const NARROW: [usize; 7] = [15, 8, 8, 10, 6, 3, 3];
const WIDE: [usize; 7] = [30, 15, 15, 15, 8, 4, 5];

/// The table of `jobs` on server `server` (nothing when there are none);
/// `time` is the server's time, dates in zone `tz`.
pub fn alternate<Tz: TimeZone>(
    jobs: &[JobInfo],
    server: &str,
    style: &AltStyle,
    time: i64,
    tz: &Tz,
) -> String
where
    Tz::Offset: std::fmt::Display,
{
    if jobs.is_empty() {
        return String::new();
    }
    let mut jobs: Vec<&JobInfo> = jobs.iter().collect();
    if style.estimated {
        jobs.sort_by_key(|job| start_order(job, time));
    }
    let mut out = format!("\n{server}: \n");
    out.push_str(&header(style));
    for job in jobs {
        out.push_str(&row(job, style, time, tz));
        out.push_str(if style.one_line { " " } else { "\n" });
        if style.nodes {
            let hosts = exec_host(job);
            out.push_str(&node_lines(
                if hosts.is_empty() { BLANK } else { &hosts },
                style.one_line,
            ));
        }
        if style.comments {
            out.push_str(&format!("   {}\n", comment(job, style.wide)));
        }
    }
    out
}

fn header(style: &AltStyle) -> String {
    let last = if style.estimated { "Start" } else { "Elap" };
    if !style.wide {
        let mut out = String::new();
        if style.estimated {
            out.push_str(&format!("{:75}Est\n", ""));
        }
        out.push_str(&format!("{:60}Req'd  Req'd   {last}\n", ""));
        out.push_str(
            "Job ID          Username Queue    Jobname    SessID NDS TSK Memory Time  S Time\n\
             --------------- -------- -------- ---------- ------ --- --- ------ ----- - -----\n",
        );
        return out;
    }
    let cells = |texts: [&str; 7]| {
        WIDE.iter()
            .zip(texts)
            .map(|(w, t)| format!("{t:<w$} "))
            .collect::<String>()
    };
    let lead = cells([""; 7]);
    let mut out = String::new();
    if style.estimated {
        out.push_str(&format!("{lead}               Est\n"));
    }
    out.push_str(&format!("{lead}Req'd  Req'd   {last}\n"));
    out.push_str(&cells([
        "Job ID", "Username", "Queue", "Jobname", "SessID", "NDS", "TSK",
    ]));
    out.push_str("Memory Time  S Time\n");
    let dashes = WIDE.map(|w| "-".repeat(w));
    out.push_str(&cells(dashes.each_ref().map(String::as_str)));
    out.push_str("------ ----- - -----\n");
    out
}

/// PBS's cut: a value longer than `width` keeps `width - 1` characters
/// and a `*`.
fn cut(value: &str, width: usize) -> String {
    crate::output::truncate(value, Some(width))
}

fn row<Tz: TimeZone>(job: &JobInfo, style: &AltStyle, time: i64, tz: &Tz) -> String
where
    Tz::Offset: std::fmt::Display,
{
    let now = now_for(job, time);
    let w = if style.wide { WIDE } else { NARROW };
    let requested = resource_list(job);
    let used = resources_used(job, now);
    let or_blank = |v: Option<String>| v.unwrap_or_else(|| BLANK.to_string());
    let tasks = lookup(&requested, "ncpus").filter(|n| n != "0");
    let nodect = lookup(&requested, "nodect").map(|n| cut(&n, w[5]));
    let memory = lookup(&requested, "mem").map(|m| size(&m, style.sizes));
    let state = state_letter(job);
    let last = if style.estimated {
        if state == "Q" {
            estimated_start(job.expected_start, now, tz)
        } else {
            "--".to_string()
        }
    } else {
        or_blank(lookup(&used, "walltime"))
    };
    let session = if job.session_id > 0 {
        job.session_id.to_string()
    } else {
        BLANK.to_string()
    };
    let (id, user, queue, name) = (
        cut(&job.id, w[0]),
        cut(&job.owner, w[1]),
        cut(&job.queue, w[2]),
        cut(&job.name, w[3]),
    );
    let (nodect, tasks) = (or_blank(nodect), or_blank(tasks.map(|t| cut(&t, w[6]))));
    let (memory, walltime) = (or_blank(memory), or_blank(lookup(&requested, "walltime")));
    if style.wide {
        format!(
            "{id:<30.30} {user:<15.15} {queue:<15.15} {name:<15.15} {session:>8.8} \
             {nodect:>4.4} {tasks:>5.5} {memory:>6.6} {walltime:>5.5} {state:>1} {last:>5.5}"
        )
    } else {
        format!(
            "{id:<15.15} {user:<8.8} {queue:<8.8} {name:<10.10} {session:>6.6} \
             {nodect:>3.3} {tasks:>3.3} {memory:>6.6} {walltime:>5.5} {state:>1.1} {last:>5.5}"
        )
    }
}

/// `-n`: the nodes, `+`-separated, each host cut to its first name part,
/// on lines indented by three spaces that end before column 78 (a line
/// that goes on ends with `+`); with `-1`, all on the job's line.
pub fn node_lines(exec_host: &str, one_line: bool) -> String {
    let mut out = String::new();
    let mut line = String::new();
    let flush = |out: &mut String, line: &str, last: bool| {
        if one_line {
            out.push_str(line);
            if last {
                out.push('\n');
            }
        } else {
            out.push_str(&format!("   {line}\n"));
        }
    };
    for part in exec_host.split('+').filter(|p| !p.is_empty()) {
        let (host, chunk) = part.split_at(part.find('/').unwrap_or(part.len()));
        let host = if host.parse::<std::net::Ipv4Addr>().is_ok() {
            host
        } else {
            host.split('.').find(|s| !s.is_empty()).unwrap_or(host)
        };
        let node = format!("{host}{chunk}");
        if line.chars().count() + node.chars().count() >= 77 {
            flush(&mut out, &line, false);
            line.clear();
        }
        line.push_str(&node);
        line.push('+');
    }
    if line.pop().is_some() {
        flush(&mut out, &line, true);
    } else if one_line {
        out.push('\n');
    }
    out
}

/// `-s`: the job's comment, `--` when it has none; a long one is cut to
/// what fits a line and ends in `...`.
fn comment(job: &JobInfo, wide: bool) -> String {
    if job.comment.is_empty() {
        return BLANK.to_string();
    }
    let (scope, keep) = if wide { (114, 110) } else { (74, 70) };
    if job.comment.chars().count() > scope {
        let cut: String = job.comment.chars().take(keep).collect();
        format!("{cut}...")
    } else {
        job.comment.clone()
    }
}

/// `-T`'s order: running jobs first by start, then queued ones by
/// estimated start, those without an estimate ahead last.
fn start_order(job: &JobInfo, now: i64) -> (bool, i64, bool, i64) {
    let started = job.stime > 0;
    let estimate = job.expected_start > 0 && job.expected_start >= now_for(job, now);
    (
        !started,
        if started { job.stime } else { 0 },
        !estimate,
        if estimate { job.expected_start } else { 0 },
    )
}

/// `-T`'s five-character start: `--` for none or past, the time today,
/// the day and hour this week, else the month, the year, or `>5yrs`.
fn estimated_start<Tz: TimeZone>(start: i64, now: i64, tz: &Tz) -> String
where
    Tz::Offset: std::fmt::Display,
{
    if start <= 0 || start < now {
        return "--".to_string();
    }
    let (Some(at), Some(today)) = (
        tz.timestamp_opt(start, 0).earliest(),
        tz.timestamp_opt(now, 0).earliest(),
    ) else {
        return "--".to_string();
    };
    if at.year() == today.year() && at.ordinal() == today.ordinal() {
        at.format("%H:%M").to_string()
    } else if start - now < 7 * 86_400 {
        let day: String = at.format("%a").to_string().chars().take(2).collect();
        format!("{day} {}", at.format("%H"))
    } else if at.year() == today.year() {
        at.format("%b").to_string()
    } else if at.year() - today.year() < 5 {
        at.format("%Y").to_string()
    } else {
        ">5yrs".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_jobs::{T0, queued, running};
    use super::*;
    use chrono::Utc;

    fn table(jobs: &[JobInfo], style: AltStyle) -> String {
        alternate(jobs, "server", &style, T0 + 1000, &Utc)
    }

    #[test]
    fn the_alternate_table_as_pbs_prints_it() {
        let text = table(&[running(), queued()], AltStyle::default());
        let spaces = " ".repeat(60);
        assert_eq!(
            text,
            format!(
                "
server: 
{spaces}Req'd  Req'd   Elap
Job ID          Username Queue    Jobname    SessID NDS TSK Memory Time  S Time
--------------- -------- -------- ---------- ------ --- --- ------ ----- - -----
17.server       alice    batch    solver        --    3  --    --  01:00 R 00:12
18.server       bob      batch    a_rather_*    --   64  --    --  48:00 Q   -- 
"
            )
        );
    }

    #[test]
    fn requested_memory_and_cpus_fill_their_columns() {
        let job = JobInfo {
            mem: Some(4 << 30),
            ncpus: Some(16),
            ..running()
        };
        let text = table(std::slice::from_ref(&job), AltStyle::default());
        assert!(text.contains(" 3  16 4096mb 01:00 R "), "{text}");
        let style = AltStyle {
            sizes: SizeUnit::Gigabytes,
            ..AltStyle::default()
        };
        assert!(table(&[job], style).contains(" 3  16    4gb 01:00 R "));
    }

    #[test]
    fn dash_n_puts_the_nodes_under_each_job_and_dash_1_on_its_line() {
        let style = AltStyle {
            nodes: true,
            ..AltStyle::default()
        };
        let text = table(&[running(), queued()], style);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[5].starts_with("17.server "), "{text}");
        assert_eq!(lines[6], "   n1+n2+n3");
        assert!(lines[7].starts_with("18.server "), "{text}");
        assert_eq!(lines[8], "    -- ");
        let style = AltStyle {
            one_line: true,
            ..style
        };
        let text = table(&[running(), queued()], style);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[5].ends_with(" R 00:12 n1+n2+n3"), "{text}");
        assert!(lines[6].ends_with(" Q   --   -- "), "{text}");
        assert_eq!(lines.len(), 7);
    }

    #[test]
    fn long_node_lists_wrap_before_column_78() {
        let hosts: Vec<String> = (0..20).map(|n| format!("node{n:02}.cluster.org")).collect();
        let text = node_lines(&hosts.join("+"), false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "   node00+node01+node02+node03+node04+node05+node06+node07+node08+node09+node10+"
        );
        assert_eq!(
            lines[1],
            "   node11+node12+node13+node14+node15+node16+node17+node18+node19"
        );
        assert_eq!(
            node_lines("n1/0*8+n2/0*8", false),
            "   n1/0*8+n2/0*8\n",
            "PBS's chunks stay"
        );
        assert_eq!(node_lines("10.0.0.1+n2.a.b", true), "10.0.0.1+n2\n");
    }

    #[test]
    fn dash_s_puts_the_comment_under_each_job() {
        let style = AltStyle {
            comments: true,
            ..AltStyle::default()
        };
        let long = JobInfo {
            comment: "x".repeat(80),
            ..queued()
        };
        let text = table(&[running(), queued(), long], style);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[6], "    -- ");
        assert_eq!(lines[8], "   Not enough free nodes");
        assert_eq!(lines[10], format!("   {}...", "x".repeat(70)));
    }

    #[test]
    fn dash_w_widens_the_columns() {
        let style = AltStyle {
            wide: true,
            ..AltStyle::default()
        };
        let text = table(&[queued()], style);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], "server: ");
        assert_eq!(lines[2], format!("{}Req'd  Req'd   Elap", " ".repeat(99)));
        assert_eq!(
            lines[3],
            "Job ID                         Username        Queue           Jobname         \
             SessID   NDS  TSK   Memory Time  S Time"
        );
        assert_eq!(
            lines[5],
            format!(
                "{:31}{:16}{:16}{:16}{:9}{:5}{:6}{:7}48:00 Q   -- ",
                "18.server", "bob", "batch", "a_rather_long_*", "     --", "  64", "  --", "   --"
            )
        );
    }

    #[test]
    fn dash_t_shows_when_queued_jobs_should_start() {
        let style = AltStyle {
            estimated: true,
            ..AltStyle::default()
        };
        let soon = JobInfo {
            id: "19.server".into(),
            expected_start: T0 + 3 * 3600,
            ..queued()
        };
        let later = JobInfo {
            id: "20.server".into(),
            expected_start: T0 + 3 * 86_400,
            ..queued()
        };
        let text = table(&[later, queued(), soon, running()], style);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[2], format!("{}Est", " ".repeat(75)));
        assert_eq!(lines[3], format!("{}Req'd  Req'd   Start", " ".repeat(60)));
        assert!(lines[6].starts_with("17.server") && lines[6].ends_with(" R    --"));
        assert!(lines[7].starts_with("19.server") && lines[7].ends_with(" Q 13:00"));
        assert!(lines[8].starts_with("20.server") && lines[8].ends_with(" Q We 10"));
        assert!(lines[9].starts_with("18.server") && lines[9].ends_with(" Q    --"));
    }

    #[test]
    fn estimated_starts_further_away() {
        assert_eq!(estimated_start(T0 + 30 * 86_400, T0, &Utc), "Dec");
        assert_eq!(estimated_start(T0 + 60 * 86_400, T0, &Utc), "2027");
        assert_eq!(estimated_start(T0 + 6 * 365 * 86_400, T0, &Utc), ">5yrs");
        assert_eq!(estimated_start(T0 - 1, T0, &Utc), "--");
    }

    #[test]
    fn nothing_to_list_prints_nothing() {
        assert_eq!(table(&[], AltStyle::default()), "");
    }
}
