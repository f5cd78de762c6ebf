//! qmgr's shutdown windows:
//! `create shutdown maint start = "2026-12-01 08:00", end = "2026-12-01 20:00",
//! node_sets = "batch,interactive"`, `set shutdown maint end = ...`,
//! `unset shutdown maint node_sets`, `delete shutdown maint`,
//! `list shutdown [NAMES]`. Managers create and delete them, operators
//! change them (as with queues).
//!
//! Times are read in the calendar's time zone, or as RFC 3339 with an offset; `print server` writes RFC 3339
//! with the offset, so the backup reads back the same anywhere.

use chrono_tz::Tz;

use super::values::{canonical, quoted, scalar_only, update_list};
use super::vocab::{Assignment, Op, Outcome, ShutdownAction};
use crate::server::Config;
use crate::shutdown::{Shutdown, format_local, format_rfc3339, parse_time, valid_shutdown_name};
use crate::state::State;
use crate::time::format_hms;

/// Shutdown attributes in the order list and print show them.
pub const SHUTDOWN_ATTRS: &[(&str, &[&str])] = &[
    ("start", &["begin"]),
    ("end", &[]),
    ("node_sets", &["node_set"]),
    ("comment", &[]),
];

fn no_window(name: &str) -> String {
    format!("shutdown \"{name}\" does not exist; see qmgr -c \"list shutdown\"")
}

/// Applies one assignment; returns the attribute's name.
fn set(w: &mut Shutdown, a: &Assignment, zone: &Tz) -> Result<&'static str, String> {
    let name = canonical(SHUTDOWN_ATTRS, &a.name, "a shutdown")?;
    if name != "node_sets" {
        scalar_only(name, a.op)?;
    }
    let time = |value: &str| {
        parse_time(value, zone)
            .map_err(|e| format!("{name}: {e} (the calendar's time zone is {zone})"))
    };
    match name {
        "start" => w.start = time(&a.value)?,
        "end" => w.end = time(&a.value)?,
        "node_sets" => {
            update_list(&mut w.node_sets, name, a.op, &a.value)?;
            if a.op == Op::Remove && w.node_sets.is_empty() {
                return Err(format!(
                    "removing the last node set would make shutdown \"{}\" take down every set; \
                     to mean that, unset shutdown {} node_sets",
                    w.name, w.name
                ));
            }
        }
        _ => {
            if a.value.contains('"') && a.value.contains('\'') {
                return Err("a comment may hold ' or \" but not both".into());
            }
            w.comment = Some(a.value.clone()).filter(|c| !c.is_empty());
        }
    }
    Ok(name)
}

/// What a changed window must satisfy: end after start, known node sets.
fn check(w: &Shutdown, known: &[String]) -> Result<(), String> {
    w.check()?;
    for name in &w.node_sets {
        if !known.contains(name) {
            return Err(format!(
                "shutdown \"{}\": node set \"{name}\" does not exist; node sets: {} (spfree lists them)",
                w.name,
                known.join(", ")
            ));
        }
    }
    Ok(())
}

fn window_mut<'a>(config: &'a mut Config, name: &str) -> Result<&'a mut Shutdown, String> {
    config
        .shutdowns
        .get_mut(name)
        .ok_or_else(|| no_window(name))
}

