//! qmgr's site hooks, PBS Pro's way: `create hook h1`, `set hook h1 event
//! = "queuejob,modifyjob"`, `set hook h1 alarm = 10`, `import hook h1
//! application/x-python default h1.py`, `export hook h1 ...`, `list hook`,
//! `print hook`, `delete hook h1`. Managers only, as PBS allows root only.
//!
//! A PBS Python hook imports PBS's own module, which qmesh does not have:
//! imported, it is kept disabled with a warning saying what to write
//! instead (docs/PBS.md, "Site hooks").

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use super::values::{canonical, parse_bool, quoted, scalar_only, update_list};
use super::vocab::{Assignment, HookAction, Outcome};
use crate::hook::{
    CONTENT_TYPES, DEFAULT_ALARM_SECS, DEFAULT_FREQ_SECS, DEFAULT_ORDER, Hook, MAX_CONTENT_BYTES,
    PBS_EVENTS, RUN_EVENTS, valid_hook_name,
};
use crate::server::Config;

/// Hook attributes in the order list and print show them (PBS's).
pub const HOOK_ATTRS: &[(&str, &[&str])] = &[
    ("type", &[]),
    ("enabled", &[]),
    ("event", &["events"]),
    ("user", &[]),
    ("alarm", &[]),
    ("freq", &[]),
    ("order", &[]),
    ("debug", &[]),
    ("fail_action", &[]),
    ("persistent", &[]),
];

/// What PBS prints for the attributes qmesh keeps as written.
const KEPT_DEFAULTS: &[(&str, &str)] = &[
    ("type", "site"),
    ("user", "pbsadmin"),
    ("debug", "false"),
    ("fail_action", "none"),
];

fn no_hook(name: &str) -> String {
    format!("hook \"{name}\" does not exist; see qmgr -c \"list hook\"")
}

fn hook_mut<'a>(config: &'a mut Config, name: &str) -> Result<&'a mut Hook, String> {
    config.hooks.get_mut(name).ok_or_else(|| no_hook(name))
}

fn whole(name: &str, value: &str, least: u32, most: u32) -> Result<u32, String> {
    match value.trim().parse::<u32>() {
        Ok(n) if (least..=most).contains(&n) => Ok(n),
        _ => Err(format!(
            "\"{value}\" is not a value for {name}; write a whole number from {least} to {most}"
        )),
    }
}

/// Applies one assignment to `h`.
fn set(h: &mut Hook, a: &Assignment, warnings: &mut Vec<String>) -> Result<(), String> {
    let name = canonical(HOOK_ATTRS, &a.name, "a hook")?;
    if name != "event" {
        scalar_only(name, a.op)?;
    }
    let value = a.value.trim();
    match name {
        "event" => {
            let mut events = h.events.clone();
            update_list(&mut events, name, a.op, &value.to_ascii_lowercase())?;
            for e in &events {
                if !PBS_EVENTS.contains(&e.as_str()) {
                    return Err(format!(
                        "unknown hook event \"{e}\"; qmesh runs hooks at {}",
                        RUN_EVENTS.join(", ")
                    ));
                }
                if !RUN_EVENTS.contains(&e.as_str()) && !h.events.contains(e) {
                    warnings.push(format!(
                        "hook \"{}\": event {e} is PBS's and is kept, but qmesh runs hooks \
                         only at {}",
                        h.name,
                        RUN_EVENTS.join(", ")
                    ));
                }
            }
            h.events = events;
        }
        "enabled" => {
            let on = parse_bool(name, value)?;
            if on && h.imports_pbs() {
                return Err(pbs_module(&h.name));
            }
            h.enabled = on;
        }
        "alarm" => h.alarm = whole(name, value, 1, 86_400)?,
        "persistent" => h.persistent = parse_bool(name, value)?,
        "order" => h.order = whole(name, value, 1, 1000)?,
        "freq" => h.freq = whole(name, value, 1, 86_400 * 7)?,
        "type" => match value.to_ascii_lowercase().as_str() {
            "site" => {
                h.kept.remove("type");
            }
            "pbs" => {
                return Err(
                    "type = pbs is for PBS's own hooks; a site's hook is type = site".into(),
                );
            }
            other => return Err(format!("\"{other}\" is not a hook type; write site")),
        },
        "user" => match value.to_ascii_lowercase().as_str() {
            "pbsadmin" => {
                h.kept.remove("user");
            }
            "pbsuser" => {
                warnings.push(format!(
                    "hook \"{}\": user = pbsuser is kept, but qmesh runs hooks as the daemon's \
                     user at every event (PBS too, outside execjob events)",
                    h.name
                ));
                h.kept.insert("user".into(), "pbsuser".into());
            }
            other => return Err(format!("\"{other}\" is not a hook user; write pbsadmin")),
        },
        "debug" => {
            let on = parse_bool(name, value)?;
            if on {
                warnings.push(format!(
                    "hook \"{}\": debug = true is kept; qmesh logs every run's failure \
                     and, at debug level, every run",
                    h.name
                ));
                h.kept.insert("debug".into(), "true".into());
            } else {
                h.kept.remove("debug");
            }
        }
        _ => {
            let value = value.to_ascii_lowercase();
            if value == "none" {
                h.kept.remove("fail_action");
            } else {
                warnings.push(format!(
                    "hook \"{}\": fail_action = {value} is kept without effect: a failed \
                     hook (crash, timeout, garbage) fails the request it ran for, and a \
                     periodic one is logged",
                    h.name
                ));
                h.kept.insert("fail_action".into(), value);
            }
        }
    }
    Ok(())
}

