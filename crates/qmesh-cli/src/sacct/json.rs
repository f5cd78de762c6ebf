//! `sacct --json`: the shape of Slurm 22.05's (`openapi/dbv0.0.38`,
//! `tests/slurm/fixtures/sacct.json`), with the fields tools read: each
//! job's `job_id`, `name`, `user`, `account`, `partition`, `state.current`,
//! `exit_code`, `array`, `time`, `nodes` and its `steps`. 22.05 writes
//! `{"status": "SUCCESS", "return_code": 0}` for a job that ended with
//! `exit 3` (its table says `3:0`); qmesh writes `"FAILED"` and the code,
//! as later Slurm does.

use serde_json::{Value, json};

use super::fields::Line;

/// The document: `meta`, `errors`, `jobs`.
pub fn document(jobs: &[(Line, Option<Line>)]) -> Value {
    json!({
        "meta": {
            "plugin": {"type": "openapi/dbv0.0.38", "name": "Slurm OpenAPI DB v0.0.38"},
            "Slurm": {
                "version": {"major": 22, "micro": 8, "minor": 5},
                "release": "22.05.8"
            }
        },
        "errors": [],
        "jobs": jobs.iter().map(|(line, step)| job(line, step.as_ref())).collect::<Vec<_>>(),
    })
}

fn job(line: &Line, step: Option<&Line>) -> Value {
    let job = line.job;
    let number = |id: &str| -> u64 {
        id.split(['_', '.'])
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let (array_job, task) = match job.array_index {
        Some(index) => (job.array_job, json!(index)),
        None => (0, Value::Null),
    };
    let limit = match job.walltime {
        0 => Value::Null,
        secs => json!(secs.div_ceil(60)),
    };
    let elapsed: u64 = line.value("ElapsedRaw").parse().unwrap_or(0);
    let killer = job.deleted_by.split('@').next().unwrap_or_default();
    json!({
        "account": line.value("Account"),
        "allocation_nodes": line.value("AllocNodes").parse::<u64>().unwrap_or(0),
        "array": {
            "job_id": array_job,
            "limits": {"max": {"running": {"tasks": 0}}},
            "task": Value::Null,
            "task_id": task,
        },
        "association": {
            "account": line.value("Account"),
            "cluster": line.cluster,
            "partition": Value::Null,
            "user": job.user,
        },
        "cluster": line.cluster,
        "comment": {"administrator": Value::Null, "job": Value::Null, "system": Value::Null},
        "derived_exit_code": {"status": "SUCCESS", "return_code": 0},
        "time": {
            "elapsed": elapsed,
            "eligible": if job.state == "H" { 0 } else { job.eligible.max(job.submit) },
            "end": if job.state == "F" { job.end } else { 0 },
            "start": job.start,
            "submission": job.submit,
            "suspended": 0,
            "system": {"seconds": 0, "microseconds": 0},
            "limit": limit,
            "total": {"seconds": job.cput.unwrap_or(0), "microseconds": 0},
            "user": {"seconds": 0, "microseconds": 0},
        },
        "exit_code": exit_code(line.shown.code, line.shown.signal),
        "flags": [],
        "group": job.group,
        "het": {"job_id": 0, "job_offset": Value::Null},
        "job_id": number(&line.raw_id),
        "name": job.name,
        "mcs": {"label": ""},
        "nodes": line.value("NodeList"),
        "partition": job.queue,
        "priority": job.priority,
        "qos": line.value("QOS"),
        "required": {"CPUs": job.ncpus.max(1), "memory": 0},
        "kill_request_user": if killer.is_empty() { Value::Null } else { json!(killer) },
        "reservation": {"id": 0, "name": 0},
        "state": {"current": line.shown.state, "reason": line.value("Reason")},
        "steps": step.map(|s| vec![batch_step(s)]).unwrap_or_default(),
        "user": job.user,
        "wckey": {"wckey": "", "flags": []},
        "working_directory": job.workdir,
    })
}

fn batch_step(line: &Line) -> Value {
    let job = line.job;
    let nodes: Vec<&str> = job.exec_nodes.iter().take(1).map(String::as_str).collect();
    let number: u64 = line
        .raw_id
        .split(['_', '.'])
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    json!({
        "nodes": {"list": nodes, "count": nodes.len(), "range": line.value("NodeList")},
        "time": {
            "elapsed": line.value("ElapsedRaw").parse::<u64>().unwrap_or(0),
            "end": if job.state == "F" { job.end } else { 0 },
            "start": job.start,
            "suspended": 0,
            "system": {"seconds": 0, "microseconds": 0},
            "total": {"seconds": job.cput.unwrap_or(0), "microseconds": 0},
            "user": {"seconds": 0, "microseconds": 0},
        },
        "exit_code": exit_code(line.shown.code, line.shown.signal),
        "tasks": {"count": 1},
        "pid": Value::Null,
        "kill_request_user": Value::Null,
        "state": line.shown.state,
        "step": {
            "job_id": number,
            "het": {"component": Value::Null},
            "id": "batch",
            "name": "batch",
        },
    })
}

/// Slurm's exit code object.
fn exit_code(code: i32, signal: i32) -> Value {
    if signal > 0 {
        json!({
            "status": "SIGNALED",
            "return_code": Value::Null,
            "signal": {"signal_id": signal, "name": signal_name(signal)},
        })
    } else if code != 0 {
        json!({"status": "FAILED", "return_code": code})
    } else {
        json!({"status": "SUCCESS", "return_code": 0})
    }
}

/// strsignal's words, which Slurm writes.
fn signal_name(signal: i32) -> &'static str {
    match signal {
        1 => "Hangup",
        2 => "Interrupt",
        3 => "Quit",
        4 => "Illegal instruction",
        6 => "Aborted",
        7 => "Bus error",
        8 => "Floating point exception",
        9 => "Killed",
        10 => "User defined signal 1",
        11 => "Segmentation fault",
        12 => "User defined signal 2",
        13 => "Broken pipe",
        14 => "Alarm clock",
        15 => "Terminated",
        24 => "CPU time limit exceeded",
        125 => "Unknown signal 125",
        _ => "Unknown signal",
    }
}
