//! How `-f` writes an object (a job, a queue, the server) as text: a
//! heading, then its attributes in one of PBS's three text forms.
//!
//! - Folded (PBS's default): `    name = value`, a long value broken
//!   before column 78, at a comma when the next comma-separated part does
//!   not fit, else wherever it reaches the edge; continuation lines start
//!   with a tab. Then a blank line.
//! - One line per attribute (`-w`, and Torque's `-f -1`): nothing folded,
//!   a newline inside a value written as `\n`, for scripts that grep.
//! - Delimiter-separated (`-F dsv`, `-D` for the delimiter): one line per
//!   object, `heading|name=value|...`, the delimiter inside a value escaped
//!   with a backslash and newlines written as `\n`.

use crate::output::Attrs;

/// The text form `-f` writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FullStyle {
    Folded,
    OneLine,
    /// `-F dsv`, with this delimiter.
    Dsv(String),
}

/// PBS folds attribute lines before this column.
const LINE_LIMIT: usize = 78;

/// Appends one object: `heading` (`Job Id: 17.server`) and its attributes.
pub fn write_object(heading: &str, attrs: &Attrs, style: &FullStyle, out: &mut String) {
    match style {
        FullStyle::Dsv(delimiter) => {
            out.push_str(heading);
            for (name, value) in attrs.iter() {
                out.push_str(delimiter);
                out.push_str(name);
                out.push('=');
                out.push_str(&dsv_value(&value.to_string(), delimiter));
            }
            out.push('\n');
        }
        FullStyle::Folded | FullStyle::OneLine => {
            out.push_str(heading);
            out.push('\n');
            for (name, value) in attrs.iter() {
                let value = value.to_string();
                if *style == FullStyle::Folded {
                    out.push_str(&folded(name, &value));
                } else {
                    out.push_str(&format!("    {name} = {}", value.replace('\n', "\\n")));
                }
                out.push('\n');
            }
            out.push('\n');
        }
    }
}

/// `    name = value`, folded as PBS folds it.
fn folded(name: &str, value: &str) -> String {
    let mut out = format!("    {name} = ");
    // The column after "    name = ".
    let mut column = name.chars().count() + 7;
    let parts: Vec<&str> = value.split(',').filter(|p| !p.is_empty()).collect();
    for (i, part) in parts.iter().enumerate() {
        let len = part.chars().count();
        if column + len < LINE_LIMIT {
            out.push_str(part);
            column += len;
        } else {
            if i > 0 {
                // A part that does not fit starts a new line.
                out.push_str("\n\t");
                column = 9;
            }
            for c in part.chars() {
                out.push(c);
                column += 1;
                if column > LINE_LIMIT {
                    out.push_str("\n\t");
                    column = 8;
                }
            }
        }
        if i + 1 < parts.len() {
            out.push(',');
        }
    }
    out
}

/// A value in a DSV line: the delimiter escaped, newlines as `\n`.
fn dsv_value(value: &str, delimiter: &str) -> String {
    let escaped = if delimiter.is_empty() {
        value.to_string()
    } else {
        value.replace(delimiter, &format!("\\{delimiter}"))
    };
    escaped.replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs() -> Attrs {
        let mut a = Attrs::new();
        a.text("Job_Name", "solver")
            .int("Resource_List.nodect", 2)
            .text("comment", "a|b");
        a
    }

    #[test]
    fn the_folded_form_ends_with_a_blank_line() {
        let mut out = String::new();
        write_object("Job Id: 1.s", &attrs(), &FullStyle::Folded, &mut out);
        assert_eq!(
            out,
            "Job Id: 1.s\n    Job_Name = solver\n    Resource_List.nodect = 2\n    comment = a|b\n\n"
        );
    }

    #[test]
    fn long_lists_fold_at_a_comma_and_long_words_at_the_edge() {
        let value = (1..=12)
            .map(|n| format!("PBS_O_VAR{n}=value"))
            .collect::<Vec<_>>()
            .join(",");
        let text = folded("Variable_List", &value);
        assert_eq!(
            text,
            "    Variable_List = PBS_O_VAR1=value,PBS_O_VAR2=value,PBS_O_VAR3=value,\n\
             \tPBS_O_VAR4=value,PBS_O_VAR5=value,PBS_O_VAR6=value,PBS_O_VAR7=value,\n\
             \tPBS_O_VAR8=value,PBS_O_VAR9=value,PBS_O_VAR10=value,PBS_O_VAR11=value,\n\
             \tPBS_O_VAR12=value"
        );
        for line in text.lines() {
            assert!(line.len() < 80, "{line:?}");
        }
        let hosts = (1..=12)
            .map(|n| format!("node{n:03}/0*8"))
            .collect::<Vec<_>>()
            .join("+");
        let text = folded("exec_host", &hosts);
        let lines: Vec<&str> = text.lines().collect();
        // PBS lets a broken word reach column 79, and counts the tab as 8.
        assert_eq!(lines[0], format!("    exec_host = {}", &hosts[..63]));
        assert_eq!(lines[1], format!("\t{}", &hosts[63..134]));
        assert_eq!(text.replace("\n\t", ""), format!("    exec_host = {hosts}"));
    }

    #[test]
    fn one_line_per_attribute_folds_nothing() {
        let mut a = Attrs::new();
        let long = "x".repeat(200);
        a.text("comment", format!("{long}\nmore"));
        let mut out = String::new();
        write_object("Job Id: 1.s", &a, &FullStyle::OneLine, &mut out);
        assert_eq!(out, format!("Job Id: 1.s\n    comment = {long}\\nmore\n\n"));
    }

    #[test]
    fn dsv_is_one_line_per_object_with_the_delimiter_escaped() {
        let mut out = String::new();
        write_object(
            "Job Id: 1.s",
            &attrs(),
            &FullStyle::Dsv("|".into()),
            &mut out,
        );
        assert_eq!(
            out,
            "Job Id: 1.s|Job_Name=solver|Resource_List.nodect=2|comment=a\\|b\n"
        );
        let mut out = String::new();
        write_object(
            "Job Id: 1.s",
            &attrs(),
            &FullStyle::Dsv(";".into()),
            &mut out,
        );
        assert_eq!(
            out,
            "Job Id: 1.s;Job_Name=solver;Resource_List.nodect=2;comment=a|b\n"
        );
    }
}
