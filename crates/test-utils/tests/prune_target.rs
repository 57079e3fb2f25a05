//! `.ci/prune-target` deletes only in a target dir `.ci/run` made (its marker) and this user owns,
//! and there only the older builds of a target and incremental caches: never the newest build,
//! another crate's same-named test, a library, or anything outside the dir, even through a symlink;
//! a path with a space in it is one path.

use std::{
    os::unix::fs::{MetadataExt, PermissionsExt},
    path::Path,
    process::{Command, Output},
    time::{Duration, SystemTime},
};

fn script() -> std::path::PathBuf {
    bal_replay_test_utils::workspace_root(env!("CARGO_MANIFEST_DIR")).join(".ci/prune-target")
}

fn prune(target: &Path) -> Output {
    Command::new(script()).arg(target).output().unwrap()
}

/// An executable `deps/<name>` built from `src`, `age_s` seconds old, with its dep-info written as
/// rustc writes it (make syntax: a space in a path escaped as `\ `).
fn binary(deps: &Path, name: &str, src: &str, age_s: u64) {
    let path = deps.join(name);
    std::fs::create_dir_all(deps).unwrap();
    std::fs::write(&path, b"bin").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let escape = |p: &str| p.replace(' ', "\\ ");
    std::fs::write(
        deps.join(format!("{name}.d")),
        format!(
            "{}: {} Cargo.toml\n",
            escape(&path.display().to_string()),
            escape(src)
        ),
    )
    .unwrap();
    let file = std::fs::File::options().write(true).open(&path).unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(age_s))
        .unwrap();
}

/// The names in `dir`, dep-info files left out, sorted.
fn builds(dir: &Path) -> Vec<String> {
    let mut left: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.ends_with(".d"))
        .collect();
    left.sort();
    left
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
    let unmarked = prune(&target);
    assert!(!unmarked.status.success());
    assert!(String::from_utf8_lossy(&unmarked.stderr).contains("no .bal-replay-ci marker"));
    assert!(deps.join("chain-0000000000000001").exists());
    assert!(target.join("debug/incremental").exists());

    std::fs::write(target.join(".bal-replay-ci"), b"").unwrap();
    let marked = prune(&target);
    assert!(marked.status.success(), "{marked:?}");
    assert_eq!(
        builds(&deps),
        [
            "chain-0000000000000002",
            "chain-0000000000000003",
            "libchain-0000000000000001.rlib"
        ]
    );
    assert!(!target.join("debug/incremental").exists());
    assert!(outside.exists());
}

#[test]
fn prune_target_never_reaches_outside_the_dir_through_a_symlink() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("target");
    std::fs::create_dir_all(&target).unwrap();
    std::fs::write(target.join(".bal-replay-ci"), b"").unwrap();
    // Elsewhere, a profile-like dir whose older build looks prunable, and an incremental cache.
    let elsewhere = tmp.path().join("elsewhere");
    let outside_deps = elsewhere.join("deps");
    binary(
        &outside_deps,
        "chain-0000000000000005",
        "crates/exex/tests/chain.rs",
        900,
    );
    binary(
        &outside_deps,
        "chain-0000000000000006",
        "crates/exex/tests/chain.rs",
        50,
    );
    std::fs::create_dir_all(elsewhere.join("incremental/x")).unwrap();
    // Reached three ways: a linked profile dir, a real profile dir with a linked deps, and a link
    // inside a real deps next to a newer build of the same name.
    std::os::unix::fs::symlink(&elsewhere, target.join("linked")).unwrap();
    std::fs::create_dir_all(target.join("linked-deps")).unwrap();
    std::os::unix::fs::symlink(&outside_deps, target.join("linked-deps/deps")).unwrap();
    let deps = target.join("debug/deps");
    binary(
        &deps,
        "chain-0000000000000007",
        "crates/exex/tests/chain.rs",
        10,
    );
    std::os::unix::fs::symlink(
        outside_deps.join("chain-0000000000000005"),
        deps.join("chain-0000000000000005"),
    )
    .unwrap();

    let out = prune(&target);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        builds(&outside_deps),
        ["chain-0000000000000005", "chain-0000000000000006"]
    );
    assert!(elsewhere.join("incremental/x").is_dir());
    assert_eq!(
        builds(&deps),
        ["chain-0000000000000005", "chain-0000000000000007"]
    );
}

