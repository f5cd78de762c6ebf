//! `--arrays`: a trace's jobs grouped into job arrays, to see what the
//! pass costs when queues hold huge arrays, on a real workload rather than
//! a synthetic one. The logs predate arrays, but users then submitted the
//! same program again and again; those runs become arrays here.
//!
//! A user's consecutive jobs (in submission order; other users' jobs in
//! between do not matter) that ask for the same size, in the same queue,
//! running the same program (SWF field 14; when unknown, the same
//! requested time, field 9, stands for it) are one array, submitted at
//! the first one's submit time. The later members thus arrive earlier than
//! they did in the log: the schedule is not the log's, and is not meant to
//! be. The queue is part of the key because an array waits in one queue:
//! members from another would be judged by the wrong queue's limits.
//!
//! A job whose user is unknown, or whose program and requested time both
//! are, stays alone (and ends its user's run). An array never has more
//! members than `most` (the server's `max_array_size`): a longer run is
//! cut into several arrays.

use std::collections::HashMap;
use std::ops::Range;

use crate::swf::SwfJob;

/// What a user's consecutive jobs share to be one array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    /// SWF field 12; negative is unknown.
    pub user: i64,
    /// SWF field 15.
    pub queue: i64,
    /// The size the replay asks for (after --size-scale, --round-pow2).
    pub nodes: u32,
    /// `None`: nothing tells which program it runs.
    pub program: Option<Program>,
}

/// Which program a job runs, as far as the trace tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Program {
    /// SWF field 14, the executable (application) number.
    Executable(i64),
    /// Field 14 unknown: the requested time (field 9) stands for it.
    Requested(i64),
}

impl Program {
    pub fn of(job: &SwfJob) -> Option<Program> {
        if job.executable >= 0 {
            Some(Program::Executable(job.executable))
        } else if job.requested_time > 0 {
            Some(Program::Requested(job.requested_time))
        } else {
            None
        }
    }
}

impl Key {
    /// Whether a job with this key may join an array at all.
    fn groups(&self) -> bool {
        self.user >= 0 && self.program.is_some()
    }
}

/// The arrays of `keys` (jobs in submission order): positions into
/// `keys`, each group in submission order, the groups in the order of
/// their first member. Every position is in exactly one group; a job
/// alone is a group of one. `most` (at least 1) bounds a group's size.
pub fn group(keys: &[Key], most: usize) -> Vec<Vec<usize>> {
    let most = most.max(1);
    let mut groups: Vec<Vec<usize>> = Vec::new();
    // Per user, the key of their last job and the group it joined.
    let mut open: HashMap<i64, (Key, usize)> = HashMap::new();
    for (pos, key) in keys.iter().enumerate() {
        let joins = match open.get(&key.user) {
            Some(&(last, g)) if last == *key && key.groups() && groups[g].len() < most => Some(g),
            _ => None,
        };
        match joins {
            Some(g) => groups[g].push(pos),
            None => {
                if key.user >= 0 {
                    open.insert(key.user, (*key, groups.len()));
                }
                groups.push(vec![pos]);
            }
        }
    }
    groups
}

/// `items` reordered so each group's members are side by side, in group
/// order, with each group's range in the result. Positions `group` does
/// not name are dropped; a position named twice is taken once.
pub fn gather<T>(items: Vec<T>, groups: &[Vec<usize>]) -> (Vec<T>, Vec<Range<usize>>) {
    let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(slots.len());
    let mut ranges = Vec::with_capacity(groups.len());
    for g in groups {
        let from = out.len();
        out.extend(
            g.iter()
                .filter_map(|&i| slots.get_mut(i).and_then(Option::take)),
        );
        if out.len() > from {
            ranges.push(from..out.len());
        }
    }
    (out, ranges)
}