/// Applies a shutdown command to `config`. Times written without an
/// offset are in the calendar's time zone.
pub(super) fn apply(
    action: &ShutdownAction,
    config: &mut Config,
    state: &State,
    outcome: &mut Outcome,
) -> Result<(), String> {
    let zone = config.calendar.zone().unwrap_or(Tz::UTC);
    let zone = &zone;
    // The node sets a window may name: the file's and qmgr's.
    let known: Vec<String> = super::node_set::known_sets(config, state)
        .into_iter()
        .map(String::from)
        .collect();
    match action {
        ShutdownAction::Create(names, assigns) => {
            for name in names {
                valid_shutdown_name(name)
                    .map_err(|why| format!("bad shutdown name \"{name}\": {why}"))?;
                if config.shutdowns.contains_key(name) {
                    return Err(format!(
                        "shutdown \"{name}\" already exists; set shutdown {name} changes it"
                    ));
                }
                let mut w =
                    Shutdown::new(name, crate::time::Time::MIN_UTC, crate::time::Time::MIN_UTC);
                let mut given = Vec::new();
                for a in assigns {
                    given.push(set(&mut w, a, zone)?);
                }
                if !given.contains(&"start") || !given.contains(&"end") {
                    return Err(format!(
                        "shutdown \"{name}\" needs a start and an end: create shutdown {name} \
                         start = \"2026-12-01 08:00\", end = \"2026-12-01 20:00\""
                    ));
                }
                check(&w, &known)?;
                config.shutdowns.insert(name.clone(), w);
            }
        }
        ShutdownAction::Delete(names) => {
            for name in names {
                config
                    .shutdowns
                    .remove(name)
                    .ok_or_else(|| no_window(name))?;
            }
        }
        ShutdownAction::Set(names, assigns) => {
            for name in names {
                let w = window_mut(config, name)?;
                for a in assigns {
                    set(w, a, zone)?;
                }
                check(w, &known)?;
            }
        }
        ShutdownAction::Unset(names, attrs) => {
            for name in names {
                let w = window_mut(config, name)?;
                for attr in attrs {
                    match canonical(SHUTDOWN_ATTRS, attr, "a shutdown")? {
                        "node_sets" => w.node_sets.clear(),
                        "comment" => w.comment = None,
                        other => {
                            return Err(format!(
                                "shutdown \"{name}\" must keep its {other}; set a new one, \
                                 or delete shutdown {name}"
                            ));
                        }
                    }
                }
            }
        }
        ShutdownAction::List(names) => {
            let names: Vec<String> = if names.is_empty() {
                config.shutdowns.keys().cloned().collect()
            } else {
                names.clone()
            };
            for name in names {
                let w = config
                    .shutdowns
                    .get(&name)
                    .ok_or_else(|| no_window(&name))?;
                outcome.output.push_str(&list(w, zone));
            }
        }
    }
    Ok(())
}

/// `Shutdown maint` and its attributes, times in the calendar's time zone.
fn list(w: &Shutdown, zone: &Tz) -> String {
    let mut out = format!("Shutdown {}\n", w.name);
    out.push_str(&format!("    start = {}\n", format_local(w.start, zone)));
    out.push_str(&format!("    end = {}\n", format_local(w.end, zone)));
    let secs = (w.end - w.start).num_seconds().max(0) as u64;
    out.push_str(&format!("    duration = {}\n", format_hms(secs)));
    let sets = if w.node_sets.is_empty() {
        "(every node set)".to_string()
    } else {
        w.node_sets.join(",")
    };
    out.push_str(&format!("    node_sets = {sets}\n"));
    if let Some(comment) = &w.comment {
        out.push_str(&format!("    comment = {comment}\n"));
    }
    out.push('\n');
    out
}

/// A value as qmgr reads it back: quoted when needed, in single quotes
/// when it holds a double one.
fn quote(value: &str) -> String {
    if value.contains('"') {
        format!("'{value}'")
    } else {
        quoted(value)
    }
}

/// qmgr commands that recreate the shutdown windows.
pub(super) fn print(config: &Config) -> String {
    let zone = &config.calendar.zone().unwrap_or(Tz::UTC);
    if config.shutdowns.is_empty() {
        return String::new();
    }
    let mut out = String::from("#\n# Create shutdown windows.\n#\n");
    for w in config.shutdowns.values() {
        out.push_str(&format!(
            "create shutdown {} start = {}, end = {}",
            w.name,
            format_rfc3339(w.start, zone),
            format_rfc3339(w.end, zone)
        ));
        if !w.node_sets.is_empty() {
            out.push_str(&format!(", node_sets = {}", quoted(&w.node_sets.join(","))));
        }
        if let Some(comment) = &w.comment {
            out.push_str(&format!(", comment = {}", quote(comment)));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests;
