//! `cargo xtask modules`: the import circles inside each crate of the workspace.
//!
//! A crate's modules depend on each other through the paths they name (`use super::dot::Plan`,
//! `crate::eval::tensor::Data`, `super::par::each(..)`); a circle is a set of modules each of which
//! reaches every other one through such paths (a strongly connected component of more than one
//! module). A circle means none of its modules can be read, tested or changed without the others,
//! so the layering the architecture describes holds only where there is none.
//!
//! What counts, and why:
//! - Paths in `use` declarations and in code, starting from `crate`, `super`, `self` or a child
//!   module's name; the module an edge goes to is the deepest module the path names (a path to an
//!   item of `eval::dot` is an edge to `eval::dot`).
//! - Not `mod` declarations and not `pub use` re-exports: a parent that declares its children and
//!   re-exports their items is the crate's tree, not a dependency of the parent's code.
//! - Only what the library (or, without one, the binary) builds: items under `#[cfg(test)]` are
//!   skipped, with the test modules they declare, since tests may reach anywhere.
//!
//! It reads the sources as text (comments and literals blanked first) rather than through the
//! compiler: a path built by a macro is not seen, which errs on the side of fewer edges.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// One dependency: `from` names a path into `to`, first at `file:line`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Edge {
    pub(crate) from: String,
    pub(crate) to: String,
    pub(crate) at: String,
}

/// A crate's modules (by path, `crate` for the root) and the edges between them.
#[derive(Debug, Default)]
pub(crate) struct Graph {
    pub(crate) modules: BTreeSet<String>,
    pub(crate) edges: Vec<Edge>,
}

/// `cargo xtask modules [--crate NAME] [--why]`.
pub(crate) fn run(root: &Path, only: Option<&str>, why: bool) -> Result<()> {
    let crates = workspace_crates(root)?;
    if let Some(name) = only
        && !crates.iter().any(|(n, _)| n == name)
    {
        let known: Vec<&str> = crates.iter().map(|(n, _)| n.as_str()).collect();
        bail!("no crate named {name:?} in the workspace; its crates are {}", known.join(", "));
    }
    let (mut circles_total, mut in_circles_total) = (0, 0);
    for (name, entry) in &crates {
        if only.is_some_and(|o| o != name) {
            continue;
        }
        let graph = crate_graph(root, entry)?;
        let circles = circles(&graph);
        let in_circles: usize = circles.iter().map(BTreeSet::len).sum();
        circles_total += circles.len();
        in_circles_total += in_circles;
        println!(
            "{name}: {} modules, {} edges, {} circles ({} modules in them)",
            graph.modules.len(),
            graph.edges.len(),
            circles.len(),
            in_circles
        );
        for circle in &circles {
            let members: Vec<&str> = circle.iter().map(String::as_str).collect();
            println!("  circle of {}: {}", circle.len(), members.join(", "));
            if why {
                for edge in graph.edges.iter().filter(|e| circle.contains(&e.from)) {
                    if circle.contains(&edge.to) {
                        println!("    {} -> {}  ({})", edge.from, edge.to, edge.at);
                    }
                }
            }
        }
    }
    println!(
        "total: {circles_total} circles, {in_circles_total} modules in them{}",
        if why { "" } else { " (--why lists the edges that close each circle)" }
    );
    Ok(())
}

/// The workspace's members (name, entry file), from the root `Cargo.toml`'s `members` list and
/// each member's `src/lib.rs` (else `src/main.rs`).
pub(crate) fn workspace_crates(root: &Path) -> Result<Vec<(String, PathBuf)>> {
    let manifest = fs::read_to_string(root.join("Cargo.toml")).context("reading Cargo.toml")?;
    let members = workspace_members(&manifest);
    if members.is_empty() {
        bail!("Cargo.toml has no members list");
    }
    let mut crates = Vec::new();
    for member in &members {
        let dir = root.join(member);
        let entry = ["src/lib.rs", "src/main.rs"].iter().map(|f| dir.join(f)).find(|p| p.is_file());
        if let Some(entry) = entry {
            crates.push((member.replace('/', "-"), entry));
        }
    }
    Ok(crates)
}

