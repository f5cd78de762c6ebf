//! One way to print a listing, two forms: text for people, JSON for
//! programs. A command builds its data once (an ordered attribute list per
//! job or queue, a table) and [`emit`] picks the form, so every listing has
//! `--json` and the two never drift apart.
//!
//! JSON follows PBS's `qstat -f -F json`: attribute names are the same as in
//! the full text form, and a dotted name (`Resource_List.nodes`) becomes a
//! nested object. Key order is kept as built, so the document reads like the
//! text form (serde_json's map would sort it).

use std::io::Write;

use serde::ser::{Serialize, SerializeMap, Serializer};

/// Something a command prints, in either form.
pub trait Output {
    /// The text form, newline-terminated (empty when there is nothing).
    fn text(&self) -> String;
    /// The JSON document.
    fn json(&self) -> Tree;
}

/// Writes `out` on stdout in the chosen form.
pub fn emit(out: &dyn Output, json: bool) -> std::io::Result<()> {
    let text = if json {
        let mut doc = serde_json::to_string_pretty(&out.json()).map_err(std::io::Error::other)?;
        doc.push('\n');
        doc
    } else {
        out.text()
    };
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()
}

/// An attribute's value: PBS's JSON writes numbers bare, all else as text.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Text(String),
    Int(i64),
    /// Node-hours and other measures: bare in JSON, exact.
    Float(f64),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Text(s) => f.write_str(s),
            Value::Int(n) => write!(f, "{n}"),
            Value::Float(x) => write!(f, "{x}"),
        }
    }
}

/// An ordered JSON tree.
#[derive(Clone, Debug, PartialEq)]
pub enum Tree {
    Leaf(Value),
    Bool(bool),
    /// A measure such as a priority; PBS's documents have none.
    Float(f64),
    Null,
    Map(Vec<(String, Tree)>),
    List(Vec<Tree>),
}

impl Tree {
    pub fn text(s: impl Into<String>) -> Tree {
        Tree::Leaf(Value::Text(s.into()))
    }

    pub fn int(n: i64) -> Tree {
        Tree::Leaf(Value::Int(n))
    }

    /// Unix seconds, `null` when 0 (the wire's "not set").
    pub fn time(secs: i64) -> Tree {
        if secs == 0 {
            Tree::Null
        } else {
            Tree::int(secs)
        }
    }
}

impl Serialize for Tree {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Tree::Leaf(Value::Text(t)) => s.serialize_str(t),
            Tree::Leaf(Value::Int(n)) => s.serialize_i64(*n),
            Tree::Leaf(Value::Float(x)) => s.serialize_f64(*x),
            Tree::Bool(b) => s.serialize_bool(*b),
            Tree::Float(x) => s.serialize_f64(*x),
            Tree::Null => s.serialize_unit(),
            Tree::List(items) => s.collect_seq(items),
            Tree::Map(entries) => {
                let mut map = s.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }
    }
}

/// The envelope PBS puts around `-F json` listings:
/// `{"timestamp", "pbs_version", "pbs_server", KIND: {name: {...}}}`.
pub fn document(timestamp: i64, server: &str, kind: &str, entries: Vec<(String, Tree)>) -> Tree {
    Tree::Map(vec![
        ("timestamp".into(), Tree::int(timestamp)),
        ("pbs_version".into(), Tree::text(crate::client::version())),
        ("pbs_server".into(), Tree::text(server)),
        (kind.into(), Tree::Map(entries)),
    ])
}

/// An ordered list of `name = value` attributes: one job or queue, as
/// `qstat -f` shows it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Attrs {
    items: Vec<(String, Value)>,
}

impl Attrs {
    pub fn new() -> Attrs {
        Attrs::default()
    }

    pub fn text(&mut self, name: &str, value: impl Into<String>) -> &mut Attrs {
        self.items
            .push((name.to_string(), Value::Text(value.into())));
        self
    }

    pub fn int(&mut self, name: &str, value: impl Into<i64>) -> &mut Attrs {
        self.items
            .push((name.to_string(), Value::Int(value.into())));
        self
    }

    pub fn float(&mut self, name: &str, value: f64) -> &mut Attrs {
        self.items.push((name.to_string(), Value::Float(value)));
        self
    }

    /// PBS writes booleans as `True` and `False`, in text and JSON alike.
    pub fn flag(&mut self, name: &str, value: bool) -> &mut Attrs {
        self.text(name, if value { "True" } else { "False" })
    }

    /// The attributes in order, as `(name, value)`.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.items.iter().map(|(n, v)| (n.as_str(), v))
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        self.items.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// `HEADING` then 4-space-indented `name = value` lines and a blank line.
    pub fn write_full(&self, heading: &str, out: &mut String) {
        out.push_str(heading);
        out.push('\n');
        for (name, value) in &self.items {
            out.push_str(&format!("    {name} = {value}\n"));
        }
        out.push('\n');
    }

