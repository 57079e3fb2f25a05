//! The RocksDB state `bal-migrate` writes never lies inside the reth datadir it reads (`--dst`
//! inside `--src`), nor a `gen-source --out` inside its `--from-state`: refused before anything
//! is opened or created, naming both paths.

use std::process::Command;

#[test]
fn a_destination_inside_the_source_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("reth");
    std::fs::create_dir_all(src.join("db")).unwrap();
    let dst = src.join("rocks");
    let out = Command::new(env!("CARGO_BIN_EXE_bal-migrate"))
        .arg("--src")
        .arg(&src)
        .arg("--dst")
        .arg(&dst)
        .output()
        .unwrap();
    assert!(!out.status.success(), "migrated into its source");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "--dst {}: lies inside --src {}",
            dst.display(),
            src.display()
        )),
        "{stderr}"
    );
    assert!(!dst.exists());

    let state = tmp.path().join("state");
    std::fs::create_dir(&state).unwrap();
    let inside = state.join("mdbx");
    let out = Command::new(env!("CARGO_BIN_EXE_bal-migrate"))
        .arg("gen-source")
        .arg("--out")
        .arg(&inside)
        .arg("--from-state")
        .arg(&state)
        .output()
        .unwrap();
    assert!(!out.status.success(), "wrote into its --from-state");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "--out {}: lies inside --from-state {}",
            inside.display(),
            state.display()
        )),
        "{stderr}"
    );
    assert!(!inside.exists());
}
