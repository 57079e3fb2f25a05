//! Records the Cargo profile the crate is built with (its output directory's name: `debug` for
//! dev, `release`, `measure`) and the engine's commit (git's HEAD, `-dirty` where a tracked file
//! differed from it), which every page names beside its figures.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let out = std::env::var("OUT_DIR").unwrap_or_default();
    // <target>/<profile>/build/<crate>-<hash>/out
    let profile = Path::new(&out)
        .ancestors()
        .nth(3)
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .map(|n| if n == "debug" { "dev" } else { n })
        .unwrap_or("unknown")
        .to_owned();
    println!("cargo:rustc-env=BAL_REPLAY_CARGO_PROFILE={profile}");
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    println!(
        "cargo:rustc-env=BAL_REPLAY_ENGINE_COMMIT={}",
        engine_commit(&manifest).unwrap_or_default()
    );
}

/// HEAD's commit, with `-dirty` where a tracked file differs from it; `None` outside a git
/// checkout (a source archive), where the pages say the commit was not recorded.
fn engine_commit(manifest: &Path) -> Option<String> {
    // `--no-optional-locks`: reading the status must not rewrite the index, which this script
    // watches, or every build would start the next one. `safe.directory`: a checkout owned by
    // another user than the build's (a CI runner's clone) still names its commit.
    let git = |args: &[&str]| {
        Command::new("git")
            .args(["--no-optional-locks", "-c", "safe.directory=*"])
            .args(args)
            .current_dir(manifest)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let head = git(&["rev-parse", "--short=12", "HEAD"])?;
    let git_dir = PathBuf::from(git(&["rev-parse", "--absolute-git-dir"])?);
    // A new commit moves HEAD or its branch; a staged change moves the index; an edit moves a
    // source file under the workspace's crates and binaries.
    let mut watched = vec![
        git_dir.join("HEAD"),
        git_dir.join("index"),
        git_dir.join("packed-refs"),
    ];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(git_dir.join(branch));
    }
    if let Some(root) = git(&["rev-parse", "--show-toplevel"]) {
        let root = PathBuf::from(root);
        watched.extend(["crates", "bin", "Cargo.lock"].map(|p| root.join(p)));
    }
    for path in watched.iter().filter(|p| p.exists()) {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|status| !status.is_empty());
    Some(if dirty { format!("{head}-dirty") } else { head })
}
