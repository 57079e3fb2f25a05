//! A dump whose manifest lists no records (a writer stopped before its first flush, beside the
//! segment it had begun) is refused by `run`, `bench` and `study`, naming it, instead of replayed
//! and measured as if it were a chain.

mod common;

use bal_replay_dump::{DumpMeta, DumpWriter, WriterOptions};
use common::{bal_replay, chain, small_config};

#[test]
fn run_bench_and_study_refuse_a_dump_with_no_records() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump, state) = chain(tmp.path(), &small_config(1, 5));
    // What an interrupted `bal-dump generate` used to leave: the manifest written at creation,
    // with no records, and a segment holding a block that was never flushed.
    let interrupted = tmp.path().join("interrupted");
    let meta = DumpMeta {
        chain_id: 1,
        chained: true,
        source: "synthetic".into(),
        schedule: None,
    };
    let mut writer = DumpWriter::create(&interrupted, meta, WriterOptions::default()).unwrap();
    let first = bal_replay_dump::DumpReader::open(&dump)
        .unwrap()
        .records()
        .next()
        .unwrap()
        .unwrap();
    writer.append(&first).unwrap();
    // Neither flushed nor finished, as when the process is killed.
    std::mem::forget(writer);

    let (dump_arg, state_arg) = (interrupted.to_str().unwrap(), state.to_str().unwrap());
    let out_arg = tmp.path().join("study");
    let commands: [&[&str]; 3] = [
        &["run", "--dump", dump_arg, "--state", state_arg],
        &[
            "bench",
            "--dump",
            dump_arg,
            "--state",
            state_arg,
            "--no-baselines",
        ],
        &[
            "study",
            "--dump",
            dump_arg,
            "--state",
            state_arg,
            "--out",
            out_arg.to_str().unwrap(),
            "--quick",
        ],
    ];
    let expected = format!("dump {dump_arg} holds no block records (an interrupted write?)");
    for args in commands {
        let out = bal_replay().args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "{args:?} succeeded over an empty dump"
        );
        assert!(stderr.contains(&expected), "{args:?}: {stderr}");
    }
    assert!(!out_arg.exists(), "study wrote a page about an empty dump");
}
