//! A job's attributes as `qstat -f` names them, built once per job
//! ([`job_attrs`]) and read by every form: the full text, the JSON
//! document, and the columns of the tables, which take `Resource_List.*`
//! and `resources_used.*` from the same lists ([`resource_list`],
//! [`resources_used`]) so that a table and `-f` always agree.
//!
//! To show a new attribute, add it to [`job_attrs`] at its place in PBS's
//! order (a resource to [`resource_list`] or [`resources_used`]).

use chrono::TimeZone;
use qmesh_core::time::format_hms;
use qmesh_proto::{JobInfo, JobState};

use super::full_text::{FullStyle, write_object};
use super::sizes;
use crate::output::{self, Attrs, Tree, Value};

/// The PBS letter for the job's state.
pub fn state_letter(job: &JobInfo) -> String {
    if !job.state_letter.is_empty() {
        return job.state_letter.clone();
    }
    match job.state() {
        JobState::Queued => "Q",
        JobState::Held => "H",
        JobState::Waiting => "W",
        JobState::Transit => "T",
        JobState::Running => "R",
        JobState::Suspended => "S",
        JobState::Exiting => "E",
        JobState::Begun => "B",
        JobState::Finished => "F",
        JobState::Unspecified => "?",
    }
    .to_string()
}

fn is_finished(job: &JobInfo) -> bool {
    job.state() == JobState::Finished || job.state_letter == "F"
}

/// The server's time for `job` (when the daemon answered), else `fallback`.
pub fn now_for(job: &JobInfo, fallback: i64) -> i64 {
    if job.server_time > 0 {
        job.server_time
    } else {
        fallback
    }
}

