//! The floors of the workspace's houses (docs/ARCHITECTURE.md, "qmesh-core's
//! floors"), checked.
//!
//! A house is a module scope, a crate's root or a module inside it, whose
//! child modules stand on floors, bottom up. Every child module is on
//! exactly one floor; a module uses only modules on its own floor or
//! below; and the modules of one floor never use each other in a circle.
//! The check reads every path of the house's code that starts at `crate::`,
//! `super::` or `self::` (`use` groups included) and names the child module
//! it reaches. Tests are left out (`#[cfg(test)]` items, `tests.rs`,
//! `tests_*.rs`, `*_tests.rs` and `tests/` directories), as are comments: a
//! unit test may well build a `State` to exercise a value type.
//!
//! Inside a house a path names the module a thing lives in, not a
//! re-export of the scope's root (`crate::time::Time`, not `crate::Time`;
//! `super::vocab::Op`, not `super::Op`), so the check sees every arrow. A
//! path to an item the root file itself defines fails the same way: the
//! root is above every floor.
//!
//! To add a house: one `const` [`House`] (its crate's source directory,
//! its scope and its floors) and one `#[test]` that calls [`check`]. The
//! reader knows files, not inline modules: `super::` inside a `mod x { }`
//! that is not a test is read as if written outside it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A scope whose child modules stand on floors.
struct House {
    /// For messages: whose floors these are.
    name: &'static str,
    /// The crate's source directory, from the repository's root.
    src: &'static str,
    /// `crate` for the crate's root, `crate::qmgr` for a module in it.
    scope: &'static str,
    /// Bottom up: each floor's name and the child modules on it. Keep in
    /// step with the tables in docs/ARCHITECTURE.md.
    floors: &'static [(&'static str, &'static [&'static str])],
}

const QMESH_CORE: House = House {
    name: "qmesh-core",
    src: "crates/qmesh-core/src",
    scope: "crate",
    floors: &[
        (
            "names",
            &["ids", "error", "command_error", "time", "resources"],
        ),
        ("time and windows", &["calendar", "shutdown", "select"]),
        (
            "things",
            &[
                "reason",
                "array",
                "acl",
                "limits",
                "account",
                "depend",
                "job",
                "node",
                "node_group",
                "site_resources",
                "queue",
                "hook",
                "reservation",
                "predict",
            ],
        ),
        (
            "configuration",
            &[
                "server",
                "access",
                "node_resources",
                "resource_limits",
                "consumable",
                "preempt",
            ],
        ),
        ("requests", &["route", "submit"]),
        ("the state", &["state"]),
        (
            "commands on the state",
            &[
                "qalter", "qmove", "qorder", "qrerun", "qdel", "signal", "suspend", "reorder",
                "periods", "joblog",
            ],
        ),
        (
            "passes and languages",
            &["scheduler", "qrun", "qmgr", "report", "rsub"],
        ),
    ],
};

const QMESH_CORE_QMGR: House = House {
    name: "qmesh-core's qmgr",
    src: "crates/qmesh-core/src",
    scope: "crate::qmgr",
    floors: &[
        ("vocabulary", &["vocab", "values"]),
        ("language", &["lex", "parse"]),
        (
            "objects",
            &[
                "resource",
                "inert",
                "pbs_attrs",
                "attrs",
                "account",
                "calendar",
                "node",
                "node_group",
                "node_set",
                "shutdown",
                "hook",
                "pbs_node",
            ],
        ),
        ("printing", &["print"]),
        ("running a script", &["apply"]),
    ],
};

const QMESHD: House = House {
    name: "qmeshd",
    src: "crates/qmeshd/src",
    scope: "crate",
    floors: &[
        (
            "parts",
            &[
                "args",
                "paths",
                "convert",
                "error",
                "answer",
                "dispatch",
                "identity",
                "joblog",
                "mail",
                "metrics",
                "local_agent",
                "ca",
                "tls",
                "trust",
                "site_hooks",
            ],
        ),
        ("the task's contract", &["event", "status", "listings"]),
        (
            "the task, the services, who leads",
            &["task", "service", "leader"],
        ),
        ("the daemon's life", &["start"]),
    ],
};

