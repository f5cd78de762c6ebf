//! PBS's default job table, the one people read and scripts parse (Parsl's
//! Torque provider takes the state from the fifth column):
//!
//! ```text
//! Job id            Name             User              Time Use S Queue
//! ----------------  ---------------- ----------------  -------- - -----
//! 17.server         solver           alice                    0 R batch
//! ```
//!
//! Columns have PBS's fixed widths (wider with `-w`) and a cell too long
//! is cut, its last character replaced by `*`. The job id shows the
//! sequence number and the first part of the server's name. Time Use is
//! `resources_used.cput`, `0` when the job has none; `-p` shows the
//! percentage of its wall time used instead.

use qmesh_proto::JobInfo;

use super::jobs::{elapsed, lookup, now_for, resources_used, state_letter};
use crate::output::truncate;

/// How the table is drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TableStyle {
    /// `-w`: wider columns.
    pub wide: bool,
    /// `-p`: `% done` instead of Time Use.
    pub percent: bool,
    /// Torque's `-l`: job names in full.
    pub long_names: bool,
}

/// Column widths: id, name, user, queue.
const NARROW: [usize; 4] = [17, 16, 16, 16];
const WIDE: [usize; 4] = [30, 15, 15, 15];

fn header(style: &TableStyle) -> &'static str {
    match (style.wide, style.percent) {
        (false, false) => {
            "Job id            Name             User              Time Use S Queue\n\
             ----------------  ---------------- ----------------  -------- - -----\n"
        }
        (false, true) => {
            "Job id            Name             User               % done  S Queue\n\
             ----------------  ---------------- ----------------  -------- - -----\n"
        }
        (true, false) => {
            "Job id                         Name            User             Time Use S Queue\n\
             -----------------------------  --------------- ---------------  -------- - ---------------\n"
        }
        (true, true) => {
            "Job id                         Name            User              % done  S Queue\n\
             -----------------------------  --------------- ---------------  -------- - ---------------\n"
        }
    }
}

/// The table of `jobs` (nothing at all when there are none); `time` is the
/// server's time.
pub fn job_table(jobs: &[JobInfo], style: &TableStyle, time: i64) -> String {
    if jobs.is_empty() {
        return String::new();
    }
    let [id_w, name_w, user_w, queue_w] = if style.wide { WIDE } else { NARROW };
    let mut out = header(style).to_string();
    for job in jobs {
        let name = if style.long_names {
            job.name.clone()
        } else {
            cut_name(&job.name, name_w)
        };
        let used = if style.percent {
            percent_done(job, now_for(job, time))
        } else {
            let used = resources_used(job, now_for(job, time));
            truncate(
                &lookup(&used, "cput").unwrap_or_else(|| "0".into()),
                Some(8),
            )
        };
        out.push_str(&format!(
            "{:<id_w$} {:<name_w$} {:<user_w$}  {:>8} {:>1} {:<queue_w$}\n",
            truncate(&short_id(&job.id), Some(id_w)),
            name,
            truncate(&job.owner, Some(user_w)),
            used,
            state_letter(job),
            truncate(&job.queue, Some(queue_w)),
        ));
    }
    out
}

/// `17.host.example.org` as the table shows it: `17.host`.
pub fn short_id(id: &str) -> String {
    let mut parts = id.splitn(3, '.');
    match (parts.next(), parts.next()) {
        (Some(seq), Some(server)) => format!("{seq}.{server}"),
        _ => id.to_string(),
    }
}

/// PBS cuts a name that fills its column, not only one that overflows it.
fn cut_name(name: &str, width: usize) -> String {
    if name.chars().count() >= width {
        let mut cut: String = name.chars().take(width - 1).collect();
        cut.push('*');
        cut
    } else {
        name.to_string()
    }
}

/// `-p`: the share of its wall time the job has used, PBS's way (`-- `
/// before it starts or when it asked for no wall time).
fn percent_done(job: &JobInfo, now: i64) -> String {
    let state = state_letter(job);
    if matches!(state.as_str(), "Q" | "T" | "W") {
        return "-- ".to_string();
    }
    match elapsed(job, now) {
        Some(used) if job.walltime > 0 => format!("{:>3} ", used * 100 / job.walltime),
        _ => "-- ".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_jobs::{T0, finished, queued, running};
    use super::*;

    #[test]
    fn the_table_as_pbs_prints_it() {
        let jobs = [running(), queued()];
        assert_eq!(
            job_table(&jobs, &TableStyle::default(), T0 + 1000),
            "\
Job id            Name             User              Time Use S Queue
----------------  ---------------- ----------------  -------- - -----
17.server         solver           alice                    0 R batch           \n\
18.server         a_rather_long_j* bob                      0 Q batch           \n"
        );
    }

    #[test]
    fn the_fifth_column_is_the_state() {
        // What Parsl's TorqueProvider does with the output.
        let text = job_table(
            &[running(), queued(), finished()],
            &TableStyle::default(),
            T0,
        );
        let states: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with("Job") && !l.starts_with("---"))
            .map(|l| l.split_whitespace().nth(4).unwrap())
            .collect();
        assert_eq!(states, ["R", "Q", "F"]);
    }

    #[test]
    fn long_cells_are_cut_and_marked() {
        let job = JobInfo {
            id: "1234567.a-very-long-server-name.example.org".into(),
            name: "exactly16chars__".into(),
            owner: "a_user_with_a_long_name".into(),
            queue: "a_queue_with_a_long_name".into(),
            ..running()
        };
        let text = job_table(std::slice::from_ref(&job), &TableStyle::default(), T0);
        let row = text.lines().nth(2).unwrap();
        assert_eq!(
            row,
            "1234567.a-very-l* exactly16chars_* a_user_with_a_l*         0 R a_queue_with_a_*"
        );
        let wide = TableStyle {
            wide: true,
            ..TableStyle::default()
        };
        let text = job_table(&[job], &wide, T0);
        let row = text.lines().nth(2).unwrap();
        assert_eq!(
            row,
            "1234567.a-very-long-server-na* exactly16chars* a_user_with_a_*         0 R a_queue_with_a*"
        );
        assert!(text.starts_with("Job id                         Name            User "));
    }

    #[test]
    fn torque_long_names_are_not_cut() {
        let style = TableStyle {
            long_names: true,
            ..TableStyle::default()
        };
        let text = job_table(&[queued()], &style, T0);
        assert!(
            text.contains(" a_rather_long_job_name_indeed bob "),
            "{text}"
        );
    }

    #[test]
    fn dash_p_shows_the_share_of_wall_time_used() {
        let style = TableStyle {
            percent: true,
            ..TableStyle::default()
        };
        let text = job_table(&[running(), queued(), finished()], &style, T0);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "Job id            Name             User               % done  S Queue"
        );
        // 754 s of 3600 s; a queued job; 100 s of 3600 s.
        assert!(
            lines[2].contains(" alice                  20  R batch"),
            "{text}"
        );
        assert!(
            lines[3].contains(" bob                    --  Q batch"),
            "{text}"
        );
        assert!(
            lines[4].contains(" alice                   2  F batch"),
            "{text}"
        );
    }

    #[test]
    fn nothing_to_list_prints_nothing() {
        assert_eq!(job_table(&[], &TableStyle::default(), T0), "");
    }
}
