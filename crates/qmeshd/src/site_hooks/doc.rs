//! The job as a hook reads it, and what a hook's answer changes: JSON in
//! PBS's attribute names (`Job_Name`, `queue`, `Resource_List`,
//! `Account_Name`, ...), so a site's filter reads like its PBS hook did.
//!
//! A hook is given a document:
//!
//! ```json
//! {"event": "queuejob", "hook": "site_filter", "server": "srv",
//!  "requestor": "alice", "requestor_group": "users", "requestor_host": "login1",
//!  "job": {"Job_Name": "sim", "queue": null, "Resource_List": {"walltime": "1:00:00"}, ...}}
//! ```
//!
//! and answers on its standard output with nothing (accept) or a JSON
//! object: the job, or a document whose `job` is the job. Its attributes
//! replace the job's; `null` unsets one; `Resource_List` and
//! `Variable_List` are merged name by name (`null` removes a name). An
//! attribute echoed unchanged is no change, so a hook may print back the
//! whole job it read. Anything else is refused in words naming it.

use serde_json::{Map, Value, json};

use qmesh_core::array::ArrayStyle;
use qmesh_core::job::JobPayload;
use qmesh_core::qalter::Alteration;
use qmesh_core::time::Time;
use qmesh_core::{Job, Submission};

use crate::identity::Peer;

/// Who asked, for the document's head.
pub struct Asker<'a> {
    pub peer: &'a Peer,
    pub server: &'a str,
}

/// The document's head: event, hook, server and who asked.
pub fn head(event: &str, hook: &str, asker: &Asker<'_>) -> Map<String, Value> {
    let mut doc = Map::new();
    doc.insert("event".into(), json!(event));
    doc.insert("hook".into(), json!(hook));
    doc.insert("server".into(), json!(asker.server));
    doc.insert("requestor".into(), json!(asker.peer.user));
    doc.insert("requestor_group".into(), json!(asker.peer.group));
    doc.insert(
        "requestor_host".into(),
        json!(asker.peer.host.as_deref().unwrap_or(asker.server)),
    );
    doc
}

fn opt(v: &Option<String>) -> Value {
    v.as_ref().map_or(Value::Null, |s| json!(s))
}

fn time(t: Option<Time>) -> Value {
    t.map_or(Value::Null, |t| json!(t.timestamp()))
}

fn list(pairs: &[(String, String)]) -> Value {
    let mut map = Map::new();
    for (k, v) in pairs {
        map.insert(k.clone(), json!(v));
    }
    Value::Object(map)
}

fn join_path(oe: bool, eo: bool) -> &'static str {
    match (oe, eo) {
        (true, _) => "oe",
        (_, true) => "eo",
        _ => "n",
    }
}

fn rerun(r: Option<bool>) -> Value {
    r.map_or(Value::Null, |r| json!(if r { "y" } else { "n" }))
}

/// A submission as a queuejob hook reads it.
pub fn submission(sub: &Submission, payload: &JobPayload) -> Value {
    json!({
        "Job_Name": opt(&sub.name),
        "queue": opt(&sub.queue),
        "Resource_List": list(&sub.resources),
        "Output_Path": opt(&sub.stdout_path),
        "Error_Path": opt(&sub.stderr_path),
        "Join_Path": join_path(sub.join_output, sub.join_to_error),
        "Hold_Types": if sub.hold { "u" } else { "n" },
        "Account_Name": opt(&sub.account),
        "project": opt(&sub.project),
        "Priority": sub.priority,
        "Rerunable": rerun(sub.rerunnable),
        "depend": if sub.depend.is_empty() { Value::Null } else { json!(sub.depend) },
        "Execution_Time": time(sub.start_after),
        "Shell_Path_List": opt(&sub.shell),
        "Mail_Points": opt(&sub.mail_points),
        "Mail_Users": opt(&sub.mail_users),
        "Keep_Files": opt(&sub.keep_files),
        "Checkpoint": opt(&sub.checkpoint),
        "umask": opt(&sub.umask),
        "group_list": opt(&sub.group_list),
        "init_work_dir": opt(&sub.start_dir),
        "User_List": opt(&sub.user_list),
        "array_indices_submitted": sub.array.as_ref().map_or(Value::Null, |(_, a)| json!(a)),
        "interactive": sub.interactive,
        "PBS_O_WORKDIR": sub.workdir,
        "script": String::from_utf8_lossy(&payload.script),
        "Variable_List": list(&payload.env),
    })
}