const QMESH_AGENT: House = House {
    name: "qmesh-agent",
    src: "crates/qmesh-agent/src",
    scope: "crate",
    floors: &[
        ("ground", &["error", "record"]),
        (
            "the host",
            &[
                "procfs", "cgroup", "limits", "tmpdir", "lock", "tls", "facts", "qmsg",
            ],
        ),
        ("the spool", &["spool", "gpus", "signals"]),
        (
            "the job's start",
            &["env", "hooks", "plan", "exec", "pty_bridge"],
        ),
        ("the shepherd", &["shepherd", "zygote"]),
        ("the agent's jobs", &["supervise", "joined", "tasks"]),
        ("the agent", &["cli", "agent", "trust", "session", "relay"]),
    ],
};

#[test]
fn qmesh_core() {
    check(&QMESH_CORE);
}

#[test]
fn qmesh_core_qmgr() {
    check(&QMESH_CORE_QMGR);
}

#[test]
fn qmeshd() {
    check(&QMESHD);
}

#[test]
fn qmesh_agent() {
    check(&QMESH_AGENT);
}

/// Reads the house's crate and panics naming everything that breaks its
/// floors.
fn check(house: &House) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = root.join(house.src);
    let mut files = Vec::new();
    rust_files(&src, &src, &mut files);
    files.sort();
    let sources: Vec<(String, String)> = files
        .iter()
        .map(|file| {
            let rel = file.strip_prefix(&src).expect("under src");
            let parts: Vec<&str> = rel.iter().filter_map(|p| p.to_str()).collect();
            let text = std::fs::read_to_string(file).expect("source file");
            (parts.join("/"), text)
        })
        .collect();
    let wrong = broken_floors(house, &sources);
    assert!(
        wrong.is_empty(),
        "the floors of {} are broken:\n{}",
        house.name,
        wrong.join("\n")
    );
}

/// The library's files under `dir`, tests left out (and `src/bin`, whose
/// files are crates of their own).
fn rust_files(src: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name != "tests" && !(dir == src && name == "bin") {
                rust_files(src, &path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            if !is_test_file(name) {
                out.push(path);
            }
        }
    }
}

fn is_test_file(stem: &str) -> bool {
    stem == "tests" || stem.starts_with("tests_") || stem.ends_with("_tests")
}

/// The module a file holds, from its path under `src`: `qmgr/mod.rs` and
/// `qmgr.rs` are `qmgr`, `lib.rs` and `main.rs` the crate's root.
fn module_of(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_string)
        .collect();
    if parts.last().is_some_and(|p| p == "mod") || parts == ["lib"] || parts == ["main"] {
        parts.pop();
    }
    parts
}

