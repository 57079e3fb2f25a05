//! What a command writes never takes what it did not write. A study's `--out` is its own only
//! where its `study.json` lists every file there with the hash it has: a file it does not list,
//! or lists with another hash, makes the study refuse the directory before any run, and so does
//! a manifest that lists nothing beside a user's files. `--out` is locked while a study writes
//! it, and a study killed while landing its files is run again into the same `--out`. No output
//! of any command is one of its inputs or lies inside `--dump` or `--state`, and `report --out`
//! follows the study's rule with a manifest of its own.

mod common;

use bal_replay_synth::{GeneratorConfig, generate};
use common::{assert_ok, bal_replay};
use std::{
    path::{Path, PathBuf},
    process::Output,
};

/// A chain of 3 small blocks in `dir`: its dump and its state.
fn small_chain(dir: &Path) -> (PathBuf, PathBuf) {
    let (dump, state) = (dir.join("dump"), dir.join("state"));
    let config = GeneratorConfig {
        blocks: 3,
        seed: 7,
        accounts: 300,
        holders_per_token: 30,
        gas_per_block: 1_500_000,
        ..GeneratorConfig::default()
    };
    generate(&config, &dump, &state, None).unwrap();
    (dump, state)
}

/// `bal-replay study` of the smallest shape (one worker, batch 1, one run each, no fio) into
/// `out`, with `extra` arguments.
fn study(dump: &Path, state: &Path, out: &Path, extra: &[&str]) -> Output {
    bal_replay()
        .args(["study", "--dump"])
        .arg(dump)
        .arg("--state")
        .arg(state)
        .arg("--out")
        .arg(out)
        .args(["--quick", "--threads", "1", "--batch", "1", "--repeat", "1"])
        .args(["--no-fio"])
        .args(extra)
        .output()
        .unwrap()
}

/// The command's stderr, after asserting it failed.
fn assert_refused(out: &Output, what: &str) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "{what} ran: {}\n{stderr}",
        String::from_utf8_lossy(&out.stdout)
    );
    stderr
}

/// Every entry of `dir` with its bytes (a directory's as empty), by name.
fn contents(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap_or_default())
        })
        .collect();
    entries.sort();
    entries
}

fn names(dir: &Path) -> Vec<String> {
    contents(dir).into_iter().map(|(name, _)| name).collect()
}

fn copy_files(from: &Path, to: &Path, files: &[&str]) {
    std::fs::create_dir_all(to).unwrap();
    for file in files {
        std::fs::copy(from.join(file), to.join(file)).unwrap();
    }
}

const STUDY_FILES: [&str; 5] = [
    "bench.json",
    "findings.md",
    "frontier.svg",
    "read-cost.svg",
    "study.json",
];

#[test]
fn a_study_takes_only_the_files_its_manifest_lists() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump, state) = small_chain(tmp.path());
    let out = tmp.path().join("out");
    assert_ok(&study(&dump, &state, &out, &[]), "the first study");
    assert_eq!(names(&out), STUDY_FILES);

    // A disk table of the user's, which the study's manifest does not list: refused, kept.
    std::fs::write(out.join("disk.txt"), b"my disk table").unwrap();
    let before = contents(&out);
    let stderr = assert_refused(&study(&dump, &state, &out, &[]), "a study over disk.txt");
    assert!(
        stderr.contains(&format!(
            "--out {}: holds disk.txt that no study wrote (its study.json does not list it)",
            out.display()
        )),
        "{stderr}"
    );
    assert_eq!(contents(&out), before);

    // Named as the study's input: refused as such, before the directory is looked at.
    let table = out.join("disk.txt");
    let stderr = assert_refused(
        &study(
            &dump,
            &state,
            &out,
            &["--disk-table", table.to_str().unwrap()],
        ),
        "a study whose --disk-table is in --out",
    );
    assert!(
        stderr.contains(&format!(
            "--disk-table {}: lies inside --out {}",
            table.display(),
            out.display()
        )),
        "{stderr}"
    );
    assert_eq!(contents(&out), before);
    std::fs::remove_file(&table).unwrap();

    // The page, edited by the user since: its hash is not the manifest's.
    let page = out.join("findings.md");
    let mut edited = std::fs::read(&page).unwrap();
    edited.extend_from_slice(b"\nMy notes on these findings.\n");
    std::fs::write(&page, &edited).unwrap();
    let before = contents(&out);
    let stderr = assert_refused(
        &study(&dump, &state, &out, &[]),
        "a study over an edited page",
    );
    assert!(
        stderr.contains(
            "findings.md changed since the study wrote it (not the hash its study.json lists)"
        ),
        "{stderr}"
    );
    assert_eq!(contents(&out), before);

    // A manifest that lists nothing does not make a user's directory the study's.
    let mine = tmp.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("notes.txt"), b"my notes").unwrap();
    std::fs::write(mine.join("bench.json"), b"{\"mine\": true}").unwrap();
    std::fs::write(
        mine.join("study.json"),
        br#"{"written_by":"bal-replay study","files":[]}"#,
    )
    .unwrap();
    let before = contents(&mine);
    let stderr = assert_refused(
        &study(&dump, &state, &mine, &[]),
        "a study over a planted manifest",
    );
    assert!(
        stderr.contains("holds bench.json, notes.txt that no study wrote"),
        "{stderr}"
    );
    assert_eq!(contents(&mine), before);
}

