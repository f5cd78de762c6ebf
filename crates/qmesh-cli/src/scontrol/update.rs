//! `scontrol update JobId=ID KEY=VALUE...`: Slurm's words for changing a
//! job, read into what qalter and qmove send (Alter, Move). The keys users
//! write are taken (TimeLimit, Partition, JobName, Nice, Priority,
//! NumNodes, NumCPUs, NumTasks, StartTime, Account, QOS); a key qmesh
//! cannot change is refused with Slurm's "Update of this parameter is not
//! supported" and what to write instead. Whether the caller may make the
//! change, and whether a running job may take it, is the daemon's to say.

use chrono::Local;
use qmesh_proto::{AlterRequest, JobInfo, Resource};

use crate::sbatch::translate;

/// A time limit as written: `30`, `+10`, `-5` (minutes or Slurm's forms).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    Set(u64),
    Add(u64),
    Less(u64),
}

/// What an update asks, before it meets each job.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Update {
    /// The jobs, as Slurm names them (`12`, `13_4`).
    pub ids: Vec<String>,
    pub limit: Option<Limit>,
    pub partition: Option<String>,
    pub name: Option<String>,
    /// qmesh's priority (-1024..1023): `-Nice`, or `Priority`.
    pub priority: Option<i32>,
    pub nodes: Option<u32>,
    pub cpus: Option<u32>,
    pub tasks: Option<u32>,
    pub start_after: Option<i64>,
    pub account: Option<String>,
    pub qos: Option<String>,
}

impl Update {
    /// Whether it changes something only a job that has not started may
    /// change (as Slurm: "Job is no longer pending execution").
    pub fn needs_pending(&self) -> bool {
        self.partition.is_some()
            || self.nodes.is_some()
            || self.cpus.is_some()
            || self.tasks.is_some()
            || self.start_after.is_some()
    }
}

/// Slurm's refusal of a key, with what to write instead.
fn unsupported(word: &str, instead: &str) -> String {
    format!("Update of this parameter is not supported: {word}\n{instead}\nRequest aborted")
}

fn count(key: &str, value: &str) -> Result<u32, String> {
    let min = value.split('-').next().unwrap_or(value).trim();
    min.parse::<u32>()
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("Invalid {key} value: {value}; write a whole number, e.g. {key}=2"))
}

