//! Where a study writes: only into a new or empty directory or over its own earlier outputs,
//! checked before the first run; never over the runs it read (`--from-bench`); a disk table the
//! user gave kept apart from a measured one; and runs of one dump never paired with another's.

use bal_replay_study::{
    DISK_TABLE, GIVEN_DISK_TABLE, MANIFEST, StudyError, StudyManifest, StudyOptions,
    outputs::OutputFile, run_study,
};
use bal_replay_synth::{GeneratorConfig, generate};
use std::{
    num::NonZeroUsize,
    os::unix::fs::MetadataExt,
    path::{Path, PathBuf},
};

/// A generated chain of 3 blocks, and options for the smallest study of it (one worker, batch
/// 1, one repeat, no fio) into `<dir>/out`.
fn chain(dir: &Path, seed: u64) -> (PathBuf, PathBuf, StudyOptions) {
    let (dump, state) = (
        dir.join(format!("dump-{seed}")),
        dir.join(format!("state-{seed}")),
    );
    let config = GeneratorConfig {
        blocks: 3,
        seed,
        accounts: 300,
        holders_per_token: 30,
        gas_per_block: 1_500_000,
        ..GeneratorConfig::default()
    };
    generate(&config, &dump, &state, None).unwrap();
    let one = NonZeroUsize::MIN;
    let options = StudyOptions {
        quick: true,
        threads: Some(vec![one]),
        batches: Some(vec![one]),
        repeat: Some(one),
        fio: false,
        disk: None,
        out: dir.join("out"),
        command: "bal-replay study (test)".into(),
        title: None,
        from_bench: None,
        beside: None,
        drop_caches: false,
        sweep: false,
    };
    (dump, state, options)
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn an_out_dir_that_is_not_a_studys_is_refused_before_any_run() {
    let dir = tempfile::tempdir().unwrap();
    let (dump, state, options) = chain(dir.path(), 1);
    // A user's directory, with a file of a study's name among its own.
    let out = dir.path().join("mine");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("notes.txt"), b"my notes").unwrap();
    std::fs::write(out.join("bench.json"), b"{\"mine\": true}").unwrap();
    let mut runs = 0;
    let refused = |out: &Path, runs: &mut u32| {
        let options = StudyOptions {
            out: out.to_path_buf(),
            ..options.clone()
        };
        run_study(&dump, &state, &options, |_| *runs += 1)
            .unwrap_err()
            .to_string()
    };
    let error = refused(&out, &mut runs);
    assert!(
        error.contains("bench.json, notes.txt") && error.contains(&out.display().to_string()),
        "{error}"
    );
    assert_eq!(std::fs::read(out.join("notes.txt")).unwrap(), b"my notes");
    assert_eq!(
        std::fs::read(out.join("bench.json")).unwrap(),
        b"{\"mine\": true}"
    );
    assert_eq!(names(&out), ["bench.json", "notes.txt"]);

    // Under a file: refused before the first run, the file as it was.
    let file = dir.path().join("afile");
    std::fs::write(&file, b"a file").unwrap();
    let error = refused(&file.join("out"), &mut runs);
    assert!(error.contains("afile/out"), "{error}");
    assert_eq!(std::fs::read(&file).unwrap(), b"a file");

    // A link to a directory is not written through.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&empty, &link).unwrap();
    let error = refused(&link, &mut runs);
    assert!(error.contains("symbolic link"), "{error}");
    assert_eq!(runs, 0);
    assert!(names(&empty).is_empty());
}

