//! A dump or state `bal-dump` creates never lies inside a directory it reads, nor around one:
//! `seed-state <dump> --state <dump>/state`, `import-chain <dir> --out <dir>/dump` and
//! `import-fixture <dirs> --out <parent of them>` are refused before anything is read or
//! created, naming both paths.

use std::{path::Path, process::Command};

fn bal_dump(args: &[&Path]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_bal-dump"))
        .args(args)
        .output()
        .expect("run bal-dump");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn an_output_inside_an_input_or_around_one_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dump = tmp.path().join("dump");
    let fixtures = tmp.path().join("fixtures");
    std::fs::create_dir_all(fixtures.join("1")).unwrap();
    std::fs::create_dir(&dump).unwrap();
    std::fs::write(dump.join("manifest.json"), b"{}").unwrap();
    let p = Path::new;
    let state_in_dump = dump.join("state");
    let dump_in_fixtures = fixtures.join("dump");
    let other_state = tmp.path().join("state");
    let fixture = fixtures.join("1");
    let cases: [(Vec<&Path>, String); 3] = [
        (
            vec![p("seed-state"), &dump, p("--state"), &state_in_dump],
            format!(
                "--state {}: lies inside input {}",
                state_in_dump.display(),
                dump.display()
            ),
        ),
        (
            vec![
                p("import-chain"),
                &fixtures,
                p("--out"),
                &dump_in_fixtures,
                p("--state"),
                &other_state,
            ],
            format!(
                "--out {}: lies inside input {}",
                dump_in_fixtures.display(),
                fixtures.display()
            ),
        ),
        (
            vec![
                p("import-fixture"),
                &fixture,
                p("--out"),
                &fixtures,
                p("--state"),
                &other_state,
            ],
            format!(
                "input {}: lies inside --out {}",
                fixture.display(),
                fixtures.display()
            ),
        ),
    ];
    for (args, expected) in cases {
        let (ok, stderr) = bal_dump(&args);
        assert!(!ok, "{args:?} ran");
        assert!(stderr.contains(&expected), "{args:?}: {stderr}");
    }
    assert!(!state_in_dump.exists() && !dump_in_fixtures.exists() && !other_state.exists());
    assert_eq!(std::fs::read(dump.join("manifest.json")).unwrap(), b"{}");
}