/// What breaks the house's floors in `sources` (each file's path under the
/// source directory, and its text), one message each.
fn broken_floors(house: &House, sources: &[(String, String)]) -> Vec<String> {
    let scope: Vec<String> = house
        .scope
        .split("::")
        .skip(1)
        .map(str::to_string)
        .collect();
    let shown_scope = if scope.is_empty() {
        "the crate root".to_string()
    } else {
        house.scope.to_string()
    };
    let mut wrong = Vec::new();
    let mut floor_of: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, (_, modules)) in house.floors.iter().enumerate() {
        for m in *modules {
            if floor_of.insert(*m, i).is_some() {
                wrong.push(format!("module {m} is on two floors"));
            }
        }
    }

    // The scope's child modules, as its root file declares them (lib.rs
    // before main.rs when a crate has both).
    let mut roots: Vec<&(String, String)> = sources
        .iter()
        .filter(|(rel, _)| module_of(rel) == scope)
        .collect();
    roots.sort_by_key(|(rel, _)| rel.ends_with("main.rs"));
    let Some((_, root_text)) = roots.first() else {
        return vec![format!(
            "{}: no file holds {} under {}",
            house.name, house.scope, house.src
        )];
    };
    let children = declared_modules(&code_of(root_text));
    for module in &children {
        if !floor_of.contains_key(module.as_str()) {
            wrong.push(format!(
                "module {module} of {shown_scope} is on no floor: add it to the house's floors \
                 and to the table in docs/ARCHITECTURE.md"
            ));
        }
    }
    for module in floor_of.keys() {
        if !children.contains(*module) {
            wrong.push(format!(
                "the floors name {module}, which is no module of {shown_scope}"
            ));
        }
    }

    // Arrows within a floor, each with the first place that draws it.
    let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (rel, text) in sources {
        let module = module_of(rel);
        if module.len() <= scope.len() || !module.starts_with(&scope) {
            continue;
        }
        let from = &module[scope.len()];
        for path in paths(&code_of(text)) {
            let Some(reached) = path.resolve(&module) else {
                continue;
            };
            if reached.len() <= scope.len() || !reached.starts_with(&scope) {
                continue;
            }
            let to = &reached[scope.len()];
            if to == from {
                continue;
            }
            let at = format!("{}/{rel}:{}", house.src, path.line);
            if !children.contains(to) {
                wrong.push(format!(
                    "{at}: {} names {to} in {shown_scope}, which is no module of it \
                     (a re-export?); name the module it lives in",
                    path.written
                ));
                continue;
            }
            let (Some(&from_floor), Some(&to_floor)) =
                (floor_of.get(from.as_str()), floor_of.get(to.as_str()))
            else {
                continue;
            };
            if to_floor > from_floor {
                wrong.push(format!(
                    "{at}: {from} (floor {}, {}) uses {to} (floor {}, {}), a floor above",
                    from_floor + 1,
                    house.floors[from_floor].0,
                    to_floor + 1,
                    house.floors[to_floor].0
                ));
            } else if to_floor == from_floor {
                edges
                    .entry(from.clone())
                    .or_default()
                    .entry(to.clone())
                    .or_insert(at);
            }
        }
    }
    wrong.extend(circles(&edges));
    wrong.sort();
    wrong.dedup();
    wrong
}