    /// The attributes as a JSON object, `a.b` nested as `{"a": {"b": ..}}`.
    pub fn json(&self) -> Tree {
        let mut entries: Vec<(String, Tree)> = Vec::new();
        for (name, value) in &self.items {
            let leaf = Tree::Leaf(value.clone());
            let Some((group, key)) = name.split_once('.') else {
                entries.push((name.clone(), leaf));
                continue;
            };
            let existing = entries.iter_mut().find_map(|(n, t)| match t {
                Tree::Map(inner) if n == group => Some(inner),
                _ => None,
            });
            match existing {
                Some(inner) => inner.push((key.to_string(), leaf)),
                None => entries.push((group.to_string(), Tree::Map(vec![(key.to_string(), leaf)]))),
            }
        }
        Tree::Map(entries)
    }
}

/// How a column lines up and how wide it may grow.
#[derive(Clone, Copy, Debug)]
pub struct Column {
    pub title: &'static str,
    pub right: bool,
    /// Longer cells are cut and end in `*`, as PBS marks them.
    pub max: Option<usize>,
}

impl Column {
    pub const fn left(title: &'static str) -> Column {
        Column {
            title,
            right: false,
            max: None,
        }
    }

    pub const fn right(title: &'static str) -> Column {
        Column {
            title,
            right: true,
            max: None,
        }
    }

    pub const fn at_most(mut self, width: usize) -> Column {
        self.max = Some(width);
        self
    }
}

/// A PBS-style table: header, dashed underline, rows; columns one space
/// apart and as wide as their widest cell (within each column's limit).
pub fn table(columns: &[Column], rows: &[Vec<String>]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            row.iter()
                .zip(columns)
                .map(|(cell, col)| truncate(cell, col.max))
                .collect()
        })
        .collect();
    let widths: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(i, col)| {
            cells
                .iter()
                .filter_map(|row| row.get(i))
                .map(|c| c.chars().count())
                .chain([col.title.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();

    let mut out = String::new();
    let titles: Vec<String> = columns.iter().map(|c| c.title.to_string()).collect();
    push_row(&mut out, columns, &widths, &titles);
    let dashes: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    push_row(&mut out, columns, &widths, &dashes);
    for row in &cells {
        push_row(&mut out, columns, &widths, row);
    }
    out
}

fn push_row(out: &mut String, columns: &[Column], widths: &[usize], row: &[String]) {
    let mut line = String::new();
    for (i, (col, width)) in columns.iter().zip(widths).enumerate() {
        let cell = row.get(i).map(String::as_str).unwrap_or("");
        if i > 0 {
            line.push(' ');
        }
        if col.right {
            line.push_str(&format!("{cell:>width$}"));
        } else {
            line.push_str(&format!("{cell:<width$}"));
        }
    }
    out.push_str(line.trim_end());
    out.push('\n');
}

/// Cuts `text` to `max` characters, the last one replaced by `*`.
pub fn truncate(text: &str, max: Option<usize>) -> String {
    match max {
        Some(max) if max > 0 && text.chars().count() > max => {
            let mut cut: String = text.chars().take(max - 1).collect();
            cut.push('*');
            cut
        }
        _ => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotted_names_nest_in_order() {
        let mut attrs = Attrs::new();
        attrs
            .text("Job_Name", "x")
            .int("Resource_List.nodes", 4)
            .text("queue", "batch")
            .text("Resource_List.walltime", "01:00:00");
        let json = serde_json::to_string(&attrs.json()).unwrap();
        assert_eq!(
            json,
            r#"{"Job_Name":"x","Resource_List":{"nodes":4,"walltime":"01:00:00"},"queue":"batch"}"#
        );
    }

    #[test]
    fn full_form_is_indented_and_ends_with_a_blank_line() {
        let mut attrs = Attrs::new();
        attrs.text("Job_Name", "x").flag("Rerunable", false);
        let mut out = String::new();
        attrs.write_full("Job Id: 1.s", &mut out);
        assert_eq!(
            out,
            "Job Id: 1.s\n    Job_Name = x\n    Rerunable = False\n\n"
        );
    }

    #[test]
    fn tables_align_and_cut_long_cells() {
        let cols = [Column::left("Name").at_most(6), Column::right("Nodes")];
        let rows = vec![
            vec!["short".to_string(), "4".to_string()],
            vec!["a_very_long_name".to_string(), "128".to_string()],
        ];
        assert_eq!(
            table(&cols, &rows),
            "Name   Nodes\n------ -----\nshort      4\na_ver*   128\n"
        );
    }

    #[test]
    fn truncation_counts_characters_not_bytes() {
        assert_eq!(truncate("ééééé", Some(3)), "éé*");
        assert_eq!(truncate("abc", Some(3)), "abc");
    }
}
