//! Slurm's squeue shows the tasks of an array that have not started as
//! one row, `13_[2-5%2]` (the indices left, and the throttle), and each
//! task that has started as its own row, `13_1`; `-r/--array` shows every
//! task on its own row. The daemon lists an array's record and then every
//! sub-job, those left to start under their own ids; this folds them.

use qmesh_proto::v1::JobInfo;

/// `jobs` (the daemon's order: an array, then its sub-jobs) as Slurm's
/// squeue shows them: with `one_per_line`, an array's record is left out;
/// otherwise its pending sub-jobs are folded into it.
pub fn fold(jobs: &[JobInfo], one_per_line: bool) -> Vec<JobInfo> {
    let mut out: Vec<JobInfo> = Vec::with_capacity(jobs.len());
    // The row of the array whose sub-jobs follow, and their indices left.
    let mut open: Option<(usize, Vec<u32>)> = None;
    for job in jobs {
        if job.array && job.array_index.is_none() {
            close(&mut out, open.take());
            if !one_per_line {
                open = Some((out.len(), Vec::new()));
                out.push(job.clone());
            }
            continue;
        }
        let pending_task = !one_per_line
            && super::state(job).0 == "PD"
            && job.array_index.is_some()
            && open
                .as_ref()
                .is_some_and(|(row, _)| out[*row].id == job.array_id);
        match (&mut open, job.array_index) {
            (Some((_, left)), Some(index)) if pending_task => left.push(index),
            _ => out.push(job.clone()),
        }
    }
    close(&mut out, open);
    out
}

/// The array's row takes the indices left (`13[2-5%2].srv`), or goes if
/// none is left.
fn close(out: &mut Vec<JobInfo>, open: Option<(usize, Vec<u32>)>) {
    let Some((row, left)) = open else {
        return;
    };
    if left.is_empty() {
        out.remove(row);
        return;
    }
    let array = &mut out[row];
    let mut indices = ranges(&left);
    if array.array_throttle > 0 {
        indices.push_str(&format!("%{}", array.array_throttle));
    }
    let (seq, server) = array.id.split_once('.').unwrap_or((&array.id, ""));
    let seq = seq.split('[').next().unwrap_or(seq);
    array.id = if server.is_empty() {
        format!("{seq}[{indices}]")
    } else {
        format!("{seq}[{indices}].{server}")
    };
}

/// Array indices as Slurm writes them: `1,2,3,5,7,8` as `1-3,5,7-8`
/// (squeue's and sacct's rows of tasks not started).
pub(crate) fn ranges(indices: &[u32]) -> String {
    let mut sorted = indices.to_vec();
    sorted.sort_unstable();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let first = sorted[i];
        let mut last = first;
        while i + 1 < sorted.len() && sorted[i + 1] == last + 1 {
            i += 1;
            last = sorted[i];
        }
        parts.push(if first == last {
            first.to_string()
        } else {
            format!("{first}-{last}")
        });
        i += 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, state: &str, index: Option<u32>) -> JobInfo {
        JobInfo {
            id: id.into(),
            state_letter: state.into(),
            array: index.is_none() && id.contains("[]"),
            array_index: index,
            array_id: if index.is_some() {
                format!("{}[].srv", id.split('[').next().unwrap())
            } else {
                String::new()
            },
            ..JobInfo::default()
        }
    }

    fn ids(rows: &[JobInfo]) -> Vec<String> {
        rows.iter().map(|r| super::super::slurm_id(&r.id)).collect()
    }

    #[test]
    fn tasks_left_to_start_share_one_row_and_started_ones_have_their_own() {
        let mut array = row("13[].srv", "Q", None);
        array.array_throttle = 2;
        let jobs = vec![
            row("12.srv", "R", None),
            array,
            row("13[1].srv", "R", Some(1)),
            row("13[2].srv", "Q", Some(2)),
            row("13[3].srv", "Q", Some(3)),
            row("13[5].srv", "Q", Some(5)),
            row("14.srv", "Q", None),
        ];
        assert_eq!(
            ids(&fold(&jobs, false)),
            ["12", "13_[2-3,5%2]", "13_1", "14"]
        );
        assert_eq!(
            ids(&fold(&jobs, true)),
            ["12", "13_1", "13_2", "13_3", "13_5", "14"]
        );
        // Every task started: the array's row goes.
        let started = vec![row("15[].srv", "Q", None), row("15[1].srv", "R", Some(1))];
        assert_eq!(ids(&fold(&started, false)), ["15_1"]);
    }
}
