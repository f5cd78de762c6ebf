//! Site hooks as the configuration keeps them: PBS Pro's hook object
//! (`qmgr -c "create hook h1"`, `set hook h1 event = queuejob`,
//! `import hook h1 ... FILE`), made for executables in any language.
//!
//! A hook is its content (the executable qmgr imported), the events it
//! runs at and its limits. The daemon runs it (`qmeshd/src/hooks/`): it
//! gets the job as JSON on its standard input and accepts (exit 0, no
//! output), modifies (exit 0, prints the changed job) or rejects (exit
//! non-zero, its message shown to the user). The core only keeps it, so
//! it travels with the configuration to the store, to a standby and into
//! `print server`.

use serde::{Deserialize, Serialize};

/// Every event PBS Pro names, in its manual's order. qmesh runs hooks at
/// [`RUN_EVENTS`]; the others are kept (a PBS site's `print hook` reads
/// back) with a warning that they never run.
pub const PBS_EVENTS: &[&str] = &[
    "queuejob",
    "modifyjob",
    "movejob",
    "runjob",
    "periodic",
    "resvsub",
    "modifyresv",
    "resv_begin",
    "resv_confirm",
    "resv_end",
    "management",
    "modifyvnode",
    "provision",
    "execjob_begin",
    "execjob_prologue",
    "execjob_launch",
    "execjob_attach",
    "execjob_resize",
    "execjob_preterm",
    "execjob_epilogue",
    "execjob_end",
    "execjob_abort",
    "execjob_postsuspend",
    "execjob_preresume",
    "exechost_startup",
    "exechost_periodic",
];

/// The events qmesh runs hooks at.
pub const RUN_EVENTS: &[&str] = &["queuejob", "modifyjob", "runjob", "periodic"];

/// When a hook runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HookEvent {
    /// A submission (qsub), before it is queued: PBS Pro's queuejob,
    /// Torque's submit_filter, Slurm's job_submit.
    QueueJob,
    /// A qalter, before it is applied.
    ModifyJob,
    /// A job chosen to start, before it is launched.
    RunJob,
    /// Every `freq` seconds.
    Periodic,
}

impl HookEvent {
    pub const ALL: [HookEvent; 4] = [
        HookEvent::QueueJob,
        HookEvent::ModifyJob,
        HookEvent::RunJob,
        HookEvent::Periodic,
    ];

    /// PBS's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::QueueJob => "queuejob",
            HookEvent::ModifyJob => "modifyjob",
            HookEvent::RunJob => "runjob",
            HookEvent::Periodic => "periodic",
        }
    }

    pub fn from_name(name: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.as_str() == name)
    }
}

/// The MIME types `import hook` takes: PBS's, and one for any executable.
pub const CONTENT_TYPES: &[&str] = &["application/x-python", "application/x-executable"];

/// PBS Pro's defaults.
pub const DEFAULT_ALARM_SECS: u32 = 30;
pub const DEFAULT_ORDER: u32 = 1;
pub const DEFAULT_FREQ_SECS: u32 = 120;
/// The largest hook content qmgr imports: a script, not a program's data.
pub const MAX_CONTENT_BYTES: usize = 256 * 1024;

/// One site hook.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hook {
    pub name: String,
    /// PBS event names, as set (`event = "queuejob,modifyjob"`); only
    /// [`RUN_EVENTS`] run.
    #[serde(default)]
    pub events: Vec<String>,
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Seconds a run may take before it is killed and its request refused.
    #[serde(default = "default_alarm")]
    pub alarm: u32,
    /// Hooks of one event run in this order (lower first), then by name.
    #[serde(default = "default_order")]
    pub order: u32,
    /// Seconds between runs of a periodic hook.
    #[serde(default = "default_freq")]
    pub freq: u32,
    /// qmesh's own: one process kept alive between calls, a line of
    /// JSON in and a line out per call (`qmeshd/src/site_hooks/resident.rs`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub persistent: bool,
    /// The executable, as imported.
    #[serde(
        default,
        with = "content_base64",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub content: Vec<u8>,
    /// The type `import hook` named ([`CONTENT_TYPES`]).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub content_type: String,
    /// PBS attributes kept as written, for `print hook` (`user`,
    /// `fail_action`, `debug`, `type`): qmesh's hooks run as the daemon's
    /// user and fail the request they were run for.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub kept: std::collections::BTreeMap<String, String>,
}

fn yes() -> bool {
    true
}
fn default_alarm() -> u32 {
    DEFAULT_ALARM_SECS
}
fn default_order() -> u32 {
    DEFAULT_ORDER
}
fn default_freq() -> u32 {
    DEFAULT_FREQ_SECS
}