/// The folders of the root manifest's `members` list.
pub(crate) fn workspace_members(manifest: &str) -> Vec<String> {
    let list = manifest
        .split_once("members")
        .and_then(|(_, rest)| rest.split_once('[')?.1.split_once(']'))
        .map_or("", |(list, _)| list);
    list.split(',')
        .map(|m| m.trim().trim_matches('"').to_string())
        .filter(|m| !m.is_empty())
        .collect()
}

/// The graph of the crate whose root file is `entry`.
pub(crate) fn crate_graph(root: &Path, entry: &Path) -> Result<Graph> {
    let src = entry.parent().context("an entry file has a folder")?;
    let mut files = Vec::new();
    collect(src, &mut files)?;
    let entry_name = entry.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let mut sources = BTreeMap::new();
    for file in files {
        let Some(module) = module_of(src, &file, entry_name) else { continue };
        let text =
            fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
        let shown = file.strip_prefix(root).unwrap_or(&file).display().to_string();
        sources.insert(module, (shown, text));
    }
    Ok(graph_of(&sources))
}

/// The `.rs` files under `dir`, in order; `bin/` folders hold other targets.
fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let mut entries: Vec<_> = fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            if entry.file_name() != "bin" {
                collect(&path, out)?;
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// The module a file under `src` holds: `crate` for the entry, `a::b` for `a/b.rs` or
/// `a/b/mod.rs`; `None` for the other target's entry (`main.rs` beside `lib.rs`).
fn module_of(src: &Path, file: &Path, entry_name: &str) -> Option<String> {
    let relative = file.strip_prefix(src).ok()?;
    let mut parts: Vec<String> =
        relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop()?;
    let stem = last.strip_suffix(".rs")?;
    if parts.is_empty() && (stem == "lib" || stem == "main") {
        return (last == entry_name).then(|| "crate".to_string());
    }
    if stem != "mod" {
        parts.push(stem.to_string());
    }
    Some(parts.join("::"))
}

/// The graph of `sources` (module → (file shown in edges, text)).
pub(crate) fn graph_of(sources: &BTreeMap<String, (String, String)>) -> Graph {
    let mut scans = Vec::new();
    let mut modules: BTreeSet<String> = sources.keys().cloned().collect();
    let mut test_only = BTreeSet::new();
    for (module, (file, text)) in sources {
        let scan = scan(module, &blank(text));
        modules.extend(scan.inline.iter().cloned());
        test_only.extend(scan.test_modules.iter().cloned());
        scans.push((file, scan));
    }
    let excluded =
        |m: &str| test_only.iter().any(|t: &String| m == t || m.starts_with(&format!("{t}::")));
    modules.retain(|m| !excluded(m));
    let mut edges: Vec<Edge> = Vec::new();
    for (file, scan) in scans {
        for reference in scan.references {
            if excluded(&reference.from) {
                continue;
            }
            let Some(to) = resolve(&modules, &reference.from, &reference.path) else { continue };
            if to == reference.from || excluded(&to) {
                continue;
            }
            if !edges.iter().any(|e| e.from == reference.from && e.to == to) {
                edges.push(Edge {
                    from: reference.from,
                    to,
                    at: format!("{file}:{}", reference.line),
                });
            }
        }
    }
    Graph { modules, edges }
}

/// The deepest module of `modules` that `path` (as written in module `from`) names, if it names
/// one of this crate's.
fn resolve(modules: &BTreeSet<String>, from: &str, path: &[String]) -> Option<String> {
    let first = path.first()?;
    let mut at: Vec<String> =
        if from == "crate" { Vec::new() } else { from.split("::").map(String::from).collect() };
    let mut rest = &path[1..];
    match first.as_str() {
        "crate" => at.clear(),
        "self" => {}
        "super" => {
            at.pop()?;
            while rest.first().is_some_and(|s| s == "super") {
                at.pop()?;
                rest = &rest[1..];
            }
        }
        _ => rest = path,
    }
    let name =
        |parts: &[String]| if parts.is_empty() { "crate".to_string() } else { parts.join("::") };
    // A path that starts with a name resolves only through a child module of that name.
    if !matches!(first.as_str(), "crate" | "self" | "super") {
        let mut child = at.clone();
        child.push(first.clone());
        if !modules.contains(&name(&child)) {
            return None;
        }
    }
    let mut deepest = name(&at);
    for segment in rest {
        at.push(segment.clone());
        let candidate = name(&at);
        if !modules.contains(&candidate) {
            break;
        }
        deepest = candidate;
    }
    Some(deepest)
}

/// A path named in module `from` at `line`.
#[derive(Debug)]
struct Reference {
    from: String,
    path: Vec<String>,
    line: usize,
}

/// What one file says: its paths, its inline modules, and the modules it declares for tests only.
#[derive(Debug, Default)]
struct Scan {
    references: Vec<Reference>,
    inline: Vec<String>,
    test_modules: Vec<String>,
}

/// A token of blanked source: a word (identifier or keyword), `::`, or one other character.
#[derive(Clone, Debug, PartialEq)]
enum Token {
    Word(String),
    Colons,
    Punct(char),
}

/// The tokens of `text` with the line each starts on.
fn tokens(text: &str) -> Vec<(Token, usize)> {
    let chars: Vec<char> = text.chars().collect();
    let (mut out, mut line, mut i) = (Vec::new(), 1, 0);
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            out.push((Token::Word(word), line));
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push((Token::Colons, line));
            i += 2;
        } else {
            out.push((Token::Punct(c), line));
            i += 1;
        }
    }
    out
}

