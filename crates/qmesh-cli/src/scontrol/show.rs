//! `scontrol show ...`: which entity is asked, and the two scontrol
//! answers itself: `show job` (the records of `job.rs`, an array's tasks
//! grouped as Slurm groups them) and the host lists (`qmesh_core::job::slurm::hostlist`,
//! worked out here without the daemon). Nodes and partitions are
//! `node.rs`'s and `partition.rs`'s.

use qmesh_proto::JobInfo;

use qmesh_core::job::slurm::hostlist;

use super::{Options, act, job, names, node, partition};
use crate::client::{self, CliError};
use crate::output::Tree;
use crate::squeue;

/// `show ENTITY [ID]` or `show ENTITY=ID`.
pub fn show(opts: &Options, args: &[String]) -> Result<bool, CliError> {
    let (entity, id) = match args[0].split_once('=') {
        Some((e, id)) => (e.to_string(), Some(id.to_string())),
        None => (args[0].clone(), args.get(1).cloned()),
    };
    let e = entity.as_str();
    let print = |text: Result<String, CliError>| match text {
        Ok(t) => {
            print!("{t}");
            Ok(true)
        }
        Err(err) => {
            eprintln!("{err}");
            Ok(false)
        }
    };
    if names(e, "jobs", 1) {
        show_job(opts, id.as_deref())
    } else if names(e, "nodes", 1) {
        print(node::show(id.as_deref(), opts.one_liner))
    } else if names(e, "partitions", 2) {
        print(partition::show(id.as_deref(), opts.one_liner))
    } else if names(e, "hostnames", 5) {
        let list = id
            .or_else(|| std::env::var("SLURM_NODELIST").ok())
            .or_else(|| std::env::var("SLURM_JOB_NODELIST").ok())
            .unwrap_or_default();
        hosts(&list, |names| {
            names.iter().map(|n| format!("{n}\n")).collect()
        })
    } else if names(e, "hostlistsorted", 9) {
        with_list(id, |names| {
            format!("{}\n", hostlist::compress_sorted(names))
        })
    } else if names(e, "hostlist", 5) {
        with_list(id, |names| format!("{}\n", hostlist::compress(names)))
    } else if names(e, "config", 1) {
        Err(CliError::msg(
            "show config: qmesh's configuration is the server's: qmgr -c 'print server'",
        ))
    } else {
        eprintln!("invalid entity:{entity} for keyword:show ");
        Ok(false)
    }
}

/// A host list expanded and written by `write`; Slurm's words when it is
/// empty or not a list.
fn hosts(list: &str, write: impl Fn(&[String]) -> String) -> Result<bool, CliError> {
    let names = hostlist::expand(list).map_err(CliError::Msg)?;
    if names.is_empty() {
        return Err(CliError::msg(
            "host list is empty: name one (scontrol show hostnames n[1-4]) or run inside a job \
             (SLURM_NODELIST)",
        ));
    }
    print!("{}", write(&names));
    Ok(true)
}

fn with_list(list: Option<String>, write: impl Fn(&[String]) -> String) -> Result<bool, CliError> {
    match list {
        Some(list) => hosts(&list, write),
        None => Err(CliError::msg(
            "invalid encode argument: write a list of names, e.g. scontrol show hostlist n1,n2,n3",
        )),
    }
}

/// `show job [ID]`: the records, or Slurm's error for an id it does not
/// know.
fn show_job(opts: &Options, id: Option<&str>) -> Result<bool, CliError> {
    if let Some(id) = id
        && crate::scancel::qmesh_id(id).is_err()
    {
        eprintln!("scontrol_print_job error: Invalid job id specified");
        return Ok(false);
    }
    let (listed, now) = client::block_on(async {
        let mut jobs = client::jobs().await?;
        let named: Vec<String> = id.map(String::from).into_iter().collect();
        act::jobs_named(&mut jobs, &named).await
    })?;
    let shown = records_of(&listed, id);
    if shown.is_empty() {
        if id.is_some() {
            eprintln!("slurm_load_jobs error: Invalid job id specified");
            return Ok(false);
        }
        println!("No jobs in the system");
        return Ok(true);
    }
    let records: Vec<job::Record> = shown
        .iter()
        .map(|j| job::record(j, now, &job::Ids::lookup(j)))
        .collect();
    if opts.json {
        let tree = Tree::Map(vec![(
            "jobs".into(),
            Tree::List(
                records
                    .iter()
                    .map(|r| {
                        Tree::Map(
                            r.pairs()
                                .into_iter()
                                .map(|(k, v)| (k, Tree::text(v)))
                                .collect(),
                        )
                    })
                    .collect(),
            ),
        )]);
        let text = serde_json::to_string_pretty(&tree)
            .map_err(|e| CliError::msg(format!("cannot write JSON: {e}")))?;
        println!("{text}");
    } else {
        for r in &records {
            print!("{}", r.text(opts.one_liner));
        }
    }
    Ok(true)
}