/// The lock a study holds on `--out`, taken here as a study writing into it would hold it.
#[test]
fn a_second_study_into_an_out_being_written_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump, state) = small_chain(tmp.path());
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let held = std::fs::File::open(&out).unwrap();
    held.try_lock().unwrap();
    let stderr = assert_refused(
        &study(&dump, &state, &out, &[]),
        "a study into a held --out",
    );
    assert!(
        stderr.contains(&format!(
            "--out {}: another study is writing into it now",
            out.display()
        )),
        "{stderr}"
    );
    assert!(names(&out).is_empty());
    drop(held);
    assert_ok(
        &study(&dump, &state, &out, &[]),
        "the study once the lock is free",
    );
    assert_eq!(names(&out), STUDY_FILES);
}

/// A first study into a new `--out`, killed while landing: two files moved into place, the rest
/// and its manifest still in its staging directory.
#[test]
fn a_study_killed_while_landing_is_run_again_into_its_out() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump, state) = small_chain(tmp.path());
    let done = tmp.path().join("done");
    assert_ok(&study(&dump, &state, &done, &[]), "the study copied from");
    let out = tmp.path().join("out");
    copy_files(&done, &out, &["bench.json", "frontier.svg"]);
    let staging = out.join(".study-staging.k1Lld");
    copy_files(&done, &staging, &["findings.md", "study.json"]);

    let again = study(&dump, &state, &out, &[]);
    assert_ok(&again, "the study run again");
    assert_eq!(names(&out), STUDY_FILES);
    let manifest = std::fs::read_to_string(out.join("study.json")).unwrap();
    for file in ["bench.json", "findings.md", "frontier.svg"] {
        assert!(
            manifest.contains(&format!("\"name\": \"{file}\"")),
            "{manifest}"
        );
    }

    // Killed before it landed anything: what the earlier study wrote is its own still.
    let staging = out.join(".study-staging.x2Qa9");
    std::fs::create_dir(&staging).unwrap();
    std::fs::write(staging.join("findings.md"), b"half a page").unwrap();
    assert_ok(
        &study(&dump, &state, &out, &[]),
        "the study after a kill before landing",
    );
    assert_eq!(names(&out), STUDY_FILES);

    // A directory named as a staging one but holding a directory is not the study's.
    let foreign = out.join(".study-staging.mine");
    std::fs::create_dir_all(foreign.join("photos")).unwrap();
    let stderr = assert_refused(
        &study(&dump, &state, &out, &[]),
        "a study over a user's directory",
    );
    assert!(
        stderr.contains("holds .study-staging.mine that no study wrote"),
        "{stderr}"
    );
    assert!(foreign.join("photos").is_dir());
}

/// Commands whose output is one of their inputs or lies inside one, each with the error it must
/// give: the files `dir` holds (prof.json, fio.txt, results/in.json), the dump and the state.
fn clashing_commands(dir: &Path, dump: &Path, state: &Path) -> Vec<(Vec<String>, String)> {
    let at = |name: &str| dir.join(name);
    let p = |path: &Path| path.to_str().unwrap().to_owned();
    let (dump_arg, state_arg) = (p(dump), p(state));
    let relative_manifest = format!("{}/./../dump/manifest.json", dump_arg);
    vec![
        (
            vec![
                "project".into(),
                p(&at("prof.json")),
                "--disk-table".into(),
                p(&at("fio.txt")),
                "--json".into(),
                p(&at("prof.json")),
            ],
            format!(
                "--json {}: is the file input {} names",
                p(&at("prof.json")),
                p(&at("prof.json"))
            ),
        ),
        (
            vec![
                "bench".into(),
                "--dump".into(),
                dump_arg.clone(),
                "--state".into(),
                state_arg.clone(),
                "--disk-table".into(),
                p(&at("fio.txt")),
                "--json".into(),
                p(&at("fio.txt")),
            ],
            format!(
                "--json {}: is the file --disk-table {} names",
                p(&at("fio.txt")),
                p(&at("fio.txt"))
            ),
        ),
        (
            vec![
                "run".into(),
                "--rewind".into(),
                "--dump".into(),
                dump_arg.clone(),
                "--state".into(),
                state_arg.clone(),
                "--json".into(),
                relative_manifest.clone(),
            ],
            format!("--json {relative_manifest}: lies inside --dump {dump_arg}"),
        ),
        (
            vec![
                "bench-db".into(),
                "--db".into(),
                state_arg.clone(),
                "--reads".into(),
                "10".into(),
                "--json".into(),
                format!("{state_arg}/reads.json"),
            ],
            format!("--json {state_arg}/reads.json: lies inside --db {state_arg}"),
        ),
        (
            vec![
                "study".into(),
                "--dump".into(),
                dump_arg.clone(),
                "--state".into(),
                state_arg.clone(),
                "--out".into(),
                format!("{state_arg}/page"),
                "--no-fio".into(),
            ],
            format!("--out {state_arg}/page: lies inside --state {state_arg}"),
        ),
        (
            vec![
                "report".into(),
                p(&at("results/in.json")),
                "--out".into(),
                p(&at("results")),
            ],
            format!(
                "input {}: lies inside --out {}",
                p(&at("results/in.json")),
                p(&at("results"))
            ),
        ),
    ]
}

