//! The core's floors (docs/ARCHITECTURE.md, "qmesh-core's floors"), checked.
//!
//! Each top-level module of `qmesh-core` sits on a floor and may use only
//! modules on its own floor or below, and the modules of one floor never
//! use each other in a circle. The check reads every `crate::` path (and
//! every `super::` path that climbs to the crate root) in the library's
//! code; tests are left out, since a unit test may well build a `State`
//! to exercise a value type.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Bottom up. Keep in step with the table in docs/ARCHITECTURE.md.
const FLOORS: &[(&str, &[&str])] = &[
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
        ],
    ),
    ("requests", &["route", "submit"]),
    ("the state", &["state"]),
    (
        "commands on the state",
        &[
            "qalter", "qmove", "qorder", "qrerun", "qdel", "signal", "reorder", "periods", "joblog",
        ],
    ),
    (
        "passes and languages",
        &["scheduler", "qrun", "qmgr", "report"],
    ),
];

fn floor_of() -> BTreeMap<&'static str, usize> {
    let mut floors = BTreeMap::new();
    for (i, (_, modules)) in FLOORS.iter().enumerate() {
        for m in *modules {
            assert!(
                floors.insert(*m, i).is_none(),
                "module {m} is on two floors"
            );
        }
    }
    floors
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "tests") {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            if name != "tests" && !name.starts_with("tests_") && !name.ends_with("_tests") {
                out.push(path);
            }
        }
    }
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

/// The first names of the paths in `use crate::{a, b::{c, d}, e::f}`.
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut item = String::new();
    for c in group.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                heads.push(std::mem::take(&mut item));
                continue;
            }
            _ => {}
        }
        if depth == 0 || c != '{' {
            item.push(c);
        }
    }
    heads.push(item);
    heads
        .iter()
        .filter_map(|i| {
            let head: String = i
                .trim()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            (!head.is_empty()).then_some(head)
        })
        .collect()
}

/// Every module a file's code names from the crate root, with its line.
fn root_paths(code: &str, depth: usize) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    let climb = "super::".repeat(depth);
    for prefix in ["crate::", climb.as_str()] {
        let mut rest = code;
        let mut offset = 0;
        while let Some(at) = rest.find(prefix) {
            let start = offset + at;
            let before = code[..start].chars().next_back();
            let after = &code[start + prefix.len()..];
            offset = start + prefix.len();
            rest = &code[offset..];
            // `super::super::x` seen from deeper: only whole prefixes count.
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let line = code[..start].matches('\n').count() + 1;
            if let Some(group) = after.strip_prefix('{') {
                let mut depth = 1;
                let end = group
                    .char_indices()
                    .find(|&(_, c)| {
                        if c == '{' {
                            depth += 1;
                        } else if c == '}' {
                            depth -= 1;
                        }
                        depth == 0
                    })
                    .map_or(group.len(), |(i, _)| i);
                for head in group_heads(&group[..end]) {
                    found.push((head, line));
                }
            } else {
                let head: String = after
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !head.is_empty() && head != "super" {
                    found.push((head, line));
                }
            }
        }
    }
    found
}

#[test]
fn every_module_uses_only_its_floor_and_those_below() {
    let floors = floor_of();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let lib_modules: BTreeSet<String> = std::fs::read_to_string(src.join("lib.rs"))
        .expect("lib.rs")
        .lines()
        .filter_map(|l| {
            l.trim()
                .strip_prefix("pub mod ")
                .map(|m| m.trim_end_matches(';').to_string())
        })
        .collect();

    let mut wrong = Vec::new();
    for module in &lib_modules {
        if !floors.contains_key(module.as_str()) {
            wrong.push(format!(
                "module {module} is on no floor: add it to FLOORS and to the table"
            ));
        }
    }
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let rel = file.strip_prefix(&src).expect("under src");
        let parts: Vec<&str> = rel.iter().filter_map(|p| p.to_str()).collect();
        let top = parts[0].trim_end_matches(".rs").to_string();
        if top == "lib" {
            continue;
        }
        // How many `super::` climb from this file to the crate root.
        let last = parts[parts.len() - 1];
        let depth = parts.len() - usize::from(last == "mod.rs");
        let text = std::fs::read_to_string(file).expect("source file");
        for (used, line) in root_paths(&code_of(&text), depth) {
            let at = format!("{}:{line}", rel.display());
            if used == top {
                continue;
            }
            if !lib_modules.contains(&used) {
                wrong.push(format!(
                    "{at}: crate::{used} names the crate root's re-export; name its module"
                ));
                continue;
            }
            let (Some(&from), Some(&to)) = (floors.get(top.as_str()), floors.get(used.as_str()))
            else {
                continue;
            };
            if to > from {
                wrong.push(format!(
                    "{at}: {top} (floor {}, {}) uses {used} (floor {}, {}), a floor above",
                    from + 1,
                    FLOORS[from].0,
                    to + 1,
                    FLOORS[to].0
                ));
            } else if to == from {
                edges.entry(top.clone()).or_default().insert(used.clone());
            }
        }
    }
    // Within a floor: no circle.
    for start in edges.keys() {
        let mut seen = BTreeSet::new();
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        while let Some((at, path)) = stack.pop() {
            for next in edges.get(&at).into_iter().flatten() {
                if next == start {
                    wrong.push(format!(
                        "a circle on one floor: {} -> {start}",
                        path.join(" -> ")
                    ));
                } else if seen.insert(next.clone()) {
                    let mut longer = path.clone();
                    longer.push(next.clone());
                    stack.push((next.clone(), longer));
                }
            }
        }
    }
    wrong.sort();
    wrong.dedup();
    assert!(
        wrong.is_empty(),
        "qmesh-core's floors are broken:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_reader_finds_paths_and_skips_tests_and_comments() {
    let code = code_of(
        "use crate::a::X;\n// crate::b\n#[cfg(test)]\nmod tests { use crate::c; }\nfn f() { crate::d::g() }",
    );
    let found: Vec<String> = root_paths(&code, 1).into_iter().map(|(m, _)| m).collect();
    assert_eq!(found, ["a", "d"]);
    assert_eq!(
        root_paths("use super::super::x::Y;", 2),
        [("x".to_string(), 1)]
    );
    assert!(root_paths("use super::x::Y;", 2).is_empty());
}

#[test]
fn group_heads_reads_nested_use_groups() {
    assert_eq!(group_heads("a, b::{c, d}, e::f"), ["a", "b", "e"]);
    let found = root_paths("use crate::{x::Y, z};\nlet a = crate::w::f();", 1);
    assert_eq!(
        found,
        [
            ("x".to_string(), 1),
            ("z".to_string(), 1),
            ("w".to_string(), 2)
        ]
    );
}
