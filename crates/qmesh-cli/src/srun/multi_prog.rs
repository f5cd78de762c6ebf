//! `srun --multi-prog FILE`: a program per rank, in Slurm's configuration
//! format. Each line is `RANKS PROGRAM [ARGS...]`: RANKS is `*` (every
//! rank no line before named), a rank, a range `1-3`, or a comma list of
//! them (`0,2-3`); `#` starts a comment. In the program and its arguments
//! `%t` is the rank and `%o` its offset within the line's ranks; words
//! may be quoted with `'` or `"`. The first line that names a rank is its
//! program.

/// One line of the file: which ranks, and their program.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Line {
    /// Ranges of ranks, inclusive; empty for `*`.
    ranges: Vec<(u32, u32)>,
    words: Vec<String>,
    number: usize,
}

/// A parsed configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultiProg {
    lines: Vec<Line>,
}

/// Reads a configuration's text; the error names the line and what to
/// write.
pub fn parse(text: &str) -> Result<MultiProg, String> {
    let mut lines = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let number = i + 1;
        let words = split_words(raw).map_err(|e| format!("line {number}: {e}"))?;
        let Some((ranks, program)) = words.split_first() else {
            continue;
        };
        if program.is_empty() {
            return Err(format!(
                "line {number}: \"{ranks}\" names no program; write RANKS PROGRAM [ARGS...]"
            ));
        }
        let ranges = if ranks == "*" {
            Vec::new()
        } else {
            ranks
                .split(',')
                .map(|r| range(r).ok_or(()))
                .collect::<Result<Vec<_>, ()>>()
                .map_err(|()| {
                    format!(
                        "line {number}: \"{ranks}\" is not a list of ranks; write *, 3, 1-3 or 0,2-3"
                    )
                })?
        };
        lines.push(Line {
            ranges,
            words: program.to_vec(),
            number,
        });
    }
    Ok(MultiProg { lines })
}

fn range(text: &str) -> Option<(u32, u32)> {
    let (a, b) = match text.split_once('-') {
        Some((a, b)) => (a.trim().parse().ok()?, b.trim().parse().ok()?),
        None => {
            let n = text.trim().parse().ok()?;
            (n, n)
        }
    };
    (a <= b).then_some((a, b))
}

/// Words as a shell would split them, with `'...'` and `"..."` quoting
/// and `#` starting a comment outside quotes.
fn split_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_with(String::new).push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (None, '#') if word.is_none() => break,
            (None, c) if c.is_whitespace() => words.extend(word.take()),
            (None, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    if let Some(q) = quote {
        return Err(format!("a {q} is not closed"));
    }
    words.extend(word);
    Ok(words)
}

impl MultiProg {
    /// The program and arguments of `rank`, `%t` and `%o` filled in.
    pub fn argv(&self, rank: u32) -> Option<Vec<String>> {
        let (line, first) = self.lines.iter().find_map(|l| {
            if l.ranges.is_empty() {
                return Some((l, None));
            }
            l.ranges
                .iter()
                .find(|(a, b)| (*a..=*b).contains(&rank))
                .map(|_| (l, Some(())))
        })?;
        // %o: the rank's place among those the line names, in order.
        let offset = match first {
            None => rank,
            Some(()) => {
                let mut before = 0;
                for &(a, b) in &line.ranges {
                    if (a..=b).contains(&rank) {
                        before += rank - a;
                        break;
                    }
                    before += b - a + 1;
                }
                before
            }
        };
        Some(
            line.words
                .iter()
                .map(|w| {
                    w.replace("%t", &rank.to_string())
                        .replace("%o", &offset.to_string())
                })
                .collect(),
        )
    }

    /// Every rank a line names is below `ntasks` (Slurm's words when
    /// not), and every rank below it has a program, or the first that has
    /// none.
    pub fn check(&self, ntasks: u32, file: &str) -> Result<(), String> {
        for line in &self.lines {
            if let Some(&(first, _)) = line.ranges.iter().find(|(_, b)| *b >= ntasks) {
                return Err(format!(
                    "Invalid task id, {} >= ntasks\nsrun: error: Line {} of configuration \
                     file {file} invalid",
                    first.max(ntasks),
                    line.number
                ));
            }
        }
        match (0..ntasks).find(|&r| self.argv(r).is_none()) {
            Some(rank) => Err(format!(
                "--multi-prog {file}: no line names task {rank} (of {ntasks}); add a line for it, \
                 or a line \"* PROGRAM\" for every task not named"
            )),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_ranges_lists_and_the_rest() {
        let conf = parse(
            "# a comment\n0 echo zero %t %o\n1-2,5 echo 'mid x' %t %o\n\n* echo rest %t %o\n",
        )
        .unwrap();
        assert_eq!(conf.lines.len(), 3);
        assert_eq!(conf.argv(0).unwrap(), ["echo", "zero", "0", "0"]);
        assert_eq!(conf.argv(2).unwrap(), ["echo", "mid x", "2", "1"]);
        assert_eq!(conf.argv(5).unwrap(), ["echo", "mid x", "5", "2"]);
        assert_eq!(conf.argv(4).unwrap(), ["echo", "rest", "4", "4"]);
        assert!(conf.check(8, "f").is_ok());
        // Slurm refuses a line naming a rank the step does not have.
        let err = conf.check(2, "mp.conf").unwrap_err();
        assert_eq!(
            err,
            "Invalid task id, 2 >= ntasks\nsrun: error: Line 3 of configuration file mp.conf invalid"
        );
    }

    #[test]
    fn a_rank_without_a_line_and_bad_lines_are_named() {
        let conf = parse("0 hostname\n").unwrap();
        let err = conf.check(2, "mp.conf").unwrap_err();
        assert!(err.contains("no line names task 1 (of 2)"), "{err}");
        let err = parse("0 ok\nx-y hostname\n").unwrap_err();
        assert!(err.starts_with("line 2: \"x-y\""), "{err}");
        assert!(parse("0 echo 'open\n").unwrap_err().contains("not closed"));
        assert!(parse("3-1 echo\n").is_err());
    }
}
