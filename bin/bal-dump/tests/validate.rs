//! `bal-dump validate`: a generated chain's dump is valid; a copy with one altered BAL value and one
//! broken parent link is not, and both blocks are named; nor is a copy with a BAL index past its
//! block, which is named with the index and the block's range.

use alloy_primitives::{B256, U256};
use bal_replay_dump::{BlockRecord, DumpMeta, DumpReader, DumpWriter, WriterOptions};
use bal_replay_synth::{GeneratorConfig, generate};
use std::{path::Path, process::Command};

fn validate(dump: &Path) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_bal-dump"))
        .arg("validate")
        .arg(dump)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("run bal-dump");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// A copy of the dump `reader` reads, at `dir`, with `edit` applied to each record (by position).
fn altered_copy(reader: &DumpReader, dir: &Path, mut edit: impl FnMut(usize, &mut BlockRecord)) {
    let mut writer = DumpWriter::create(
        dir,
        DumpMeta {
            chain_id: reader.chain_id(),
            chained: true,
            source: "altered".into(),
            schedule: None,
        },
        WriterOptions::default(),
    )
    .unwrap();
    for (i, record) in reader.records().enumerate() {
        let mut record = record.unwrap();
        edit(i, &mut record);
        writer.append(&record).unwrap();
    }
    writer.finish().unwrap();
}

#[test]
fn validate_names_the_blocks_a_dump_gets_wrong() {
    let tmp = tempfile::tempdir().unwrap();
    let dump = tmp.path().join("dump");
    let config = GeneratorConfig {
        blocks: 4,
        accounts: 2_000,
        holders_per_token: 200,
        seed: 9,
        gas_per_block: 6_000_000,
        ..GeneratorConfig::default()
    };
    generate(&config, &dump, &tmp.path().join("state"), None).unwrap();
    let (ok, text) = validate(&dump);
    assert!(ok, "{text}");
    assert!(text.contains("4 blocks valid, 0 invalid"), "{text}");

    // Block 1: a storage value the BAL records, off by one. Block 3: a parent hash that is not
    // block 2's hash (its execution does not depend on it, so only the link is wrong).
    let reader = DumpReader::open(&dump).unwrap();
    let bad = tmp.path().join("bad");
    let mut numbers = Vec::new();
    altered_copy(&reader, &bad, |i, record| {
        numbers.push(record.number());
        if i == 1 {
            let slot = record
                .bal
                .iter_mut()
                .flat_map(|a| a.storage_changes.iter_mut())
                .next()
                .unwrap();
            slot.changes[0].new_value += U256::from(1);
        }
        if i == 3 {
            record.block.header.parent_hash = B256::repeat_byte(0x11);
        }
    });

    let (ok, text) = validate(&bad);
    assert!(!ok, "{text}");
    assert!(text.contains("2 blocks valid, 2 invalid"), "{text}");
    assert!(
        text.contains(&format!("block {}: INVALID: ", numbers[1])),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "block {}: INVALID: parent hash {} is not the hash of block {}",
            numbers[3],
            B256::repeat_byte(0x11),
            numbers[2]
        )),
        "{text}"
    );
    assert!(!text.contains(&format!("block {}: INVALID", numbers[0])));
    assert!(!text.contains(&format!("block {}: INVALID", numbers[2])));

    // A balance change at an index past block 2's last (n + 1): once dropped silently, so the
    // dump validated. A dump can no longer hold it: the writer refuses the record, naming the
    // block, the account and the index (and the reader refuses such a frame the same way).
    let mut record = reader.records().nth(2).unwrap().unwrap();
    let (number, txs) = (record.number(), record.tx_count());
    let past = txs as u64 + 2;
    let account = record
        .bal
        .iter_mut()
        .find(|a| !a.balance_changes.is_empty())
        .unwrap();
    let mut change = account.balance_changes.last().unwrap().clone();
    change.block_access_index.0 = past;
    account.balance_changes.push(change);
    let address = account.address;
    let bad_index = tmp.path().join("bad-index");
    let mut writer = DumpWriter::create(
        &bad_index,
        DumpMeta {
            chain_id: reader.chain_id(),
            chained: false,
            source: "altered".into(),
            schedule: None,
        },
        WriterOptions::default(),
    )
    .unwrap();
    let err = writer.append(&record).unwrap_err().to_string();
    assert!(
        err.contains(&format!("block {number}: malformed BAL: account {address}"))
            && err.contains(&format!(
                "balance_changes index {past} is outside the block's indices 0..={}",
                past - 1
            )),
        "{err}"
    );
}