/// `project prof.json --json prof.json`, `bench --disk-table fio.txt --json fio.txt`, `run
/// --rewind --json <dump>/manifest.json` and the like are refused before any work, naming both
/// paths, and leave the input as it was.
#[test]
fn no_output_is_an_input_or_inside_the_dump_or_the_state() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump, state) = small_chain(tmp.path());
    let at = |name: &str| tmp.path().join(name);
    std::fs::write(at("prof.json"), b"{\"the user's\": \"profile\"}").unwrap();
    std::fs::write(at("fio.txt"), b"depth iops mean_latency_us\n1 100 10.0\n").unwrap();
    std::fs::create_dir(at("results")).unwrap();
    std::fs::write(at("results/in.json"), b"{}").unwrap();
    let manifest = dump.join("manifest.json");
    let manifest_before = std::fs::read(&manifest).unwrap();
    let cases = clashing_commands(tmp.path(), &dump, &state);
    for (args, expected) in cases {
        let out = bal_replay().args(&args).output().unwrap();
        let stderr = assert_refused(&out, &args.join(" "));
        assert!(stderr.contains(&expected), "{args:?}: {stderr}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "", "{args:?} printed");
    }
    assert_eq!(std::fs::read(&manifest).unwrap(), manifest_before);
    assert_eq!(
        std::fs::read(at("prof.json")).unwrap(),
        b"{\"the user's\": \"profile\"}"
    );
    assert!(
        std::fs::read_to_string(at("fio.txt"))
            .unwrap()
            .starts_with("depth iops")
    );
    assert!(!state.join("reads.json").exists() && !state.join("page").exists());
    assert_eq!(names(&at("results")), ["in.json"]);
}

/// `report --out` into a directory of the user's is refused, its files as they were; into a
/// new one it writes its manifest, a report again there replaces its own files, and a file of
/// it edited since is no longer its own.
#[test]
fn a_report_writes_only_into_a_directory_of_its_own() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump, state) = small_chain(tmp.path());
    let page = tmp.path().join("page");
    assert_ok(
        &study(&dump, &state, &page, &[]),
        "the study whose runs are drawn",
    );
    let bench = tmp.path().join("bench.json");
    std::fs::copy(page.join("bench.json"), &bench).unwrap();
    let report = |out: &Path| {
        bal_replay()
            .arg("report")
            .arg(&bench)
            .arg("--out")
            .arg(out)
            .output()
            .unwrap()
    };

    let mine = tmp.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("report.md"), b"# My report").unwrap();
    std::fs::write(mine.join("notes.txt"), b"my notes").unwrap();
    let before = contents(&mine);
    let stderr = assert_refused(&report(&mine), "a report over the user's report.md");
    assert!(
        stderr.contains(&format!(
            "--out {}: holds notes.txt, report.md that no report wrote (its report-files.json does not list them)",
            mine.display()
        )),
        "{stderr}"
    );
    assert_eq!(contents(&mine), before);

    let charts = tmp.path().join("charts");
    let first = assert_ok(&report(&charts), "the first report");
    assert!(
        first.contains(&format!("wrote {}", charts.join("report.md").display())),
        "{first}"
    );
    let written = names(&charts);
    assert!(
        written.contains(&"report-files.json".to_owned()),
        "{written:?}"
    );
    assert!(written.contains(&"report.md".to_owned()), "{written:?}");
    // Again into its own directory: replaced, nothing else there.
    assert_ok(&report(&charts), "the report again");
    assert_eq!(names(&charts), written);
    // Edited since: no longer the report's to replace.
    std::fs::write(charts.join("report.md"), b"# Edited").unwrap();
    let stderr = assert_refused(&report(&charts), "a report over an edited report.md");
    assert!(
        stderr.contains("report.md changed since the report wrote it"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(charts.join("report.md")).unwrap(),
        b"# Edited"
    );
}
