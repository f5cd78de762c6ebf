//! Jobs as qstat shows them: the table, the full `-f` form and the JSON
//! document. Each job's attributes are built once ([`job_attrs`]) and
//! rendered both as `name = value` lines and as JSON, so the two agree.

use chrono::{Local, TimeZone};
use qmesh_core::time::format_hms;
use qmesh_proto::{JobInfo, JobState, StatusReply};

use crate::output::{self, Attrs, Column, Output, Tree};

/// The jobs of one Status reply, ready to print.
pub struct JobListing {
    pub server: String,
    /// The server's clock when it answered (Unix seconds).
    pub time: i64,
    pub jobs: Vec<JobInfo>,
    /// `-f`: the full form instead of the table.
    pub full: bool,
    /// `-n`: under each job of the table, the nodes it runs on.
    pub show_nodes: bool,
}

impl JobListing {
    pub fn new(reply: StatusReply, full: bool) -> JobListing {
        let time = if reply.server_time > 0 {
            reply.server_time
        } else {
            chrono::Utc::now().timestamp()
        };
        JobListing {
            server: reply.server,
            time,
            jobs: reply.jobs,
            full,
            show_nodes: false,
        }
    }

    /// The server's time for `job`, for elapsed times.
    fn now_for(&self, job: &JobInfo) -> i64 {
        if job.server_time > 0 {
            job.server_time
        } else {
            self.time
        }
    }
}

const COLUMNS: [Column; 8] = [
    Column::left("Job ID"),
    Column::left("Name").at_most(16),
    Column::left("User").at_most(12),
    Column::left("Queue").at_most(12),
    Column::right("Nodes"),
    Column::right("Walltime"),
    Column::left("S"),
    Column::right("Elapsed"),
];

impl Output for JobListing {
    fn text(&self) -> String {
        if self.jobs.is_empty() {
            return String::new();
        }
        if self.full {
            let mut out = String::new();
            for job in &self.jobs {
                let attrs = job_attrs(job, &self.server, self.now_for(job), &Local);
                attrs.write_full(&format!("Job Id: {}", job.id), &mut out);
            }
            return out;
        }
        let rows: Vec<Vec<String>> = self
            .jobs
            .iter()
            .map(|job| {
                vec![
                    job.id.clone(),
                    job.name.clone(),
                    job.owner.clone(),
                    job.queue.clone(),
                    job.nodes.to_string(),
                    format_hms(job.walltime),
                    state_letter(job),
                    elapsed(job, self.now_for(job)).map_or_else(|| "--".to_string(), format_hms),
                ]
            })
            .collect();
        let table = output::table(&COLUMNS, &rows);
        if !self.show_nodes {
            return table;
        }
        // PBS's -n: the job's line, then its nodes joined by '+'.
        let mut lines = table.lines();
        let mut out = String::new();
        for header in lines.by_ref().take(2) {
            out.push_str(header);
            out.push('\n');
        }
        for (line, job) in lines.zip(&self.jobs) {
            out.push_str(line);
            out.push_str("\n   ");
            if job.exec_nodes.is_empty() {
                out.push_str("--");
            } else {
                out.push_str(&job.exec_nodes.join("+"));
            }
            out.push('\n');
        }
        out
    }

    fn json(&self) -> Tree {
        let entries = self
            .jobs
            .iter()
            .map(|job| {
                let attrs = job_attrs(job, &self.server, self.now_for(job), &Local);
                (job.id.clone(), attrs.json())
            })
            .collect();
        output::document(self.time, &self.server, "Jobs", entries)
    }
}

/// The PBS letter for the job's state.
fn state_letter(job: &JobInfo) -> String {
    if !job.state_letter.is_empty() {
        return job.state_letter.clone();
    }
    match job.state() {
        JobState::Queued => "Q",
        JobState::Held => "H",
        JobState::Waiting => "W",
        JobState::Transit => "T",
        JobState::Running => "R",
        JobState::Exiting => "E",
        JobState::Finished => "F",
        JobState::Unspecified => "?",
    }
    .to_string()
}

fn is_finished(job: &JobInfo) -> bool {
    job.state() == JobState::Finished || job.state_letter == "F"
}

