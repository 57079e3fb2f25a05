//! The demo as a new user runs it: its first screen ends with the answer, the regime it states is
//! the one its own page measured, and its page is left in a fresh directory it names, with the
//! chain it generated removed.

use std::{path::PathBuf, process::Command};

#[test]
fn demo_ends_with_the_answer_and_the_regime_its_page_measured() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_bal-replay"))
        .args(["demo", "--blocks", "4", "--threads", "1,2", "--batch", "1"])
        .env("TMPDIR", tmp.path())
        .env("NO_COLOR", "1")
        .output()
        .expect("run bal-replay demo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "demo failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines.len() <= 15,
        "the demo's screen is {} lines:\n{stdout}",
        lines.len()
    );
    let answer = lines
        .iter()
        .find(|l| l.starts_with("On this "))
        .unwrap_or_else(|| panic!("no answer in:\n{stdout}"));
    assert!(answer.contains("of full BAL's throughput"), "{answer}");
    assert!(answer.contains("parallel I/O keeps 0."), "{answer}");

    // The page it names lies in a fresh directory under TMPDIR, and holds the same answer.
    let page = lines
        .iter()
        .find_map(|l| l.strip_prefix("findings: "))
        .and_then(|l| l.split(" (from ").next())
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("no findings line in:\n{stdout}"));
    assert!(page.starts_with(tmp.path()), "{}", page.display());
    let text = std::fs::read_to_string(&page).unwrap();
    assert!(text.contains(answer.trim()), "the page's answer differs");

    // The regime sentence agrees with the page's own (the study's measured residency).
    let cache_resident_page = answer.contains(", cache-resident (");
    let says_cache_resident = stdout.contains("the figures above are cache-resident");
    assert_eq!(
        cache_resident_page, says_cache_resident,
        "the closing regime contradicts the page:\n{stdout}"
    );
    assert!(
        stdout
            .trim_end()
            .ends_with("bal-replay study --dump D --state S --out DIR")
    );

    // Only the page's directory is left: the generated chain and its state are gone.
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left.len(), 1, "left behind: {left:?}");
    assert!(left[0].starts_with("bal-replay-demo."), "{left:?}");
}
