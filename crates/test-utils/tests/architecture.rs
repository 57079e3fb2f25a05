//! docs/architecture.md stays true to the code: its layer table is the rule every dependency edge
//! of the workspace must follow, and its crate table and dependency picture are generated from
//! `cargo metadata`, so neither can drift.
//!
//! - The layers (between `<!-- BEGIN layers -->` and `<!-- END layers -->`) are written by hand:
//!   each workspace package is in exactly one layer, and a package's normal and build dependencies
//!   on other workspace packages are all in strictly lower layers (dev-dependencies may go
//!   anywhere: tests sit above what they test).
//! - The crate table and the picture (between `<!-- BEGIN generated crates -->` and
//!   `<!-- END generated crates -->`) must equal what this test generates. After changing a crate's
//!   dependencies or description, regenerate them with
//!   `BAL_REPLAY_BLESS=1 cargo test -p bal-replay-test-utils --test architecture`.
//! - Inside a crate, no two files import each other, directly or round a longer loop: a file's
//!   `crate::` paths (in `use` or in code) name the file that defines what they reach, re-exports
//!   followed, and those edges have no cycle. The crate root declares and re-exports every module,
//!   so edges into it are left out; `super::` paths stay in a file (tests) and are not followed.

use serde_json::Value;
use std::{
    collections::{BTreeMap, BTreeSet},
    path::PathBuf,
    process::Command,
};

const LAYERS_BEGIN: &str = "<!-- BEGIN layers -->";
const LAYERS_END: &str = "<!-- END layers -->";
const CRATES_BEGIN: &str = "<!-- BEGIN generated crates -->";
const CRATES_END: &str = "<!-- END generated crates -->";

/// Files of one crate that import each other (as `module_cycles` reports them, `package: a.rs <->
/// b.rs`), known and not yet untangled. An entry that no longer occurs fails the test, so the list
/// only shrinks.
const KNOWN_MODULE_CYCLES: &[&str] = &[];

/// One workspace package, as `cargo metadata` describes it.
#[derive(Debug)]
struct Package {
    /// Its directory, relative to the workspace root.
    path: String,
    description: String,
    /// Workspace packages it depends on (normal and build dependencies).
    uses: BTreeSet<String>,
    /// Workspace packages only its tests depend on.
    dev_uses: BTreeSet<String>,
}

fn root() -> PathBuf {
    bal_replay_test_utils::workspace_root(env!("CARGO_MANIFEST_DIR"))
        .canonicalize()
        .expect("the workspace root")
}

/// The workspace's `cargo metadata` (members only).
fn cargo_metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata's JSON")
}

fn workspace() -> BTreeMap<String, Package> {
    let metadata = cargo_metadata();
    let root = root();
    let packages = metadata["packages"].as_array().expect("packages");
    let names: BTreeSet<String> = packages
        .iter()
        .map(|p| p["name"].as_str().expect("name").to_string())
        .collect();
    packages
        .iter()
        .map(|p| {
            let manifest = PathBuf::from(p["manifest_path"].as_str().expect("manifest_path"));
            let dir = manifest.parent().expect("a manifest's directory");
            let path = dir
                .strip_prefix(&root)
                .expect("a member under the root")
                .display()
                .to_string();
            let (mut uses, mut dev_uses) = (BTreeSet::new(), BTreeSet::new());
            for dep in p["dependencies"].as_array().expect("dependencies") {
                let name = dep["name"].as_str().expect("dependency name").to_string();
                if !names.contains(&name) {
                    continue;
                }
                match dep["kind"].as_str() {
                    Some("dev") => dev_uses.insert(name),
                    _ => uses.insert(name),
                };
            }
            dev_uses.retain(|d| !uses.contains(d));
            let package = Package {
                path,
                description: p["description"].as_str().unwrap_or("").to_string(),
                uses,
                dev_uses,
            };
            (p["name"].as_str().expect("name").to_string(), package)
        })
        .collect()
}

fn doc_path() -> PathBuf {
    root().join("docs/architecture.md")
}

