//! Slurm's host lists as its commands read and write them
//! (`SLURM_JOB_NODELIST`, `scontrol show hostnames|hostlist|hostlistsorted`,
//! sinfo's and squeue's node lists, `sbatch -w`), held against the real
//! scontrol 22.05 (`tests/slurm/scontrol.rs`).
//!
//! Written here rather than taken from the `hostlist_iter` crate (or the
//! older `hostlist`, which drops padding as well), which
//! differs from Slurm where job scripts notice: it drops zero padding
//! (`a[01-10]` gives `a1`...), sorts and merges (`n[1-3,7],m2` gives `m2`
//! first; `n2,n1` compresses to `n[1-2]` where Slurm keeps `n[2,1]`), and
//! reads `n[1-2] m1` as one name. Slurm's rules, as the oracle showed them:
//! names are separated by commas or white space outside brackets; each
//! bracket is a list of numbers and `LO-HI` ranges whose width is the
//! written width of `LO` (`n[01-2]` is `n01 n02`); several brackets make
//! every combination, the first varying slowest (`r[1-2]n[1-2]`); text
//! after the last bracket is refused (`n[1-2]x`); duplicates stay.

/// The most names one bracket may stand for (Slurm's own bound is 64k).
const MAX_RANGE: u64 = 65_536;

/// Every name a list stands for, in order; `Err` says why it is not a
/// host list, in Slurm's words (`Invalid hostlist: LIST`).
pub fn expand(list: &str) -> Result<Vec<String>, String> {
    let invalid = || format!("Invalid hostlist: {list}");
    let mut out = Vec::new();
    for word in split_top(list).map_err(|_| invalid())? {
        out.extend(expand_one(&word).ok_or_else(invalid)?);
    }
    Ok(out)
}

/// The list's names separated by commas and white space outside brackets.
fn split_top(list: &str) -> Result<Vec<String>, ()> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut depth = 0;
    for c in list.chars() {
        match c {
            '[' => depth += 1,
            ']' if depth == 0 => return Err(()),
            ']' => depth -= 1,
            _ => {}
        }
        if depth == 0 && (c == ',' || c.is_whitespace()) {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
        } else {
            word.push(c);
        }
    }
    if depth != 0 {
        return Err(());
    }
    if !word.is_empty() {
        words.push(word);
    }
    Ok(words)
}

/// One name with brackets: `pre[ranges]mid[ranges]`, every combination.
fn expand_one(word: &str) -> Option<Vec<String>> {
    let mut names = vec![String::new()];
    let mut rest = word;
    while let Some(open) = rest.find('[') {
        let close = open + rest[open..].find(']')?;
        let text = &rest[..open];
        let numbers = bracket(&rest[open + 1..close])?;
        let mut next = Vec::with_capacity(names.len() * numbers.len());
        for name in &names {
            for n in &numbers {
                next.push(format!("{name}{text}{n}"));
            }
        }
        names = next;
        rest = &rest[close + 1..];
    }
    if rest.len() == word.len() {
        return Some(vec![word.to_string()]);
    }
    // Slurm refuses text after the last bracket (`n[1-2]x`).
    rest.is_empty().then_some(names)
}

/// A bracket's numbers, each written with its range's width.
fn bracket(inside: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for part in inside.split(',') {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(lo) || !digits(hi) {
            return None;
        }
        let (a, b): (u64, u64) = (lo.parse().ok()?, hi.parse().ok()?);
        if a > b || b - a >= MAX_RANGE {
            return None;
        }
        let width = lo.len();
        out.extend((a..=b).map(|n| format!("{n:0width$}")));
    }
    Some(out)
}

/// A name cut before its trailing number: `n1-ib3` is `n1-ib`, 3, width 1.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Host {
    prefix: String,
    number: Option<(u64, usize)>,
}

impl Host {
    fn of(name: &str) -> Host {
        let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        let (prefix, tail) = name.split_at(name.len() - digits);
        match tail.parse::<u64>() {
            Ok(n) if digits > 0 && digits <= 18 => Host {
                prefix: prefix.to_string(),
                number: Some((n, digits)),
            },
            _ => Host {
                prefix: name.to_string(),
                number: None,
            },
        }
    }
}

/// A run of numbers of one prefix: `lo..=hi`, written `width` wide.
struct Run {
    prefix: String,
    lo: u64,
    hi: u64,
    width: usize,
}

impl Run {
    fn text(&self) -> String {
        let w = self.width;
        if self.lo == self.hi {
            format!("{:0w$}", self.lo)
        } else {
            format!("{:0w$}-{:0w$}", self.lo, self.hi)
        }
    }
}