/// Seconds the job has run since it started (until it ended), less the
/// time it was suspended, if it has started.
pub fn elapsed(job: &JobInfo, now: i64) -> Option<u64> {
    if job.stime <= 0 {
        return None;
    }
    let end = if job.end_time > 0 { job.end_time } else { now };
    let span = end.saturating_sub(job.stime).max(0) as u64;
    // Suspended time is not wall time; the server counted it up to its
    // answer, and a suspension under way goes on until `now`.
    let since_answer = if job.state() == JobState::Suspended && job.server_time > 0 {
        now.saturating_sub(job.server_time).max(0) as u64
    } else {
        0
    };
    Some(span.saturating_sub(job.suspended_secs.saturating_add(since_answer)))
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

/// The nodes the job runs on, `+`-separated (`exec_host`, and `-n`): the
/// daemon's PBS form (`n1/0*8+n2/0*8`), else the node names.
pub fn exec_host(job: &JobInfo) -> String {
    if job.exec_host.is_empty() {
        job.exec_nodes.join("+")
    } else {
        job.exec_host.clone()
    }
}

/// Resources PBS shows as numbers in its JSON.
const COUNTS: [&str; 6] = [
    "ncpus",
    "nodect",
    "ngpus",
    "mpiprocs",
    "ompthreads",
    "procs",
];

/// Resources that are sizes, shown in lower case (`954MB` is `954mb`).
const SIZES: [&str; 6] = ["mem", "vmem", "pmem", "pvmem", "file", "ddisk"];

fn resource_value(name: &str, value: &str) -> Value {
    if COUNTS.contains(&name)
        && let Ok(n) = value.parse::<i64>()
    {
        return Value::Int(n);
    }
    if SIZES.contains(&name) {
        return Value::Text(value.to_ascii_lowercase());
    }
    Value::Text(value.to_string())
}

/// What the job asked for, by resource name in PBS's (alphabetical)
/// order: `Resource_List.NAME`.
pub fn resource_list(job: &JobInfo) -> Vec<(String, Value)> {
    if !job.resource_list.is_empty() {
        let mut names: Vec<&String> = job.resource_list.keys().collect();
        names.sort();
        return names
            .into_iter()
            .map(|name| (name.clone(), resource_value(name, &job.resource_list[name])))
            .collect();
    }
    // A daemon that sends no list (an older one): what the fields say.
    let mut list: Vec<(String, Value)> = Vec::new();
    if !job.features.is_empty() {
        list.push(("feature".into(), Value::Text(job.features.join(":"))));
    }
    if let Some(mem) = job.mem {
        list.push(("mem".into(), Value::Text(sizes::kilobytes(mem))));
    }
    if let Some(ncpus) = job.ncpus {
        list.push(("ncpus".into(), Value::Int(ncpus.into())));
    }
    list.push(("nodect".into(), Value::Int(job.nodes.into())));
    list.push(("nodes".into(), Value::Int(job.nodes.into())));
    list.push(("walltime".into(), Value::Text(format_hms(job.walltime))));
    list
}

/// What the job has used so far: `resources_used.NAME`, the daemon's
/// (wall time, CPUs, and once it ended the CPU time and memory its agent
/// measured). Without a CPU time (`cput`), the tables show PBS's `0`.
pub fn resources_used(job: &JobInfo, now: i64) -> Vec<(String, Value)> {
    let mut list: Vec<(String, Value)> = job
        .resources_used
        .iter()
        .filter(|(name, _)| name.as_str() != "walltime")
        .map(|(name, value)| (name.clone(), resource_value(name, value)))
        .collect();
    // The wall time from the server's clock at this answer.
    if let Some(used) = elapsed(job, now) {
        list.push(("walltime".into(), Value::Text(format_hms(used))));
    }
    list.sort_by(|a, b| a.0.cmp(&b.0));
    list
}

/// The value of `name` in a [`resource_list`] or [`resources_used`] list.
pub fn lookup(list: &[(String, Value)], name: &str) -> Option<String> {
    list.iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v.to_string())
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
    if !job.checkpoint.is_empty() {
        a.text("Checkpoint", &job.checkpoint);
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
        a.text("exec_host", exec_host(job));
    }
    if !job.exec_vnode.is_empty() {
        a.text("exec_vnode", &job.exec_vnode);
    }
    if !job.placement.is_empty() {
        a.text("placement", job.placement.join(" "));
    }
    for (name, value) in resource_list(job) {
        push(&mut a, &format!("Resource_List.{name}"), value);
    }
    for (name, value) in resources_used(job, now) {
        push(&mut a, &format!("resources_used.{name}"), value);
    }
    a.text(
        "Hold_Types",
        if job.hold_types.is_empty() {
            "n"
        } else {
            &job.hold_types
        },
    );
    let join = match job.join_path.as_str() {
        "" if job.join_output => "oe",
        "" => "n",
        path => path,
    };
    a.text("Join_Path", join);
    if !job.keep_files.is_empty() {
        a.text("Keep_Files", &job.keep_files);
    }
    a.text(
        "Mail_Points",
        if job.mail_points.is_empty() {
            "a"
        } else {
            &job.mail_points
        },
    );
    if !job.mail_users.is_empty() {
        a.text("Mail_Users", job.mail_users.join(","));
    }
    if !job.stdout_path.is_empty() {
        a.text("Output_Path", host_path(&job.submit_host, &job.stdout_path));
    }
    if !job.stderr_path.is_empty() {
        a.text("Error_Path", host_path(&job.submit_host, &job.stderr_path));
    }
    a.int("Priority", i64::from(job.job_priority));
    a.flag("Rerunable", job.rerunnable);
    if job.interactive {
        a.flag("interactive", true);
    }
    if job.session_id > 0 {
        a.int("session_id", i64::from(job.session_id));
    }
    if !job.shell_path.is_empty() {
        a.text("Shell_Path_List", job.shell_path.join(","));
    }
    if let Some(mask) = job.umask {
        a.text("umask", format!("{mask:o}"));
    }
    if !job.group_list.is_empty() {
        a.text("group_list", &job.group_list);
    }
    if job.sandbox_private {
        a.text("sandbox", "PRIVATE");
    }
    if !job.start_dir.is_empty() {
        a.text("init_work_dir", &job.start_dir);
    }
    if !job.project.is_empty() {
        a.text("project", &job.project);
    }
    a.int("run_count", job.run_count);
    if job.start_after > 0 {
        a.text("Execution_Time", date(job.start_after));
    }
    if !job.depend.is_empty() {
        a.text("depend", &job.depend);
    }
    if let Some(status) = job.exit_status.filter(|_| is_finished(job)) {
        // PBS Pro's name and Torque's: tools read one or the other.
        a.int("Exit_status", status);
        a.int("exit_status", status);
    }
    if job.array {
        // PBS Pro's attributes of an array.
        a.flag("array", true);
        a.text("array_indices_submitted", &job.array_indices_submitted);
        let remaining = &job.array_state_count;
        a.text("array_state_count", remaining);
        if job.array_throttle > 0 {
            a.int("max_run_subjobs", job.array_throttle);
        }
    }
    if let Some(index) = job.array_index {
        a.text("array_id", &job.array_id);
        a.int("array_index", index);
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

fn push(a: &mut Attrs, name: &str, value: Value) {
    match value {
        Value::Text(text) => a.text(name, text),
        Value::Int(n) => a.int(name, n),
        Value::Float(x) => a.float(name, x),
    };
}

/// PBS's JSON document of the jobs (`qstat -f -F json`).
pub fn jobs_document<Tz: TimeZone>(jobs: &[JobInfo], server: &str, time: i64, tz: &Tz) -> Tree
where
    Tz::Offset: std::fmt::Display,
{
    let entries = jobs
        .iter()
        .map(|job| {
            let attrs = job_attrs(job, server, now_for(job, time), tz);
            (job.id.clone(), attrs.json())
        })
        .collect();
    output::document(time, server, "Jobs", entries)
}

/// The jobs in `-f`'s text form.
pub fn full_text<Tz: TimeZone>(
    jobs: &[JobInfo],
    server: &str,
    time: i64,
    style: &FullStyle,
    tz: &Tz,
) -> String
where
    Tz::Offset: std::fmt::Display,
{
    let mut out = String::new();
    for job in jobs {
        let attrs = job_attrs(job, server, now_for(job, time), tz);
        write_object(&format!("Job Id: {}", job.id), &attrs, style, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::test_jobs::{T0, finished, queued, running};
    use super::*;
    use chrono::Utc;

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
    Resource_List.nodect = 3
    Resource_List.nodes = 3
    Resource_List.walltime = 01:00:00
    resources_used.walltime = 00:12:34
    Hold_Types = n
    Join_Path = n
    Mail_Points = a
    Output_Path = login1:/home/alice/solver.o17
    Error_Path = login1:/home/alice/solver.e17
    Priority = 0
    Rerunable = True
    run_count = 1

"
        );
    }

    #[test]
    fn exit_status_only_when_finished() {
        let text = full(&finished());
        assert!(
            text.contains("    Exit_status = 271\n    exit_status = 271\n"),
            "{text}"
        );
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
        assert!(!full(&exiting).to_lowercase().contains("exit_status"));
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
    fn the_json_document() {
        let tree = jobs_document(&[finished()], "server", T0 + 1000, &Utc);
        let doc: serde_json::Value =
            serde_json::from_str(&serde_json::to_string(&tree).unwrap()).unwrap();
        assert_eq!(doc["timestamp"], T0 + 1000);
        assert_eq!(doc["pbs_server"], "server");
        assert!(doc["pbs_version"].as_str().unwrap().starts_with("qmesh-"));
        let job = &doc["Jobs"]["16.server"];
        assert_eq!(job["Job_Name"], "solver");
        assert_eq!(job["Job_Owner"], "alice@login1");
        assert_eq!(job["job_state"], "F");
        assert_eq!(job["Resource_List"]["nodes"], 3);
        assert_eq!(job["Resource_List"]["nodect"], 3);
        assert_eq!(job["Resource_List"]["walltime"], "01:00:00");
        assert_eq!(job["resources_used"]["walltime"], "00:01:40");
        assert_eq!(job["exec_host"], "n1+n2+n3");
        assert_eq!(job["exit_status"], 271);
        assert_eq!(job["Exit_status"], 271);
        assert_eq!(job["Rerunable"], "True");
        // Keys keep the -f order, top level too.
        let text = serde_json::to_string(&tree).unwrap();
        assert!(text.starts_with(r#"{"timestamp":"#), "{text}");
        assert!(text.find("Job_Name") < text.find("job_state"));
    }
}
