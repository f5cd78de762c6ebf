//! Resources consumed per queue and server (PBS Pro's flag `q`): job-wide
//! amounts such as software licences (`qmgr -c "create resource matlab
//! type = long, flag = q"`, `qsub -l matlab=2`).
//!
//! The server's `resources_available.matlab = 4` bounds what all running
//! jobs together use, a queue's what its running jobs use; where neither
//! is set, nothing bounds it (PBS's rule). A job whose start would pass a
//! bound waits with `Consumable`: a check of each pass, like the run
//! limits, counting the jobs the pass starts as it goes. Nothing is
//! reserved, so a job asking less may start before it. qstat's comment
//! and spwhen name the resource and the figures ([`describe`]). A job
//! asking more than a bound allows at all is refused at submission
//! ([`check_submit`]).

use crate::error::CoreError;
use crate::job::Job;
use crate::queue::Queue;
use crate::server::Config;
use crate::site_resources::ResourceType;

/// One bound: the server's (`queue` is `None`) or a queue's
/// `resources_available.NAME`.
#[derive(Clone, Debug, PartialEq)]
struct Bound {
    queue: Option<String>,
    name: String,
    kind: ResourceType,
    available: f64,
    /// As the administrator wrote it.
    written: String,
}

impl Bound {
    fn applies(&self, job: &Job) -> bool {
        self.queue.as_deref().is_none_or(|q| q == job.queue)
    }
}

/// Every bound of the configuration, the server's first.
fn bounds(config: &Config) -> Vec<Bound> {
    let server = config
        .server
        .resources_available
        .iter()
        .map(|(name, written)| (None, name, written));
    let queues = config.queues.values().flat_map(|q| {
        q.resources_available
            .iter()
            .map(move |(name, written)| (Some(q.name.clone()), name, written))
    });
    server
        .chain(queues)
        .filter_map(|(queue, name, written)| {
            let def = config.resource_def(name).filter(|d| d.per_queue())?;
            Some(Bound {
                queue,
                name: name.clone(),
                kind: def.kind,
                available: def.kind.amount(written)?,
                written: written.clone(),
            })
        })
        .collect()
}

/// How much of `name` a job asks for (its `Resource_List`, queue and
/// server defaults included); 0 if it names none.
fn asked(job: &Job, name: &str, kind: ResourceType) -> f64 {
    job.resource_list
        .get(name)
        .and_then(|v| kind.amount(v))
        .unwrap_or(0.0)
}

/// The bounds, and what the running jobs (and the jobs a pass started)
/// use of each.
#[derive(Clone, Debug, PartialEq)]
pub struct Consumables {
    bounds: Vec<Bound>,
    used: Vec<f64>,
}

/// A bound a job would pass.
#[derive(Clone, Debug, PartialEq)]
pub struct Shortfall {
    pub name: String,
    /// `None`: the server's bound.
    pub queue: Option<String>,
    pub asked: f64,
    pub used: f64,
    pub available: f64,
    written: String,
    kind: ResourceType,
}

impl Shortfall {
    /// The sentence for qstat's comment and spwhen.
    pub fn describe(&self) -> String {
        let show = |x: f64| self.kind.show_amount(x);
        let place = match &self.queue {
            None => String::new(),
            Some(q) => format!(" in queue {q}"),
        };
        if self.asked > self.available {
            return format!(
                "it asks for {} of {}, more than resources_available.{} = {}{place} allows; \
                 it waits until that is raised",
                show(self.asked),
                self.name,
                self.name,
                self.written
            );
        }
        format!(
            "waits for {}: {} of {} in use{place} (resources_available.{} = {}); \
             it asks for {}",
            self.name,
            show(self.used),
            show(self.available),
            self.name,
            self.written,
            show(self.asked)
        )
    }
}