/// The names in Slurm's compressed form, in their order (`scontrol show
/// hostlist`): a name one past the run before it, written the same way,
/// extends that run; neighbouring runs of one prefix share a bracket
/// (`n[1-3,7],m2`, `n[2,1]`, `c[01,2]`).
pub fn compress(names: &[String]) -> String {
    let mut items: Vec<Result<Run, String>> = Vec::new();
    for name in names {
        let host = Host::of(name);
        let Some((n, digits)) = host.number else {
            items.push(Err(host.prefix));
            continue;
        };
        if let Some(Ok(run)) = items.last_mut()
            && run.prefix == host.prefix
            && run.hi.checked_add(1) == Some(n)
            && format!("{n:0w$}", w = run.width).len() == digits
        {
            run.hi = n;
            continue;
        }
        items.push(Ok(Run {
            prefix: host.prefix,
            lo: n,
            hi: n,
            width: digits,
        }));
    }
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < items.len() {
        match &items[i] {
            Err(plain) => {
                out.push(plain.clone());
                i += 1;
            }
            Ok(first) => {
                let mut j = i + 1;
                while j < items.len() && matches!(&items[j], Ok(r) if r.prefix == first.prefix) {
                    j += 1;
                }
                let runs: Vec<String> = items[i..j]
                    .iter()
                    .filter_map(|r| r.as_ref().ok().map(Run::text))
                    .collect();
                if runs.len() == 1 && first.lo == first.hi {
                    out.push(format!("{}{}", first.prefix, runs[0]));
                } else {
                    out.push(format!("{}[{}]", first.prefix, runs.join(",")));
                }
                i = j;
            }
        }
    }
    out.join(",")
}

/// `hostlistsorted`: the names sorted as Slurm sorts them, by prefix,
/// then by the written width of the number (`c2` before `c01`), then by
/// the number.
pub fn compress_sorted(names: &[String]) -> String {
    let mut sorted = names.to_vec();
    sorted.sort_by_key(|name| {
        let host = Host::of(name);
        (host.prefix, host.number.map(|(n, width)| (width, n)))
    });
    compress(&sorted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &str) -> String {
        expand(list).unwrap().join(" ")
    }

    fn hostlist(list: &str) -> String {
        compress(&expand(list).unwrap())
    }

    /// What the real `scontrol show hostnames` printed for each list
    /// (Slurm 22.05.8; `tests/slurm/scontrol.rs` asks the rig again).
    #[test]
    fn hostnames_as_slurm_expands_them() {
        assert_eq!(names("n[1-3,7],m2"), "n1 n2 n3 n7 m2");
        assert_eq!(names("a[01-10]").split(' ').nth(9), Some("a10"));
        assert_eq!(names("a[01-10]").split(' ').next(), Some("a01"));
        assert_eq!(names("n[1-2]-ib[3-4]"), "n1-ib3 n1-ib4 n2-ib3 n2-ib4");
        assert_eq!(
            names("rack[1-2]n[01-02]"),
            "rack1n01 rack1n02 rack2n01 rack2n02"
        );
        assert_eq!(names("b[9-11]"), "b9 b10 b11");
        assert_eq!(names("n[01-2]"), "n01 n02");
        assert_eq!(names("n[1-2] m1"), "n1 n2 m1");
        assert_eq!(names("a,b c"), "a b c");
        assert_eq!(names("n1,n1,n2"), "n1 n1 n2");
        assert_eq!(names("n[1-2],,n3"), "n1 n2 n3");
        assert_eq!(names("n[1-2][3-4]"), "n13 n14 n23 n24");
        assert_eq!(names("[1-2]"), "1 2");
        assert_eq!(names("n1.cluster"), "n1.cluster");
        assert_eq!(names(""), "");
        for bad in [
            "n[3-1]",
            "n[]",
            "n[a-b]",
            "n[1-2]x",
            "node[1-2].ib",
            "n[1-3",
            "n]",
        ] {
            assert_eq!(
                expand(bad).unwrap_err(),
                format!("Invalid hostlist: {bad}"),
                "{bad}"
            );
        }
    }

    /// What the real `scontrol show hostlist` printed.
    #[test]
    fn hostlists_as_slurm_compresses_them() {
        assert_eq!(hostlist("n[1-3,7],m2"), "n[1-3,7],m2");
        assert_eq!(hostlist("a[01-10],a11"), "a[01-11]");
        assert_eq!(hostlist("a[01-09],a10"), "a[01-10]");
        assert_eq!(hostlist("n1,n2,n3,m1"), "n[1-3],m1");
        assert_eq!(hostlist("n1-ib3,n1-ib4,n2-ib3"), "n1-ib[3-4],n2-ib3");
        assert_eq!(hostlist("b9,b10,b11"), "b[9-11]");
        assert_eq!(hostlist("n2,n1"), "n[2,1]");
        assert_eq!(hostlist("n10,n9"), "n[10,9]");
        assert_eq!(hostlist("n1,n1"), "n[1,1]");
        assert_eq!(hostlist("c01,c2,c003"), "c[01,2,003]");
        assert_eq!(hostlist("x1,x01"), "x[1,01]");
        assert_eq!(hostlist("x"), "x");
        assert_eq!(hostlist("n[001-3]"), "n[001-003]");
        assert_eq!(hostlist("n1,n2,m,n3"), "n[1-2],m,n3");
        assert_eq!(hostlist("n[1-2],n3"), "n[1-3]");
        assert_eq!(hostlist("n[1-2]-ib[3-4]"), "n1-ib[3-4],n2-ib[3-4]");
        assert_eq!(compress_sorted(&expand("n3,n1,n2").unwrap()), "n[1-3]");
        assert_eq!(compress_sorted(&expand("n2,n1,n1").unwrap()), "n[1,1-2]");
        assert_eq!(
            compress_sorted(&expand("c01,c2,c003").unwrap()),
            "c[2,01,003]"
        );
        assert_eq!(
            compress_sorted(&expand("b10,a1,b9,x,a01").unwrap()),
            "a[1,01],b[9-10],x"
        );
    }
}
