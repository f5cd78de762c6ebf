//! Turning a submission into a job: defaults from the queue and server,
//! limits checked, output paths worked out. Everything a refusal needs to
//! say is said here, before anything is stored.

pub mod sizes;

use std::collections::BTreeMap;

use crate::access::Caller;
use crate::error::CoreError;
use crate::job::options::{self, JobOptions};
use crate::job::{Holds, Job, JobId, JobState, Owner};
use crate::node::NodeNeeds;
use crate::queue::Queue;
use crate::resources::ResourceRequest;
use crate::route::{self, Ask, check_queue_limits, effective};
use crate::server::Config;
use crate::time::Time;

/// A job as submitted, already in domain terms (the wire form is converted
/// by qmesh-proto). `None` means "not given".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Submission {
    pub name: Option<String>,
    /// Basename of the script file, or `STDIN`.
    pub script_name: String,
    pub queue: Option<String>,
    pub resources: Vec<(String, String)>,
    pub stdout_path: Option<String>,
    pub stderr_path: Option<String>,
    pub join_output: bool,
    pub hold: bool,
    pub account: Option<String>,
    /// Absolute path of the directory qsub ran in.
    pub workdir: String,
    pub submit_host: String,
    /// The client's id for this submission, kept with the job
    /// ([`crate::Job::submission_id`]).
    pub submission_id: Option<String>,
    pub rerunnable: Option<bool>,
    /// `-W depend=` as written (`afterok:12:13,afterany:14`); empty for
    /// none. [`crate::State::prepare`] reads it, knowing the jobs.
    pub depend: String,
    /// `-a`: not to start before this.
    pub start_after: Option<Time>,
    /// `-j eo`: standard output into the standard error file.
    pub join_to_error: bool,
    /// `-p`: -1024..1023.
    pub priority: Option<i32>,
    /// `-P`.
    pub project: Option<String>,
    /// The run options as written (`-S`, `-m`, `-M`, `-k`, `-c`,
    /// `-W umask=`, `-W group_list=`, `-d`/`-w`, `-u`); checked here.
    pub shell: Option<String>,
    pub mail_points: Option<String>,
    pub mail_users: Option<String>,
    pub keep_files: Option<String>,
    pub checkpoint: Option<String>,
    pub umask: Option<String>,
    pub group_list: Option<String>,
    pub start_dir: Option<String>,
    pub user_list: Option<String>,
    /// The group the job runs with, as the daemon found it for
    /// `group_list` in the group database (name, gid): the core cannot
    /// read it, and the daemon refuses a group the user is not in.
    pub egroup: Option<(String, u32)>,
    /// What the daemon accepted but will not do (mail without a mailer),
    /// for the job's comment.
    pub notes: Vec<String>,
    /// A job array: `qsub -J` (PBS Pro) or `-t` (Torque), as typed.
    pub array: Option<(crate::array::ArrayStyle, String)>,
    /// `qsub -I`: the job is a terminal its qsub attaches to.
    pub interactive: bool,
    /// `-W sandbox=PRIVATE`: the job runs in a directory of its own under
    /// its owner's home, removed at its end.
    pub sandbox_private: bool,
    /// sbatch's: the job speaks Slurm (`job/slurm.rs`).
    pub slurm: Option<crate::job::slurm::SlurmJob>,
}

/// The nodes a queue can reach for a job, and the sets it reaches them in
/// (`s1: 16 of 32 nodes (mem=16gb)`), for the refusal's message.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reach {
    pub nodes: u32,
    pub sets: String,
}

/// The longest job name PBS accepts.
const MAX_NAME: usize = 236;

/// Nodes and a wall time given as numbers, by a caller that has them so
/// (a replay): the job asks them as if `-l nodes=N,walltime=S` came
/// before its own resources, but nothing is written out to be parsed
/// again ([`ResourceRequest::nodes_and_walltime`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Asked {
    pub nodes: u32,
    /// Seconds.
    pub walltime: u64,
}

