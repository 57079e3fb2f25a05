//! A dump whose manifest is gone is not a missing dump: the ExEx's dumper refuses to start a new
//! one over its segments, and not a byte of them is lost.

use bal_replay_dump::DumpError;
use bal_replay_exex::{BlockRange, ChainDumper, ExexError};
use bal_replay_synth::{GeneratorConfig, generate};
use std::fs;

#[test]
fn the_dumper_refuses_a_directory_whose_manifest_was_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let (dump, state) = (dir.path().join("dump"), dir.path().join("state"));
    let config = GeneratorConfig {
        blocks: 2,
        accounts: 200,
        holders_per_token: 20,
        gas_per_block: 1_000_000,
        ..GeneratorConfig::default()
    };
    generate(&config, &dump, &state, None).unwrap();
    let segments: Vec<_> = fs::read_dir(&dump)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "bin"))
        .collect();
    assert!(!segments.is_empty());
    let before: Vec<Vec<u8>> = segments.iter().map(|p| fs::read(p).unwrap()).collect();
    fs::remove_file(dump.join("manifest.json")).unwrap();

    let err = match ChainDumper::open(&dump, 1, BlockRange::default()) {
        Err(err) => err,
        Ok(_) => panic!("the dumper started a new dump over the old segments"),
    };
    assert!(
        matches!(
            &err,
            ExexError::Dump(DumpError::OrphanedSegments { file, .. }) if file == "segment-000000.bin"
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("segment-000000.bin"), "{err}");
    let after: Vec<Vec<u8>> = segments.iter().map(|p| fs::read(p).unwrap()).collect();
    assert_eq!(after, before, "not a byte of the old segments is lost");
    assert!(!dump.join("manifest.json").exists());
}
