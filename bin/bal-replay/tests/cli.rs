//! Counts the command line takes are at least 1: a zero is refused before anything runs, naming
//! the option, instead of running as 1 and being reported as 0. Disk flags that contradict each
//! other or the state are refused before anything runs too. A state that does not say which
//! chain it holds is refused by `run` and `bench` unless `--trust-state`. `bench --help` fits on
//! one screen, and no help names one machine's CPUs.

use std::process::Command;

use bal_replay_rocks::{RocksOptions, RocksStore};
use bal_replay_state::cf;
use common::{assert_ok, chain, copy_state, digest, small_config};

mod common;

fn bal_replay(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_bal-replay"))
        .args(args)
        .output()
        .expect("run bal-replay");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn zero_workers_batches_or_readers_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("dump");
    let state = dir.path().join("state");
    let (dump, state) = (dump.to_str().unwrap(), state.to_str().unwrap());
    for (args, option) in [
        (vec!["bench", "--threads", "1,0"], "--threads"),
        (vec!["bench", "--batch", "0"], "--batch"),
        (vec!["bench", "--repeat", "0"], "--repeat"),
        (vec!["run", "--threads", "0"], "--threads"),
        (vec!["run", "--batch", "0"], "--batch"),
        (vec!["run", "--io-threads", "0"], "--io-threads"),
    ] {
        let mut full = args.clone();
        full.extend(["--dump", dump, "--state", state]);
        let (ok, stderr) = bal_replay(&full);
        assert!(!ok, "{args:?} ran");
        assert!(
            stderr.contains(&format!("invalid value '0' for '{option}"))
                && stderr.contains("must be at least 1"),
            "{args:?}: {stderr}"
        );
    }
    // Nothing was created: the refusal came before the run.
    assert!(!dir.path().join("state").exists());
    assert!(!dir.path().join("state.bench-run").exists());
}

/// `run`, `bench` and `bench-db` refuse disk flags that cannot apply, naming them, before the
/// dump or the state is opened (neither exists here) or a memory cgroup is entered.
#[test]
fn contradicting_disk_flags_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("dump");
    let (dump, state) = (dump.to_str().unwrap(), dir.path().join("state"));
    let rocksdb = state.to_str().unwrap();
    let mdbx = format!("mdbx:{rocksdb}");
    for (args, message) in [
        (
            vec![
                "run",
                "--dump",
                dump,
                "--state",
                rocksdb,
                "--unpinned-metadata",
            ],
            "--unpinned-metadata applies with --disk-resident only",
        ),
        (
            vec!["bench", "--dump", dump, "--state", &mdbx, "--direct-io"],
            "--direct-io applies to RocksDB states only",
        ),
        (
            vec![
                "run",
                "--dump",
                dump,
                "--state",
                &mdbx,
                "--disk-resident",
                "--memory-limit",
                "1GiB",
                "--block-cache",
                "64MiB",
            ],
            "--block-cache applies to RocksDB states only",
        ),
        (
            vec!["bench-db", "--db", &mdbx, "--pin-metadata"],
            "--pin-metadata applies to RocksDB states only",
        ),
    ] {
        let (ok, stderr) = bal_replay(&args);
        assert!(!ok, "{args:?} ran");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
    assert!(!state.exists());
}

/// The lines of `bal-replay <args> --help`.
fn help(args: &[&str]) -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_bal-replay"))
        .args(args)
        .arg("--help")
        .output()
        .expect("run bal-replay");
    assert!(out.status.success(), "{args:?} --help failed");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Whether `line` names a particular CPU or core count ("CPU 1", "cpus 0-3", "16 cores").
fn names_cpus(line: &str) -> bool {
    let lower = line.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let number = |w: &str| w.chars().all(|c| c.is_ascii_digit());
    words.windows(2).any(|pair| match pair {
        [cpu, n] if matches!(*cpu, "cpu" | "cpus" | "core" | "cores") => number(n),
        [n, cpu] if matches!(*cpu, "cpu" | "cpus" | "core" | "cores") => number(n),
        _ => false,
    }) || words.iter().any(|w| {
        w.strip_prefix("cpu")
            .is_some_and(|n| !n.is_empty() && number(n))
    })
}

