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
    bal_replay_test_utils::package_dir(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace root")
}

fn workspace() -> BTreeMap<String, Package> {
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
    let metadata: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata's JSON");
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
