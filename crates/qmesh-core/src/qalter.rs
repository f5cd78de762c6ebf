//! qalter: a job's attributes changed (PBS Pro's qalter(1B)), all of them
//! or none: every change is made on a copy and checked as a submission's
//! would be, and the copy replaces the job only if all passed.
//!
//! A job that has not started may change anything qalter names: its
//! resources (`-l`, merged into what it asked for, then read, defaulted
//! and checked against its queue's limits and node sets like qsub's), its
//! account, holds (`-h u|o|s|n`, with qhold's and qrls's rights) and the
//! rest. A running job keeps its nodes, resources and account (its agent
//! enforces the wall time it was started with); the attributes that only
//! matter at a launch (paths, shell, join, umask...) change for its next
//! run, as PBS says. A user alters their own jobs; operators and managers
//! any job, and only they may raise `run_count` or set an operator hold.

use std::collections::BTreeMap;

use crate::access::{Caller, Role};
use crate::error::CoreError;
use crate::job::options;
use crate::job::{Job, JobId};
use crate::node::NodeNeeds;
use crate::resources::ResourceRequest;
use crate::route::Ask;
use crate::route::{check_queue_limits, effective};
use crate::state::State;
use crate::submit::{check_name, output_path};
use crate::time::Time;
use crate::time::format_hms;

/// What qalter changes; `None` (empty) leaves an attribute alone.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Alteration {
    /// `-a`.
    pub start_after: Option<Time>,
    /// `-A`; empty: none.
    pub account: Option<String>,
    /// `-c`.
    pub checkpoint: Option<String>,
    /// `-o`, `-e` as given: relative ones resolve in `workdir`.
    pub stdout_path: Option<String>,
    pub stderr_path: Option<String>,
    /// Where qalter ran (absolute).
    pub workdir: String,
    /// `-h`: `n`, or some of `u o s`.
    pub hold_list: Option<String>,
    /// `-j oe|eo|n`.
    pub join: Option<String>,
    /// `-k`.
    pub keep_files: Option<String>,
    /// `-l`, in order: a later entry replaces an earlier one.
    pub resources: Vec<(String, String)>,
    /// `-m`, `-M`.
    pub mail_points: Option<String>,
    pub mail_users: Option<String>,
    /// `-N`.
    pub name: Option<String>,
    /// `-p`.
    pub priority: Option<i32>,
    /// `-P`; empty: none.
    pub project: Option<String>,
    /// `-r`.
    pub rerunnable: Option<bool>,
    /// `-S`.
    pub shell: Option<String>,
    /// `-W umask=`.
    pub umask: Option<String>,
    /// `-W run_count=`.
    pub run_count: Option<u32>,
}