/// The text between `begin` and `end` (exclusive), and where it starts and ends in `doc`.
fn section<'a>(doc: &'a str, begin: &str, end: &str) -> (usize, usize, &'a str) {
    let start = doc
        .find(begin)
        .unwrap_or_else(|| panic!("docs/architecture.md has no {begin}"))
        + begin.len();
    let stop = start
        + doc[start..]
            .find(end)
            .unwrap_or_else(|| panic!("docs/architecture.md has no {end} after {begin}"));
    (start, stop, &doc[start..stop])
}

/// The hand-written layer table: rows `| <n> | <name> | `crate` `crate` ... |`.
fn layers(doc: &str) -> BTreeMap<String, (u32, String)> {
    let (_, _, text) = section(doc, LAYERS_BEGIN, LAYERS_END);
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.trim().trim_matches('|').split('|').collect();
        let Some(layer) = cells.first().and_then(|c| c.trim().parse::<u32>().ok()) else {
            continue;
        };
        let name = cells
            .get(1)
            .map(|c| c.trim().to_string())
            .unwrap_or_default();
        let crates = cells.last().expect("a row has cells");
        for krate in crates.split('`').skip(1).step_by(2) {
            let previous = out.insert(krate.to_string(), (layer, name.clone()));
            assert!(
                previous.is_none(),
                "{krate} is in two layers of docs/architecture.md"
            );
        }
    }
    assert!(
        !out.is_empty(),
        "docs/architecture.md's layer table is empty"
    );
    out
}

fn short(name: &str) -> &str {
    name.strip_prefix("bal-replay-").unwrap_or(name)
}

/// The generated section: the crate table, then the dependency picture.
fn generate(
    packages: &BTreeMap<String, Package>,
    layers: &BTreeMap<String, (u32, String)>,
) -> String {
    let mut rows: Vec<(&String, &Package)> = packages.iter().collect();
    rows.sort_by_key(|(name, p)| (layers.get(*name).map(|l| l.0), p.path.clone()));
    let list = |set: &BTreeSet<String>| {
        if set.is_empty() {
            "none".to_string()
        } else {
            set.iter().map(|d| short(d)).collect::<Vec<_>>().join(", ")
        }
    };
    let mut out = String::from(
        "\n| Layer | Path | Package | Job | Uses | Tests also use |\n|---|---|---|---|---|---|\n",
    );
    for (name, p) in &rows {
        let layer = layers
            .get(*name)
            .map_or("?".to_string(), |l| l.0.to_string());
        out += &format!(
            "| {layer} | `{}` | `{name}` | {} | {} | {} |\n",
            p.path,
            p.description,
            list(&p.uses),
            list(&p.dev_uses),
        );
    }
    out += "\n```mermaid\ngraph TD\n";
    for (name, p) in &rows {
        for dep in &p.uses {
            out += &format!("  {} --> {}\n", short(name), short(dep));
        }
    }
    out += "```\n";
    out
}