#[test]
fn bench_help_fits_on_a_screen_and_no_help_names_this_machine() {
    let bench = help(&["bench"]);
    assert!(
        bench.len() <= 50,
        "bench --help is {} lines:\n{}",
        bench.len(),
        bench.join("\n")
    );
    // Each of bench's options is one line: its flag and its help.
    assert!(
        bench
            .iter()
            .any(|l| l.trim_start().starts_with("--disk-resident ")),
        "{bench:?}"
    );
    for command in [
        &[][..],
        &["run"],
        &["bench"],
        &["bench-db"],
        &["bench-reference"],
        &["demo"],
        &["study"],
        &["report"],
        &["project"],
    ] {
        for line in help(command) {
            let lower = line.to_lowercase();
            assert!(
                !lower.contains("this vm") && !lower.contains("this machine") && !names_cpus(&line),
                "{command:?} --help: {line}"
            );
        }
    }
    assert!(names_cpus("worker 0 on CPU 1") && names_cpus("the research's machine: 16 cores"));
    assert!(!names_cpus("the (w mod n)-th CPU of this list") && !names_cpus("1 and all cores"));
}

/// A state without a chain id (as a migration by an older `bal-migrate` left it) is refused by
/// `run` and `bench`, naming its directory and what it lacks, and left as it was; with
/// `--trust-state` both replay over it.
#[test]
fn a_state_without_a_chain_id_is_refused_unless_trusted() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump, pristine) = chain(tmp.path(), &small_config(2, 3));
    let state = tmp.path().join("state");
    copy_state(&pristine, &state);
    {
        let store = RocksStore::open(&state, &RocksOptions::default()).unwrap();
        let db = store.raw_db();
        db.delete_cf(db.cf_handle(cf::META).unwrap(), cf::META_CHAIN_ID)
            .unwrap();
    }
    let before = digest(&state);
    let (dump_arg, state_arg) = (dump.to_str().unwrap(), state.to_str().unwrap());
    let run = [
        "run",
        "--dump",
        dump_arg,
        "--state",
        state_arg,
        "--threads",
        "2",
    ];
    let bench = [
        "bench",
        "--dump",
        dump_arg,
        "--state",
        state_arg,
        "--threads",
        "2",
        "--batch",
        "2",
        "--io",
        "parallel",
        "--no-baselines",
    ];
    for args in [&run[..], &bench[..]] {
        let (ok, stderr) = bal_replay(args);
        assert!(!ok, "{args:?} ran");
        assert!(
            stderr.contains(&format!("the state {state_arg} records no chain id"))
                && stderr.contains("--trust-state"),
            "{args:?}: {stderr}"
        );
        assert_eq!(digest(&state), before, "{args:?}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_bal-replay"))
        .args(bench)
        .arg("--trust-state")
        .output()
        .unwrap();
    assert_ok(&out, "bench --trust-state");
    let out = Command::new(env!("CARGO_BIN_EXE_bal-replay"))
        .args(run)
        .arg("--trust-state")
        .output()
        .unwrap();
    let stdout = assert_ok(&out, "run --trust-state");
    assert!(stdout.contains("replayed 2 blocks"), "{stdout}");
    // The replay's commits record the dump's chain.
    let store = RocksStore::open_read_only(&state).unwrap();
    assert_eq!(
        bal_replay_state::StateReader::chain_id(&store).unwrap(),
        Some(1)
    );
}