/// The circles among the modules of one floor, each with where its
/// arrows are drawn.
fn circles(edges: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<String> {
    let mut found = Vec::new();
    for start in edges.keys() {
        let mut seen = BTreeSet::new();
        let mut stack = vec![(start.clone(), vec![start.clone()], Vec::new())];
        while let Some((at, path, places)) = stack.pop() {
            for (next, place) in edges.get(&at).into_iter().flatten() {
                let mut places = places.clone();
                places.push(place.clone());
                if next == start {
                    found.push(format!(
                        "a circle on one floor: {} -> {start} ({})",
                        path.join(" -> "),
                        places.join(", ")
                    ));
                } else if seen.insert(next.clone()) {
                    let mut longer = path.clone();
                    longer.push(next.clone());
                    stack.push((next.clone(), longer, places));
                }
            }
        }
    }
    found
}

/// The modules a root file declares: `mod x;`, `pub mod x;`,
/// `pub(crate) mod x { ... }`.
fn declared_modules(code: &str) -> BTreeSet<String> {
    code.lines()
        .filter_map(|line| {
            let mut rest = line.trim();
            if let Some(after) = rest.strip_prefix("pub") {
                rest = after.trim_start();
                if rest.starts_with('(') {
                    rest = rest[rest.find(')')? + 1..].trim_start();
                }
            }
            let name: String = rest
                .strip_prefix("mod ")?
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            (!name.is_empty()).then_some(name)
        })
        .collect()
}

/// The library's code of a file: comments and `#[cfg(test)]` items left out.
fn code_of(text: &str) -> String {
    let mut code = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]") {
        code.push_str(&rest[..at]);
        rest = &rest[at..];
        // The item ends at its `;` or at the brace closing its body.
        let end = match (rest.find(';'), rest.find('{')) {
            (Some(semi), Some(brace)) if semi < brace => semi + 1,
            (_, Some(brace)) => {
                let mut depth = 0;
                rest[brace..]
                    .char_indices()
                    .find(|&(_, c)| {
                        depth += i32::from(c == '{') - i32::from(c == '}');
                        depth == 0
                    })
                    .map_or(rest.len(), |(i, _)| brace + i + 1)
            }
            (Some(semi), None) => semi + 1,
            (None, None) => rest.len(),
        };
        // Keep the item's lines, empty, so that later lines keep their numbers.
        code.push_str(&"\n".repeat(rest[..end].matches('\n').count()));
        rest = &rest[end..];
    }
    code.push_str(rest);
    code.lines()
        .map(|line| match line.find("//") {
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Where a path starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Start {
    /// `crate::`
    Crate,
    /// `super::`, this many times.
    Super(usize),
    /// `self::`
    Module,
}

/// A path as written in a file: where it starts, its names (a `use`
/// group gives one path per item) and its line.
#[derive(Debug, PartialEq, Eq)]
struct UsePath {
    start: Start,
    names: Vec<String>,
    line: usize,
    /// For messages.
    written: String,
}

impl UsePath {
    /// The path from the crate's root, seen from the file holding
    /// `module`; `None` if it climbs above the root.
    fn resolve(&self, module: &[String]) -> Option<Vec<String>> {
        let mut at = match self.start {
            Start::Crate => Vec::new(),
            Start::Super(up) => module[..module.len().checked_sub(up)?].to_vec(),
            Start::Module => module.to_vec(),
        };
        at.extend(self.names.iter().cloned());
        Some(at)
    }
}

/// Every path of `code` that starts at `crate::`, `super::` (once or more)
/// or `self::`, with its line.
fn paths(code: &str) -> Vec<UsePath> {
    let mut found = Vec::new();
    let mut at = 0;
    while at < code.len() {
        let rest = &code[at..];
        let before = code[..at].chars().next_back();
        let whole = !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
        let (start, prefix_len) = if !whole {
            (None, 0)
        } else if rest.starts_with("crate::") {
            (Some(Start::Crate), "crate::".len())
        } else if rest.starts_with("self::") {
            (Some(Start::Module), "self::".len())
        } else if rest.starts_with("super::") {
            let mut up = 0;
            while rest[up * "super::".len()..].starts_with("super::") {
                up += 1;
            }
            (Some(Start::Super(up)), up * "super::".len())
        } else {
            (None, 0)
        };
        let Some(start) = start else {
            at += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        };
        let line = code[..at].matches('\n').count() + 1;
        let prefix = &rest[..prefix_len];
        for names in use_tree(&rest[prefix_len..]) {
            if !names.is_empty() {
                let written = format!("{prefix}{}", names.join("::"));
                found.push(UsePath {
                    start,
                    names,
                    line,
                    written,
                });
            }
        }
        at += prefix_len;
    }
    found
}

/// The paths a use tree stands for: `a::b` is `[a, b]`, `{a, b::{c, d}}`
/// is `[a]`, `[b, c]`, `[b, d]`; `self` in a group is the path before it.
/// Reading stops where a path does (at `(`, `<`, `;`, ...).
fn use_tree(text: &str) -> Vec<Vec<String>> {
    let mut names = Vec::new();
    let mut rest = text;
    loop {
        rest = rest.trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            let mut out = Vec::new();
            for item in group_items(group) {
                for tail in use_tree(item) {
                    let mut path = names.clone();
                    path.extend(tail);
                    out.push(path);
                }
            }
            return out;
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            break;
        }
        rest = &rest[name.len()..];
        if name != "self" {
            names.push(name);
        }
        match rest.strip_prefix("::") {
            Some(after) => rest = after,
            None => break,
        }
    }
    vec![names]
}

/// The items of a `use` group, from after its `{` to its `}` (or to the
/// end of the text, for a group left open).
fn group_items(group: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    let mut end = group.len();
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                end = i;
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&group[start..end]);
    // A trailing comma leaves an empty item.
    items.retain(|item| !item.trim().is_empty());
    items
}

