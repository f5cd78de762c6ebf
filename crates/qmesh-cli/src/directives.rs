//! qsub options written inside the job script.
//!
//! PBS and Torque read `#PBS` lines, NQS descendants `#QSUB`, and old NQS
//! `#@$` (where a bare `#@$` line ends the block). Directives are only read
//! at the top of the script: the first line that is neither blank nor a
//! comment ends them, so a `#PBS` further down is an ordinary comment.
//!
//! This module finds the directive lines and splits them into words the way
//! a shell would; qsub parses the words with the same parser as its command
//! line, so a directive means exactly what the option means.

/// The prefixes that mark a directive line.
const PREFIXES: [&str; 3] = ["#PBS", "#QSUB", "#@$"];

/// One directive line: its number (from 1), its text, and its words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Directive {
    pub line: usize,
    pub text: String,
    pub words: Vec<String>,
}

/// A directive qsub cannot use, named by its line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("script line {line}: {message} in directive \"{text}\"")]
pub struct DirectiveError {
    pub line: usize,
    pub text: String,
    pub message: String,
}

impl Directive {
    /// An error about this directive.
    pub fn error(&self, message: impl Into<String>) -> DirectiveError {
        DirectiveError {
            line: self.line,
            text: self.text.clone(),
            message: message.into(),
        }
    }
}

/// The directives at the top of `script`, in order.
pub fn scan(script: &[u8]) -> Result<Vec<Directive>, DirectiveError> {
    scan_with(script, &PREFIXES)
}

/// The directives with one of `prefixes` (qsub -C), in order.
pub fn scan_with(script: &[u8], prefixes: &[&str]) -> Result<Vec<Directive>, DirectiveError> {
    let mut found = Vec::new();
    for (index, raw) in script.split(|b| *b == b'\n').enumerate() {
        let line = String::from_utf8_lossy(raw);
        let line = line.strip_suffix('\r').unwrap_or(&line);
        let body = line.trim_start();
        if body.is_empty() {
            continue;
        }
        if !body.starts_with('#') {
            break;
        }
        let Some((prefix, rest)) = prefixes
            .iter()
            .find_map(|p| directive_rest(body, p).map(|rest| (*p, rest)))
        else {
            continue; // an ordinary comment, or the #! line
        };
        if prefix == "#@$" && rest.trim().is_empty() {
            break;
        }
        let text = line.trim().to_string();
        let words = split_words(rest).map_err(|message| DirectiveError {
            line: index + 1,
            text: text.clone(),
            message,
        })?;
        if !words.is_empty() {
            found.push(Directive {
                line: index + 1,
                text,
                words,
            });
        }
    }
    Ok(found)
}

/// The part after `prefix` if `line` is a directive with that prefix: the
/// prefix must be followed by a blank, the end, or an option (`#@$-q x`).
fn directive_rest<'a>(line: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = line.strip_prefix(prefix)?;
    match rest.chars().next() {
        None => Some(rest),
        Some(c) if c.is_whitespace() || c == '-' => Some(rest),
        Some(_) => None,
    }
}

/// Splits a line into words as sh does: blanks separate, '…' is literal,
/// "…" allows \" \\ \$ \`, a backslash outside quotes escapes the next
/// character, and an unquoted `#` at the start of a word begins a comment.
pub fn split_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '#' if !in_word => break,
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err("unterminated ' quote".to_string()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err("unterminated \" quote".to_string()),
                        },
                        Some(c) => word.push(c),
                        None => return Err("unterminated \" quote".to_string()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => word.push(c),
                    None => return Err("a backslash at the end of the line".to_string()),
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words_of(script: &str) -> Vec<(usize, Vec<String>)> {
        scan(script.as_bytes())
            .unwrap()
            .into_iter()
            .map(|d| (d.line, d.words))
            .collect()
    }

    fn w(words: &[&str]) -> Vec<String> {
        words.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn reads_all_three_prefixes() {
        let script = "#!/bin/sh\n#PBS -N one\n#QSUB -q batch\n#@$-lT 10:00\n# a comment\n\n#PBS -j oe\necho hi\n";
        assert_eq!(
            words_of(script),
            vec![
                (2, w(&["-N", "one"])),
                (3, w(&["-q", "batch"])),
                (4, w(&["-lT", "10:00"])),
                (7, w(&["-j", "oe"])),
            ]
        );
    }

    #[test]
    fn stops_at_the_first_command() {
        let script = "#PBS -N one\nexport X=1\n#PBS -N two\n";
        assert_eq!(words_of(script), vec![(1, w(&["-N", "one"]))]);
    }

    #[test]
    fn a_bare_nqs_marker_ends_the_block() {
        let script = "#@$-q batch\n#@$\n#PBS -N late\n";
        assert_eq!(words_of(script), vec![(1, w(&["-q", "batch"]))]);
    }

    #[test]
    fn lookalikes_are_comments() {
        let script = "#PBSX -N no\n##PBS -N no\n #PBS -N yes\n#PBS\n";
        assert_eq!(words_of(script), vec![(3, w(&["-N", "yes"]))]);
    }

    #[test]
    fn crlf_scripts_work() {
        assert_eq!(words_of("#PBS -N x\r\n"), vec![(1, w(&["-N", "x"]))]);
    }

    #[test]
    fn quotes_and_comments() {
        assert_eq!(
            split_words(r#"-v "A=a b",B='c,d' -N x\ y # trailing words"#).unwrap(),
            w(&["-v", "A=a b,B=c,d", "-N", "x y"])
        );
        assert_eq!(split_words(r#""a\"b\n""#).unwrap(), w(&["a\"b\\n"]));
        assert_eq!(split_words("''").unwrap(), w(&[""]));
        assert_eq!(split_words("a#b").unwrap(), w(&["a#b"]));
    }

    #[test]
    fn an_open_quote_names_the_line() {
        let err = scan(b"#!/bin/sh\n#PBS -N 'x\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "script line 2: unterminated ' quote in directive \"#PBS -N 'x\""
        );
    }
}