/// The job object of an answer: the document's `job`, or the object.
fn answered_job(answer: Value) -> Result<Map<String, Value>, String> {
    let Value::Object(mut map) = answer else {
        return Err("printed JSON that is not an object (print the job, or nothing)".into());
    };
    match map.remove("job") {
        Some(Value::Object(job)) => Ok(job),
        Some(_) => Err("printed a \"job\" that is not an object".into()),
        None => Ok(map),
    }
}

fn text(key: &str, v: &Value) -> Result<Option<String>, String> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        Value::Number(n) => Ok(Some(n.to_string())),
        other => Err(format!("set {key} to {other}, which is not a string")),
    }
}

fn number(key: &str, v: &Value) -> Result<Option<i64>, String> {
    match v {
        Value::Null => Ok(None),
        Value::Number(n) => n
            .as_i64()
            .map(Some)
            .ok_or_else(|| format!("set {key} to {n}, which is not a whole number")),
        Value::String(s) => s
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| format!("set {key} to \"{s}\", which is not a whole number")),
        other => Err(format!("set {key} to {other}, which is not a number")),
    }
}

/// A priority: a whole number the core then holds to PBS's range, as it
/// does qsub's and qalter's `-p`.
fn priority(key: &str, v: &Value) -> Result<Option<i32>, String> {
    number(key, v)?
        .map(|p| {
            i32::try_from(p)
                .map_err(|_| format!("set {key} to {p}; a job's priority runs from -1024 to 1023"))
        })
        .transpose()
}

fn flag(key: &str, v: &Value, yes: &str, no: &str) -> Result<Option<bool>, String> {
    match text(key, v)?.as_deref().map(str::to_ascii_lowercase) {
        None => Ok(None),
        Some(s) if s == yes || s == "true" => Ok(Some(true)),
        Some(s) if s == no || s == "false" => Ok(Some(false)),
        Some(s) => Err(format!("set {key} to \"{s}\"; write \"{yes}\" or \"{no}\"")),
    }
}

fn unix_time(key: &str, v: &Value) -> Result<Option<Time>, String> {
    number(key, v)?
        .map(|secs| {
            chrono::DateTime::from_timestamp(secs, 0)
                .ok_or_else(|| format!("set {key} to {secs}, which is no time"))
        })
        .transpose()
}

/// Merges a name-value map into `pairs`: a name given replaces its
/// value, or is added; `null` removes it.
fn merge_list(key: &str, v: &Value, pairs: &mut Vec<(String, String)>) -> Result<(), String> {
    let Value::Object(map) = v else {
        return Err(format!(
            "set {key} to what is not an object of names and values"
        ));
    };
    for (name, value) in map {
        let value = text(&format!("{key}.{name}"), value)?;
        let at = pairs.iter().position(|(n, _)| n == name);
        match (at, value) {
            (Some(i), Some(v)) => pairs[i].1 = v,
            (None, Some(v)) => pairs.push((name.clone(), v)),
            (Some(i), None) => {
                pairs.remove(i);
            }
            (None, None) => {}
        }
    }
    Ok(())
}

fn read_only(key: &str, known: &[&str]) -> String {
    if known.contains(&key) {
        format!("changed {key}, which a hook may read but not change")
    } else {
        format!(
            "set \"{key}\", which is no attribute of a job; attributes: {}",
            known.join(", ")
        )
    }
}