fn unset(h: &mut Hook, attr: &str) -> Result<(), String> {
    match canonical(HOOK_ATTRS, attr, "a hook")? {
        "event" => h.events.clear(),
        "enabled" => {
            if h.imports_pbs() {
                return Err(pbs_module(&h.name));
            }
            h.enabled = true;
        }
        "alarm" => h.alarm = DEFAULT_ALARM_SECS,
        "order" => h.order = DEFAULT_ORDER,
        "freq" => h.freq = DEFAULT_FREQ_SECS,
        "persistent" => h.persistent = false,
        kept => {
            h.kept.remove(kept);
        }
    }
    Ok(())
}

fn pbs_module(name: &str) -> String {
    format!(
        "hook \"{name}\" imports PBS's Python module pbs, which qmesh does not have; import \
         an executable that reads the job as JSON on its standard input (docs/PBS.md, \
         \"Site hooks\"), then enable it"
    )
}

/// Applies a hook command to `config`.
pub(super) fn apply(
    action: &HookAction,
    config: &mut Config,
    outcome: &mut Outcome,
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    match action {
        HookAction::Create(names, assigns) => {
            for name in names {
                valid_hook_name(name).map_err(|why| format!("bad hook name \"{name}\": {why}"))?;
                if config.hooks.contains_key(name) {
                    return Err(format!(
                        "hook \"{name}\" already exists; set hook {name} changes it"
                    ));
                }
                let mut h = Hook::new(name);
                for a in assigns {
                    set(&mut h, a, warnings)?;
                }
                config.hooks.insert(name.clone(), h);
            }
        }
        HookAction::Delete(names) => {
            for name in names {
                config.hooks.remove(name).ok_or_else(|| no_hook(name))?;
            }
        }
        HookAction::Set(names, assigns) => {
            for name in names {
                let h = hook_mut(config, name)?;
                for a in assigns {
                    set(h, a, warnings)?;
                }
            }
        }
        HookAction::Unset(names, attrs) => {
            for name in names {
                let h = hook_mut(config, name)?;
                for attr in attrs {
                    unset(h, attr)?;
                }
            }
        }
        HookAction::List(names) => {
            for h in named(config, names)? {
                outcome.output.push_str(&list(h));
            }
        }
        HookAction::Print(names) => {
            for h in named(config, names)? {
                outcome.output.push_str(&print_one(h));
            }
        }
        HookAction::Import {
            name,
            content_type,
            content,
        } => import(hook_mut(config, name)?, content_type, content, warnings)?,
        HookAction::Export {
            name,
            content_type,
            base64,
        } => {
            let h = config.hooks.get(name).ok_or_else(|| no_hook(name))?;
            if !h.content_type.is_empty() && *content_type != h.content_type {
                warnings.push(format!(
                    "hook \"{name}\" was imported as {}; exported as it is",
                    h.content_type
                ));
            }
            if *base64 {
                outcome.output.push_str(&wrapped_base64(&h.content));
            } else {
                let text = std::str::from_utf8(&h.content).map_err(|_| {
                    format!("hook \"{name}\" is not text; export hook {name} {content_type} base64")
                })?;
                outcome.output.push_str(text);
            }
        }
    }
    Ok(())
}