impl Hook {
    pub fn new(name: &str) -> Hook {
        Hook {
            name: name.to_string(),
            events: Vec::new(),
            enabled: true,
            alarm: DEFAULT_ALARM_SECS,
            order: DEFAULT_ORDER,
            freq: DEFAULT_FREQ_SECS,
            persistent: false,
            content: Vec::new(),
            content_type: String::new(),
            kept: Default::default(),
        }
    }

    /// Whether it runs at `event`: enabled, with content, and listing it.
    pub fn runs_at(&self, event: HookEvent) -> bool {
        self.enabled && !self.content.is_empty() && self.events.iter().any(|e| e == event.as_str())
    }

    /// Whether its content is a PBS Python hook: it imports PBS's own
    /// module, which only PBS's embedded interpreter has.
    pub fn imports_pbs(&self) -> bool {
        imports_pbs(&self.content)
    }
}

/// Whether a script imports PBS's module `pbs` (`import pbs`,
/// `from pbs import ...`): such a hook cannot run outside PBS.
pub fn imports_pbs(content: &[u8]) -> bool {
    String::from_utf8_lossy(content).lines().any(|line| {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("import ") {
            rest.split(',')
                .any(|m| m.split_whitespace().next() == Some("pbs"))
        } else {
            let words: Vec<&str> = line.split_whitespace().collect();
            matches!(words[..], ["from", "pbs", "import", ..])
        }
    })
}

/// PBS's rule for hook names: a letter first, then letters, digits, `_`
/// and `-`; names starting with `PBS` are PBS's own.
pub fn valid_hook_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    if !chars.next().is_some_and(|c| c.is_ascii_alphabetic()) {
        return Err("it must start with a letter".into());
    }
    if !chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        return Err("use only letters, digits, '_' and '-'".into());
    }
    if name.len() > 64 {
        return Err("it may have at most 64 characters".into());
    }
    if name.to_ascii_uppercase().starts_with("PBS") {
        return Err("names starting with \"PBS\" are PBS's own hooks".into());
    }
    Ok(())
}

/// The hooks that run at `event`, in the order they run.
pub fn running_at<'a>(
    hooks: impl IntoIterator<Item = &'a Hook>,
    event: HookEvent,
) -> Vec<&'a Hook> {
    let mut out: Vec<&Hook> = hooks.into_iter().filter(|h| h.runs_at(event)).collect();
    out.sort_by(|a, b| a.order.cmp(&b.order).then_with(|| a.name.cmp(&b.name)));
    out
}

/// The content kept as base64 in the stored configuration (JSON).
mod content_base64 {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        STANDARD.decode(text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pbs_python_hook_is_recognised() {
        assert!(imports_pbs(b"import pbs\ne = pbs.event()\n"));
        assert!(imports_pbs(b"#!/usr/bin/python\nfrom pbs import event\n"));
        assert!(imports_pbs(b"import sys, pbs\n"));
        assert!(imports_pbs(b"    import pbs as p\n"));
        assert!(!imports_pbs(b"#!/bin/sh\necho pbs is not here\n"));
        assert!(!imports_pbs(b"import json\nimport pbsnodes_helper\n"));
    }

    #[test]
    fn hooks_run_in_order_then_by_name_and_only_when_enabled_with_content() {
        let mut a = Hook::new("a");
        a.events = vec!["queuejob".into()];
        a.content = b"#!/bin/sh\n".to_vec();
        a.order = 5;
        let mut b = a.clone();
        b.name = "b".into();
        b.order = 1;
        let mut c = a.clone();
        c.name = "c".into();
        c.enabled = false;
        let mut d = a.clone();
        d.name = "d".into();
        d.content.clear();
        let hooks = [a, b, c, d];
        let names: Vec<&str> = running_at(&hooks, HookEvent::QueueJob)
            .iter()
            .map(|h| h.name.as_str())
            .collect();
        assert_eq!(names, ["b", "a"]);
        assert!(running_at(&hooks, HookEvent::RunJob).is_empty());
    }

    #[test]
    fn the_content_survives_the_store_as_base64() {
        let mut h = Hook::new("h1");
        h.content = vec![0, 1, 2, 255, b'\n'];
        let json = serde_json::to_string(&h).unwrap();
        assert!(json.contains("\"content\":\"AAEC/wo=\""), "{json}");
        assert_eq!(serde_json::from_str::<Hook>(&json).unwrap(), h);
    }

    #[test]
    fn hook_names_follow_pbs() {
        valid_hook_name("site_filter-1").unwrap();
        for bad in ["", "1a", "a b", "PBS_cgroups", &"x".repeat(65)] {
            assert!(valid_hook_name(bad).is_err(), "{bad}");
        }
    }
}