/// Applies a queuejob hook's answer to the submission and its payload.
pub fn apply_to_submission(
    answer: Value,
    sub: &mut Submission,
    payload: &mut JobPayload,
) -> Result<(), String> {
    let before = submission(sub, payload);
    let Value::Object(before) = before else {
        unreachable!("a submission's document is an object")
    };
    let known: Vec<&str> = before.keys().map(String::as_str).collect();
    for (key, v) in answered_job(answer)? {
        if before.get(&key) == Some(&v) {
            continue;
        }
        let k = key.as_str();
        match k {
            "Job_Name" => sub.name = text(k, &v)?,
            "queue" => sub.queue = text(k, &v)?,
            "Resource_List" => merge_list(k, &v, &mut sub.resources)?,
            "Output_Path" => sub.stdout_path = text(k, &v)?,
            "Error_Path" => sub.stderr_path = text(k, &v)?,
            "Join_Path" => {
                let join = text(k, &v)?.unwrap_or_else(|| "n".into());
                (sub.join_output, sub.join_to_error) = match join.as_str() {
                    "oe" => (true, false),
                    "eo" => (false, true),
                    "n" => (false, false),
                    other => {
                        return Err(format!("set Join_Path to \"{other}\"; write oe, eo or n"));
                    }
                };
            }
            "Hold_Types" => {
                let holds = text(k, &v)?.unwrap_or_default();
                sub.hold = match holds.as_str() {
                    "" | "n" => false,
                    "u" => true,
                    other => {
                        return Err(format!(
                            "set Hold_Types to \"{other}\"; at submission write u or n"
                        ));
                    }
                };
            }
            "Account_Name" => sub.account = text(k, &v)?,
            "project" => sub.project = text(k, &v)?,
            "Priority" => sub.priority = priority(k, &v)?,
            "Rerunable" => sub.rerunnable = flag(k, &v, "y", "n")?,
            "depend" => sub.depend = text(k, &v)?.unwrap_or_default(),
            "Execution_Time" => sub.start_after = unix_time(k, &v)?,
            "Shell_Path_List" => sub.shell = text(k, &v)?,
            "Mail_Points" => sub.mail_points = text(k, &v)?,
            "Mail_Users" => sub.mail_users = text(k, &v)?,
            "Keep_Files" => sub.keep_files = text(k, &v)?,
            "Checkpoint" => sub.checkpoint = text(k, &v)?,
            "umask" => sub.umask = text(k, &v)?,
            "group_list" => sub.group_list = text(k, &v)?,
            "init_work_dir" => sub.start_dir = text(k, &v)?,
            "User_List" => sub.user_list = text(k, &v)?,
            "array_indices_submitted" => {
                let style = sub.array.as_ref().map_or(ArrayStyle::PbsPro, |(s, _)| *s);
                sub.array = text(k, &v)?
                    .filter(|a| !a.trim().is_empty())
                    .map(|a| (style, a));
            }
            "script" => {
                payload.script = text(k, &v)?.unwrap_or_default().into_bytes();
            }
            "Variable_List" => merge_list(k, &v, &mut payload.env)?,
            _ => return Err(read_only(k, &known)),
        }
    }
    Ok(())
}

