//! qmgr's value helpers: how a value is quoted for `print server`, how a
//! list attribute takes `=`, `+=` and `-=`, how booleans and counts are
//! read, and the canonical name of an attribute among its aliases.
//!
//! Every object module reads and writes values the same way, so these sit
//! below them all, beside the vocabulary, and use nothing else of qmgr.

use super::vocab::Op;

/// Quotes values that hold spaces or commas, as PBS does.
pub(super) fn quoted(value: &str) -> String {
    if value.is_empty() || value.contains([' ', ',', '#', '\t']) {
        format!("\"{value}\"")
    } else {
        value.to_string()
    }
}

/// The canonical name of an attribute, or a message listing the known ones.
pub(super) fn canonical(
    table: &[(&'static str, &[&str])],
    name: &str,
    object: &str,
) -> Result<&'static str, String> {
    let lower = name.to_ascii_lowercase();
    table
        .iter()
        .find(|(canon, aliases)| *canon == lower || aliases.contains(&lower.as_str()))
        .map(|(canon, _)| *canon)
        .ok_or_else(|| {
            let known: Vec<&str> = table.iter().map(|(c, _)| *c).collect();
            format!(
                "unknown attribute \"{name}\" for {object}; known: {}",
                known.join(", ")
            )
        })
}

pub use crate::resources::parse_bool;

/// A boolean as PBS writes it.
pub(super) fn show_bool(b: bool) -> String {
    if b { "True" } else { "False" }.to_string()
}

/// A count of at least 1 (nodes, CPUs, jobs).
pub(super) fn parse_count(name: &str, value: &str) -> Result<u32, String> {
    match value.parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "\"{value}\" is not a value for {name}; write a whole number of nodes, at least 1"
        )),
    }
}

/// The items of a list value: `a, b,c` is `a`, `b`, `c`.
pub(super) fn list_items(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Applies `op value` to a list attribute.
pub(super) fn update_list(
    list: &mut Vec<String>,
    name: &str,
    op: Op,
    value: &str,
) -> Result<(), String> {
    apply_to_list(list, name, op, list_items(value))
}

/// Applies `op` with `items` to a list attribute: `=` replaces it, `+=`
/// adds what is missing, `-=` removes each item and says which is absent.
pub(super) fn apply_to_list(
    list: &mut Vec<String>,
    name: &str,
    op: Op,
    items: Vec<String>,
) -> Result<(), String> {
    match op {
        Op::Assign => *list = items,
        Op::Add => {
            for item in items {
                if !list.contains(&item) {
                    list.push(item);
                }
            }
        }
        Op::Remove => {
            for item in items {
                let before = list.len();
                list.retain(|x| *x != item);
                if list.len() == before {
                    return Err(format!("\"{item}\" is not in {name}"));
                }
            }
        }
    }
    Ok(())
}

/// Refuses `+=` and `-=` on an attribute that takes a single value.
pub(super) fn scalar_only(name: &str, op: Op) -> Result<(), String> {
    if op == Op::Assign {
        Ok(())
    } else {
        Err(format!(
            "{} works on lists; {name} takes a single value: use =",
            op.as_str()
        ))
    }
}
