//! `squeue --json`: the jobs in the shape Slurm 22.05 prints them (its
//! OpenAPI v0.0.38 job record), so that tools reading Slurm's JSON read
//! qmesh's. Every key of Slurm's record is there (tests/slurm holds the
//! key set against the real one's); what qmesh has no notion of gets the
//! value Slurm gives a job that does not use it (`""`, `0`, `null`).

use qmesh_proto::JobInfo;
use serde_json::{Value, json};

use super::{nodelist, reason, slurm_id, state};

/// The whole document: `meta`, `errors`, `jobs`.
pub fn document(jobs: &[&JobInfo], cluster: &str) -> String {
    let records: Vec<Value> = jobs.iter().map(|j| job(j, cluster)).collect();
    let doc = json!({
        "meta": {
            "plugin": {"type": "openapi/v0.0.38", "name": "Slurm OpenAPI v0.0.38"},
            "Slurm": {
                "version": {"major": 22, "micro": 8, "minor": 5},
                "release": "22.05.8"
            }
        },
        "errors": [],
        "jobs": records,
    });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    text.push('\n');
    text
}

fn uid_of(user: &str) -> Value {
    nix::unistd::User::from_name(user)
        .ok()
        .flatten()
        .map(|u| json!(u.uid.as_raw()))
        .unwrap_or(Value::Null)
}

fn gid_of(group: &str) -> Value {
    nix::unistd::Group::from_name(group)
        .ok()
        .flatten()
        .map(|g| json!(g.gid.as_raw()))
        .unwrap_or(Value::Null)
}

/// The job's number and, for an array's task, the array's number and
/// the task's index.
fn numbers(job: &JobInfo) -> (u64, u64, Value) {
    let id = slurm_id(&job.id);
    match id.split_once('_') {
        Some((base, index)) => {
            let base: u64 = base.parse().unwrap_or(0);
            match index.parse::<u64>() {
                Ok(i) => (base, base, json!(i)),
                Err(_) => (base, base, Value::Null),
            }
        }
        None => (id.parse().unwrap_or(0), 0, Value::Null),
    }
}