impl Asked {
    /// The text it stands for.
    fn pairs(self) -> [(String, String); 2] {
        [
            ("nodes".into(), self.nodes.to_string()),
            ("walltime".into(), self.walltime.to_string()),
        ]
    }
}

impl Submission {
    /// Builds the job it describes, or says why it cannot be queued.
    /// `capacity` says how many nodes of the queue's node sets (in any
    /// period) have what the job needs of a node.
    pub fn into_job(
        self,
        id: JobId,
        caller: &Caller,
        config: &Config,
        capacity: impl Fn(&str, &NodeNeeds) -> Reach,
        now: Time,
    ) -> Result<Job, CoreError> {
        let reach = |q: &str, needs: &NodeNeeds| capacity(q, needs).nodes;
        let described = |q: &str, needs: &NodeNeeds| capacity(q, needs).sets;
        self.into_job_asked(None, id, caller, config, reach, described, now)
    }

    /// [`Submission::into_job`], asking `asked` before its own resources
    /// if given; `reach` counts the nodes of the queue's sets that have
    /// what the job needs of a node, `described` names those sets for a
    /// refusal.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn into_job_asked(
        self,
        asked: Option<Asked>,
        id: JobId,
        caller: &Caller,
        config: &Config,
        reach: impl Fn(&str, &NodeNeeds) -> u32,
        described: impl Fn(&str, &NodeNeeds) -> String,
        now: Time,
    ) -> Result<Job, CoreError> {
        let queue_name = match &self.queue {
            Some(q) => q.clone(),
            None => config
                .default_queue()
                .ok_or_else(|| CoreError::NoSuchQueue {
                    queue: "(default)".to_string(),
                })?
                .to_string(),
        };
        let queue = config
            .queue(&queue_name)
            .ok_or_else(|| CoreError::NoSuchQueue {
                queue: queue_name.clone(),
            })?;
        if !queue.enabled {
            return Err(CoreError::QueueDisabled { queue: queue_name });
        }

        let site: Vec<&str> = config.requestable_site_resources();
        // What it asks as text: `asked` written out, then its resources.
        let given = || -> Vec<(String, String)> {
            let asked = asked.iter().flat_map(|a| a.pairs());
            asked.chain(self.resources.iter().cloned()).collect()
        };
        let checked = |mut req: ResourceRequest| {
            crate::node_resources::check_chunks(config, &mut req)?;
            for name in req.list.keys().filter(|n| site.contains(&n.as_str())) {
                if let Some(kind) = config.resource_type(name) {
                    kind.check(&req.list[name])
                        .map_err(|why| CoreError::BadResource {
                            name: name.clone(),
                            value: req.list[name].clone(),
                            why,
                        })?;
                }
            }
            Ok::<_, CoreError>(req)
        };
        let read = |defaults: &[(String, String)]| {
            let parse = |given: &[(String, String)]| {
                let given = given.iter().chain(defaults);
                ResourceRequest::parse_with(given.map(|(n, v)| (n.as_str(), v.as_str())), &site)
            };
            checked(match asked {
                None => parse(&self.resources)?,
                Some(a) if self.resources.is_empty() && defaults.is_empty() => {
                    ResourceRequest::nodes_and_walltime(a.nodes, a.walltime)?
                }
                Some(_) => parse(&given())?,
            })
        };
        let mut req = read(&[])?;
        let host = crate::node_resources::of_request(config, &req)?;
        let needs = NodeNeeds {
            mem: req.mem,
            cpus: req.ncpus,
            gpus: req.gpus,
            features: &req.features,
            resources: &host,
        };
        let nodes_in = |q: &str| reach(q, &needs);
        let mut ask = Ask {
            nodes: req.nodes,
            walltime: req.walltime,
        };
        // A route (pipe) queue sends the job on at once; a holding queue
        // takes it whatever its limits, and the comment says why.
        let mut held = None;
        let asked_queue = queue_name.clone();
        let (queue_name, queue) = if queue.is_route() {
            let routed = route::route(config, &queue_name, ask, &nodes_in)?;
            ask = routed.ask;
            held = routed.held;
            let queue = config
                .queue(&routed.queue)
                .ok_or_else(|| CoreError::NoSuchQueue {
                    queue: routed.queue.clone(),
                })?;
            (routed.queue, queue)
        } else {
            (queue_name, queue)
        };
        crate::access::acl::check_submit(
            config,
            self.queue.as_deref(),
            &queue_name,
            caller,
            &self.submit_host,
        )?;
        // The queue's and the server's resources_default for what the job
        // did not name, read as if written in the request (PBS), so that a
        // default mem also chooses the nodes.
        let defaults = defaults_for(config, queue, &req);
        let host = if defaults.is_empty() {
            host
        } else {
            let walltime = ask.walltime;
            req = read(&defaults)?;
            ask.walltime = walltime.or(req.walltime);
            crate::node_resources::of_request(config, &req)?
        };
        let needs = NodeNeeds {
            mem: req.mem,
            cpus: req.ncpus,
            gpus: req.gpus,
            features: &req.features,
            resources: &host,
        };
        let (nodes, walltime) = effective(queue, ask, config);
        if held.is_none() {
            check_queue_limits(queue, nodes, walltime, u32::MAX)?;
            let reach = reach(&queue_name, &needs);
            if nodes > reach && needs.any() {
                return Err(CoreError::NoMatchingNodes {
                    sets: described(&queue_name, &needs),
                    queue: queue_name,
                    requested: nodes,
                    needs: needs.describe(),
                    capacity: reach,
                });
            }
            check_queue_limits(queue, nodes, walltime, reach)?;
        }

        if !self.workdir.starts_with('/') {
            return Err(CoreError::BadPath {
                path: self.workdir.clone(),
                why: "the submit directory must be an absolute path".into(),
            });
        }
        let mut opts = run_options(&self, &req.notes)?;
        let name = match self.name {
            Some(name) => {
                check_name(&name)?;
                name
            }
            None => name_from_script(&self.script_name),
        };
        let array = match &self.array {
            Some((style, text)) => Some(array_of(*style, text, config)?),
            None => None,
        };
        // Written straight after the directory, and only when used: a
        // submission burst or a trace replay makes two per job.
        let default_file = |kind, path: &mut String| match &array {
            Some(a) => path.push_str(&a.spec.default_file(&name, kind, id)),
            None => {
                use std::fmt::Write;
                let _ = write!(path, "{name}.{kind}{id}");
            }
        };
        let stdout_path =
            written_output_path(self.stdout_path, &self.workdir, |p| default_file('o', p))?;
        let stderr_path =
            written_output_path(self.stderr_path, &self.workdir, |p| default_file('e', p))?;
        if let Some(users) = &self.user_list
            && let Some(other) = options::users_in(users)
                .into_iter()
                .find(|u| *u != caller.user)
        {
            return Err(CoreError::OtherUser {
                asked: other.to_string(),
                user: caller.user.clone(),
            });
        }
        let priority = match self.priority {
            Some(p) if !(-1024..=1023).contains(&p) => {
                return Err(CoreError::BadOption {
                    message: format!("-p {p}: a job's priority runs from -1024 to 1023"),
                });
            }
            p => p.unwrap_or(0),
        };
        // A plain request (nodes, wall time, what a node must have) keeps
        // no list: qstat works it out from the job's fields when asked,
        // and a trace replay or a submission burst pays nothing for it.
        let plain = req.is_plain();
        let bounded = resource_bounds_apply(config, queue);
        let full = (!plain || bounded).then(|| req.resource_list(nodes, walltime));
        if let Some(list) = full.as_ref().filter(|_| held.is_none() && bounded) {
            crate::resource_limits::check_job_resources(config, queue, list)?;
            crate::consumable::check_submit(config, queue, list)?;
        }
        let resource_list = if plain {
            BTreeMap::new()
        } else {
            full.unwrap_or_default()
        };
        let (gid, group) = match self.egroup {
            Some((group, gid)) => (gid, group),
            None => (caller.gid, caller.group.clone()),
        };
        opts.group_list = self.group_list.filter(|g| !g.trim().is_empty());
        let submit_queue = (asked_queue != queue_name).then(|| asked_queue.clone());
        let holds = Holds {
            user: self.hold,
            ..Holds::default()
        };
        Ok(Job {
            id,
            name,
            owner: Owner {
                uid: caller.uid,
                gid,
                user: caller.user.clone(),
                group,
            },
            account: self.account.filter(|a| !a.is_empty()),
            queue: queue_name,
            nodes,
            walltime,
            predicted_run: None,
            mem: req.mem,
            ncpus: req.ncpus,
            features: req.features,
            gpus: req.gpus.filter(|&g| g > 0),
            node_resources: host,
            layout: req.layout.map(Box::new),
            resource_list,
            priority,
            project: self.project.filter(|p| !p.trim().is_empty()),
            options: opts.into(),
            submit_queue,
            session_id: None,
            used_so_far: None,
            workdir: self.workdir,
            stdout_path,
            stderr_path,
            join_output: self.join_output,
            rerunnable: self.rerunnable.unwrap_or(config.server.default_rerunnable),
            submit_host: self.submit_host,
            holds,
            state: if holds.any() {
                JobState::Held
            } else {
                JobState::Queued
            },
            qtime: now,
            mtime: now,
            stime: None,
            end_time: None,
            suspension: Default::default(),
            exec_nodes: Vec::new(),
            placement: Vec::new(),
            exit: None,
            run_count: 0,
            comment: held.unwrap_or_default(),
            depend: Vec::new(),
            before: Vec::new(),
            depend_on: 0,
            depend_how: Default::default(),
            start_after: self.start_after,
            rank: None,
            period_stop: None,
            array: array.map(Box::new),
            submission_id: self.submission_id,
        })
    }
}

