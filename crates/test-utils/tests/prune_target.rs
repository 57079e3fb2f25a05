//! `.ci/prune-target` deletes only in a target dir `.ci/run` made (its marker), and there only the
//! older builds of a target and incremental caches: never the newest build, another crate's
//! same-named test, a library, or anything outside the dir.

use std::{
    os::unix::fs::PermissionsExt,
    path::Path,
    process::Command,
    time::{Duration, SystemTime},
};

fn script() -> std::path::PathBuf {
    bal_replay_test_utils::package_dir(env!("CARGO_MANIFEST_DIR")).join("../../.ci/prune-target")
}

/// An executable `deps/<name>` built from `src`, `age_s` seconds old.
fn binary(deps: &Path, name: &str, src: &str, age_s: u64) {
    let path = deps.join(name);
    std::fs::write(&path, b"bin").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        deps.join(format!("{name}.d")),
        format!("{}: {src} Cargo.toml\n", path.display()),
    )
    .unwrap();
    let file = std::fs::File::options().write(true).open(&path).unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(age_s))
        .unwrap();
}

#[test]
fn prune_target_removes_only_older_builds_in_a_marked_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("target");
    let deps = target.join("debug/deps");
    std::fs::create_dir_all(&deps).unwrap();
    std::fs::create_dir_all(target.join("debug/incremental/x")).unwrap();
    binary(
        &deps,
        "chain-0000000000000001",
        "crates/exex/tests/chain.rs",
        300,
    );
    binary(
        &deps,
        "chain-0000000000000002",
        "crates/exex/tests/chain.rs",
        100,
    );
    // Another crate's test of the same name, older than both: a target of its own.
    binary(
        &deps,
        "chain-0000000000000003",
        "crates/synth/tests/chain.rs",
        900,
    );
    std::fs::write(deps.join("libchain-0000000000000001.rlib"), b"lib").unwrap();
    let outside = tmp.path().join("chain-0000000000000004");
    std::fs::write(&outside, b"not ours").unwrap();

    // No marker: a dir `.ci/run` did not make is refused and left whole.
    let unmarked = Command::new(script()).arg(&target).output().unwrap();
    assert!(!unmarked.status.success());
    assert!(String::from_utf8_lossy(&unmarked.stderr).contains("no .bal-replay-ci marker"));
    assert!(deps.join("chain-0000000000000001").exists());
    assert!(target.join("debug/incremental").exists());

    std::fs::write(target.join(".bal-replay-ci"), b"").unwrap();
    let marked = Command::new(script()).arg(&target).output().unwrap();
    assert!(marked.status.success(), "{marked:?}");
    let mut left: Vec<String> = std::fs::read_dir(&deps)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.ends_with(".d"))
        .collect();
    left.sort();
    assert_eq!(
        left,
        [
            "chain-0000000000000002",
            "chain-0000000000000003",
            "libchain-0000000000000001.rlib"
        ]
    );
    assert!(!target.join("debug/incremental").exists());
    assert!(outside.exists());
}