impl State {
    /// Alters job `id`; returns what changed, as PBS's accounting `a`
    /// record writes it (`Resource_List.walltime=02:00:00`), and the job.
    pub fn alter(
        &mut self,
        id: JobId,
        caller: &Caller,
        alt: &Alteration,
        now: Time,
    ) -> Result<(Vec<String>, &Job), CoreError> {
        check_alteration(alt).map_err(|message| CoreError::BadOption { message })?;
        let full = self.full_id(id);
        let job = self.checked(id, caller, "alter")?;
        let pending = job.state.is_pending();
        if !pending && !job.state.is_running() {
            return Err(self.wrong_state(job, "alter"));
        }
        let bad = |message: String| CoreError::BadOption { message };
        let not_running = |what: &str| {
            bad(format!(
                "{what} of job {full} cannot change while it runs; qalter it before it starts"
            ))
        };
        let mut new = job.clone();
        let mut changes = Vec::new();
        let mut check_accounts = false;

        if let Some(name) = &alt.name {
            check_name(name)?;
            new.name = name.clone();
            changes.push(format!("Job_Name={name}"));
        }
        if let Some(p) = alt.priority {
            if !(-1024..=1023).contains(&p) {
                return Err(bad(format!(
                    "-p {p}: a job's priority runs from -1024 to 1023"
                )));
            }
            new.priority = p;
            changes.push(format!("Priority={p}"));
        }
        if let Some(project) = &alt.project {
            new.project = Some(project.trim().to_string()).filter(|p| !p.is_empty());
            changes.push(format!("project={project}"));
        }
        if let Some(r) = alt.rerunnable {
            new.rerunnable = r;
            changes.push(format!("Rerunable={}", if r { "True" } else { "False" }));
        }
        if let Some(account) = &alt.account {
            if !pending {
                return Err(not_running("-A: the account"));
            }
            new.account = Some(account.trim().to_string()).filter(|a| !a.is_empty());
            check_accounts = true;
            changes.push(format!("Account_Name={account}"));
        }
        if let Some(text) = &alt.checkpoint {
            let checkpoint = options::parse_checkpoint(text).map_err(bad)?;
            if options::wants_checkpoints(&checkpoint) {
                note(
                    &mut new,
                    format!(
                        "Checkpoint={checkpoint}: qmesh does not checkpoint jobs by interval; only preemption (preempt_order C) runs the site's checkpoint program"
                    ),
                );
            }
            changes.push(format!("Checkpoint={checkpoint}"));
            new.options.checkpoint = Some(checkpoint);
        }
        if let Some(text) = &alt.keep_files {
            let keep = options::parse_keep(text).map_err(bad)?;
            changes.push(format!("Keep_Files={keep}"));
            new.options.keep_files = Some(keep);
        }
        if let Some(text) = &alt.mail_points {
            let points = options::parse_mail_points(text).map_err(bad)?;
            changes.push(format!("Mail_Points={points}"));
            new.options.mail_points = Some(points);
        }
        if let Some(text) = &alt.mail_users {
            new.options.mail_users = options::parse_mail_users(text).map_err(bad)?;
            changes.push(format!("Mail_Users={}", new.options.mail_users.join(",")));
        }
        if let Some(text) = &alt.shell {
            new.options.shell = options::parse_shell(text).map_err(bad)?;
            changes.push(format!("Shell_Path_List={}", new.options.shell.join(",")));
        }
        if let Some(text) = &alt.umask {
            new.options.umask = Some(options::parse_umask(text).map_err(bad)?);
            changes.push(format!("umask={}", text.trim()));
        }
        if let Some(join) = &alt.join {
            let (out, err) = match join.trim() {
                "oe" => (true, false),
                "eo" => (false, true),
                "n" => (false, false),
                other => {
                    return Err(bad(format!("-j {other}: write oe, eo or n")));
                }
            };
            new.join_output = out;
            new.options.join_to_error = err;
            changes.push(format!("Join_Path={}", join.trim()));
        }
        for (given, kind, attr) in [
            (&alt.stdout_path, 'o', "Output_Path"),
            (&alt.stderr_path, 'e', "Error_Path"),
        ] {
            let Some(path) = given else {
                continue;
            };
            if !path.starts_with('/') && !alt.workdir.starts_with('/') {
                return Err(CoreError::BadPath {
                    path: path.clone(),
                    why: "a relative path needs qalter's directory, which was not given".into(),
                });
            }
            let default_file = format!("{}.{kind}{id}", new.name);
            let path = output_path(Some(path.clone()), &alt.workdir, &default_file)?;
            changes.push(format!("{attr}={path}"));
            if kind == 'o' {
                new.stdout_path = path;
            } else {
                new.stderr_path = path;
            }
        }
        if let Some(at) = alt.start_after {
            new.start_after = Some(at);
            changes.push(format!("Execution_Time={}", at.timestamp()));
        }
        if let Some(n) = alt.run_count {
            if n > new.run_count && caller.role < Role::Operator {
                return Err(CoreError::PermissionDenied {
                    what: format!("raising the run_count of job {full}"),
                    need: "operator".into(),
                });
            }
            new.run_count = n;
            changes.push(format!("run_count={n}"));
        }
        if let Some(list) = &alt.hold_list {
            if !pending {
                return Err(not_running("-h: the holds"));
            }
            apply_holds(&mut new, list, caller)?;
            changes.push(format!("Hold_Types={}", new.holds.types()));
        }
        if !alt.resources.is_empty() {
            if !pending {
                return Err(not_running(
                    "-l: the resources (its agent enforces the wall time it started with)",
                ));
            }
            self.alter_resources(&mut new, &alt.resources)?;
            check_accounts = true;
            for (name, value) in &alt.resources {
                changes.push(format!("Resource_List.{name}={value}"));
            }
        }
        new.mtime = now;
        let job = if pending {
            self.replace_pending(new, check_accounts)?
        } else {
            self.replace_active(new)?
        };
        Ok((changes, job))
    }