impl Consumables {
    /// The bounds of `config` and what the `running` jobs use; `None`
    /// when nothing is bounded (the pass then checks nothing). Reads every
    /// running job: once per pass.
    pub fn of<'a>(
        config: &Config,
        running: impl IntoIterator<Item = &'a Job>,
    ) -> Option<Consumables> {
        let bounds = bounds(config);
        if bounds.is_empty() {
            return None;
        }
        let mut counted = Consumables {
            used: vec![0.0; bounds.len()],
            bounds,
        };
        for job in running {
            counted.add(job);
        }
        Some(counted)
    }

    /// Counts a job that runs (or that the pass starts).
    pub fn add(&mut self, job: &Job) {
        for (bound, used) in self.bounds.iter().zip(&mut self.used) {
            if bound.applies(job) {
                *used += asked(job, &bound.name, bound.kind);
            }
        }
    }

    /// The first bound, the server's then its queue's, that starting
    /// `job` now would pass.
    pub fn shortfall(&self, job: &Job) -> Option<Shortfall> {
        self.bounds
            .iter()
            .zip(&self.used)
            .find_map(|(bound, &used)| {
                if !bound.applies(job) {
                    return None;
                }
                let asked = asked(job, &bound.name, bound.kind);
                // A little room for sums of floats (0.1 + 0.2).
                let over = used + asked > bound.available + 1e-9 * bound.available.max(1.0);
                (asked > 0.0 && over).then(|| Shortfall {
                    name: bound.name.clone(),
                    queue: bound.queue.clone(),
                    asked,
                    used,
                    available: bound.available,
                    written: bound.written.clone(),
                    kind: bound.kind,
                })
            })
    }
}

/// Why `job` waits for a consumable resource, in a sentence; `None` if it
/// does not. Reads every running job: for the jobs that wait so.
pub fn describe<'a>(
    config: &Config,
    running: impl IntoIterator<Item = &'a Job>,
    job: &Job,
) -> Option<String> {
    Consumables::of(config, running)?
        .shortfall(job)
        .map(|s| s.describe())
}

/// Refuses a job (its `Resource_List`) asking for more of a resource than
/// the server's or `queue`'s `resources_available` allows at all.
pub fn check_submit(
    config: &Config,
    queue: &Queue,
    resource_list: &std::collections::BTreeMap<String, String>,
) -> Result<(), CoreError> {
    for bound in bounds(config) {
        if bound.queue.as_deref().is_some_and(|q| q != queue.name) {
            continue;
        }
        let Some(value) = resource_list.get(&bound.name) else {
            continue;
        };
        let Some(amount) = bound.kind.amount(value) else {
            continue;
        };
        if amount > bound.available {
            let (set, attr) = match &bound.queue {
                None => (
                    "the server has".to_string(),
                    format!("qmgr -c \"set server resources_available.{}\"", bound.name),
                ),
                Some(q) => (
                    format!("queue \"{q}\" has"),
                    format!(
                        "qmgr -c \"set queue {q} resources_available.{}\"",
                        bound.name
                    ),
                ),
            };
            return Err(CoreError::BadResource {
                name: bound.name.clone(),
                value: value.clone(),
                why: format!(
                    "{set} resources_available.{} = {} in all, so the job could never run; \
                     ask for at most {} (an administrator raises it with {attr})",
                    bound.name,
                    bound.written,
                    bound.kind.show_amount(bound.available)
                ),
            });
        }
    }
    Ok(())
}

/// What running jobs use of each resource consumed per queue and server,
/// on the server (PBS's `resources_assigned.NAME`), as PBS writes amounts;
/// resources no running job uses are left out.
pub fn assigned<'a>(
    config: &Config,
    running: impl IntoIterator<Item = &'a Job>,
) -> Vec<(String, String)> {
    let running: Vec<&Job> = running.into_iter().collect();
    config
        .resources
        .values()
        .filter(|d| d.per_queue())
        .filter_map(|def| {
            let total: f64 = running
                .iter()
                .map(|job| asked(job, &def.name, def.kind))
                .sum();
            (total > 0.0).then(|| (def.name.clone(), def.kind.show_amount(total)))
        })
        .collect()
}

#[cfg(test)]
mod tests;