mod reader {
    use super::*;

    fn names(code: &str) -> Vec<(Start, String, usize)> {
        paths(code)
            .into_iter()
            .map(|p| (p.start, p.names.join("::"), p.line))
            .collect()
    }

    #[test]
    fn the_reader_finds_paths_and_skips_tests_and_comments() {
        let code = code_of(
            "use crate::a::X;\n// crate::b\n#[cfg(test)]\nmod tests { use crate::c; }\nfn f() { crate::d::g() }",
        );
        let found: Vec<String> = paths(&code)
            .into_iter()
            .map(|p| p.names[0].clone())
            .collect();
        assert_eq!(found, ["a", "d"]);
        assert_eq!(
            names("use super::super::x::Y;"),
            [(Start::Super(2), "x::Y".to_string(), 1)]
        );
        // Only whole prefixes count: not `my_crate::`, nor `a::super::`.
        assert!(paths("use my_crate::x; use a::super::y; mycrate::z();").is_empty());
        // A test item in the middle keeps the lines after it where they are.
        let code = code_of("#[cfg(test)]\nmod tests;\nuse crate::x;");
        assert_eq!(names(&code), [(Start::Crate, "x".to_string(), 3)]);
    }

    #[test]
    fn group_heads_reads_nested_use_groups() {
        let found = names("use crate::{x::Y, z};\nlet a = crate::w::f();");
        assert_eq!(
            found,
            [
                (Start::Crate, "x::Y".to_string(), 1),
                (Start::Crate, "z".to_string(), 1),
                (Start::Crate, "w::f".to_string(), 2)
            ]
        );
        let found: Vec<String> = names("use super::{a, b::{c, d}, e::f};")
            .into_iter()
            .map(|(_, n, _)| n)
            .collect();
        assert_eq!(found, ["a", "b::c", "b::d", "e::f"]);
    }

    #[test]
    fn a_group_over_several_lines_and_self_in_a_group() {
        let found: Vec<String> = names(
            "use super::values::{\n    canonical, list_items,\n};\nuse super::inert::{self, Object};",
        )
        .into_iter()
        .map(|(_, n, _)| n)
        .collect();
        assert_eq!(
            found,
            [
                "values::canonical",
                "values::list_items",
                "inert",
                "inert::Object"
            ]
        );
    }

    #[test]
    fn paths_resolve_from_the_file_that_holds_them() {
        let module = |m: &[&str]| m.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let resolve = |code: &str, from: &[&str]| -> Vec<String> {
            paths(code)
                .iter()
                .filter_map(|p| p.resolve(&module(from)))
                .map(|p| p.join("::"))
                .collect()
        };
        // A child of qmgr names its sibling with super::, a grandchild with
        // super::super::, anyone with crate::qmgr::.
        assert_eq!(
            resolve("use super::vocab::Op;", &["qmgr", "account"]),
            ["qmgr::vocab::Op"]
        );
        assert_eq!(
            resolve(
                "use super::super::values::quoted;",
                &["qmgr", "node_set", "parts"]
            ),
            ["qmgr::values::quoted"]
        );
        assert_eq!(
            resolve("use crate::qmgr::{vocab::Op, parse};", &["state"]),
            ["qmgr::vocab::Op", "qmgr::parse"]
        );
        assert_eq!(
            resolve("self::lex::tokens(s)", &["qmgr"]),
            ["qmgr::lex::tokens"]
        );
        // From a top-level file, super:: is the crate root; above it, nothing.
        assert_eq!(resolve("super::time::Time", &["job"]), ["time::Time"]);
        assert!(resolve("super::super::x", &["job"]).is_empty());
        assert_eq!(module_of("qmgr/mod.rs"), ["qmgr"]);
        assert_eq!(module_of("qmgr/node_set.rs"), ["qmgr", "node_set"]);
        assert!(module_of("lib.rs").is_empty());
    }