fn import(
    h: &mut Hook,
    content_type: &str,
    content: &[u8],
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    let content_type = content_type.to_ascii_lowercase();
    if content_type == "application/x-config" {
        warnings.push(format!(
            "hook \"{}\": a PBS hook's configuration file is not kept; a qmesh hook reads \
             its own files",
            h.name
        ));
        return Ok(());
    }
    if !CONTENT_TYPES.contains(&content_type.as_str()) {
        return Err(format!(
            "unknown content type \"{content_type}\"; write {}",
            CONTENT_TYPES.join(" or ")
        ));
    }
    if content.is_empty() {
        return Err(format!("hook \"{}\": the file is empty", h.name));
    }
    if content.len() > MAX_CONTENT_BYTES {
        return Err(format!(
            "hook \"{}\": the file has {} bytes; a hook may have at most {MAX_CONTENT_BYTES} \
             (import a small script that runs the rest)",
            h.name,
            content.len()
        ));
    }
    h.content = content.to_vec();
    h.content_type = content_type;
    if h.imports_pbs() && h.enabled {
        h.enabled = false;
        warnings.push(format!("{}; it is kept disabled", pbs_module(&h.name)));
    }
    Ok(())
}

fn named<'a>(config: &'a Config, names: &[String]) -> Result<Vec<&'a Hook>, String> {
    if names.is_empty() {
        return Ok(config.hooks.values().collect());
    }
    names
        .iter()
        .map(|n| config.hooks.get(n).ok_or_else(|| no_hook(n)))
        .collect()
}

/// Each attribute's value as list and print show it.
fn shown(h: &Hook) -> Vec<(&'static str, String)> {
    let kept = |name: &str| {
        h.kept.get(name).cloned().unwrap_or_else(|| {
            KEPT_DEFAULTS
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
                .unwrap_or_default()
        })
    };
    let mut out = vec![
        ("type", kept("type")),
        ("enabled", h.enabled.to_string()),
        ("event", h.events.join(",")),
        ("user", kept("user")),
        ("alarm", h.alarm.to_string()),
    ];
    if h.events.iter().any(|e| e == "periodic") || h.freq != DEFAULT_FREQ_SECS {
        out.push(("freq", h.freq.to_string()));
    }
    out.push(("order", h.order.to_string()));
    out.push(("debug", kept("debug")));
    out.push(("fail_action", kept("fail_action")));
    if h.persistent {
        out.push(("persistent", "true".into()));
    }
    out
}

/// `Hook h1` and its attributes.
fn list(h: &Hook) -> String {
    let mut out = format!("Hook {}\n", h.name);
    for (name, value) in shown(h) {
        out.push_str(&format!("    {name} = {value}\n"));
    }
    if !h.content.is_empty() {
        out.push_str(&format!(
            "    content = {} bytes ({})\n",
            h.content.len(),
            h.content_type
        ));
    }
    out.push('\n');
    out
}

fn wrapped_base64(content: &[u8]) -> String {
    let text = STANDARD.encode(content);
    let mut out = String::new();
    for chunk in text.as_bytes().chunks(76) {
        out.push_str(std::str::from_utf8(chunk).unwrap_or_default());
        out.push('\n');
    }
    out
}

/// The qmgr lines that recreate one hook, its content as base64 after
/// `-` and a blank line at the end (PBS's `print hook`).
fn print_one(h: &Hook) -> String {
    let mut out = format!(
        "#\n# Create and define hook {0}\n#\ncreate hook {0}\n",
        h.name
    );
    // `enabled` last among the settings, after the import: a PBS hook's
    // import leaves it disabled, which a restore must keep.
    for (name, value) in shown(h) {
        if name == "enabled" || (name == "event" && value.is_empty()) {
            continue;
        }
        out.push_str(&format!(
            "set hook {} {name} = {}\n",
            h.name,
            quoted(&value)
        ));
    }
    if !h.content.is_empty() {
        out.push_str(&format!(
            "import hook {} {} base64 -\n{}\n",
            h.name,
            if h.content_type.is_empty() {
                CONTENT_TYPES[0]
            } else {
                &h.content_type
            },
            wrapped_base64(&h.content)
        ));
    }
    out.push_str(&format!("set hook {} enabled = {}\n", h.name, h.enabled));
    out
}

/// qmgr commands that recreate every hook, for `print server`.
pub(super) fn print(config: &Config) -> String {
    if config.hooks.is_empty() {
        return String::new();
    }
    let mut out = String::from("#\n# Create hooks and set their properties.\n#\n");
    for h in config.hooks.values() {
        out.push_str(&print_one(h));
    }
    out
}

#[cfg(test)]
mod tests;