/// The paths, inline modules and test-only modules of the file of module `module`.
fn scan(module: &str, text: &str) -> Scan {
    let tokens = tokens(text);
    let mut scan = Scan::default();
    // The modules open at this point, with the brace depth at which each closes.
    let mut stack: Vec<(String, usize)> = vec![(module.to_string(), 0)];
    let (mut depth, mut i) = (0usize, 0usize);
    let word = |i: usize| match tokens.get(i) {
        Some((Token::Word(w), _)) => Some(w.as_str()),
        _ => None,
    };
    let punct = |i: usize, c: char| matches!(tokens.get(i), Some((Token::Punct(p), _)) if *p == c);
    while i < tokens.len() {
        let current = stack.last().map(|(m, _)| m.clone()).unwrap_or_default();
        let child = |name: &str| {
            if current == "crate" { name.to_string() } else { format!("{current}::{name}") }
        };
        // `#[cfg(test)]`: the item it marks is skipped; a module it declares is test-only.
        if punct(i, '#') && is_cfg_test(&tokens, i) {
            i = skip_attributes(&tokens, i);
            let item = skip_visibility(&tokens, i);
            if word(item) == Some("mod")
                && let Some(name) = word(item + 1)
            {
                scan.test_modules.push(child(name));
            }
            i = skip_item(&tokens, i);
            continue;
        }
        if punct(i, '#') {
            i = skip_attributes(&tokens, i);
            continue;
        }
        match &tokens[i].0 {
            Token::Punct('{') => {
                depth += 1;
                i += 1;
            }
            Token::Punct('}') => {
                depth = depth.saturating_sub(1);
                if stack.len() > 1 && stack.last().is_some_and(|(_, d)| *d == depth) {
                    stack.pop();
                }
                i += 1;
            }
            Token::Word(w) if w == "pub" => {
                let after = skip_visibility(&tokens, i);
                if word(after) == Some("use") {
                    // A re-export: the tree, not a dependency (see the module's notes).
                    i = skip_to_semicolon(&tokens, after);
                } else {
                    i = after;
                }
            }
            Token::Word(w) if w == "mod" => match (word(i + 1), tokens.get(i + 2)) {
                (Some(name), Some((Token::Punct('{'), _))) => {
                    let inner = child(name);
                    scan.inline.push(inner.clone());
                    stack.push((inner, depth));
                    depth += 1;
                    i += 3;
                }
                _ => i += 2,
            },
            Token::Word(w) if w == "use" => {
                let end = skip_to_semicolon(&tokens, i);
                let line = tokens[i].1;
                for path in use_paths(&tokens[i + 1..end.saturating_sub(1).max(i + 1)]) {
                    scan.references.push(Reference { from: current.clone(), path, line });
                }
                i = end;
            }
            Token::Word(_) => {
                // A path in code: words joined by `::`, not itself the tail of another path or
                // a field or method (`x.y::<T>`).
                let starts =
                    i == 0 || !matches!(tokens[i - 1].0, Token::Colons | Token::Punct('.'));
                let mut path = Vec::new();
                let mut j = i;
                while let Some(w) = word(j) {
                    path.push(w.to_string());
                    if tokens.get(j + 1).map(|t| &t.0) == Some(&Token::Colons) {
                        j += 2;
                    } else {
                        break;
                    }
                }
                if starts && path.len() > 1 {
                    scan.references.push(Reference {
                        from: current.clone(),
                        path,
                        line: tokens[i].1,
                    });
                }
                i = j + 1;
            }
            _ => i += 1,
        }
    }
    scan
}

