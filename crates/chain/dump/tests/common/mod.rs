//! Hand-built records and hand-built segment bytes shared by the integration tests.
//!
//! Segments are assembled here straight from the documented layout (zstd, crc32fast, byte
//! arithmetic) rather than through the crate's writer, so the tests also check that the code and
//! `docs/dump-format.md` agree.

// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use std::path::Path;

use alloy_consensus::{
    Block, BlockBody, Header, SignableTransaction, TxEip1559, TxEnvelope, TxLegacy,
};
use alloy_eip7928::{
    AccountChanges, BalanceChange, BlockAccessIndex, BlockAccessList, CodeChange, NonceChange,
    SlotChanges, StorageChange,
};
use alloy_eips::{
    eip2930::{AccessList, AccessListItem},
    eip4895::{Withdrawal, Withdrawals},
};
use alloy_primitives::{Address, B256, Bytes, Signature, TxKind, U256, keccak256};
use bal_replay_dump::{
    AccountPre, BlockHashEntry, BlockRecord, CodePre, DumpMeta, DumpReader, FORMAT_VERSION, MAGIC,
    Manifest, PreState, StoragePre, encode_record,
};

pub const CHAIN_ID: u64 = 1;

pub fn address(byte: u8) -> Address {
    Address::repeat_byte(byte)
}

/// A fixed, valid-looking secp256k1 signature (values from a real mainnet transaction).
pub fn signature() -> Signature {
    Signature::new(
        U256::from_be_bytes(
            b256_from_hex("840cfc572845f5786e702984c2a582528cad4b49b2a10b9db1be7fca90058565").0,
        ),
        U256::from_be_bytes(
            b256_from_hex("25e7109ceb98168d95b09b18bbf6b685130e0562f233877d492b94eee0c5b6d1").0,
        ),
        false,
    )
}

fn b256_from_hex(hex: &str) -> B256 {
    hex.parse().expect("test constant is valid hex")
}

pub fn legacy_tx(nonce: u64) -> TxEnvelope {
    let tx = TxLegacy {
        chain_id: Some(CHAIN_ID),
        nonce,
        gas_price: 20_000_000_000,
        gas_limit: 21_000,
        to: TxKind::Call(address(0xbb)),
        value: U256::from(1_000_000_000_000_000_000u128),
        input: Bytes::new(),
    };
    TxEnvelope::Legacy(tx.into_signed(signature()))
}

pub fn eip1559_tx(nonce: u64) -> TxEnvelope {
    let tx = TxEip1559 {
        chain_id: CHAIN_ID,
        nonce,
        gas_limit: 100_000,
        max_fee_per_gas: 30_000_000_000,
        max_priority_fee_per_gas: 1_000_000_000,
        to: TxKind::Call(address(0xcc)),
        value: U256::ZERO,
        access_list: AccessList(vec![AccessListItem {
            address: address(0xcc),
            storage_keys: vec![B256::with_last_byte(1)],
        }]),
        input: Bytes::from_static(&[0xa9, 0x05, 0x9c, 0xbb, 0x00, 0x01]),
    };
    TxEnvelope::Eip1559(tx.into_signed(signature().with_parity(true)))
}

/// A BAL touching every change kind: a system-call write at index 0, transaction changes at 1 and
/// 2, a post-block withdrawal balance change at 3 (= tx count + 1).
pub fn bal(number: u64) -> BlockAccessList {
    let contract = AccountChanges {
        address: address(0xcc),
        storage_changes: vec![SlotChanges {
            slot: U256::from(1),
            changes: vec![
                StorageChange::new(BlockAccessIndex::new(1), U256::from(number)),
                StorageChange::new(BlockAccessIndex::new(2), U256::from(number + 1)),
            ],
        }],
        storage_reads: vec![U256::from(2), U256::from(3)],
        balance_changes: vec![],
        nonce_changes: vec![],
        code_changes: vec![CodeChange {
            block_access_index: BlockAccessIndex::new(2),
            new_code: Bytes::from_static(&[0x60, 0x00, 0x60, 0x00, 0xf3]),
        }],
    };
    let sender = AccountChanges {
        address: address(0xaa),
        storage_changes: vec![],
        storage_reads: vec![],
        balance_changes: vec![
            BalanceChange {
                block_access_index: BlockAccessIndex::new(1),
                post_balance: U256::from(900),
            },
            BalanceChange {
                block_access_index: BlockAccessIndex::new(3),
                post_balance: U256::from(950),
            },
        ],
        nonce_changes: vec![
            NonceChange {
                block_access_index: BlockAccessIndex::new(1),
                new_nonce: number * 2 + 1,
            },
            NonceChange {
                block_access_index: BlockAccessIndex::new(2),
                new_nonce: number * 2 + 2,
            },
        ],
        code_changes: vec![],
    };
    let beacon_roots = AccountChanges {
        address: address(0x0b),
        storage_changes: vec![SlotChanges {
            slot: U256::from(number % 8191),
            changes: vec![StorageChange::new(
                BlockAccessIndex::PRE_EXECUTION,
                U256::from(number),
            )],
        }],
        ..AccountChanges::new(address(0x0b))
    };
    vec![beacon_roots, sender, contract]
}

pub fn pre_state(number: u64) -> PreState {
    let code = Bytes::from_static(&[0x60, 0x01, 0x60, 0x00, 0x55]);
    let mut pre = PreState {
        accounts: vec![
            AccountPre {
                address: address(0xaa),
                nonce: number * 2,
                balance: U256::from(1_000 + number),
                code_hash: keccak256([]),
            },
            AccountPre {
                address: address(0xcc),
                nonce: 1,
                balance: U256::ZERO,
                code_hash: keccak256(&code),
            },
        ],
        absent: vec![address(0xbb)],
        storage: vec![
            StoragePre {
                address: address(0xcc),
                slot: U256::from(1),
                value: U256::from(number),
            },
            StoragePre {
                address: address(0xcc),
                slot: U256::from(2),
                value: U256::ZERO,
            },
        ],
        codes: vec![CodePre {
            hash: keccak256(&code),
            code,
        }],
    };
    pre.sort();
    pre
}

