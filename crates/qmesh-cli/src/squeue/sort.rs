//! `squeue -S`: the order of the rows, in Slurm's words: format letters
//! joined by commas, each `+` (ascending, the default) or `-`. Without
//! `-S` Slurm sorts by partition, then state (pending first), then
//! priority, highest first (`P,t,-p`); `--start` by expected start.
//! Keys that tie keep the server's order (its ranks), as Slurm's sort is
//! stable too.

use std::cmp::Ordering;

use qmesh_proto::JobInfo;

use super::format::{running, used};
use super::{slurm_id, state};

/// Slurm's default.
pub const DEFAULT: &str = "P,t,-p";
/// `--start`.
pub const BY_START: &str = "S";

/// One key: its letter and direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    letter: char,
    descending: bool,
}

const SORTABLE: &str = "iAFKPjuagtTMlLDCNRrqpQVSeZ";

/// Reads `-S`. The error is Slurm's line.
pub fn parse(spec: &str) -> Result<Vec<Key>, String> {
    let mut keys = Vec::new();
    for word in spec.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        let (descending, rest) = match word.as_bytes()[0] {
            b'-' => (true, &word[1..]),
            b'+' => (false, &word[1..]),
            _ => (false, word),
        };
        let mut letters = rest.chars();
        let letter = letters.next().unwrap_or(' ');
        if letters.next().is_some() || !SORTABLE.contains(letter) {
            return Err(format!(
                "Invalid sort specification: {rest} (write format letters, each with + or -, \
                 e.g. -S P,t,-p; known: {})",
                SORTABLE
                    .chars()
                    .map(String::from)
                    .collect::<Vec<_>>()
                    .join(",")
            ));
        }
        keys.push(Key { letter, descending });
    }
    Ok(keys)
}

impl Key {
    /// Whether the daemon's brief listing has what this key sorts by.
    pub fn brief(&self) -> bool {
        "iAFKPjutTMlLDNRrpQV".contains(self.letter)
    }
}

/// Slurm's order of states: its job state numbers.
fn state_rank(job: &JobInfo) -> u8 {
    match state(job).0 {
        "PD" => 0,
        "R" | "CG" => 1,
        "S" => 2,
        "CD" => 3,
        "CA" => 4,
        _ => 5,
    }
}

/// A job's number, then its array index, for ordering ids.
fn id_order(job: &JobInfo) -> (u64, u64) {
    let id = slurm_id(&job.id);
    let (base, index) = id.split_once('_').unwrap_or((&id, ""));
    (base.parse().unwrap_or(u64::MAX), index.parse().unwrap_or(0))
}

fn start_of(job: &JobInfo) -> i64 {
    if running(job) {
        job.stime
    } else if job.expected_start > 0 {
        job.expected_start
    } else {
        i64::MAX
    }
}

fn compare(key: Key, a: &JobInfo, b: &JobInfo, now: i64) -> Ordering {
    let user = |j: &JobInfo| j.owner.split('@').next().unwrap_or_default().to_string();
    let nodes = |j: &JobInfo| j.nodes.max(1);
    let order = match key.letter {
        'i' | 'A' | 'F' | 'K' => id_order(a).cmp(&id_order(b)),
        'P' => a.queue.cmp(&b.queue),
        'j' => a.name.cmp(&b.name),
        'u' => user(a).cmp(&user(b)),
        'a' => a.account.cmp(&b.account),
        'g' => a.group.cmp(&b.group),
        't' | 'T' => state_rank(a).cmp(&state_rank(b)),
        'M' => used(a, now).cmp(&used(b, now)),
        'l' => a.walltime.cmp(&b.walltime),
        'L' => a
            .walltime
            .saturating_sub(used(a, now))
            .cmp(&b.walltime.saturating_sub(used(b, now))),
        'D' => nodes(a).cmp(&nodes(b)),
        'C' => (a.ncpus.unwrap_or(1) * nodes(a)).cmp(&(b.ncpus.unwrap_or(1) * nodes(b))),
        'N' | 'R' => a.exec_nodes.cmp(&b.exec_nodes),
        'r' => a.reason.cmp(&b.reason),
        'q' => a.resource_list.get("qos").cmp(&b.resource_list.get("qos")),
        'p' | 'Q' => a.job_priority.cmp(&b.job_priority),
        'V' => a.qtime.cmp(&b.qtime),
        'S' => start_of(a).cmp(&start_of(b)),
        'e' => a.end_time.cmp(&b.end_time),
        'Z' => a.workdir.cmp(&b.workdir),
        _ => Ordering::Equal,
    };
    if key.descending {
        order.reverse()
    } else {
        order
    }
}

/// Sorts the rows by the keys, stably.
pub fn sort(rows: &mut [&JobInfo], keys: &[Key], now: i64) {
    rows.sort_by(|a, b| {
        keys.iter()
            .map(|k| compare(*k, a, b, now))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: &str, letter: &str, priority: i32) -> JobInfo {
        JobInfo {
            id: format!("{id}.srv"),
            queue: "debug".into(),
            state_letter: letter.into(),
            job_priority: priority,
            ..JobInfo::default()
        }
    }

    fn ids(rows: &[&JobInfo]) -> Vec<String> {
        rows.iter().map(|j| slurm_id(&j.id)).collect()
    }

    #[test]
    fn the_default_puts_pending_first_then_by_priority() {
        // What the real squeue printed: jobs 2 (pending, priority high),
        // 3 (held, priority 0), 1 (running).
        let (a, b, c) = (job("1", "R", 10), job("2", "Q", 9), job("3", "H", 0));
        let mut rows = vec![&a, &b, &c];
        sort(&mut rows, &parse(DEFAULT).unwrap(), 0);
        assert_eq!(ids(&rows), ["2", "3", "1"]);
        sort(&mut rows, &parse("i").unwrap(), 0);
        assert_eq!(ids(&rows), ["1", "2", "3"]);
        sort(&mut rows, &parse("-i").unwrap(), 0);
        assert_eq!(ids(&rows), ["3", "2", "1"]);
        sort(&mut rows, &parse("t,-i").unwrap(), 0);
        assert_eq!(ids(&rows), ["3", "2", "1"]);
        let (t10, t9) = (job("4[10]", "Q", 0), job("4[9]", "Q", 0));
        let mut rows = vec![&t10, &t9];
        sort(&mut rows, &parse("+i").unwrap(), 0);
        assert_eq!(ids(&rows), ["4_9", "4_10"], "indexes as numbers");
    }

    #[test]
    fn a_bad_key_is_refused_as_slurm_refuses_it() {
        assert!(
            parse("bogus")
                .unwrap_err()
                .starts_with("Invalid sort specification: bogus")
        );
        assert!(parse("x").is_err());
    }
}