/// What a qalter asks, as a modifyjob hook reads it: only the
/// attributes being changed.
pub fn alteration(alt: &Alteration) -> Value {
    let mut job = Map::new();
    let mut put = |key: &str, v: Value| {
        if !v.is_null() {
            job.insert(key.into(), v);
        }
    };
    put("Execution_Time", time(alt.start_after));
    put("Account_Name", opt(&alt.account));
    put("Checkpoint", opt(&alt.checkpoint));
    put("Output_Path", opt(&alt.stdout_path));
    put("Error_Path", opt(&alt.stderr_path));
    put("Hold_Types", opt(&alt.hold_list));
    put("Join_Path", opt(&alt.join));
    put("Keep_Files", opt(&alt.keep_files));
    if !alt.resources.is_empty() {
        put("Resource_List", list(&alt.resources));
    }
    put("Mail_Points", opt(&alt.mail_points));
    put("Mail_Users", opt(&alt.mail_users));
    put("Job_Name", opt(&alt.name));
    put("Priority", alt.priority.map_or(Value::Null, |p| json!(p)));
    put("project", opt(&alt.project));
    put("Rerunable", rerun(alt.rerunnable));
    put("Shell_Path_List", opt(&alt.shell));
    put("umask", opt(&alt.umask));
    put("run_count", alt.run_count.map_or(Value::Null, |n| json!(n)));
    Value::Object(job)
}

/// Applies a modifyjob hook's answer: an attribute given is altered to
/// its value, `null` leaves it as the job has it.
pub fn apply_to_alteration(answer: Value, alt: &mut Alteration) -> Result<(), String> {
    let Value::Object(before) = alteration(alt) else {
        unreachable!("an alteration's document is an object")
    };
    const KNOWN: &[&str] = &[
        "Execution_Time",
        "Account_Name",
        "Checkpoint",
        "Output_Path",
        "Error_Path",
        "Hold_Types",
        "Join_Path",
        "Keep_Files",
        "Resource_List",
        "Mail_Points",
        "Mail_Users",
        "Job_Name",
        "Priority",
        "project",
        "Rerunable",
        "Shell_Path_List",
        "umask",
        "run_count",
    ];
    for (key, v) in answered_job(answer)? {
        if before.get(&key) == Some(&v) {
            continue;
        }
        let k = key.as_str();
        match k {
            "Execution_Time" => alt.start_after = unix_time(k, &v)?,
            "Account_Name" => alt.account = text(k, &v)?,
            "Checkpoint" => alt.checkpoint = text(k, &v)?,
            "Output_Path" => alt.stdout_path = text(k, &v)?,
            "Error_Path" => alt.stderr_path = text(k, &v)?,
            "Hold_Types" => alt.hold_list = text(k, &v)?,
            "Join_Path" => alt.join = text(k, &v)?,
            "Keep_Files" => alt.keep_files = text(k, &v)?,
            "Resource_List" => merge_list(k, &v, &mut alt.resources)?,
            "Mail_Points" => alt.mail_points = text(k, &v)?,
            "Mail_Users" => alt.mail_users = text(k, &v)?,
            "Job_Name" => alt.name = text(k, &v)?,
            "Priority" => alt.priority = priority(k, &v)?,
            "project" => alt.project = text(k, &v)?,
            "Rerunable" => alt.rerunnable = flag(k, &v, "y", "n")?,
            "Shell_Path_List" => alt.shell = text(k, &v)?,
            "umask" => alt.umask = text(k, &v)?,
            "run_count" => {
                alt.run_count = number(k, &v)?
                    .map(|n| u32::try_from(n).map_err(|_| format!("set run_count to {n}")))
                    .transpose()?
            }
            _ => return Err(read_only(k, KNOWN)),
        }
    }
    Ok(())
}

/// A job chosen to start, as a runjob hook reads it (read only): its
/// attributes as qstat -f names them, and where it is to run.
pub fn started_job(job: &Job, server: &str) -> Value {
    json!({
        "id": format!("{}.{server}", job.id),
        "Job_Name": job.name,
        "Job_Owner": job.owner.user,
        "egroup": job.owner.group,
        "queue": job.queue,
        "Resource_List": job.shown_resource_list(),
        "Account_Name": job.account,
        "project": job.project,
        "Priority": job.priority,
        "exec_host": job.exec_host(),
        "exec_vnode": job.exec_vnode(),
        "PBS_O_WORKDIR": job.workdir,
    })
}

#[cfg(test)]
mod tests;