/// Seconds since the job started (until it ended), if it has started.
fn elapsed(job: &JobInfo, now: i64) -> Option<u64> {
    if job.stime <= 0 {
        return None;
    }
    let end = if job.end_time > 0 { job.end_time } else { now };
    Some(end.saturating_sub(job.stime).max(0) as u64)
}

/// A Unix time in PBS's form (`Sun Nov 22 10:00:00 2026`) in zone `tz`.
pub fn pbs_date_in<Tz: TimeZone>(secs: i64, tz: &Tz) -> String
where
    Tz::Offset: std::fmt::Display,
{
    match tz.timestamp_opt(secs, 0).earliest() {
        Some(t) => t.format("%a %b %e %H:%M:%S %Y").to_string(),
        None => secs.to_string(),
    }
}

/// `host:path`, PBS's form of an output path.
fn host_path(host: &str, path: &str) -> String {
    if host.is_empty() {
        path.to_string()
    } else {
        format!("{host}:{path}")
    }
}

/// Every attribute `qstat -f` shows for `job`, in PBS's order; `now` is the
/// server's time, dates are shown in zone `tz`.
pub fn job_attrs<Tz: TimeZone>(job: &JobInfo, server: &str, now: i64, tz: &Tz) -> Attrs
where
    Tz::Offset: std::fmt::Display,
{
    let date = |secs: i64| pbs_date_in(secs, tz);
    let mut a = Attrs::new();
    a.text("Job_Name", &job.name);
    a.text(
        "Job_Owner",
        if job.submit_host.is_empty() {
            job.owner.clone()
        } else {
            format!("{}@{}", job.owner, job.submit_host)
        },
    );
    a.text("job_state", state_letter(job));
    a.text("queue", &job.queue);
    a.text("server", server);
    if !job.account.is_empty() {
        a.text("Account_Name", &job.account);
    }
    if !job.group.is_empty() {
        a.text("egroup", &job.group);
    }
    if job.qtime > 0 {
        // The proto has no separate creation time: a job is queued when created.
        a.text("ctime", date(job.qtime));
        a.text("qtime", date(job.qtime));
    }
    if job.mtime > 0 {
        a.text("mtime", date(job.mtime));
    }
    if job.stime > 0 {
        a.text("stime", date(job.stime));
    }
    if job.end_time > 0 {
        a.text("obittime", date(job.end_time));
    }
    if !job.exec_nodes.is_empty() {
        a.text("exec_host", job.exec_nodes.join("+"));
    }
    if !job.placement.is_empty() {
        a.text("placement", job.placement.join(" "));
    }
    a.int("Resource_List.nodes", job.nodes);
    a.text("Resource_List.walltime", format_hms(job.walltime));
    if let Some(mem) = job.mem {
        a.text("Resource_List.mem", format!("{}kb", mem / 1024));
    }
    if let Some(ncpus) = job.ncpus {
        a.int("Resource_List.ncpus", ncpus);
    }
    if !job.features.is_empty() {
        a.text("Resource_List.feature", job.features.join(":"));
    }
    if let Some(used) = elapsed(job, now) {
        a.text("resources_used.walltime", format_hms(used));
    }
    a.text(
        "Hold_Types",
        if job.hold_types.is_empty() {
            "n"
        } else {
            &job.hold_types
        },
    );
    a.text("Join_Path", if job.join_output { "oe" } else { "n" });
    if !job.stdout_path.is_empty() {
        a.text("Output_Path", host_path(&job.submit_host, &job.stdout_path));
    }
    if !job.stderr_path.is_empty() {
        a.text("Error_Path", host_path(&job.submit_host, &job.stderr_path));
    }
    a.flag("Rerunable", job.rerunnable);
    a.int("run_count", job.run_count);
    if job.start_after > 0 {
        a.text("Execution_Time", date(job.start_after));
    }
    if !job.depend.is_empty() {
        a.text("depend", &job.depend);
    }
    if let Some(status) = job.exit_status.filter(|_| is_finished(job)) {
        a.int("exit_status", status);
    }
    if job.expected_start > 0 {
        a.text("estimated.start_time", date(job.expected_start));
    }
    if !job.comment.is_empty() {
        a.text("comment", &job.comment);
    }
    if !job.reason.is_empty() {
        a.text("reason", &job.reason);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    /// 2026-11-22 10:00:00 UTC, a Sunday.
    const T0: i64 = 1_795_341_600;

    fn running() -> JobInfo {
        JobInfo {
            id: "17.server".into(),
            name: "solver".into(),
            owner: "alice".into(),
            group: "users".into(),
            queue: "batch".into(),
            state: JobState::Running as i32,
            state_letter: "R".into(),
            nodes: 3,
            walltime: 3600,
            qtime: T0,
            stime: T0 + 60,
            mtime: T0 + 60,
            exec_nodes: vec!["n1".into(), "n2".into(), "n3".into()],
            stdout_path: "/home/alice/solver.o17".into(),
            stderr_path: "/home/alice/solver.e17".into(),
            rerunnable: true,
            run_count: 1,
            hold_types: "n".into(),
            submit_host: "login1".into(),
            server_time: T0 + 60 + 754,
            exit_status: None,
            ..Default::default()
        }
    }

    fn queued() -> JobInfo {
        JobInfo {
            id: "18.server".into(),
            name: "a_rather_long_job_name_indeed".into(),
            owner: "bob".into(),
            queue: "batch".into(),
            state: JobState::Queued as i32,
            state_letter: "Q".into(),
            nodes: 64,
            walltime: 48 * 3600,
            qtime: T0,
            reason: "Resources".into(),
            comment: "Not enough free nodes".into(),
            ..Default::default()
        }
    }

    fn finished() -> JobInfo {
        JobInfo {
            id: "16.server".into(),
            state: JobState::Finished as i32,
            state_letter: "F".into(),
            end_time: T0 + 60 + 100,
            exit_status: Some(271),
            exit_signal: Some(15),
            ..running()
        }
    }

    fn full(job: &JobInfo) -> String {
        let mut out = String::new();
        job_attrs(job, "server", job.server_time, &Utc)
            .write_full(&format!("Job Id: {}", job.id), &mut out);
        out
    }

    #[test]
    fn pbs_dates() {
        assert_eq!(pbs_date_in(T0, &Utc), "Sun Nov 22 10:00:00 2026");
        assert_eq!(
            pbs_date_in(T0 + 10 * 86400, &Utc),
            "Wed Dec  2 10:00:00 2026"
        );
    }

    #[test]
    fn full_form_of_a_running_job() {
        assert_eq!(
            full(&running()),
            "Job Id: 17.server
    Job_Name = solver
    Job_Owner = alice@login1
    job_state = R
    queue = batch
    server = server
    egroup = users
    ctime = Sun Nov 22 10:00:00 2026
    qtime = Sun Nov 22 10:00:00 2026
    mtime = Sun Nov 22 10:01:00 2026
    stime = Sun Nov 22 10:01:00 2026
    exec_host = n1+n2+n3
    Resource_List.nodes = 3
    Resource_List.walltime = 01:00:00
    resources_used.walltime = 00:12:34
    Hold_Types = n
    Join_Path = n
    Output_Path = login1:/home/alice/solver.o17
    Error_Path = login1:/home/alice/solver.e17
    Rerunable = True
    run_count = 1

"
        );
    }

    #[test]
    fn exit_status_only_when_finished() {
        let text = full(&finished());
        assert!(text.contains("    exit_status = 271\n"), "{text}");
        assert!(
            text.contains("    obittime = Sun Nov 22 10:02:40 2026\n"),
            "{text}"
        );
        assert!(
            text.contains("    resources_used.walltime = 00:01:40\n"),
            "{text}"
        );
        let exiting = JobInfo {
            state: JobState::Exiting as i32,
            state_letter: "E".into(),
            exit_status: Some(0),
            ..running()
        };
        assert!(!full(&exiting).contains("exit_status"));
    }

    #[test]
    fn a_queued_job_has_no_start_and_says_why() {
        let text = full(&queued());
        assert!(!text.contains("stime"), "{text}");
        assert!(!text.contains("exec_host"), "{text}");
        assert!(!text.contains("resources_used"), "{text}");
        assert!(text.contains("    Resource_List.walltime = 48:00:00\n"));
        assert!(text.contains("    comment = Not enough free nodes\n    reason = Resources\n"));
        assert!(text.contains("    Job_Owner = bob\n"), "{text}");
        assert!(!text.contains("estimated"), "no estimate, no line: {text}");
        let planned = JobInfo {
            expected_start: T0 + 3600,
            ..queued()
        };
        assert!(
            full(&planned)
                .contains("    estimated.start_time = Sun Nov 22 11:00:00 2026\n    comment"),
            "{}",
            full(&planned)
        );
        assert!(!text.contains("Output_Path"), "{text}");
    }

    #[test]
    fn dependencies_and_start_times_are_shown() {
        let job = JobInfo {
            state: JobState::Waiting as i32,
            state_letter: "W".into(),
            depend: "afterok:12.server:13.server".into(),
            start_after: T0 + 3600,
            ..queued()
        };
        let text = full(&job);
        assert!(text.contains("    job_state = W\n"), "{text}");
        assert!(
            text.contains("    Execution_Time = Sun Nov 22 11:00:00 2026\n"),
            "{text}"
        );
        assert!(
            text.contains("    depend = afterok:12.server:13.server\n"),
            "{text}"
        );
        assert!(!full(&queued()).contains("depend"));
    }

    #[test]
    fn the_table() {
        let listing = JobListing {
            server: "server".into(),
            time: T0 + 1000,
            jobs: vec![running(), queued()],
            full: false,
            show_nodes: false,
        };
        assert_eq!(
            listing.text(),
            "\
Job ID    Name             User  Queue Nodes Walltime S  Elapsed
--------- ---------------- ----- ----- ----- -------- - --------
17.server solver           alice batch     3 01:00:00 R 00:12:34
18.server a_rather_long_j* bob   batch    64 48:00:00 Q       --
"
        );
    }

    #[test]
    fn dash_n_puts_each_jobs_nodes_under_it() {
        let listing = JobListing {
            server: "server".into(),
            time: T0 + 1000,
            jobs: vec![running(), queued()],
            full: false,
            show_nodes: true,
        };
        let text = listing.text();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[2].starts_with("17.server"), "{text}");
        assert_eq!(lines[3], "   n1+n2+n3");
        assert!(lines[4].starts_with("18.server"), "{text}");
        assert_eq!(lines[5], "   --");
    }

    #[test]
    fn nothing_to_list_prints_nothing() {
        let listing = JobListing {
            server: "server".into(),
            time: T0,
            jobs: vec![],
            full: false,
            show_nodes: false,
        };
        assert_eq!(listing.text(), "");
    }

    #[test]
    fn the_json_document() {
        let listing = JobListing {
            server: "server".into(),
            time: T0 + 1000,
            jobs: vec![finished()],
            full: false,
            show_nodes: false,
        };
        let doc: serde_json::Value =
            serde_json::from_str(&serde_json::to_string(&listing.json()).unwrap()).unwrap();
        assert_eq!(doc["timestamp"], T0 + 1000);
        assert_eq!(doc["pbs_server"], "server");
        assert!(doc["pbs_version"].as_str().unwrap().starts_with("qmesh-"));
        let job = &doc["Jobs"]["16.server"];
        assert_eq!(job["Job_Name"], "solver");
        assert_eq!(job["Job_Owner"], "alice@login1");
        assert_eq!(job["job_state"], "F");
        assert_eq!(job["Resource_List"]["nodes"], 3);
        assert_eq!(job["Resource_List"]["walltime"], "01:00:00");
        assert_eq!(job["resources_used"]["walltime"], "00:01:40");
        assert_eq!(job["exec_host"], "n1+n2+n3");
        assert_eq!(job["exit_status"], 271);
        assert_eq!(job["Rerunable"], "True");
        // Keys keep the -f order, top level too.
        let text = serde_json::to_string(&listing.json()).unwrap();
        assert!(text.starts_with(r#"{"timestamp":"#), "{text}");
        assert!(text.find("Job_Name") < text.find("job_state"));
    }
}
