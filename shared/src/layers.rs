//! The library's layering, checked on its own source: no circle of imports
//! between more than two files, and the layers below the service (the
//! codecs and the storage traits) import nothing from above them. Reads
//! `use` paths and inline `crate::`/`super::` paths, leaving out test
//! modules; `lib.rs`, the table of contents, is not a node.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `src`, by module path (`service::uploads::issue`).
fn modules(src: &Path) -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(src).unwrap().with_extension("");
                let mut parts: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if parts.last().is_some_and(|p| p == "mod") {
                    parts.pop();
                }
                if parts != ["lib"] {
                    out.insert(parts.join("::"), path);
                }
            }
        }
    }
    out
}

/// The source without its test module and its comments.
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let test_module = [
        "#[cfg(test)]\nmod tests",
        "#[cfg(test)]\npub(crate) mod tests",
    ]
    .iter()
    .filter_map(|m| text.find(m))
    .min();
    let text = match test_module {
        Some(at) => &text[..at],
        None => &text,
    };
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths (`a::b::C`) named after `crate::` or `super::` (resolved to
/// crate-absolute), and after `use child::` for a child module.
fn referenced(module: &str, text: &str, known: &BTreeMap<String, PathBuf>) -> Vec<String> {
    let parent = module.rsplit_once("::").map(|(p, _)| p).unwrap_or("");
    let mut paths = Vec::new();
    let bytes: Vec<char> = text.chars().collect();
    let word_at = |i: usize, w: &str| text[i..].starts_with(w);
    let mut i = 0;
    let idx: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    while i < idx.len() {
        let at = idx[i];
        let prefix = if word_at(at, "crate::") {
            Some(("", "crate::".len()))
        } else if word_at(at, "super::") {
            Some((parent, "super::".len()))
        } else {
            None
        };
        let boundary = i == 0 || !(bytes[i - 1].is_alphanumeric() || bytes[i - 1] == '_');
        if let (Some((base, skip)), true) = (prefix, boundary) {
            let rest = &text[at + skip..];
            for tail in expand(rest) {
                let full = if base.is_empty() {
                    tail
                } else {
                    format!("{base}::{tail}")
                };
                paths.push(full);
            }
        }
        i += 1;
    }
    for line in text.lines() {
        let line = line.trim_start();
        let Some(rest) = line
            .strip_prefix("pub use ")
            .or_else(|| line.strip_prefix("use "))
            .or_else(|| line.strip_prefix("pub(crate) use "))
        else {
            continue;
        };
        let first = rest.split("::").next().unwrap_or_default();
        let child = if module.is_empty() {
            first.to_owned()
        } else {
            format!("{module}::{first}")
        };
        if known.contains_key(&child) {
            paths.push(child);
        }
    }
    paths
}

/// `a::b::{C, d::E}` → `a::b::C`, `a::b::d::E`.
fn expand(rest: &str) -> Vec<String> {
    let path: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
        .collect();
    let path = path.trim_end_matches(':').to_owned();
    let after = &rest[path.len()..];
    let after = after.trim_start_matches(':');
    if !after.starts_with('{') {
        return vec![path];
    }
    let mut depth = 0;
    let mut end = 0;
    for (i, c) in after.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    end = i;
                    break;
                }
            }
            _ => {}
        }
    }
    let inner = &after[1..end];
    let mut items = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[start..]);
    items
        .into_iter()
        .map(str::trim)
        .filter(|s| !s.is_empty() && *s != "self")
        .flat_map(expand)
        .map(|tail| {
            if path.is_empty() {
                tail
            } else {
                format!("{path}::{tail}")
            }
        })
        .collect()
}

/// The module a path lands in: its longest prefix that is a module.
fn owner_of(path: &str, known: &BTreeMap<String, PathBuf>) -> Option<String> {
    let mut parts: Vec<&str> = path.split("::").collect();
    while !parts.is_empty() {
        let candidate = parts.join("::");
        if known.contains_key(&candidate) {
            return Some(candidate);
        }
        parts.pop();
    }
    None
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let known = modules(&src);
    let mut edges = BTreeMap::new();
    for (module, path) in &known {
        let targets: BTreeSet<String> = referenced(module, &code(path), &known)
            .iter()
            .filter_map(|p| owner_of(p, &known))
            .filter(|t| t != module && !module.starts_with(&format!("{t}::layers")))
            .collect();
        edges.insert(module.clone(), targets);
    }
    edges
}

fn reachable(from: &str, edges: &BTreeMap<String, BTreeSet<String>>) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from.to_owned()];
    while let Some(m) = todo.pop() {
        for next in edges.get(&m).into_iter().flatten() {
            if seen.insert(next.clone()) {
                todo.push(next.clone());
            }
        }
    }
    seen
}

#[test]
fn no_circle_of_imports_spans_more_than_two_files() {
    let edges = graph();
    assert!(
        edges.len() > 40,
        "the source was read: {} modules",
        edges.len()
    );
    assert!(
        edges["service::uploads::issue"].contains("service::uploads"),
        "the reader follows `super::`: {:?}",
        edges["service::uploads::issue"]
    );
    let reach: BTreeMap<&String, BTreeSet<String>> =
        edges.keys().map(|m| (m, reachable(m, &edges))).collect();
    let mut too_big = Vec::new();
    for m in edges.keys() {
        let circle: BTreeSet<&String> = reach[m]
            .iter()
            .filter(|o| reach.get(o).is_some_and(|r| r.contains(m)))
            .collect();
        if circle.len() > 2 {
            too_big.push(format!("{m}: {circle:?}"));
        }
    }
    assert!(
        too_big.is_empty(),
        "circles over two files:\n{}",
        too_big.join("\n")
    );
}

#[test]
fn the_layers_below_the_service_import_nothing_above_them() {
    let edges = graph();
    let above = [
        "service", "http", "config", "actions", "auth", "rate", "webhooks", "fetch",
    ];
    let below = [
        "store",
        "records",
        "ledger",
        "sqlite",
        "sha",
        "keys",
        "token",
        "file",
        "filename",
        "datauri",
        "curl",
        "time",
        "web",
        "events",
        "telemetry",
        "caps",
    ];
    let mut wrong = Vec::new();
    for (module, targets) in &edges {
        let top = module.split("::").next().unwrap();
        if !below.contains(&top) {
            continue;
        }
        for t in targets {
            let t_top = t.split("::").next().unwrap();
            if above.contains(&t_top) || t_top == "error" {
                wrong.push(format!("{module} -> {t}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:?}");
}
