//! A chained dump spliced from two chains (blocks 1-2 of one, 3-4 of another) is refused by every
//! replay before the first batch that holds the broken link executes, naming both blocks and
//! hashes. With `--io full` the replay reads only the dump's values, so nothing else would notice.

mod common;

use bal_replay_dump::{DumpReader, DumpWriter, WriterOptions};
use bal_replay_rocks::RocksStore;
use bal_replay_state::StateReader;
use common::{bal_replay, chain, copy_state, small_config};

#[test]
fn a_spliced_dump_is_refused_before_its_broken_link_executes() {
    let dir = tempfile::tempdir().unwrap();
    let (dump_a, pristine) = chain(&dir.path().join("a"), &small_config(4, 1));
    let (dump_b, _) = chain(&dir.path().join("b"), &small_config(4, 2));
    let a = DumpReader::open(&dump_a).unwrap();
    let records_a: Vec<_> = a.records().collect::<Result<_, _>>().unwrap();
    let records_b: Vec<_> = DumpReader::open(&dump_b)
        .unwrap()
        .records()
        .collect::<Result<_, _>>()
        .unwrap();
    let spliced = dir.path().join("spliced");
    let mut writer =
        DumpWriter::create(&spliced, a.manifest().meta(), WriterOptions::default()).unwrap();
    for record in records_a[..2].iter().chain(&records_b[2..]) {
        writer.append(record).unwrap();
    }
    writer.finish().unwrap();
    let (two, three) = (&records_a[1], &records_b[2]);
    assert_eq!(three.number(), two.number() + 1);
    let (block_two, block_three) = (
        format!("block {}", two.number()),
        format!("block {}", three.number()),
    );
    let two_hash = two.block.header.hash_slow().to_string();
    let three_parent = three.block.header.parent_hash.to_string();

    // `run`, batches of one block, reading only the dump's values.
    let state = dir.path().join("state");
    copy_state(&pristine, &state);
    let out = bal_replay()
        .args([
            "run",
            "--io",
            "full",
            "--batch",
            "1",
            "--threads",
            "2",
            "--dump",
        ])
        .arg(&spliced)
        .arg("--state")
        .arg(&state)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the spliced dump replayed: {stderr}");
    for part in [&block_three, &block_two, &two_hash, &three_parent] {
        assert!(stderr.contains(part), "the error names {part}: {stderr}");
    }
    // The first two blocks link and were committed; the third was not.
    let store = RocksStore::open_read_only(&state).unwrap();
    assert_eq!(store.applied_block().unwrap(), Some(two.number()));
    drop(store);

    // `bench`, in parallel with every design.
    let out = bal_replay()
        .args([
            "bench",
            "--threads",
            "2",
            "--batch",
            "4",
            "--io",
            "full,batched,parallel",
            "--no-baselines",
            "--dump",
        ])
        .arg(&spliced)
        .arg("--state")
        .arg(&pristine)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "the spliced dump was benched: {stderr}"
    );
    assert!(
        stderr.contains(&block_three) && stderr.contains(&two_hash),
        "{stderr}"
    );
}