/// A dump of independent blocks (imported fixtures) benches with its sequential baseline by
/// default: the in-memory baseline, which loads one state, is left out with a note, instead of the
/// whole bench being refused until `--no-baselines` drops both.
#[test]
fn bench_over_fixture_blocks_keeps_its_sequential_baseline() {
    use bal_replay_import::{import_fixtures, read_fixtures, write_fixture_dump};
    let root = bal_replay_fixtures::default_mainnet_dir().expect("../shared/fixtures/mainnet");
    let config = bal_replay_executor::ChainConfig::mainnet();
    let fixtures = read_fixtures(&[root.join("46147")]).unwrap();
    let records = import_fixtures(&config, &fixtures, |_, _| {}).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let (dump, states) = (tmp.path().join("dump"), tmp.path().join("states"));
    write_fixture_dump(&config, &records, &dump, &states, || {}).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_bal-replay"))
        .args(["bench", "--dump", dump.to_str().unwrap(), "--state"])
        .arg(&states)
        .args(["--threads", "1", "--batch", "1", "--io", "full"])
        .output()
        .expect("run bal-replay bench");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("no in-memory baseline over a dump of independent blocks"),
        "{stderr}"
    );
    // The designs table's sequential column holds a number, the in-memory column none.
    let row = stdout
        .lines()
        .find(|l| l.starts_with("| 1 | 1 | "))
        .unwrap_or_else(|| panic!("no designs row in:\n{stdout}"));
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    let (sequential, in_memory) = (cells[cells.len() - 3], cells[cells.len() - 2]);
    assert!(sequential.parse::<f64>().is_ok_and(|v| v > 0.0), "{row}");
    assert_eq!(in_memory, "-", "{row}");
}

/// A result path that could not be written at the end (in a missing directory, a directory, a
/// symbolic link, under a file) is refused by `bench`, `run`, `bench-db`, `project` and `report`
/// before any work: the message names the path, nothing is printed (no tables), the state is as
/// it was (a `run` without --rewind would have moved it on) and nothing is created.
#[test]
fn outputs_that_cannot_be_written_are_refused_before_any_work() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump, pristine) = chain(tmp.path(), &small_config(2, 3));
    let state = tmp.path().join("state");
    copy_state(&pristine, &state);
    let before = digest(&state);
    let missing = tmp.path().join("no/such/dir/b.json");
    let directory = tmp.path().join("results");
    std::fs::create_dir(&directory).unwrap();
    let target = tmp.path().join("target.json");
    std::fs::write(&target, b"the user's").unwrap();
    let link = tmp.path().join("link.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let listing = std::fs::read_dir(tmp.path()).unwrap().count();
    let (dump, state_arg) = (dump.to_str().unwrap(), state.to_str().unwrap());
    let replay = ["--dump", dump, "--state", state_arg, "--threads", "1"];
    let bench_shape = ["--batch", "2", "--io", "parallel", "--no-baselines"];
    let cases: [(Vec<&str>, &std::path::Path); 6] = [
        (
            [&["bench", "--task-profile"][..], &replay, &bench_shape].concat(),
            &missing,
        ),
        ([&["run"][..], &replay].concat(), &missing),
        ([&["run"][..], &replay].concat(), &directory),
        (vec!["bench-db", "--db", state_arg, "--reads", "10"], &link),
        (
            vec!["project", "in.json", "--disk-table", "fio.txt"],
            &missing,
        ),
        (vec!["report", "in.json", "--out"], &target),
    ];
    for (args, output) in cases {
        let mut command = Command::new(env!("CARGO_BIN_EXE_bal-replay"));
        command.args(&args);
        if args[0] != "report" {
            command.arg("--json");
        }
        let out = command.arg(output).output().expect("run bal-replay");
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(!out.status.success(), "{args:?} {output:?} ran: {stdout}");
        assert!(
            stderr.contains(&format!("cannot write a result to {}", output.display())),
            "{args:?}: {stderr}"
        );
        assert_eq!(stdout, "", "{args:?} printed");
        assert_eq!(digest(&state), before, "{args:?} moved the state");
    }
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), listing);
    assert_eq!(std::fs::read(&target).unwrap(), b"the user's");
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    assert!(!tmp.path().join("no").exists());
}