/// Reads `KEY=VALUE` words (keys in any case, as Slurm).
pub fn parse(words: &[String]) -> Result<Update, String> {
    let mut update = Update::default();
    for word in words {
        let Some((key, value)) = word.split_once('=') else {
            return Err(unsupported(word, "write KEY=VALUE, e.g. TimeLimit=30"));
        };
        let k = key.to_ascii_lowercase();
        match k.as_str() {
            _ if k.len() >= 3 && "jobid".starts_with(&k) => {
                update.ids = value
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect();
            }
            "timelimit" | "time" => {
                let v = value.trim();
                let (make, text): (fn(u64) -> Limit, &str) = if let Some(r) = v.strip_prefix('+') {
                    (Limit::Add, r)
                } else if let Some(r) = v.strip_prefix('-') {
                    (Limit::Less, r)
                } else {
                    (Limit::Set, v)
                };
                let secs = translate::time_limit(text).ok().flatten().ok_or_else(|| {
                    format!(
                        "Invalid TimeLimit value: {value}; write MINUTES, HOURS:MINUTES:SECONDS, \
                         DAYS-HOURS[:MINUTES], or +MINUTES/-MINUTES (qmesh jobs have a limit: \
                         not UNLIMITED)"
                    )
                })?;
                update.limit = Some(make(secs));
            }
            "partition" => update.partition = Some(value.to_string()),
            "jobname" | "name" => update.name = Some(value.to_string()),
            "nice" => {
                let n: i64 = value.trim().parse().map_err(|_| {
                    format!("Invalid Nice value: {value}; write a number, e.g. Nice=100")
                })?;
                update.priority = Some((-n).clamp(-1024, 1023) as i32);
            }
            "priority" => {
                let n: i64 = value.trim().parse().map_err(|_| {
                    format!("Invalid Priority value: {value}; write a number from -1024 to 1023")
                })?;
                update.priority = Some(n.clamp(-1024, 1023) as i32);
            }
            "numnodes" | "reqnodes" | "minnodes" => update.nodes = Some(count("NumNodes", value)?),
            "numcpus" | "mincpus" => update.cpus = Some(count("NumCPUs", value)?),
            "numtasks" | "reqprocs" => update.tasks = Some(count("NumTasks", value)?),
            "starttime" | "begintime" | "eligibletime" => {
                let t = translate::begin(value, Local::now())
                    .map_err(|e| e.replace("--begin=", "StartTime="))?;
                update.start_after = Some(t.timestamp());
            }
            "account" => update.account = Some(value.to_string()),
            "qos" => update.qos = Some(value.to_string()),
            "dependency" => {
                return Err(unsupported(
                    word,
                    "qmesh does not change a job's dependencies: scancel it and sbatch it \
                     again with --dependency",
                ));
            }
            "comment" | "admincomment" => {
                return Err(unsupported(
                    word,
                    "qmesh keeps no comment of the user's on a job (squeue and qstat show the \
                     server's)",
                ));
            }
            "arraytaskthrottle" => {
                return Err(unsupported(
                    word,
                    "qmesh keeps an array's throttle as submitted: scancel it and sbatch it \
                     again with --array=LIST%N",
                ));
            }
            "stdout" | "stderr" | "workdir" | "features" | "mintmpdisknode" | "minmemorynode"
            | "minmemorycpu" | "gres" | "tres" | "reqnodelist" | "excnodelist" | "requeue"
            | "shared" | "oversubscribe" | "contiguous" | "licenses" | "reservation"
            | "deadline" | "timemin" | "mailuser" | "mailtype" => {
                return Err(unsupported(
                    word,
                    "change it with qalter (-o, -e, -l mem=, -l feature=, -r, -M, -m ...) or \
                     scancel the job and sbatch it again",
                ));
            }
            _ => {
                return Err(unsupported(
                    word,
                    "qmesh's scontrol updates TimeLimit, Partition, JobName, Nice, Priority, \
                     NumNodes, NumCPUs, NumTasks, StartTime, Account and QOS",
                ));
            }
        }
    }
    if update.ids.is_empty() {
        return Err(
            "No valid entity in update command\nInput line must include \"JobId\" \
                    (qmesh's scontrol updates jobs; nodes and partitions are qmgr's)"
                .into(),
        );
    }
    Ok(update)
}

/// The Alter request for one job (`job` as the daemon last showed it);
/// `None` when the update changes nothing qalter changes.
pub fn alter_for(update: &Update, job: &JobInfo) -> Result<Option<AlterRequest>, String> {
    let mut request = AlterRequest {
        job_ids: vec![job.id.clone()],
        name: update.name.clone(),
        priority: update.priority,
        account: update.account.clone(),
        start_after: update.start_after,
        ..AlterRequest::default()
    };
    let resource = |name: &str, value: String| Resource {
        name: name.into(),
        value,
    };
    if let Some(limit) = update.limit {
        let secs = match limit {
            Limit::Set(s) => s,
            Limit::Add(s) => job.walltime + s,
            Limit::Less(s) => job.walltime.saturating_sub(s).max(1),
        };
        request
            .resources
            .push(resource("walltime", secs.to_string()));
    }
    if update.nodes.is_some() || update.cpus.is_some() || update.tasks.is_some() {
        request.resources.push(resized(update, job)?);
    }
    if let Some(q) = &update.qos {
        request.resources.push(resource("qos", q.clone()));
    }
    let changes = request.name.is_some()
        || request.priority.is_some()
        || request.account.is_some()
        || request.start_after.is_some()
        || !request.resources.is_empty();
    Ok(changes.then_some(request))
}