/// The jobs to show, as Slurm lists them: a job; an array as its tasks
/// that have started, each its own record, and one record for the tasks
/// still pending (`ArrayTaskId=2-3`); `13_4` the one task.
pub fn records_of(listed: &[JobInfo], id: Option<&str>) -> Vec<JobInfo> {
    let wanted = id.and_then(|i| crate::scancel::qmesh_id(i).ok());
    let seq = |j: &JobInfo| j.id.split('.').next().unwrap_or_default().to_string();
    let mut out = Vec::new();
    for job in listed {
        let s = seq(job);
        if job.array_index.is_some() {
            // Tasks come with their array, below; or alone when named.
            if wanted.as_deref() == Some(s.as_str()) {
                out.push(job.clone());
            }
            continue;
        }
        let base = s.trim_end_matches("[]");
        if wanted.as_deref().is_some_and(|w| w != base) {
            continue;
        }
        if !job.array {
            out.push(job.clone());
            continue;
        }
        let tasks: Vec<&JobInfo> = listed
            .iter()
            .filter(|t| t.array_index.is_some() && t.array_id == job.id)
            .collect();
        let (pending, started): (Vec<&JobInfo>, Vec<&JobInfo>) =
            tasks.iter().partition(|t| squeue::state(t).1 == "PENDING");
        out.extend(started.into_iter().cloned());
        if tasks.is_empty() {
            out.push(job.clone());
        } else if let Some(first) = pending.first() {
            let indices: Vec<u32> = pending.iter().filter_map(|t| t.array_index).collect();
            out.push(JobInfo {
                id: job.id.clone(),
                array: true,
                array_index: None,
                array_indices_submitted: ranges(&indices),
                array_throttle: job.array_throttle,
                ..(*first).clone()
            });
        }
    }
    out
}

/// Indices as Slurm writes a task list: `0-3,7`.
fn ranges(indices: &[u32]) -> String {
    let mut sorted = indices.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            sorted[i].to_string()
        } else {
            format!("{}-{}", sorted[i], sorted[j])
        });
        i = j + 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_array_shows_its_started_tasks_and_one_record_for_the_rest() {
        let job = |id: &str, letter: &str, index: Option<u32>| JobInfo {
            id: id.into(),
            state_letter: letter.into(),
            array: index.is_none() && id.contains('['),
            array_index: index,
            array_id: if index.is_some() {
                "13[].s".into()
            } else {
                String::new()
            },
            ..JobInfo::default()
        };
        let listed = vec![
            job("12.s", "Q", None),
            job("13[].s", "B", None),
            job("13[0].s", "R", Some(0)),
            job("13[1].s", "Q", Some(1)),
            job("13[2].s", "Q", Some(2)),
            job("13[5].s", "Q", Some(5)),
        ];
        let all = records_of(&listed, None);
        let ids: Vec<String> = all
            .iter()
            .map(|j| format!("{}/{}", j.id, j.array_indices_submitted))
            .collect();
        assert_eq!(ids, ["12.s/", "13[0].s/", "13[].s/1-2,5"]);
        assert_eq!(records_of(&listed, Some("13_2"))[0].id, "13[2].s");
        assert_eq!(records_of(&listed, Some("13")).len(), 2);
        assert_eq!(records_of(&listed, Some("12")).len(), 1);
        assert!(records_of(&listed, Some("99")).is_empty());
    }
}