/// Whether the attribute at `i` (a `#`) is `#[cfg(test)]`.
fn is_cfg_test(tokens: &[(Token, usize)], i: usize) -> bool {
    let expected = [
        Token::Punct('#'),
        Token::Punct('['),
        Token::Word("cfg".into()),
        Token::Punct('('),
        Token::Word("test".into()),
        Token::Punct(')'),
        Token::Punct(']'),
    ];
    tokens.get(i..i + expected.len()).is_some_and(|t| t.iter().map(|(t, _)| t).eq(expected.iter()))
}

/// The index after the attributes (`#[..]`, `#![..]`) starting at `i`.
fn skip_attributes(tokens: &[(Token, usize)], mut i: usize) -> usize {
    while matches!(tokens.get(i), Some((Token::Punct('#'), _))) {
        let mut j = i + 1;
        if matches!(tokens.get(j), Some((Token::Punct('!'), _))) {
            j += 1;
        }
        if !matches!(tokens.get(j), Some((Token::Punct('['), _))) {
            return i + 1;
        }
        i = skip_group(tokens, j, '[', ']');
    }
    i
}

/// The index after the group opened by `open` at `i` (which must hold it).
fn skip_group(tokens: &[(Token, usize)], i: usize, open: char, close: char) -> usize {
    let mut depth = 0usize;
    for (j, (token, _)) in tokens.iter().enumerate().skip(i) {
        match token {
            Token::Punct(c) if *c == open => depth += 1,
            Token::Punct(c) if *c == close => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
    }
    tokens.len()
}

/// The index after a visibility (`pub`, `pub(crate)`, `pub(in path)`) at `i`, or `i`.
fn skip_visibility(tokens: &[(Token, usize)], i: usize) -> usize {
    if !matches!(tokens.get(i), Some((Token::Word(w), _)) if w == "pub") {
        return i;
    }
    if matches!(tokens.get(i + 1), Some((Token::Punct('('), _))) {
        skip_group(tokens, i + 1, '(', ')')
    } else {
        i + 1
    }
}

/// The index after the `;` that ends the declaration at `i`.
fn skip_to_semicolon(tokens: &[(Token, usize)], i: usize) -> usize {
    tokens[i..]
        .iter()
        .position(|(t, _)| *t == Token::Punct(';'))
        .map_or(tokens.len(), |p| i + p + 1)
}

/// The index after the item starting at `i` (attributes first): its `;`, or its body's `}`.
fn skip_item(tokens: &[(Token, usize)], i: usize) -> usize {
    let i = skip_attributes(tokens, i);
    for (j, (token, _)) in tokens.iter().enumerate().skip(i) {
        match token {
            Token::Punct(';') => return j + 1,
            Token::Punct('{') => return skip_group(tokens, j, '{', '}'),
            _ => {}
        }
    }
    tokens.len()
}

/// The paths of a `use` tree (the tokens between `use` and `;`): `a::{b, c::d}` is `a::b` and
/// `a::c::d`; `a::*` is `a`; `a as b` is `a`.
fn use_paths(tree: &[(Token, usize)]) -> Vec<Vec<String>> {
    fn walk(tree: &[(Token, usize)], prefix: &[String], out: &mut Vec<Vec<String>>) {
        // Split the tree at its top-level commas.
        let mut depth = 0usize;
        let mut start = 0;
        let mut pieces = Vec::new();
        for (i, (token, _)) in tree.iter().enumerate() {
            match token {
                Token::Punct('{') => depth += 1,
                Token::Punct('}') => depth = depth.saturating_sub(1),
                Token::Punct(',') if depth == 0 => {
                    pieces.push(&tree[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        pieces.push(&tree[start..]);
        for piece in pieces {
            let mut path = prefix.to_vec();
            let mut i = 0;
            while i < piece.len() {
                match &piece[i].0 {
                    Token::Word(w) if w == "as" => break,
                    Token::Word(w) => path.push(w.clone()),
                    Token::Punct('{') => {
                        let end = piece.len().saturating_sub(1);
                        walk(&piece[i + 1..end.max(i + 1)], &path, out);
                        path.clear();
                        break;
                    }
                    _ => {}
                }
                i += 1;
            }
            if !path.is_empty() && path.len() > prefix.len() {
                out.push(path);
            } else if !path.is_empty() && path.len() == prefix.len() && !prefix.is_empty() {
                // `a::{self}` or `a::*`: the prefix itself.
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(tree, &[], &mut out);
    out
}

/// `text` with comments, strings and character literals blanked (newlines kept, so lines still
/// count), so that nothing in them reads as a path or a brace.
fn blank(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let keep_lines = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(keep_lines(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && !(i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_'))
        {
            // A raw string: r"..", r#".."#; `r#ident` is a raw identifier, kept.
            let mut j = i + 1;
            while chars.get(j) == Some(&'#') {
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let hashes = j - i - 1;
            i = j + 1;
            out.push('"');
            while i < chars.len() {
                if chars[i] == '"' && (0..hashes).all(|h| chars.get(i + 1 + h) == Some(&'#')) {
                    i += 1 + hashes;
                    break;
                }
                out.push(keep_lines(chars[i]));
                i += 1;
            }
            out.push('"');
        } else if c == '"' {
            out.push('"');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if let Some(&ch) = chars.get(i) {
                    out.push(keep_lines(ch));
                }
                i += 1;
            }
            out.push('"');
            i += 1;
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{1F600}') or a lifetime ('a, kept).
            let close = if next == Some('\\') {
                chars[i + 2..].iter().position(|&ch| ch == '\'').map(|p| i + 2 + p)
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match close {
                Some(end) => {
                    out.push_str("' '");
                    i = end + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The strongly connected components of more than one module, each sorted, largest first
/// (Tarjan's algorithm).
pub(crate) fn circles(graph: &Graph) -> Vec<BTreeSet<String>> {
    let names: Vec<&String> = graph.modules.iter().collect();
    let index_of: BTreeMap<&String, usize> =
        names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let mut next: Vec<Vec<usize>> = vec![Vec::new(); names.len()];
    for edge in &graph.edges {
        if let (Some(&a), Some(&b)) = (index_of.get(&edge.from), index_of.get(&edge.to)) {
            next[a].push(b);
        }
    }
    struct Tarjan<'g> {
        next: &'g [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        counter: usize,
        found: Vec<Vec<usize>>,
    }
    impl Tarjan<'_> {
        fn visit(&mut self, v: usize) {
            self.index[v] = Some(self.counter);
            self.low[v] = self.counter;
            self.counter += 1;
            self.stack.push(v);
            self.on_stack[v] = true;
            for &w in &self.next[v] {
                match self.index[w] {
                    None => {
                        self.visit(w);
                        self.low[v] = self.low[v].min(self.low[w]);
                    }
                    Some(iw) if self.on_stack[w] => self.low[v] = self.low[v].min(iw),
                    Some(_) => {}
                }
            }
            if Some(self.low[v]) == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                self.found.push(component);
            }
        }
    }
    let n = names.len();
    let mut tarjan = Tarjan {
        next: &next,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        counter: 0,
        found: Vec::new(),
    };
    for v in 0..n {
        if tarjan.index[v].is_none() {
            tarjan.visit(v);
        }
    }
    let mut circles: Vec<BTreeSet<String>> = tarjan
        .found
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| c.into_iter().map(|i| names[i].clone()).collect())
        .collect();
    circles.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    circles
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(files: &[(&str, &str)]) -> Graph {
        let sources = files
            .iter()
            .map(|(m, text)| (m.to_string(), (format!("{m}.rs"), text.to_string())))
            .collect();
        graph_of(&sources)
    }

    fn edges(graph: &Graph) -> Vec<(String, String)> {
        let mut pairs: Vec<_> =
            graph.edges.iter().map(|e| (e.from.clone(), e.to.clone())).collect();
        pairs.sort();
        pairs
    }

    fn pair(a: &str, b: &str) -> (String, String) {
        (a.to_string(), b.to_string())
    }

    #[test]
    fn paths_in_use_trees_and_code_are_edges_to_the_deepest_module_they_name() {
        let g = graph(&[
            ("crate", "mod eval;\npub use eval::Program;\n"),
            ("eval", "mod dot;\nmod par;\nmod tensor;\npub struct Fail;\nfn f() { dot::run(); }\n"),
            (
                "eval::dot",
                "use super::{Fail, tensor::{Data, Tensor as T}};\nfn run() { super::par::each(); crate::eval::tensor::x(); }\n",
            ),
            ("eval::par", "use crate::eval::Fail;\n"),
            ("eval::tensor", "fn g(x: Vec<u8>) { x.len(); std::mem::drop(x); }\n"),
        ]);
        assert_eq!(
            edges(&g),
            [
                pair("eval", "eval::dot"),
                pair("eval::dot", "eval"),
                pair("eval::dot", "eval::par"),
                pair("eval::dot", "eval::tensor"),
                pair("eval::par", "eval"),
            ],
            "the root's re-export is no edge; std's paths and methods are none"
        );
        let found = circles(&g);
        assert_eq!(found.len(), 1, "eval reaches dot, dot par, par eval: {found:?}");
        assert_eq!(found[0].iter().collect::<Vec<_>>(), ["eval", "eval::dot", "eval::par"]);
        assert_eq!(g.edges[0].at, "eval.rs:5", "an edge says where it is first named");
    }

    #[test]
    fn tests_comments_strings_and_visibility_make_no_edges() {
        let g = graph(&[
            ("crate", "mod a;\nmod b;\n"),
            (
                "a",
                "pub(super) fn f() {}\npub(in crate::b) fn g() {}\n// crate::b::x\n/* super::b::y */\nconst S: &str = \"crate::b::z\";\nconst R: &str = r#\"super::b\"#;\nfn c() -> char { '{' }\n#[cfg(test)]\nmod tests { use crate::b::h; }\n#[cfg(test)]\nmod more;\nfn l<'a>(x: &'a str) -> &'a str { x }\n",
            ),
            ("a::more", "use crate::b::k;\n"),
            ("b", "pub fn h() { crate::a::f(); }\n"),
        ]);
        assert_eq!(edges(&g), [pair("b", "a")]);
        assert!(!g.modules.contains("a::more"), "a module declared for tests is not the crate's");
        assert!(circles(&g).is_empty());
    }

    #[test]
    fn inline_modules_resolve_super_from_where_they_stand() {
        let g = graph(&[
            ("crate", "mod a;\nmod b;\n"),
            (
                "a",
                "mod inner {\n  use super::super::b::x;\n  fn f() { super::g(); }\n}\nfn g() {}\n",
            ),
            ("b", "fn x() { crate::a::inner::y(); }\n"),
        ]);
        assert_eq!(
            edges(&g),
            [pair("a::inner", "a"), pair("a::inner", "b"), pair("b", "a::inner")]
        );
        let found = circles(&g);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].iter().collect::<Vec<_>>(), ["a::inner", "b"]);
    }

    #[test]
    fn a_longer_circle_is_found_whole_and_the_largest_comes_first() {
        let g = graph(&[
            ("crate", "mod a; mod b; mod c; mod d; mod e;\n"),
            ("a", "use crate::b;"),
            ("b", "use crate::c;"),
            ("c", "use crate::a;"),
            ("d", "use crate::e; use crate::a;"),
            ("e", "use crate::d;"),
        ]);
        let found = circles(&g);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].iter().collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!(found[1].iter().collect::<Vec<_>>(), ["d", "e"]);
    }

    #[test]
    fn files_map_to_modules_as_rustc_finds_them() {
        let src = Path::new("/w/hlo/src");
        let of = |f: &str| module_of(src, &src.join(f), "lib.rs");
        assert_eq!(of("lib.rs").as_deref(), Some("crate"));
        assert_eq!(of("main.rs"), None, "a binary beside the library is another target");
        assert_eq!(of("eval/mod.rs").as_deref(), Some("eval"));
        assert_eq!(of("eval/dot.rs").as_deref(), Some("eval::dot"));
        assert_eq!(of("text.rs").as_deref(), Some("text"));
    }
}