#[test]
fn every_crate_is_in_one_layer_and_uses_only_lower_layers() {
    let doc = std::fs::read_to_string(doc_path()).expect("read docs/architecture.md");
    let layers = layers(&doc);
    let packages = workspace();
    let mut problems = Vec::new();
    for name in packages.keys() {
        if !layers.contains_key(name) {
            problems.push(format!("{name} is in no layer of docs/architecture.md"));
        }
    }
    for name in layers.keys() {
        if !packages.contains_key(name) {
            problems.push(format!(
                "docs/architecture.md's layers name {name}, which is not a workspace package"
            ));
        }
    }
    for (name, p) in &packages {
        let Some((layer, layer_name)) = layers.get(name) else {
            continue;
        };
        for dep in &p.uses {
            if let Some((dep_layer, dep_layer_name)) = layers.get(dep)
                && dep_layer >= layer
            {
                problems.push(format!(
                    "{name} (layer {layer}, {layer_name}) depends on {dep} (layer {dep_layer}, \
                     {dep_layer_name}): a crate may use only lower layers"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn the_crate_table_and_picture_match_cargo_metadata() {
    let path = doc_path();
    let doc = std::fs::read_to_string(&path).expect("read docs/architecture.md");
    let expected = generate(&workspace(), &layers(&doc));
    let (start, stop, current) = section(&doc, CRATES_BEGIN, CRATES_END);
    if current == expected {
        return;
    }
    if std::env::var("BAL_REPLAY_BLESS").is_ok_and(|v| v == "1") {
        let updated = format!("{}{expected}{}", &doc[..start], &doc[stop..]);
        std::fs::write(&path, updated).expect("write docs/architecture.md");
        eprintln!("rewrote the generated crate table of {}", path.display());
        return;
    }
    panic!(
        "docs/architecture.md's crate table is not what cargo metadata says. Regenerate it with \
         BAL_REPLAY_BLESS=1 cargo test -p bal-replay-test-utils --test architecture\n\
         expected:\n{expected}\nfound:\n{current}"
    );
}

/// Rust source as tokens, comments and string and character literals left out: identifiers
/// (`$crate` is one), `::`, and every other character on its own.
fn tokens(source: &str) -> Vec<String> {
    let chars: Vec<char> = source.chars().collect();
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    let (mut out, mut i) = (Vec::new(), 0);
    while i < chars.len() {
        let c = chars[i];
        if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            loop {
                if at(i) == '/' && at(i + 1) == '*' {
                    (depth, i) = (depth + 1, i + 2);
                } else if at(i) == '*' && at(i + 1) == '/' {
                    (depth, i) = (depth - 1, i + 2);
                    if depth == 0 {
                        break;
                    }
                } else if i >= chars.len() {
                    break;
                } else {
                    i += 1;
                }
            }
        } else if let Some(hashes) = raw_string_start(&chars, i) {
            // r"..", r#".."#, br"..": ends at a quote followed by as many hashes.
            i += hashes.1;
            while i < chars.len() && !(chars[i] == '"' && (1..=hashes.0).all(|h| at(i + h) == '#'))
            {
                i += 1;
            }
            i += 1 + hashes.0;
        } else if c == '"' || (c == 'b' && at(i + 1) == '"') {
            i += if c == 'b' { 2 } else { 1 };
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c == '\'' && (at(i + 1) == '\\' || at(i + 2) == '\'') {
            // A character literal ('x', '\n', '\u{..}'); a lifetime ('a) has no closing quote.
            i += 2;
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            i += 1;
        } else if c.is_alphanumeric() || c == '_' || (c == '$' && at(i + 1).is_alphabetic()) {
            let start = i;
            i += 1;
            while at(i).is_alphanumeric() || at(i) == '_' {
                i += 1;
            }
            out.push(chars[start..i].iter().collect());
        } else if c == ':' && at(i + 1) == ':' {
            out.push("::".to_string());
            i += 2;
        } else {
            if !c.is_whitespace() {
                out.push(c.to_string());
            }
            i += 1;
        }
    }
    out
}

/// At a raw string's start (`r"`, `r#"`, `br#"`): its number of hashes and the length of its
/// opening.
fn raw_string_start(chars: &[char], i: usize) -> Option<(usize, usize)> {
    if i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_') {
        return None;
    }
    let mut j = i;
    if chars.get(j) == Some(&'b') {
        j += 1;
    }
    if chars.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let hashes = chars[j..].iter().take_while(|c| **c == '#').count();
    (chars.get(j + hashes) == Some(&'"')).then_some((hashes, j + hashes + 1 - i))
}

/// The paths a `use` tree starting at `tokens[*at]` names, each with the name it binds there:
/// `a::{b, c::d as e, self}` names `a::b` (b), `a::c::d` (e) and `a` (a). A glob binds `*`.
fn use_tree(
    tokens: &[String],
    at: &mut usize,
    mut path: Vec<String>,
    out: &mut Vec<(Vec<String>, String)>,
) {
    while let Some(token) = tokens.get(*at) {
        match token.as_str() {
            "{" => {
                *at += 1;
                while tokens.get(*at).is_some_and(|t| t != "}") {
                    let before = *at;
                    use_tree(tokens, at, path.clone(), out);
                    if tokens.get(*at).is_some_and(|t| t == ",") || *at == before {
                        *at += 1;
                    }
                }
                *at += 1;
                return;
            }
            "*" => {
                *at += 1;
                out.push((path, "*".to_string()));
                return;
            }
            t if t.starts_with(|c: char| c.is_alphabetic() || c == '_') => {
                path.push(t.to_string());
                *at += 1;
                if tokens.get(*at).is_some_and(|t| t == "::") {
                    *at += 1;
                } else {
                    break;
                }
            }
            _ => break,
        }
    }
    if path.last().is_some_and(|s| s == "self") {
        path.pop();
    }
    let mut name = path.last().cloned().unwrap_or_default();
    if tokens.get(*at).is_some_and(|t| t == "as") {
        name = tokens.get(*at + 1).cloned().unwrap_or_default();
        *at += 2;
    }
    out.push((path, name));
}

/// One file of a crate, as a module.
#[derive(Debug, Default)]
struct SourceFile {
    /// Relative to the package's directory.
    file: String,
    /// Its file modules (`mod x;`).
    children: BTreeSet<String>,
    /// What it re-exports (`pub use`, `pub(crate) use`): the bound name and the crate path it
    /// names.
    reexports: BTreeMap<String, Vec<String>>,
    /// Every crate path it names (without the leading `crate`).
    paths: Vec<Vec<String>>,
}

/// The crate path `path` names in the module at `module`, if it is in the crate (not a
/// dependency's, nor `super::`, which stays in the file).
fn in_crate(
    path: &[String],
    module: &[String],
    children: &BTreeSet<String>,
) -> Option<Vec<String>> {
    let first = path.first()?;
    match first.as_str() {
        "crate" => Some(path[1..].to_vec()),
        "self" => Some([module, &path[1..]].concat()),
        _ if children.contains(first) => Some([module, path].concat()),
        _ => None,
    }
}

/// Reads the file of the module at `module` and, recursively, those of its file modules.
fn read_modules(
    package_dir: &std::path::Path,
    file: PathBuf,
    module: Vec<String>,
    out: &mut BTreeMap<Vec<String>, SourceFile>,
) {
    let source =
        std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("read {}: {e}", file.display()));
    let tokens = tokens(&source);
    let mut this = SourceFile {
        file: file
            .strip_prefix(package_dir)
            .unwrap_or(&file)
            .display()
            .to_string(),
        ..SourceFile::default()
    };
    for i in 0..tokens.len() {
        if tokens[i] == "mod" && tokens.get(i + 2).is_some_and(|t| t == ";") {
            this.children.insert(tokens[i + 1].clone());
        }
    }
    let mut i = 0;
    while i < tokens.len() {
        if tokens[i] == "use" {
            let public = i >= 1 && tokens[i - 1] == "pub" || i >= 4 && tokens[i - 4] == "pub";
            let mut named = Vec::new();
            i += 1;
            use_tree(&tokens, &mut i, Vec::new(), &mut named);
            for (path, name) in named {
                let Some(path) = in_crate(&path, &module, &this.children) else {
                    continue;
                };
                if public && name != "*" {
                    this.reexports.insert(name, path.clone());
                }
                this.paths.push(path);
            }
        } else if tokens[i] == "crate" && tokens.get(i + 1).is_some_and(|t| t == "::") {
            let mut path = Vec::new();
            i += 2;
            while tokens
                .get(i)
                .is_some_and(|t| t.starts_with(char::is_alphabetic))
            {
                path.push(tokens[i].clone());
                i += if tokens.get(i + 1).is_some_and(|t| t == "::") {
                    2
                } else {
                    1
                };
            }
            this.paths.push(path);
        } else {
            i += 1;
        }
    }
    // A crate root's or mod.rs's modules sit beside it; foo.rs's in foo/.
    let stem = file
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    let dir = file
        .parent()
        .expect("a source file's directory")
        .to_path_buf();
    let dir = if module.is_empty() || stem == "mod" {
        dir
    } else {
        dir.join(stem)
    };
    let children = this.children.clone();
    out.insert(module.clone(), this);
    for child in children {
        let flat = dir.join(format!("{child}.rs"));
        let file = if flat.exists() {
            flat
        } else {
            dir.join(&child).join("mod.rs")
        };
        read_modules(
            package_dir,
            file,
            [module.clone(), vec![child]].concat(),
            out,
        );
    }
}

/// The module whose file defines what the crate path `path` reaches, re-exports followed.
fn defining_module(modules: &BTreeMap<Vec<String>, SourceFile>, path: &[String]) -> Vec<String> {
    let mut module = Vec::new();
    for (i, segment) in path.iter().enumerate() {
        let file = &modules[&module];
        if file.children.contains(segment) {
            module.push(segment.clone());
        } else if let Some(target) = file.reexports.get(segment)
            && target.as_slice() != &path[..=i]
        {
            return defining_module(modules, &[target.as_slice(), &path[i + 1..]].concat());
        } else {
            break;
        }
    }
    module
}

/// The cycles among the files of the library or binary rooted at `root`: for each, its files
/// (`a.rs <-> b.rs`) and the paths that make its edges.
fn module_cycles(package_dir: &std::path::Path, root: PathBuf) -> Vec<(String, String)> {
    let mut modules = BTreeMap::new();
    read_modules(package_dir, root, Vec::new(), &mut modules);
    // Edges between files, each with the first path that makes it.
    let mut edges: BTreeMap<&Vec<String>, BTreeMap<Vec<String>, String>> = BTreeMap::new();
    for (module, file) in &modules {
        for path in &file.paths {
            let target = defining_module(&modules, path);
            if !target.is_empty() && &target != module {
                edges
                    .entry(module)
                    .or_default()
                    .entry(target)
                    .or_insert_with(|| format!("crate::{}", path.join("::")));
            }
        }
    }
    let reaches = |from: &Vec<String>| {
        let (mut seen, mut todo) = (BTreeSet::new(), vec![from.clone()]);
        while let Some(m) = todo.pop() {
            for next in edges.get(&m).into_iter().flat_map(|e| e.keys()) {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let reach: BTreeMap<&Vec<String>, BTreeSet<Vec<String>>> =
        modules.keys().map(|m| (m, reaches(m))).collect();
    let mut cycles = BTreeMap::new();
    for module in modules.keys() {
        let members: Vec<&Vec<String>> = modules
            .keys()
            .filter(|m| reach[module].contains(*m) && reach[*m].contains(module))
            .collect();
        if members.len() < 2 {
            continue;
        }
        let files: Vec<&str> = members.iter().map(|m| modules[*m].file.as_str()).collect();
        let evidence: Vec<String> = members
            .iter()
            .flat_map(|m| {
                edges[*m]
                    .iter()
                    .filter(|(to, _)| members.contains(to))
                    .map(|(to, path)| {
                        format!("{} -> {} ({path})", modules[*m].file, modules[to].file)
                    })
            })
            .collect();
        cycles.insert(files.join(" <-> "), evidence.join(", "));
    }
    cycles.into_iter().collect()
}

#[test]
fn no_two_files_of_a_crate_import_each_other() {
    let metadata = cargo_metadata();
    let mut found = BTreeMap::new();
    for package in metadata["packages"].as_array().expect("packages") {
        let manifest = PathBuf::from(package["manifest_path"].as_str().expect("manifest_path"));
        let dir = manifest.parent().expect("a manifest's directory");
        for target in package["targets"].as_array().expect("targets") {
            let kinds = target["kind"].as_array().expect("kind");
            if !kinds.iter().any(|k| k == "lib" || k == "bin") {
                continue;
            }
            let root = PathBuf::from(target["src_path"].as_str().expect("src_path"));
            for (files, evidence) in module_cycles(dir, root) {
                let name = package["name"].as_str().expect("name");
                found.insert(format!("{name}: {files}"), evidence);
            }
        }
    }
    let mut problems: Vec<String> = found
        .iter()
        .filter(|(cycle, _)| !KNOWN_MODULE_CYCLES.contains(&cycle.as_str()))
        .map(|(cycle, evidence)| format!("{cycle} import each other: {evidence}"))
        .collect();
    for known in KNOWN_MODULE_CYCLES {
        if !found.contains_key(*known) {
            problems.push(format!(
                "{known} no longer import each other: take it off KNOWN_MODULE_CYCLES"
            ));
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}
