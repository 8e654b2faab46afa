//! The core's modules import one way: no file of `core/src` reaches itself
//! through `use` paths (and `crate::`/`super::` paths in code), so each has a
//! floor, and data sits below what decides on it. The Rust twin of
//! `__test__/layout.test.mjs`'s cycle check.
//!
//! An edge is a path that names another file's module: `crate::a::b::C`
//! names `a/b.rs` (or `a/b/mod.rs`), the longest prefix that is a file.
//! Declaring a child (`mod x;`) is not an edge. Unit tests (`#[cfg(test)]`
//! modules and `tests.rs` files) may reach anywhere and are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

/// The module path of a file under `src/`: `rules/mod.rs` is `rules`.
fn module_of(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_owned)
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The code of a file without comments, string contents and its unit tests.
fn code(text: &str) -> String {
    // A unit-test module, whatever its visibility, and all that follows it.
    let cut = [
        "#[cfg(test)]\nmod ",
        "#[cfg(test)]\npub mod ",
        "#[cfg(test)]\npub(crate) mod ",
    ]
    .iter()
    .filter_map(|m| text.find(m))
    .min();
    let text = &text[..cut.unwrap_or(text.len())];
    let (mut out, mut chars) = (String::with_capacity(text.len()), text.chars().peekable());
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                let mut prev = ' ';
                for c in chars.by_ref() {
                    if prev == '*' && c == '/' {
                        break;
                    }
                    prev = c;
                }
            }
            '"' => {
                out.push_str("\"\"");
                let mut escaped = false;
                for c in chars.by_ref() {
                    if !escaped && c == '"' {
                        break;
                    }
                    escaped = !escaped && c == '\\';
                }
            }
            // A char literal such as '"' or '{' (not a lifetime).
            '\'' => {
                let rest: String = chars.clone().take(3).collect();
                let close = if rest.starts_with('\\') {
                    rest.chars().nth(2)
                } else {
                    rest.chars().nth(1)
                };
                if close == Some('\'') {
                    let n = if rest.starts_with('\\') { 3 } else { 2 };
                    for _ in 0..n {
                        chars.next();
                    }
                    out.push_str("' '");
                } else {
                    out.push(c);
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// Every path a `use` tree names, brace groups expanded: `a::{b, c::d}` is
/// `a::b` and `a::c::d`.
fn expand(tree: &str) -> Vec<Vec<String>> {
    fn split_top(s: &str) -> Vec<&str> {
        let (mut out, mut depth, mut start) = (Vec::new(), 0, 0);
        for (i, c) in s.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    out.push(&s[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        out.push(&s[start..]);
        out
    }
    fn walk(prefix: &[String], tree: &str, out: &mut Vec<Vec<String>>) {
        for part in split_top(tree).into_iter().filter(|p| !p.is_empty()) {
            let segs = |s: &str| -> Vec<String> {
                s.split("::")
                    .filter(|x| !x.is_empty())
                    .map(|x| x.split(" as ").next().unwrap_or(x).to_owned())
                    .collect()
            };
            let mut path = prefix.to_vec();
            match part.find('{') {
                Some(i) => {
                    path.extend(segs(&part[..i]));
                    walk(
                        &path,
                        &part[i + 1..part.rfind('}').unwrap_or(part.len())],
                        out,
                    );
                }
                None => {
                    path.extend(segs(part));
                    out.push(path);
                }
            }
        }
    }
    let tree: String = tree.chars().filter(|c| !c.is_whitespace()).collect();
    let mut out = Vec::new();
    walk(&[], &tree, &mut out);
    out
}

/// The paths a file's code names that start at `crate`, `super` or `self`.
fn paths_in(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    // `use` trees (which may open with a brace group).
    let mut rest = code;
    while let Some(i) = rest.find("use ") {
        let boundary = i == 0 || !rest[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_');
        rest = &rest[i + 4..];
        if boundary {
            if let Some(end) = rest.find(';') {
                out.extend(expand(&rest[..end]));
            }
        }
    }
    // Paths written in code: `crate::a::b`, `super::x`.
    let bytes = code.as_bytes();
    for start in ["crate::", "super::", "self::"] {
        for (i, _) in code.match_indices(start) {
            if i > 0
                && (bytes[i - 1].is_ascii_alphanumeric()
                    || bytes[i - 1] == b'_'
                    || bytes[i - 1] == b':')
            {
                continue;
            }
            let end = code[i..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .map_or(code.len(), |e| i + e);
            out.push(
                code[i..end]
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect(),
            );
        }
    }
    out
}

/// Which files each file of `src` imports.
fn graph(src: &Path) -> Graph {
    fn files(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                files(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs")
                && p.file_name().is_some_and(|n| n != "tests.rs")
            {
                out.push(p);
            }
        }
    }
    let mut all = Vec::new();
    files(src, &mut all);
    let rel = |p: &Path| {
        p.strip_prefix(src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/")
    };
    let modules: BTreeMap<Vec<String>, String> =
        all.iter().map(|p| (module_of(&rel(p)), rel(p))).collect();
    let mut g = Graph::new();
    for p in &all {
        let me = rel(p);
        let here = module_of(&me);
        let mut to = BTreeSet::new();
        for path in paths_in(&code(&std::fs::read_to_string(p).unwrap())) {
            let (mut base, mut rest) = match path.first().map(String::as_str) {
                Some("crate") => (Vec::new(), &path[1..]),
                Some("self") => (here.clone(), &path[1..]),
                Some("super") => (here[..here.len().saturating_sub(1)].to_vec(), &path[1..]),
                _ => continue,
            };
            while rest.first().map(String::as_str) == Some("super") {
                base.pop();
                rest = &rest[1..];
            }
            base.extend(rest.iter().cloned());
            let target = (1..=base.len()).rev().find_map(|k| modules.get(&base[..k]));
            if let Some(t) = target.filter(|t| **t != me) {
                to.insert(t.clone());
            }
        }
        g.insert(me, to);
    }
    g
}

/// The circles: strongly connected sets of more than one file (Tarjan).
fn circles(g: &Graph) -> Vec<Vec<String>> {
    struct T<'g> {
        g: &'g Graph,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on: BTreeSet<&'g str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'g>(t: &mut T<'g>, v: &'g str) {
        let n = t.index.len();
        t.index.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        t.on.insert(v);
        for w in t.g.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                comp.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

/// A circle as the edges that tie it, one per line.
fn show(g: &Graph, circle: &[String]) -> String {
    let mut out = String::new();
    for a in circle {
        for b in g[a].iter().filter(|b| circle.contains(b)) {
            out += &format!("  {a} -> {b}\n");
        }
    }
    out
}

#[test]
fn no_module_of_the_core_reaches_itself() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let g = graph(&src);
    assert!(
        g.len() > 50,
        "read only {} files of {}",
        g.len(),
        src.display()
    );
    assert!(
        g["engine.rs"].contains("route.rs"),
        "the reader missed engine -> route"
    );
    let found = circles(&g);
    let shown: Vec<String> = found.iter().map(|c| show(&g, c)).collect();
    assert!(
        found.is_empty(),
        "module circles in core/src (move what both sides need below them):\n{}",
        shown.join("\n")
    );
}

#[test]
fn the_check_sees_a_circle_through_use_trees_super_and_inline_paths() {
    let dir = std::env::temp_dir().join(format!("claw-identity-layering-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("rules")).unwrap();
    let write = |p: &str, t: &str| std::fs::write(dir.join(p), t).unwrap();
    write("lib.rs", "pub mod low;\npub mod rules;\n");
    // low -> rules/a (a brace group), rules/a -> rules/mod (super), rules/mod -> low (inline).
    write(
        "low.rs",
        "use crate::{rules::{a::Thing}, other};\n// use crate::nothing;\n",
    );
    write("rules/a.rs", "use super::Shared;\npub struct Thing;\n");
    write(
        "rules/mod.rs",
        "pub mod a;\npub struct Shared;\nfn f() { let _ = crate::low::X; let _s = \"crate::nowhere\"; }\n#[cfg(test)]\npub(crate) mod tests { use crate::rules::a; }\n",
    );
    let g = graph(&dir);
    let found = circles(&g);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        found,
        vec![vec![
            "low.rs".to_owned(),
            "rules/a.rs".into(),
            "rules/mod.rs".into()
        ]],
        "{g:?}"
    );
    // A child declared by its parent is no edge; the unit tests' import is left out.
    assert!(!g["rules/mod.rs"].contains("rules/a.rs"), "{g:?}");
}