#[test]
fn a_studys_own_outputs_are_replaced_and_its_runs_never_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let (dump, state, options) = chain(dir.path(), 1);
    let out = options.out.clone();
    let first = run_study(&dump, &state, &options, |_| {}).unwrap();
    assert_eq!(
        names(&out),
        [
            "bench.json",
            "findings.md",
            "frontier.svg",
            "read-cost.svg",
            "study.json"
        ]
    );
    // The page names the engine that ran its runs: this build's commit.
    let page = std::fs::read_to_string(&first.page).unwrap();
    let commit = bal_replay_bench::engine_commit().expect("built inside a git checkout");
    assert!(
        page.contains(&format!("build of engine commit {commit}, 3 blocks,")),
        "{page}"
    );
    // As fio would have: a table measured with these runs, listed in the study's manifest.
    let measured = "depth iops mean_latency_us\n1 12000 83.0\n4 40000 100.0\n16 90000 178.0\n64 110000 580.0\n";
    list_as_measured(&out, measured);
    let bench_id = |path: &Path| {
        let meta = std::fs::metadata(path).unwrap();
        (meta.ino(), meta.mtime_nsec(), std::fs::read(path).unwrap())
    };
    let runs_before = bench_id(&first.bench_json);

    // The page again, in the runs' own directory, with a what-if disk: the runs and the measured
    // table are left as they are, the given table is kept apart, and the page says which.
    let what_if = dir.path().join("what-if.txt");
    std::fs::write(
        &what_if,
        "depth iops mean_latency_us\n1 1000 900.0\n4 3000 1200.0\n16 5000 3000.0\n64 6000 9000.0\n",
    )
    .unwrap();
    let again = StudyOptions {
        from_bench: Some(first.bench_json.clone()),
        title: Some("again".into()),
        ..options.clone()
    };
    let given = StudyOptions {
        disk: Some(what_if.clone()),
        ..again.clone()
    };
    let output = run_study(&dump, &state, &given, |_| panic!("replayed")).unwrap();
    assert_eq!(bench_id(&first.bench_json), runs_before);
    assert_eq!(
        std::fs::read_to_string(out.join(DISK_TABLE)).unwrap(),
        measured
    );
    assert_eq!(
        std::fs::read(out.join(GIVEN_DISK_TABLE)).unwrap(),
        std::fs::read(&what_if).unwrap()
    );
    let page = std::fs::read_to_string(&output.page).unwrap();
    assert!(page.starts_with("# Findings: again"), "{page}");
    assert!(
        page.contains("given by the user with --disk-table"),
        "{page}"
    );
    let manifest = StudyManifest::read(&out).unwrap().unwrap();
    assert_eq!(
        manifest.disk_given_from,
        Some(what_if.display().to_string())
    );

    // Without --disk-table: the measured table, kept with the runs, and the given one gone.
    let output = run_study(&dump, &state, &again, |_| panic!("replayed")).unwrap();
    assert_eq!(bench_id(&first.bench_json), runs_before);
    let page = std::fs::read_to_string(&output.page).unwrap();
    assert!(page.contains("measured by fio when the runs ran"), "{page}");
    assert_eq!(
        names(&out),
        [
            "bench.json",
            "disk.txt",
            "findings.md",
            "frontier.svg",
            "read-cost.svg",
            "study.json"
        ]
    );

    // New runs into the same directory (no fio): the table measured with the old runs is not
    // this study's, and a page computed again from the new runs has no disk.
    run_study(&dump, &state, &options, |_| {}).unwrap();
    assert_eq!(
        names(&out),
        [
            "bench.json",
            "findings.md",
            "frontier.svg",
            "read-cost.svg",
            "study.json"
        ]
    );
    // A disk table put there since, which the manifest does not list, is not the study's to
    // read, replace or remove: the study refuses the directory.
    std::fs::write(out.join(DISK_TABLE), measured).unwrap();
    let error = run_study(&dump, &state, &again, |_| panic!("replayed"))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("holds disk.txt that no study wrote"),
        "{error}"
    );
    assert_eq!(
        std::fs::read_to_string(out.join(DISK_TABLE)).unwrap(),
        measured
    );
    std::fs::remove_file(out.join(DISK_TABLE)).unwrap();
    let output = run_study(&dump, &state, &again, |_| panic!("replayed")).unwrap();
    let page = std::fs::read_to_string(&output.page).unwrap();
    assert!(page.contains("left out: no disk curve"), "{page}");
}

/// Lists `table` in the study's manifest in `out` as its measured `disk.txt`.
fn list_as_measured(out: &Path, table: &str) {
    std::fs::write(out.join(DISK_TABLE), table).unwrap();
    let mut manifest = StudyManifest::read(out).unwrap().unwrap();
    manifest.files.push(OutputFile {
        name: DISK_TABLE.into(),
        bytes: table.len() as u64,
        keccak256: alloy_primitives::keccak256(table.as_bytes()),
    });
    std::fs::write(
        out.join(MANIFEST),
        serde_json::to_vec_pretty(&manifest).unwrap(),
    )
    .unwrap();
}

