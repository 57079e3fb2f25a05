//! What the binary says agrees with itself: `run`'s regime word with the share printed beside it,
//! a study of one repeat prints no range its runs never had and counts its runs left so that they
//! add up, a study's title stays one heading, and `--dump`'s help is right for each command.

mod common;

use bal_replay_synth::GeneratorConfig;
use common::{assert_ok, bal_replay, copy_state};
use std::path::{Path, PathBuf};

/// A small generated chain: the dump and a pristine state.
fn chain(dir: &Path) -> (PathBuf, PathBuf) {
    let config = GeneratorConfig {
        blocks: 4,
        accounts: 1_000,
        holders_per_token: 100,
        seed: 11,
        gas_per_block: 2_000_000,
        ..GeneratorConfig::default()
    };
    common::chain(dir, &config)
}

/// The percentage before `marker` in `text` ("3% of block lookups" -> 3).
fn percent_before(text: &str, marker: &str) -> Option<u32> {
    let at = text.find(marker)?;
    let digits: String = text[..at]
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.chars().rev().collect::<String>().parse().ok()
}

/// `run`'s line on where its reads were served from names the regime with the share that decided
/// it, on the rule's side the share fell ("cache-resident (>= 80% of block lookups reached the
/// device; ... 0% reached the device)" read as a contradiction). With direct reads and a block
/// cache of 64 KiB, RocksDB counts the block lookups, so a share is printed.
#[test]
fn run_says_its_regime_on_the_side_of_the_rule_its_share_fell() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump, pristine) = chain(tmp.path());
    let state = tmp.path().join("state");
    copy_state(&pristine, &state);
    for extra in [&[][..], &["--block-cache", "64KiB"][..]] {
        let out = bal_replay()
            .args(["run", "--dump"])
            .arg(&dump)
            .arg("--state")
            .arg(&state)
            .args(["--rewind", "--batch", "2", "--threads", "1"])
            .args(extra)
            .output()
            .unwrap();
        let stdout = assert_ok(&out, "run");
        let line = stdout
            .lines()
            .find(|l| l.starts_with("reads: "))
            .unwrap_or_else(|| panic!("no reads line: {stdout}"));
        assert!(!line.contains(">= 80%"), "{line}");
        let share = percent_before(line, "% of block lookups reached the device");
        if line.contains("; cache-resident (") {
            let share = share.unwrap_or_else(|| panic!("no share: {line}"));
            assert!(share < 80 && line.contains("under 80%"), "{line}");
        } else if line.contains("; disk-resident (") {
            let share = share.unwrap_or_else(|| panic!("no share: {line}"));
            assert!(share >= 80 && line.contains("at least 80%"), "{line}");
        } else {
            assert!(
                share.is_none()
                    && (line.contains("regime unknown") || line.ends_with("reads no state")),
                "{line}"
            );
        }
    }
}

/// A study of one repeat each: its answer and page give each share alone, with no range
/// "0.44-0.44" the runs never had; its estimate's counts add up to its runs ("10 runs took 4
/// min: the 29 left" of 40); a title with a newline is refused before anything runs; and
/// `--dump`'s help in `study` and `run` no longer says they are not `study` and `run`.
#[test]
fn a_study_of_one_repeat_says_what_it_ran() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump, state) = chain(tmp.path());
    let out_dir = tmp.path().join("study");
    let study = |extra: &[&str]| {
        bal_replay()
            .args(["study", "--dump"])
            .arg(&dump)
            .arg("--state")
            .arg(&state)
            .arg("--out")
            .arg(&out_dir)
            .args([
                "--repeat",
                "1",
                "--threads",
                "1",
                "--batch",
                "1,2",
                "--no-fio",
                "--no-sweep",
            ])
            .args(extra)
            .output()
            .unwrap()
    };

    let refused = study(&["--title", "my chain\n# not a heading"]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("a title is one line of text, and this one holds '\\n'"),
        "{stderr}"
    );
    assert!(
        !out_dir.exists(),
        "a refused study made {}",
        out_dir.display()
    );

    let out = study(&["--title", "my chain"]);
    let stdout = assert_ok(&out, "study");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let page = std::fs::read_to_string(out_dir.join("findings.md")).unwrap();
    assert!(page.starts_with("# Findings: my chain\n"), "{page}");
    for text in [stdout.as_str(), page.as_str()] {
        assert!(no_degenerate_range(text), "{text}");
    }
    assert!(stdout.contains("of full BAL's throughput"), "{stdout}");

    // "study: 6 of 11 runs done; the 5 after the first (...) took 1.2 s: the 5 left take ..."
    let estimate = stderr
        .lines()
        .find(|l| l.contains(" runs done; "))
        .unwrap_or_else(|| panic!("no estimate: {stderr}"));
    let words: Vec<&str> = estimate.split_whitespace().collect();
    let number_before = |word: &str| -> u64 {
        let at = words.iter().position(|w| *w == word).unwrap();
        words[at - 1].parse().unwrap()
    };
    let done: u64 = words[1].parse().unwrap();
    let runs: u64 = words[3].parse().unwrap();
    let left = number_before("left");
    assert_eq!(done + left, runs, "{estimate}");

    for command in ["study", "run"] {
        let help = bal_replay().args([command, "--help"]).output().unwrap();
        let help = String::from_utf8(help.stdout).unwrap();
        let dump_line = help
            .lines()
            .find(|l| l.trim_start().starts_with("--dump <DIR>"))
            .unwrap_or_else(|| panic!("{help}"));
        assert!(
            dump_line.contains("Dump directory: a chain (independent blocks are for `bench`)"),
            "{command}: {dump_line}"
        );
    }
}

/// Whether `text` holds no range whose ends print the same ("0.44-0.44").
fn no_degenerate_range(text: &str) -> bool {
    let share = |w: &[u8]| {
        w[1] == b'.'
            && w.iter()
                .enumerate()
                .all(|(k, c)| k == 1 || c.is_ascii_digit())
    };
    text.as_bytes()
        .windows(9)
        .all(|w| !(w[4] == b'-' && share(&w[..4]) && w[..4] == w[5..]))
}
