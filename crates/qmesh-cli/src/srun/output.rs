//! The step's output, as srun shows it: each task's standard output and
//! error as they arrive, whole lines at a time (a line of one task never
//! cut by another's), with `-l` each line after its rank (`3: `, padded to
//! the widest rank, as Slurm). `-u` passes bytes on as they come. `-o` and
//! `-e` send them to files instead, one per task when the pattern has
//! `%t`, `%n` or `%N`.
//!
//! Why by arrival and not in rank order: holding rank 1's lines until rank
//! 0 has ended would hide a failing rank's error while the others wait for
//! it (an MPI program hangs in a collective), and a long step would show
//! nothing of most ranks while it runs. Lines arrive whole and labelled,
//! so `srun -l ... | sort -s -n` gives rank order afterwards.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;

/// Where one of the two streams goes.
#[derive(Clone, Debug)]
pub enum Sink {
    Terminal,
    /// A path pattern, its `%` letters filled in per task.
    File(String),
}

/// What a file name pattern's letters stand for, beside the rank.
#[derive(Clone, Debug, Default)]
pub struct Names {
    pub job: String,
    pub step: u32,
    pub user: String,
    pub job_name: String,
    /// Each rank's node: its place in the step and its name.
    pub node_of: Vec<(usize, String)>,
}

/// srun's `-o`/`-e` pattern for one task: `%j %J %s %t %n %N %u %x %%`.
pub fn expand(pattern: &str, rank: u32, names: &Names) -> String {
    let mut out = String::new();
    let mut chars = pattern.chars();
    let (node, node_name) = names
        .node_of
        .get(rank as usize)
        .cloned()
        .unwrap_or((0, String::new()));
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('%') => out.push('%'),
            Some('j') => out.push_str(&names.job),
            Some('J') => out.push_str(&format!("{}.{}", names.job, names.step)),
            Some('s') => out.push_str(&names.step.to_string()),
            Some('t') => out.push_str(&rank.to_string()),
            Some('n') => out.push_str(&node.to_string()),
            Some('N') => out.push_str(&node_name),
            Some('u') => out.push_str(&names.user),
            Some('x') => out.push_str(&names.job_name),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

/// Whether a pattern names one file per task.
fn per_task(pattern: &str) -> bool {
    ["%t", "%n", "%N"].iter().any(|l| pattern.contains(l))
}

/// The step's output, shared by its tasks' watchers.
pub struct Output {
    /// With `-l`: the width ranks are padded to.
    label_width: Option<usize>,
    unbuffered: bool,
    sinks: [Sink; 2],
    names: Names,
    /// Open files, by path (tasks that share one write to one handle).
    files: HashMap<String, File>,
    /// Bytes after the last newline, by rank and stream.
    partial: HashMap<(u32, usize), Vec<u8>>,
    /// Files that could not be opened, said once each.
    pub errors: Vec<String>,
}

pub const STDOUT: usize = 0;
pub const STDERR: usize = 1;

impl Output {
    pub fn new(
        ntasks: u32,
        label: bool,
        unbuffered: bool,
        sinks: [Sink; 2],
        names: Names,
    ) -> Output {
        Output {
            label_width: label.then(|| ntasks.saturating_sub(1).to_string().len()),
            unbuffered,
            sinks,
            names,
            files: HashMap::new(),
            partial: HashMap::new(),
            errors: Vec::new(),
        }
    }

    /// Bytes a task wrote on `stream`.
    pub fn write(&mut self, rank: u32, stream: usize, bytes: &[u8]) {
        if self.unbuffered && self.label_width.is_none() {
            self.emit(rank, stream, bytes);
            return;
        }
        let buf = self.partial.entry((rank, stream)).or_default();
        buf.extend_from_slice(bytes);
        let Some(last) = buf.iter().rposition(|&b| b == b'\n') else {
            return;
        };
        let rest = buf.split_off(last + 1);
        let lines = std::mem::replace(buf, rest);
        self.emit_lines(rank, stream, &lines);
    }

    /// A task has ended: what it left without a newline.
    pub fn finish(&mut self, rank: u32) {
        for stream in [STDOUT, STDERR] {
            if let Some(rest) = self.partial.remove(&(rank, stream))
                && !rest.is_empty()
            {
                self.emit_lines(rank, stream, &rest);
            }
        }
    }

    fn emit_lines(&mut self, rank: u32, stream: usize, lines: &[u8]) {
        let Some(width) = self.label_width else {
            self.emit(rank, stream, lines);
            return;
        };
        let label = format!("{rank:>width$}: ");
        let mut text = Vec::with_capacity(lines.len() + 8);
        for line in lines.split_inclusive(|&b| b == b'\n') {
            text.extend_from_slice(label.as_bytes());
            text.extend_from_slice(line);
        }
        self.emit(rank, stream, &text);
    }

    fn emit(&mut self, rank: u32, stream: usize, bytes: &[u8]) {
        match &self.sinks[stream] {
            Sink::Terminal if stream == STDOUT => {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(bytes);
                let _ = out.flush();
            }
            Sink::Terminal => {
                let mut err = std::io::stderr().lock();
                let _ = err.write_all(bytes);
                let _ = err.flush();
            }
            Sink::File(pattern) => {
                let path = if per_task(pattern) {
                    expand(pattern, rank, &self.names)
                } else {
                    expand(pattern, 0, &self.names)
                };
                if !self.files.contains_key(&path) {
                    match File::create(&path) {
                        Ok(f) => {
                            self.files.insert(path.clone(), f);
                        }
                        Err(e) => {
                            let said = format!("cannot write the output file {path}: {e}");
                            if !self.errors.contains(&said) {
                                self.errors.push(said);
                            }
                            return;
                        }
                    }
                }
                if let Some(f) = self.files.get_mut(&path) {
                    let _ = f.write_all(bytes);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_patterns_take_srun_letters() {
        let names = Names {
            job: "12".into(),
            step: 3,
            user: "ann".into(),
            job_name: "sim".into(),
            node_of: vec![(0, "h1".into()), (1, "h2".into())],
        };
        assert_eq!(expand("out-%j.%s-%t.%n.%N", 1, &names), "out-12.3-1.1.h2");
        assert_eq!(expand("%J-%u-%x-%%-%q", 0, &names), "12.3-ann-sim-%-%q");
        assert!(per_task("a-%t") && !per_task("a-%j"));
    }

    #[test]
    fn labels_are_padded_to_the_widest_rank() {
        let out = Output::new(
            11,
            true,
            false,
            [Sink::Terminal, Sink::Terminal],
            Names::default(),
        );
        assert_eq!(out.label_width, Some(2));
        let out = Output::new(
            10,
            true,
            false,
            [Sink::Terminal, Sink::Terminal],
            Names::default(),
        );
        assert_eq!(out.label_width, Some(1));
    }

    #[test]
    fn lines_reach_a_file_whole_and_labelled() {
        let dir = tempfile::tempdir().unwrap();
        let pattern = dir.path().join("o-%t").display().to_string();
        let sink = Sink::File(pattern.clone());
        let mut out = Output::new(2, true, false, [sink.clone(), sink], Names::default());
        out.write(1, STDOUT, b"one ");
        out.write(0, STDOUT, b"zero\n");
        out.write(1, STDOUT, b"line\nrest");
        out.finish(1);
        out.finish(0);
        drop(out);
        let read = |t| std::fs::read_to_string(pattern.replace("%t", t)).unwrap();
        assert_eq!(read("0"), "0: zero\n");
        assert_eq!(read("1"), "1: one line\n1: rest");
    }
}