/// What `--arrays` made of the trace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Formed {
    /// Groups of two jobs or more (a job alone is submitted as a job).
    pub arrays: usize,
    /// The largest array's sub-jobs.
    pub largest: usize,
    /// Jobs that are sub-jobs of an array.
    pub jobs: usize,
}

impl Formed {
    pub fn of(groups: &[Range<usize>]) -> Formed {
        let mut f = Formed::default();
        for g in groups.iter().filter(|g| g.len() > 1) {
            f.arrays += 1;
            f.jobs += g.len();
            f.largest = f.largest.max(g.len());
        }
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(user: i64, nodes: u32, exe: i64) -> Key {
        Key {
            user,
            queue: 1,
            nodes,
            program: (exe >= 0).then_some(Program::Executable(exe)),
        }
    }

    #[test]
    fn a_users_consecutive_jobs_of_one_size_and_program_are_one_array() {
        let keys = [
            key(1, 4, 7),
            key(2, 4, 7), // another user: between, not breaking
            key(1, 4, 7),
            key(1, 4, 7),
            key(2, 4, 7),
        ];
        assert_eq!(group(&keys, 100), vec![vec![0, 2, 3], vec![1, 4]]);
    }

    #[test]
    fn another_size_program_or_queue_ends_the_run() {
        let keys = [
            key(1, 4, 7),
            key(1, 8, 7), // size
            key(1, 8, 7),
            key(1, 8, 9), // program
            key(1, 4, 7), // back to the first: a new array, not the old one
            Key {
                queue: 2,
                ..key(1, 4, 7)
            },
        ];
        assert_eq!(
            group(&keys, 100),
            vec![vec![0], vec![1, 2], vec![3], vec![4], vec![5]]
        );
    }

    #[test]
    fn unknown_users_or_programs_stay_alone() {
        let keys = [
            key(-1, 4, 7),
            key(-1, 4, 7),
            key(1, 4, -1),
            key(1, 4, -1),
            key(1, 4, 7),
            key(1, 4, -1), // ends user 1's run
            key(1, 4, 7),
        ];
        assert_eq!(
            group(&keys, 100),
            (0..7).map(|i| vec![i]).collect::<Vec<_>>()
        );
    }

    #[test]
    fn the_requested_time_stands_for_an_unknown_executable() {
        let job = |exe, req| SwfJob {
            number: 1,
            submit: 0,
            wait: -1,
            run: 10,
            allocated: 4,
            requested_procs: 4,
            requested_time: req,
            status: 1,
            user: 1,
            group: 1,
            executable: exe,
            queue: 1,
            partition: -1,
        };
        assert_eq!(Program::of(&job(3, 600)), Some(Program::Executable(3)));
        assert_eq!(Program::of(&job(-1, 600)), Some(Program::Requested(600)));
        assert_eq!(Program::of(&job(-1, -1)), None);
        let k = |req| Key {
            program: Program::of(&job(-1, req)),
            ..key(1, 4, -1)
        };
        assert_eq!(
            group(&[k(600), k(600), k(900)], 100),
            vec![vec![0, 1], vec![2]]
        );
    }

    #[test]
    fn a_long_run_is_cut_at_the_largest_array() {
        let keys = vec![key(1, 4, 7); 5];
        assert_eq!(group(&keys, 2), vec![vec![0, 1], vec![2, 3], vec![4]]);
        assert_eq!(group(&keys, 0).len(), 5, "at least one per array");
    }

    #[test]
    fn gather_puts_members_side_by_side_and_counts_arrays() {
        let (items, ranges) = gather(
            vec!['a', 'b', 'c', 'd', 'e'],
            &[vec![0, 2, 3], vec![1, 4], vec![9]],
        );
        assert_eq!(items, vec!['a', 'c', 'd', 'b', 'e']);
        assert_eq!(ranges, vec![0..3, 3..5]);
        assert_eq!(
            Formed::of(&[0..3, 3..4, 4..6]),
            Formed {
                arrays: 2,
                largest: 3,
                jobs: 5
            }
        );
    }
}