    const TOY: House = House {
        name: "toy",
        src: "src",
        scope: "crate::lang",
        floors: &[("words", &["vocab"]), ("objects", &["queue", "node"])],
    };

    fn toy(queue: &str, node: &str) -> Vec<String> {
        let files = [
            ("lib.rs", "pub mod lang;\npub mod time;\n"),
            ("time.rs", "use crate::lang::queue::X;\n"),
            (
                "lang/mod.rs",
                "mod node;\nmod queue;\nmod vocab;\npub use vocab::Op;\n",
            ),
            ("lang/vocab.rs", "pub enum Op { Set }\n"),
            ("lang/queue.rs", queue),
            ("lang/node.rs", node),
        ];
        let sources: Vec<(String, String)> = files
            .iter()
            .map(|(rel, text)| (rel.to_string(), text.to_string()))
            .collect();
        broken_floors(&TOY, &sources)
    }

    #[test]
    fn a_house_inside_a_crate_is_checked_and_its_breaks_named() {
        // Sound: objects use the words below them and one another one way;
        // time, outside the house, is not its business.
        assert!(
            toy(
                "use super::vocab::Op;\nuse super::node;\n",
                "use crate::lang::vocab::Op;\n"
            )
            .is_empty()
        );
        // A group, and a test module left out.
        let wrong = toy(
            "",
            "//! The node.\n\nuse super::{queue, vocab::Op};\n#[cfg(test)]\nmod tests;\n",
        );
        assert!(wrong.is_empty(), "{wrong:?}");
        // Upward: the file, the line and both floors named.
        let vocab_up = [
            ("lang/mod.rs", "mod node;\nmod queue;\nmod vocab;\n"),
            ("lang/vocab.rs", "\n\nuse super::queue::Q;\n"),
            ("lang/queue.rs", ""),
            ("lang/node.rs", ""),
        ];
        let sources: Vec<(String, String)> = vocab_up
            .iter()
            .map(|(rel, text)| (rel.to_string(), text.to_string()))
            .collect();
        assert_eq!(
            broken_floors(&TOY, &sources),
            [
                "src/lang/vocab.rs:3: vocab (floor 1, words) uses queue (floor 2, objects), a floor above"
            ]
        );
        // A circle on one floor, and the scope's re-export named.
        let wrong = toy(
            "use super::node::N;\n",
            "use super::queue::Q;\nuse super::Op;\n",
        );
        assert_eq!(
            wrong,
            [
                "a circle on one floor: node -> queue -> node (src/lang/node.rs:1, \
                 src/lang/queue.rs:1)",
                "a circle on one floor: queue -> node -> queue (src/lang/queue.rs:1, \
                 src/lang/node.rs:1)",
                "src/lang/node.rs:2: super::Op names Op in crate::lang, which is no module of it \
                 (a re-export?); name the module it lives in"
            ]
        );
    }

    #[test]
    fn every_module_is_on_exactly_one_floor() {
        const SHORT: House = House {
            name: "short",
            src: "src",
            scope: "crate",
            floors: &[("one", &["a", "b"]), ("two", &["b", "gone"])],
        };
        let sources = vec![
            (
                "lib.rs".to_string(),
                "pub mod a;\npub mod b;\nmod c;\n".to_string(),
            ),
            ("a.rs".to_string(), String::new()),
        ];
        assert_eq!(
            broken_floors(&SHORT, &sources),
            [
                "module b is on two floors",
                "module c of the crate root is on no floor: add it to the house's floors and \
                 to the table in docs/ARCHITECTURE.md",
                "the floors name gone, which is no module of the crate root",
            ]
        );
    }
}