/// The job's chunk with a new node count, CPUs or tasks: `select=N:ncpus=C
/// [:mpiprocs=T]...` as sbatch writes it, the rest of the chunk kept.
fn resized(update: &Update, job: &JobInfo) -> Result<Resource, String> {
    let current = job.resource_list.get("select").cloned();
    if current.as_deref().is_some_and(|s| s.contains('+')) {
        return Err(format!(
            "job {}: its select has several chunks; change it with qalter -l select=...",
            crate::squeue::slurm_id(&job.id)
        ));
    }
    let chunk = current.unwrap_or_else(|| job.nodes.max(1).to_string());
    let mut parts = chunk.split(':');
    let count: u32 = parts.next().and_then(|c| c.parse().ok()).unwrap_or(1);
    let mut rest: Vec<(String, String)> = parts
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let get = |rest: &[(String, String)], k: &str| {
        rest.iter()
            .find(|(n, _)| n == k)
            .and_then(|(_, v)| v.parse::<u32>().ok())
    };
    let nodes = update.nodes.unwrap_or(count);
    let set = |rest: &mut Vec<(String, String)>, k: &str, v: u32| match rest
        .iter_mut()
        .find(|(n, _)| n == k)
    {
        Some(entry) => entry.1 = v.to_string(),
        None => rest.push((k.to_string(), v.to_string())),
    };
    if let Some(tasks) = update.tasks {
        let per_node = tasks.div_ceil(nodes);
        let ncpus = get(&rest, "ncpus").unwrap_or(1);
        let cpus_per_task = match get(&rest, "mpiprocs") {
            Some(t) if t > 0 => (ncpus / t).max(1),
            _ => 1,
        };
        set(&mut rest, "mpiprocs", per_node);
        set(&mut rest, "ncpus", per_node * cpus_per_task);
    }
    if let Some(cpus) = update.cpus {
        set(&mut rest, "ncpus", cpus.div_ceil(nodes));
    }
    if rest.is_empty() {
        return Ok(Resource {
            name: "nodes".into(),
            value: nodes.to_string(),
        });
    }
    let mut value = nodes.to_string();
    for (k, v) in rest {
        value.push_str(&format!(":{k}={v}"));
    }
    Ok(Resource {
        name: "select".into(),
        value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn the_keys_users_write() {
        let u = parse(&words(
            "jobid=12,13_4 TimeLimit=+5 JobName=renamed Nice=10 Partition=long StartTime=now+1hour",
        ))
        .unwrap();
        assert_eq!(u.ids, ["12", "13_4"]);
        assert_eq!(u.limit, Some(Limit::Add(300)));
        assert_eq!(u.name.as_deref(), Some("renamed"));
        assert_eq!(u.priority, Some(-10));
        assert!(u.needs_pending());
        let u = parse(&words("TimeLimit=1-00:00:00 job=7")).unwrap();
        assert_eq!((u.ids.len(), u.limit), (1, Some(Limit::Set(86400))));
        assert!(!u.needs_pending());
    }

    #[test]
    fn refusals_say_what_to_write() {
        let err = parse(&words("JobId=3 Bogus=1")).unwrap_err();
        assert!(
            err.starts_with("Update of this parameter is not supported: Bogus=1\n"),
            "{err}"
        );
        assert!(err.ends_with("\nRequest aborted"), "{err}");
        let err = parse(&words("JobId=3 Dependency=afterok:2")).unwrap_err();
        assert!(err.contains("sbatch it again with --dependency"), "{err}");
        let err = parse(&words("JobId=3 TimeLimit=abc")).unwrap_err();
        assert!(
            err.starts_with("Invalid TimeLimit value: abc; write"),
            "{err}"
        );
        let err = parse(&words("TimeLimit=20")).unwrap_err();
        assert!(
            err.starts_with("No valid entity in update command\n"),
            "{err}"
        );
        assert!(parse(&words("JobId=3 NumNodes=0")).is_err());
    }

    #[test]
    fn sizes_rewrite_the_chunk_sbatch_wrote() {
        let job = JobInfo {
            id: "3.srv".into(),
            walltime: 600,
            resource_list: [(
                "select".to_string(),
                "1:ncpus=4:mpiprocs=2:mem=100mb".to_string(),
            )]
            .into_iter()
            .collect(),
            ..JobInfo::default()
        };
        let u = parse(&words("JobId=3 NumNodes=2 NumTasks=8 TimeLimit=-5")).unwrap();
        let r = alter_for(&u, &job).unwrap().unwrap();
        assert_eq!(r.resources[0].value, "300");
        assert_eq!(r.resources[1].name, "select");
        assert_eq!(r.resources[1].value, "2:ncpus=8:mpiprocs=4:mem=100mb");
        let plain = JobInfo {
            nodes: 1,
            ..JobInfo::default()
        };
        let u = parse(&words("JobId=3 NumNodes=3")).unwrap();
        let r = alter_for(&u, &plain).unwrap().unwrap();
        assert_eq!(
            (r.resources[0].name.as_str(), r.resources[0].value.as_str()),
            ("nodes", "3")
        );
        let u = parse(&words("JobId=3 Partition=long")).unwrap();
        assert!(
            alter_for(&u, &plain).unwrap().is_none(),
            "a move alone alters nothing"
        );
    }
}