#[test]
fn prune_target_takes_a_path_with_a_space_as_one_path() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("target");
    let deps = target.join("my profile/deps");
    binary(
        &deps,
        "spaced-0000000000000001",
        "crates/my crate/tests/spaced.rs",
        300,
    );
    binary(
        &deps,
        "spaced-0000000000000002",
        "crates/my crate/tests/spaced.rs",
        100,
    );
    // Same name, another crate whose path differs only after the space: a target of its own.
    binary(
        &deps,
        "spaced-0000000000000003",
        "crates/my other/tests/spaced.rs",
        900,
    );
    std::fs::create_dir_all(target.join("my profile/incremental/x")).unwrap();
    std::fs::write(target.join(".bal-replay-ci"), b"").unwrap();

    let out = prune(&target);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        builds(&deps),
        ["spaced-0000000000000002", "spaced-0000000000000003"]
    );
    assert!(!target.join("my profile/incremental").exists());
}

#[test]
fn prune_target_refuses_a_dir_another_user_owns() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("target");
    let deps = target.join("debug/deps");
    binary(&deps, "chain-0000000000000001", "tests/chain.rs", 300);
    binary(&deps, "chain-0000000000000002", "tests/chain.rs", 100);
    std::fs::create_dir_all(target.join("debug/incremental/x")).unwrap();
    std::fs::write(target.join(".bal-replay-ci"), b"").unwrap();
    // Only root can give a dir away; CI runs as root. Anyone else checks the refusal on `/`
    // (root's), without files of its own in it to see survive.
    let refused = if std::fs::metadata(&target).unwrap().uid() == 0 {
        const NOBODY: u32 = 65534;
        std::os::unix::fs::chown(&target, Some(NOBODY), None).unwrap();
        target.clone()
    } else {
        Path::new("/").to_path_buf()
    };

    let out = prune(&refused);
    assert!(!out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is not owned by"), "{stderr}");
    assert_eq!(
        builds(&deps),
        ["chain-0000000000000001", "chain-0000000000000002"]
    );
    assert!(target.join("debug/incremental/x").is_dir());
}

/// A binary and its own unit-test harness (both from `src/main.rs`, one name) are two targets:
/// cargo's fingerprint dir of the harness holds `test-bin-<name>`, and the older of the two is
/// kept; an older build of the binary itself is not.
#[test]
fn prune_target_keeps_a_binary_and_its_test_harness_apart() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("target");
    let deps = target.join("debug/deps");
    std::fs::create_dir_all(&deps).unwrap();
    std::fs::write(target.join(".bal-replay-ci"), b"").unwrap();
    let fingerprint = |hash: &str, file: &str| {
        let dir = target.join(format!("debug/.fingerprint/bal-dump-{hash}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(file), b"").unwrap();
    };
    // The harness, then the binary built a little later, then an older build of the binary.
    binary(
        &deps,
        "bal_dump-00000000000000a1",
        "bin/bal-dump/src/main.rs",
        200,
    );
    fingerprint("00000000000000a1", "test-bin-bal-dump");
    binary(
        &deps,
        "bal_dump-00000000000000b2",
        "bin/bal-dump/src/main.rs",
        100,
    );
    fingerprint("00000000000000b2", "bin-bal-dump");
    binary(
        &deps,
        "bal_dump-00000000000000c3",
        "bin/bal-dump/src/main.rs",
        900,
    );
    fingerprint("00000000000000c3", "bin-bal-dump");
    let pruned = prune(&target);
    assert!(pruned.status.success(), "{pruned:?}");
    assert_eq!(
        builds(&deps),
        ["bal_dump-00000000000000a1", "bal_dump-00000000000000b2"]
    );
}