    /// The job's resources with `given` merged in, read and checked as a
    /// submission's in its queue.
    fn alter_resources(&self, job: &mut Job, given: &[(String, String)]) -> Result<(), CoreError> {
        let mut merged = asked(job);
        for (name, value) in given {
            match name.as_str() {
                "select" => {
                    merged.remove("nodes");
                }
                "nodes" => {
                    merged.remove("select");
                }
                _ => {}
            }
            merged.insert(name.clone(), value.clone());
        }
        let config = self.config();
        let site = config.requestable_site_resources();
        let mut req = ResourceRequest::parse_with(
            merged.iter().map(|(n, v)| (n.as_str(), v.as_str())),
            &site,
        )?;
        crate::node_resources::check_chunks(config, &mut req)?;
        let host = crate::node_resources::of_request(config, &req)?;
        let queue = config
            .queue(&job.queue)
            .ok_or_else(|| CoreError::NoSuchQueue {
                queue: job.queue.clone(),
            })?;
        let needs = NodeNeeds {
            mem: req.mem,
            cpus: req.ncpus,
            gpus: req.gpus,
            features: &req.features,
            resources: &host,
        };
        let (nodes, walltime) = effective(
            queue,
            Ask {
                nodes: req.nodes,
                walltime: req.walltime,
            },
            config,
        );
        check_queue_limits(queue, nodes, walltime, u32::MAX)?;
        let reach = self.reach(&job.queue, &needs);
        if nodes > reach.nodes && needs.any() {
            return Err(CoreError::NoMatchingNodes {
                queue: job.queue.clone(),
                requested: nodes,
                needs: needs.describe(),
                capacity: reach.nodes,
                sets: reach.sets,
            });
        }
        check_queue_limits(queue, nodes, walltime, reach.nodes)?;
        job.nodes = nodes;
        job.walltime = walltime;
        job.mem = req.mem;
        job.ncpus = req.ncpus;
        job.gpus = req.gpus.filter(|&g| g > 0);
        job.resource_list = req.resource_list(nodes, walltime);
        crate::resource_limits::check_job_resources(config, queue, &job.resource_list)?;
        crate::consumable::check_submit(config, queue, &job.resource_list)?;
        job.features = req.features;
        job.node_resources = host;
        job.layout = req.layout.map(Box::new);
        for n in req.notes {
            note(job, n);
        }
        self.check_placeable(job)?;
        self.check_first_node(job)?;
        Ok(())
    }
}

/// What a job asked for, from its `Resource_List`: the entries the server
/// worked out (`nodect`, the total `ncpus` and `ngpus`, the `select` made
/// from `nodes=`, the total `mem` of chunks) left out, so that the list
/// reads again as the request it came from.
fn asked(job: &Job) -> BTreeMap<String, String> {
    let mut list = job.shown_resource_list();
    for derived in ["nodect", "ncpus", "ngpus"] {
        list.remove(derived);
    }
    if list.contains_key("nodes") {
        // Torque's form: select was made from it; a per-node ncpus not in
        // the node spec came as its own entry.
        list.remove("select");
        if let Some(cpus) = job.ncpus
            && !list.get("nodes").is_some_and(|n| n.contains("ppn="))
        {
            list.insert("ncpus".into(), cpus.to_string());
        }
    } else {
        // PBS Pro's form: memory is in the chunks; the total is derived.
        list.remove("mem");
    }
    list.insert("walltime".into(), format_hms(job.walltime));
    list
}

/// Adds a note (what was accepted but is not done) once.
fn note(job: &mut Job, text: String) {
    if !job.options.notes.contains(&text) {
        job.options.notes.push(text);
    }
}

/// `-h`: `u` a user hold, `o` an operator hold (operators), `s` a system
/// hold (managers), `n` the holds the caller may release (as qrls).
fn apply_holds(job: &mut Job, list: &str, caller: &Caller) -> Result<(), CoreError> {
    let letters: Vec<char> = list.trim().chars().collect();
    let bad = || CoreError::BadOption {
        message: format!("-h {list}: write n (release) or some of u, o, s"),
    };
    if letters.is_empty() || (letters.contains(&'n') && letters.len() > 1) {
        return Err(bad());
    }
    let need = |role: Role, what: &str| {
        if caller.role < role {
            Err(CoreError::PermissionDenied {
                what: format!("setting an {what} hold"),
                need: role.as_str().into(),
            })
        } else {
            Ok(())
        }
    };
    for c in letters {
        match c {
            'u' => job.holds.user = true,
            'o' => {
                need(Role::Operator, "operator")?;
                job.holds.operator = true;
            }
            's' => {
                need(Role::Manager, "system")?;
                job.holds.system = true;
            }
            'n' => {
                job.holds.user = false;
                if caller.role >= Role::Operator {
                    job.holds.operator = false;
                    job.holds.system = false;
                }
            }
            _ => return Err(bad()),
        }
    }
    job.state = job.pending_state();
    Ok(())
}

/// Why a qalter carries too much, or nothing: the limits of a submission
/// (`-N`, values, resources), so that a job cannot grow past them later.
pub fn check_alteration(alt: &Alteration) -> Result<(), String> {
    let values = [
        ("the output path (-o)", alt.stdout_path.as_deref()),
        ("the error path (-e)", alt.stderr_path.as_deref()),
        ("the account (-A)", alt.account.as_deref()),
        ("the project (-P)", alt.project.as_deref()),
        ("the working directory", Some(alt.workdir.as_str())),
        ("the mail list (-M)", alt.mail_users.as_deref()),
        ("the mail points (-m)", alt.mail_points.as_deref()),
        ("the shell (-S)", alt.shell.as_deref()),
        ("the checkpoint (-c)", alt.checkpoint.as_deref()),
        ("the hold list (-h)", alt.hold_list.as_deref()),
        ("the join (-j)", alt.join.as_deref()),
        ("the files kept (-k)", alt.keep_files.as_deref()),
        ("the umask (-W umask)", alt.umask.as_deref()),
    ];
    crate::submit::sizes::check_fields(alt.name.as_deref(), &alt.resources, &values)
}

#[cfg(test)]
mod tests;