/// The array a submission asks for, within the server's `max_array_size`.
fn array_of(
    style: crate::array::ArrayStyle,
    text: &str,
    config: &Config,
) -> Result<crate::array::JobArray, CoreError> {
    use crate::array::{ArraySpec, ArrayStyle, JobArray};
    let spec = match style {
        ArrayStyle::PbsPro => ArraySpec::parse_pbs(text)?,
        ArrayStyle::Torque => ArraySpec::parse_torque(text)?,
    };
    let most = config.server.max_array_size;
    if spec.count() > most {
        return Err(CoreError::BadOption {
            message: format!(
                "the array {text} has {} sub-jobs; this server takes at most {most} \
                 (max_array_size, see qmgr -c \"list server\"): split it in several arrays",
                spec.count()
            ),
        });
    }
    Ok(JobArray::new(spec))
}

/// Whether a job's `Resource_List` is checked at submit: its queue or the
/// server bounds a resource, or the site declared resources (licences).
fn resource_bounds_apply(config: &Config, queue: &Queue) -> bool {
    !queue.resources_max.is_empty()
        || !queue.resources_min.is_empty()
        || !config.server.resources_max.is_empty()
        || !config.server.resources_min.is_empty()
        || !config.resources.is_empty()
}

/// The entries `queue`'s and the server's `resources_default` add to a
/// request that names none of them. Nodes and wall time have their own
/// defaults (see [`effective`]); under `select=`, what belongs to chunks
/// is left to the chunks.
fn defaults_for(config: &Config, queue: &Queue, req: &ResourceRequest) -> Vec<(String, String)> {
    if queue.resources_default.is_empty() && config.server.resources_default.is_empty() {
        return Vec::new();
    }
    const OWN: [&str; 6] = ["nodes", "nodect", "walltime", "select", "place", "ncpus"];
    const CHUNK: [&str; 6] = ["ncpus", "mem", "ngpus", "vmem", "mpiprocs", "ompthreads"];
    let chunked = req.layout.as_ref().is_some_and(|l| !l.chunks.is_empty());
    let mut list = req.list.clone();
    crate::resource_limits::fill_job_defaults(config, queue, &mut list)
        .into_iter()
        .filter(|name| !OWN[..5].contains(&name.as_str()))
        .filter(|name| !(chunked && (CHUNK.contains(&name.as_str()) || name == OWN[5])))
        .filter_map(|name| list.get(&name).map(|v| (name.clone(), v.clone())))
        .collect()
}