pub fn block_hashes(number: u64) -> Vec<BlockHashEntry> {
    (number.saturating_sub(3)..number)
        .map(|n| BlockHashEntry {
            number: n,
            hash: keccak256(n.to_be_bytes()),
        })
        .collect()
}

/// The header of block `number`, whose parent is `parent_hash`.
fn header(number: u64, parent_hash: B256) -> Header {
    Header {
        parent_hash,
        beneficiary: address(0xfe),
        state_root: B256::repeat_byte(0x11),
        transactions_root: B256::repeat_byte(0x22),
        receipts_root: B256::repeat_byte(0x33),
        number,
        gas_limit: 30_000_000,
        gas_used: 21_000 + 45_000,
        timestamp: 1_700_000_000 + number * 12,
        extra_data: Bytes::from_static(b"bal-replay"),
        base_fee_per_gas: Some(7),
        withdrawals_root: Some(B256::repeat_byte(0x44)),
        blob_gas_used: Some(0),
        excess_blob_gas: Some(0),
        parent_beacon_block_root: Some(B256::repeat_byte(0x55)),
        requests_hash: Some(B256::repeat_byte(0x66)),
        block_access_list_hash: Some(B256::repeat_byte(0x77)),
        ..Header::default()
    }
}

/// The hash of [`record`]`(number - 1)`'s header, so that consecutive records link as a chained
/// dump's must (block 0's parent is a fixed hash).
fn parent_hash(number: u64) -> B256 {
    use std::sync::Mutex;
    // hashes[k] is the hash of block k's header; each is built on the one before.
    static HASHES: Mutex<Vec<B256>> = Mutex::new(Vec::new());
    let genesis_parent = keccak256(0u64.to_be_bytes());
    let Some(previous) = number.checked_sub(1) else {
        return genesis_parent;
    };
    let mut hashes = HASHES.lock().unwrap_or_else(|e| e.into_inner());
    while hashes.len() as u64 <= previous {
        let k = hashes.len() as u64;
        let parent = hashes.last().copied().unwrap_or(genesis_parent);
        hashes.push(header(k, parent).hash_slow());
    }
    hashes[previous as usize]
}

/// A record for block `number` with a legacy and an EIP-1559 transaction, withdrawals, a Prague-style
/// header, a non-empty BAL, pre-state and block hashes.
pub fn record(number: u64) -> BlockRecord {
    let header = header(number, parent_hash(number));
    let body = BlockBody {
        transactions: vec![legacy_tx(number * 2), eip1559_tx(number * 2 + 1)],
        ommers: vec![],
        withdrawals: Some(Withdrawals::new(vec![Withdrawal {
            index: number,
            validator_index: 42,
            address: address(0xaa),
            amount: 50,
        }])),
    };
    BlockRecord {
        block: Block { header, body },
        senders: vec![address(0xaa), address(0xaa)],
        bal: bal(number),
        pre_state: pre_state(number),
        block_hashes: block_hashes(number),
    }
}

pub fn meta(chained: bool) -> DumpMeta {
    DumpMeta {
        chain_id: CHAIN_ID,
        chained,
        source: "synthetic".to_owned(),
        schedule: None,
    }
}

/// One frame built by hand from raw (uncompressed) payload bytes, per the documented layout.
pub fn frame_from_raw(raw: &[u8]) -> Vec<u8> {
    let payload = zstd::bulk::compress(raw, 3).expect("zstd compresses");
    frame_from_payload(raw.len() as u32, &payload)
}

/// One frame with an arbitrary payload and a correct checksum.
pub fn frame_from_payload(raw_len: u32, payload: &[u8]) -> Vec<u8> {
    let mut frame = Vec::new();
    frame.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    frame.extend_from_slice(&raw_len.to_le_bytes());
    frame.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    frame.extend_from_slice(payload);
    frame
}

/// A whole segment: header, then the given frames.
pub fn segment_from_frames(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut segment = Vec::new();
    segment.extend_from_slice(&MAGIC);
    segment.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    for frame in frames {
        segment.extend_from_slice(frame);
    }
    segment
}

/// A segment holding the given records.
pub fn segment_from_records(records: &[BlockRecord]) -> Vec<u8> {
    let frames: Vec<Vec<u8>> = records
        .iter()
        .map(|r| frame_from_raw(&encode_record(r)))
        .collect();
    segment_from_frames(&frames)
}

/// Every record of the dump at `dir`, in order (panics naming what failed).
pub fn read_all(dir: &Path) -> Vec<BlockRecord> {
    DumpReader::open(dir)
        .expect("dump opens")
        .records()
        .collect::<Result<Vec<_>, _>>()
        .expect("every record reads")
}

pub fn read_manifest(dir: &Path) -> Manifest {
    let text = std::fs::read_to_string(dir.join("manifest.json")).expect("manifest readable");
    serde_json::from_str(&text).expect("manifest parses")
}

/// Rewrites `manifest.json` after letting `edit` change it (no validation: tests use this to make
/// manifests that disagree with the files).
pub fn edit_manifest(dir: &Path, edit: impl FnOnce(&mut Manifest)) {
    let mut manifest = read_manifest(dir);
    edit(&mut manifest);
    let json = serde_json::to_string_pretty(&manifest).expect("manifest serializes");
    std::fs::write(dir.join("manifest.json"), json).expect("manifest writable");
}
