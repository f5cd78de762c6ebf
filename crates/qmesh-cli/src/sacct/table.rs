//! sacct's lines as Slurm prints them: the table (each cell padded or
//! cut to its column, a space after each, the `---` line under the
//! header), `-p`/`-P` (the delimiter between fields, and with `-p` after
//! the last too), and the jobs in Slurm's order with Slurm's ids, an
//! array's tasks not started yet on one line (`13_[1-3,7]`).

use qmesh_proto::v1::AccountedJob;

use super::fields::{self, Column, Line};

/// The jobs, each with its Slurm id; an array's tasks not started yet
/// share one line, `13_[1-3,7]`, as Slurm shows them.
pub fn grouped<'a>(jobs: &[&'a AccountedJob]) -> Vec<(&'a AccountedJob, String)> {
    let mut out: Vec<(&'a AccountedJob, String)> = Vec::new();
    let mut waiting: Vec<(&'a AccountedJob, Vec<u32>)> = Vec::new();
    for job in jobs {
        let unstarted = job.start == 0
            && job.requeues == 0
            && matches!(job.state.as_str(), "Q" | "H" | "W" | "T");
        match job.array_index {
            Some(index) if unstarted => {
                match waiting
                    .iter_mut()
                    .find(|(j, _)| j.array_job == job.array_job)
                {
                    Some((_, indices)) => indices.push(index),
                    None => waiting.push((job, vec![index])),
                }
            }
            Some(index) => out.push((job, format!("{}_{index}", job.array_job))),
            None => out.push((
                job,
                job.id.split('.').next().unwrap_or_default().to_string(),
            )),
        }
    }
    for (job, indices) in waiting {
        let id = match indices.as_slice() {
            [one] => format!("{}_{one}", job.array_job),
            _ => format!(
                "{}_[{}]",
                job.array_job,
                crate::squeue::arrays::ranges(&indices)
            ),
        };
        out.push((job, id));
    }
    out.sort_by_key(|(job, _)| {
        let number: u64 = job
            .id
            .split(['[', '.'])
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        (number, job.array_index)
    });
    out
}

/// The header: names, then (in the table) the dashes.
pub fn header(columns: &[Column], separator: Option<&(String, bool)>) -> String {
    match separator {
        Some(sep) => joined(columns.iter().map(|c| c.name.to_string()), sep),
        None => {
            let names: String = columns
                .iter()
                .map(|c| fields::cell(c.name, c.width, true) + " ")
                .collect();
            let dashes: String = columns
                .iter()
                .map(|c| "-".repeat(c.width.unsigned_abs() as usize) + " ")
                .collect();
            format!("{names}\n{dashes}\n")
        }
    }
}

pub fn row(columns: &[Column], separator: Option<&(String, bool)>, line: &Line) -> String {
    let values = columns.iter().map(|c| line.value(c.name));
    match separator {
        Some(sep) => joined(values, sep),
        None => {
            let cells: String = columns
                .iter()
                .zip(values)
                .map(|(c, v)| fields::cell(&v, c.width, false) + " ")
                .collect();
            cells + "\n"
        }
    }
}

/// `-P`: joined by the delimiter; `-p`: one after the last as well.
fn joined(values: impl Iterator<Item = String>, (delimiter, trailing): &(String, bool)) -> String {
    let mut text = values.collect::<Vec<_>>().join(delimiter);
    if *trailing {
        text.push_str(delimiter);
    }
    text + "\n"
}

/// `--helpformat`: the fields, four to a line, as Slurm lists them.
pub fn helpformat() -> String {
    let mut out = String::new();
    for chunk in fields::FIELDS.chunks(4) {
        for (name, _) in chunk {
            out.push_str(&format!("{name:<20}"));
        }
        out.push('\n');
    }
    out
}