/// The run options of a submission, checked; `notes` are what the
/// resources said is not done, to which the options add theirs.
fn run_options(sub: &Submission, notes: &[String]) -> Result<JobOptions, CoreError> {
    let bad = |message: String| CoreError::BadOption { message };
    fn given(o: &Option<String>) -> Option<&str> {
        o.as_deref().map(str::trim).filter(|t| !t.is_empty())
    }
    let mut opts = JobOptions {
        notes: notes.iter().chain(&sub.notes).cloned().collect(),
        join_to_error: sub.join_to_error,
        interactive: sub.interactive,
        sandbox_private: sub.sandbox_private,
        slurm: sub.slurm,
        ..JobOptions::default()
    };
    if let Some(text) = given(&sub.shell) {
        opts.shell = options::parse_shell(text).map_err(bad)?;
    }
    if let Some(text) = given(&sub.mail_points) {
        opts.mail_points = Some(options::parse_mail_points(text).map_err(bad)?);
    }
    if let Some(text) = given(&sub.mail_users) {
        opts.mail_users = options::parse_mail_users(text).map_err(bad)?;
    }
    if let Some(text) = given(&sub.keep_files) {
        let keep = options::parse_keep(text).map_err(bad)?;
        if keep != "n" && keep != "d" {
            opts.notes.push(format!(
                "Keep_Files={keep}: output is written to its final path as it is made (as -k d)"
            ));
        }
        opts.keep_files = Some(keep);
    }
    if let Some(text) = given(&sub.checkpoint) {
        let checkpoint = options::parse_checkpoint(text).map_err(bad)?;
        if options::wants_checkpoints(&checkpoint) {
            opts.notes.push(format!(
                "Checkpoint={checkpoint}: qmesh does not checkpoint jobs by interval; only preemption (preempt_order C) runs the site's checkpoint program"
            ));
        }
        opts.checkpoint = Some(checkpoint);
    }
    if let Some(text) = given(&sub.umask) {
        opts.umask = Some(options::parse_umask(text).map_err(bad)?);
    }
    if let Some(text) = given(&sub.start_dir) {
        let dir = if text.starts_with('/') {
            text.to_string()
        } else {
            join(&sub.workdir, text)
        };
        if dir.contains('\0') {
            return Err(bad(format!("-d {text}: the path contains a NUL byte")));
        }
        opts.start_dir = Some(dir);
    }
    Ok(opts)
}