#[test]
fn runs_of_another_dump_or_changed_since_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (dump, state, options) = chain(dir.path(), 1);
    let (other_dump, other_state, _) = chain(dir.path(), 2);
    let first = run_study(&dump, &state, &options, |_| {}).unwrap();
    let elsewhere = dir.path().join("elsewhere");
    let from_first = StudyOptions {
        from_bench: Some(first.bench_json.clone()),
        out: elsewhere.clone(),
        ..options.clone()
    };
    let error = run_study(&other_dump, &other_state, &from_first, |_| {}).unwrap_err();
    assert!(matches!(error, StudyError::OtherDump { .. }), "{error}");
    let message = error.to_string();
    for path in [&dump, &other_dump] {
        let path = std::fs::canonicalize(path).unwrap();
        assert!(message.contains(&path.display().to_string()), "{message}");
    }
    assert!(!elsewhere.exists());

    // A bench.json that is not the one its study's manifest lists (a study cut off between its
    // files, or an edit) is refused.
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&first.bench_json).unwrap()).unwrap();
    json["cpus"] = serde_json::json!(99);
    std::fs::write(&first.bench_json, serde_json::to_vec(&json).unwrap()).unwrap();
    let error = run_study(&dump, &state, &from_first, |_| {})
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("not the file its study's study.json lists"),
        "{error}"
    );
    assert!(!elsewhere.exists());
}

#[test]
fn a_page_without_device_counters_claims_no_regime() {
    let dir = tempfile::tempdir().unwrap();
    let (dump, state, options) = chain(dir.path(), 1);
    let first = run_study(&dump, &state, &options, |_| {}).unwrap();
    // The runs as over independent blocks (imported fixtures): no counter says where reads went.
    let mut bench = bal_replay_bench::BenchResult::read_json(&first.bench_json).unwrap();
    for run in &mut bench.runs {
        if run.disk.residency.reads_state() {
            run.disk.residency = bal_replay_study::Residency::default();
        }
    }
    let reader = bal_replay_dump::DumpReader::open(&dump).unwrap();
    let sizes = bal_replay_study::DesignSizes::of_dump(&reader).unwrap();
    let shape = bal_replay_study::ChainShape::of_dump(&reader).unwrap();
    let findings = bal_replay_study::Findings::compute(&bench, &sizes, None);
    assert_eq!(findings.regime, bal_replay_study::Regime::NotMeasured);
    let context = bal_replay_study::StudyContext {
        title: "no counters".into(),
        command: "test".into(),
        generated: "test".into(),
        state_bytes: 1,
        cores: 2,
        disk: None,
        frontier_chart: "frontier.svg".into(),
        table_layout: None,
    };
    let page = bal_replay_study::render_page(&context, &findings, &sizes, &shape);
    // The default layout goes unsaid; an unpartitioned state's is named.
    assert!(!page.contains("The state's tables"), "{page}");
    let unpartitioned = bal_replay_study::StudyContext {
        table_layout: Some(bal_replay_rocks::TableLayout::Unpartitioned),
        ..context.clone()
    };
    let named = bal_replay_study::render_page(&unpartitioned, &findings, &sizes, &shape);
    assert!(
        named.contains("- **The state's tables**: unpartitioned index and filters"),
        "{named}"
    );
    assert!(
        page.contains("On this 0 KB state at batch ") && page.contains(", regime not measured ("),
        "{page}"
    );
    assert!(page.contains("- **The regime**: not measured."), "{page}");
    assert!(!page.contains("cache-resident ("), "{page}");
    assert!(!page.contains("no run was disk-resident"), "{page}");
}

/// The manifest's format: its golden file at version 2 with every field; a version 1 manifest
/// (no `schema_version`) read as written; another version refused, naming both.
#[test]
fn the_manifest_is_versioned_and_reads_version_1() {
    let root = bal_replay_test_utils::workspace_root(env!("CARGO_MANIFEST_DIR"));
    let sample = StudyManifest {
        schema_version: bal_replay_study::outputs::MANIFEST_VERSION,
        written_by: "bal-replay study".into(),
        files: vec![OutputFile {
            name: "findings.md".into(),
            bytes: 11,
            keccak256: alloy_primitives::keccak256(b"# Findings\n"),
        }],
        disk_given_from: Some("/home/me/fio.txt".into()),
    };
    bal_replay_results::assert_golden(&root.join("crates/study/study/tests/golden"), &sample);

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(MANIFEST),
        br#"{"written_by":"bal-replay study","files":[]}"#,
    )
    .unwrap();
    let v1 = StudyManifest::read(dir.path()).unwrap().unwrap();
    assert_eq!((v1.schema_version, v1.files.len()), (1, 0));
    std::fs::write(
        dir.path().join(MANIFEST),
        br#"{"schema_version":3,"written_by":"bal-replay study","files":[]}"#,
    )
    .unwrap();
    let err = StudyManifest::read(dir.path()).unwrap_err().to_string();
    assert!(
        err.contains("schema version 3, this build reads versions 1 and 2"),
        "{err}"
    );
}