/// One job's record.
fn job(job: &JobInfo, cluster: &str) -> Value {
    let user = job.owner.split('@').next().unwrap_or_default();
    let (job_id, array_job_id, array_task_id) = numbers(job);
    let (_, long_state) = state(job);
    let running = !job.exec_nodes.is_empty() && job.stime > 0;
    let nodes = nodelist(job);
    let node_count = if running {
        job.exec_nodes.len() as u32
    } else {
        job.nodes.max(1)
    };
    let cpus = job.ncpus.unwrap_or(1) * job.nodes.max(1);
    let tasks: u32 = job
        .resource_list
        .get("mpiprocs")
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        * job.nodes.max(1);
    let exit_code = job.exit_status.map(|s| s.clamp(0, 255)).unwrap_or(0);
    let pending = long_state == "PENDING";
    let why = if pending { reason(job) } else { "None".into() };
    let mut tres = format!("cpu={cpus},node={node_count},billing={cpus}");
    if let Some(mem) = job.mem {
        tres = format!(
            "cpu={cpus},mem={}M,node={node_count},billing={cpus}",
            mem / (1024 * 1024)
        );
    }
    let batch_host = job.exec_nodes.first().cloned().unwrap_or_default();
    let start_time = if running {
        job.stime
    } else {
        job.expected_start.max(0)
    };
    let mut record = json!({
        "account": job.account,
        "accrue_time": job.qtime,
        "admin_comment": "",
        "array_job_id": array_job_id,
        "array_task_id": array_task_id,
        "array_max_tasks": job.array_throttle,
        "array_task_string": if job.array { job.array_indices_submitted.clone() } else { String::new() },
        "association_id": 0,
        "batch_features": "",
        "batch_flag": !job.interactive,
        "batch_host": batch_host,
        "flags": [],
        "burst_buffer": "",
        "burst_buffer_state": "",
        "cluster": cluster,
        "cluster_features": "",
        "command": "",
        "comment": job.comment,
        "container": "",
        "contiguous": false,
        "core_spec": null,
        "thread_spec": null,
        "cores_per_socket": null,
        "billable_tres": cpus as f64,
        "cpus_per_task": null,
        "cpu_frequency_minimum": null,
        "cpu_frequency_maximum": null,
        "cpu_frequency_governor": null,
        "cpus_per_tres": "",
    });
    let middle = json!({
        "deadline": 0,
        "delay_boot": 0,
        "dependency": job.depend,
        "derived_exit_code": 0,
        "eligible_time": job.start_after.max(job.qtime),
        "end_time": job.end_time.max(0),
        "excluded_nodes": "",
        "exit_code": exit_code,
        "features": job.features.join("&"),
        "federation_origin": "",
        "federation_siblings_active": "",
        "federation_siblings_viable": "",
        "gres_detail": [],
        "group_id": gid_of(&job.group),
        "group_name": job.group,
        "job_id": job_id,
        "job_resources": if running {
            json!({
                "nodes": nodes,
                "allocated_cores": cpus,
                "allocated_hosts": node_count,
                "allocated_nodes": job.exec_nodes.iter().map(|n| json!({
                    "sockets": {},
                    "nodename": n,
                    "cpus_used": 0,
                    "memory_used": 0,
                    "memory_allocated": 0,
                })).collect::<Vec<_>>(),
            })
        } else {
            json!({})
        },
    });
    let late = json!({
        "job_state": long_state,
        "last_sched_evaluation": job.mtime,
        "licenses": "",
        "max_cpus": 0,
        "max_nodes": 0,
        "mcs_label": "",
    });
    let rest = json!({
        "memory_per_tres": "",
        "name": job.name,
        "nodes": nodes,
        "nice": null,
        "tasks_per_core": null,
        "tasks_per_node": 0,
        "tasks_per_socket": null,
        "tasks_per_board": 0,
        "cpus": cpus,
        "node_count": node_count,
        "tasks": tasks,
        "het_job_id": 0,
        "het_job_id_set": "",
        "het_job_offset": 0,
        "partition": job.queue,
        "prefer": "",
        "memory_per_node": job.mem.map(|m| m / (1024 * 1024)),
        "memory_per_cpu": null,
        "minimum_cpus_per_node": job.ncpus.unwrap_or(1),
        "minimum_tmp_disk_per_node": 0,
        "preempt_time": 0,
        "pre_sus_time": 0,
        "priority": job.job_priority.max(0),
    });
    let last = json!({
        "profile": null,
        "qos": job.resource_list.get("qos").cloned().unwrap_or_else(|| "normal".into()),
        "reboot": false,
        "required_nodes": "",
        "requeue": job.rerunnable,
        "resize_time": 0,
        "restart_cnt": job.run_count.saturating_sub(1),
        "resv_name": "",
        "shared": null,
        "show_flags": ["SHOW_ALL", "SHOW_DETAIL", "SHOW_LOCAL"],
        "sockets_per_board": 0,
        "sockets_per_node": null,
        "start_time": start_time,
        "state_description": "",
        "state_reason": why,
        "standard_error": if job.join_output { String::new() } else { job.stderr_path.clone() },
        "standard_input": "/dev/null",
        "standard_output": job.stdout_path,
        "submit_time": job.qtime,
        "suspend_time": 0,
        "system_comment": "",
        "time_limit": if job.walltime == 0 { Value::Null } else { json!(job.walltime.div_ceil(60)) },
        "time_minimum": 0,
        "threads_per_core": null,
        "tres_bind": "",
        "tres_freq": "",
        "tres_per_job": "",
        "tres_per_node": if job.gpus > 0 { format!("gres:gpu:{}", job.gpus) } else { String::new() },
        "tres_per_socket": "",
        "tres_per_task": "",
        "tres_req_str": tres,
        "tres_alloc_str": if running { tres.clone() } else { String::new() },
        "user_id": uid_of(user),
        "user_name": user,
        "wckey": "",
        "current_working_directory": job.workdir,
    });
    // In parts: one json! of all 111 keys passes the macro's recursion
    // limit.
    if let Some(all) = record.as_object_mut() {
        for part in [middle, late, rest, last] {
            if let Value::Object(more) = part {
                all.extend(more);
            }
        }
        // Slurm has no job_resources for a job that holds none.
        if !running {
            all.remove("job_resources");
        }
    }
    record
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pending_array_task_has_its_numbers_and_reason() {
        let task = JobInfo {
            id: "13[4].srv".into(),
            owner: "alice@login".into(),
            queue: "debug".into(),
            state_letter: "Q".into(),
            reason: "Resources".into(),
            nodes: 2,
            ncpus: Some(4),
            walltime: 90,
            ..JobInfo::default()
        };
        let text = document(&[&task], "qmesh");
        let v: Value = serde_json::from_str(&text).expect("valid JSON");
        let j = &v["jobs"][0];
        assert_eq!(j["job_id"], 13);
        assert_eq!(j["array_job_id"], 13);
        assert_eq!(j["array_task_id"], 4);
        assert_eq!(j["job_state"], "PENDING");
        assert_eq!(j["state_reason"], "Resources");
        assert_eq!(j["cpus"], 8);
        assert_eq!(j["time_limit"], 2, "minutes, rounded up as Slurm");
        assert_eq!(j["user_name"], "alice");
        assert_eq!(j["partition"], "debug");
        assert_eq!(v["meta"]["Slurm"]["release"], "22.05.8");
    }
}