pub(crate) fn check_name(name: &str) -> Result<(), CoreError> {
    let bad = |why: &str| CoreError::BadJobName {
        name: name.to_string(),
        why: why.to_string(),
    };
    if name.is_empty() {
        return Err(bad("it is empty"));
    }
    if name.len() > MAX_NAME {
        return Err(bad("it is longer than 236 characters"));
    }
    if name
        .chars()
        .any(|c| c == '/' || c.is_whitespace() || c.is_control())
    {
        return Err(bad("it may not contain '/', spaces or control characters"));
    }
    Ok(())
}

/// The default name: the script's file name, made safe; `STDIN` for stdin.
fn name_from_script(script_name: &str) -> String {
    let base = script_name.rsplit('/').next().unwrap_or("");
    let cleaned: String = base
        .chars()
        .map(|c| {
            if c.is_whitespace() || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .take(MAX_NAME)
        .collect();
    if cleaned.is_empty() {
        "STDIN".to_string()
    } else {
        cleaned
    }
}

/// `-o`/`-e` as given, made absolute against the submit directory; by
/// default `NAME.oSEQ` / `NAME.eSEQ` there. (If the path names a directory,
/// the agent puts the default file name inside it, as PBS does.)
pub(crate) fn output_path(
    given: Option<String>,
    workdir: &str,
    default_file: &str,
) -> Result<String, CoreError> {
    written_output_path(given, workdir, |path| path.push_str(default_file))
}

/// [`output_path`], the default file's name written by `default_file`
/// after the directory.
fn written_output_path(
    given: Option<String>,
    workdir: &str,
    default_file: impl FnOnce(&mut String),
) -> Result<String, CoreError> {
    let path = match given.filter(|p| !p.is_empty()) {
        None => {
            let mut path = String::with_capacity(workdir.len() + 32);
            path.push_str(workdir);
            if !workdir.ends_with('/') {
                path.push('/');
            }
            default_file(&mut path);
            path
        }
        Some(p) if p.starts_with('/') => p,
        Some(p) => join(workdir, &p),
    };
    if path.contains('\0') {
        return Err(CoreError::BadPath {
            path,
            why: "it contains a NUL byte".into(),
        });
    }
    Ok(path)
}

fn join(dir: &str, file: &str) -> String {
    if dir.ends_with('/') {
        format!("{dir}{file}")
    } else {
        format!("{dir}/{file}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::Role;
    use chrono::TimeZone;

    fn config() -> Config {
        let mut config = Config::default();
        let mut batch = Queue::open("batch");
        batch.max_nodes = Some(8);
        batch.max_walltime = Some(7200);
        batch.default_nodes = Some(2);
        config.queues.insert("batch".into(), batch);
        config.queues.insert("closed".into(), Queue::new("closed"));
        config.server.default_queue = Some("batch".into());
        config
    }

    fn alice() -> Caller {
        Caller {
            uid: 1001,
            gid: 100,
            user: "alice".into(),
            group: "users".into(),
            role: Role::User,
        }
    }

    fn now() -> Time {
        chrono::Utc.timestamp_opt(1_000_000, 0).unwrap()
    }

    fn submit(sub: Submission) -> Result<Job, CoreError> {
        sub.into_job(
            JobId(17),
            &alice(),
            &config(),
            |_, _| Reach {
                nodes: 16,
                sets: String::new(),
            },
            now(),
        )
    }

    fn basic() -> Submission {
        Submission {
            script_name: "run.sh".into(),
            workdir: "/home/alice".into(),
            ..Submission::default()
        }
    }

    #[test]
    fn defaults_come_from_the_queue_then_the_server() {
        let job = submit(basic()).unwrap();
        assert_eq!(job.queue, "batch");
        assert_eq!(job.nodes, 2, "queue default_nodes");
        assert_eq!(job.walltime, 7200, "no default walltime: the queue maximum");
        assert_eq!(job.name, "run.sh");
        assert_eq!(job.stdout_path, "/home/alice/run.sh.o17");
        assert_eq!(job.stderr_path, "/home/alice/run.sh.e17");
        assert_eq!(job.state, JobState::Queued);
        assert!(job.rerunnable);
        let mut site = config();
        site.server.default_rerunnable = false;
        let reach = |_: &str, _: &NodeNeeds| Reach {
            nodes: 16,
            sets: String::new(),
        };
        let job = basic()
            .into_job(JobId(18), &alice(), &site, reach, now())
            .unwrap();
        assert!(!job.rerunnable, "the server's default_rerunnable");
        let asked = Submission {
            rerunnable: Some(true),
            ..basic()
        };
        assert!(
            asked
                .into_job(JobId(19), &alice(), &site, reach, now())
                .unwrap()
                .rerunnable
        );
    }

    #[test]
    fn explicit_requests_and_paths() {
        let job = submit(Submission {
            name: Some("sim".into()),
            resources: vec![
                ("nodes".into(), "4".into()),
                ("walltime".into(), "10:00".into()),
            ],
            stdout_path: Some("out/log".into()),
            stderr_path: Some("/tmp/err".into()),
            hold: true,
            ..basic()
        })
        .unwrap();
        assert_eq!((job.nodes, job.walltime), (4, 600));
        assert_eq!(job.stdout_path, "/home/alice/out/log");
        assert_eq!(job.stderr_path, "/tmp/err");
        assert_eq!(job.state, JobState::Held);
        assert!(job.holds.user);
    }

    #[test]
    fn refusals_name_the_limit() {
        let too_many = Submission {
            resources: vec![("nodes".into(), "9".into())],
            ..basic()
        };
        assert!(matches!(
            submit(too_many),
            Err(CoreError::TooManyNodes { max: 8, .. })
        ));
        let too_long = Submission {
            resources: vec![("walltime".into(), "3:00:00".into())],
            ..basic()
        };
        let err = submit(too_long).unwrap_err().to_string();
        assert!(
            err.contains("03:00:00") && err.contains("02:00:00"),
            "{err}"
        );
        let nowhere = Submission {
            queue: Some("nosuch".into()),
            ..basic()
        };
        assert_eq!(
            submit(nowhere).unwrap_err().to_string(),
            "queue \"nosuch\" does not exist; see qstat -Q"
        );
        let closed = Submission {
            queue: Some("closed".into()),
            ..basic()
        };
        assert!(matches!(
            submit(closed),
            Err(CoreError::QueueDisabled { .. })
        ));
        let bad_name = Submission {
            name: Some("a b".into()),
            ..basic()
        };
        assert!(matches!(
            submit(bad_name),
            Err(CoreError::BadJobName { .. })
        ));
    }

    #[test]
    fn a_job_larger_than_the_machine_is_refused() {
        let mut cfg = config();
        cfg.queues.get_mut("batch").unwrap().max_nodes = None;
        let sub = Submission {
            resources: vec![("nodes".into(), "64".into())],
            ..basic()
        };
        let err = sub
            .into_job(
                JobId(1),
                &alice(),
                &cfg,
                |_, _| Reach {
                    nodes: 16,
                    sets: String::new(),
                },
                now(),
            )
            .unwrap_err();
        assert!(matches!(
            err,
            CoreError::ExceedsCapacity { capacity: 16, .. }
        ));
    }

    #[test]
    fn plain_jobs_keep_no_resource_list_but_are_still_bounded() {
        let plain = Submission {
            resources: vec![("nodes".into(), "2".into()), ("mem".into(), "2GB".into())],
            ..basic()
        };
        let job = submit(plain.clone()).unwrap();
        assert!(job.resource_list.is_empty(), "{:?}", job.resource_list);
        let shown = job.shown_resource_list();
        assert_eq!(
            (shown["nodect"].as_str(), shown["mem"].as_str()),
            ("2", "2gb")
        );
        let chunked = Submission {
            resources: vec![("select".into(), "1:ncpus=1".into())],
            ..basic()
        };
        assert_eq!(
            submit(chunked).unwrap().resource_list["select"],
            "1:ncpus=1"
        );
        // A queue bound applies to plain jobs as to any.
        let mut cfg = config();
        cfg.queues
            .get_mut("batch")
            .unwrap()
            .resources_max
            .insert("mem".into(), "1gb".into());
        let reach = |_: &str, _: &NodeNeeds| Reach {
            nodes: 16,
            sets: String::new(),
        };
        let err = plain
            .into_job(JobId(1), &alice(), &cfg, reach, now())
            .unwrap_err()
            .to_string();
        assert!(err.contains("resources_max.mem"), "{err}");
    }

    #[test]
    fn stdin_scripts_are_named_stdin() {
        let job = submit(Submission {
            script_name: String::new(),
            ..basic()
        })
        .unwrap();
        assert_eq!(job.name, "STDIN");
    }
}
