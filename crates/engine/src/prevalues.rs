//! The full-BAL design's database: the dump's pre-block values, and nothing else.

use crate::PreValueMissing;
use alloy_primitives::{
    Address, B256, U256,
    map::{HashMap, HashSet},
};
use bal_replay_dump::BlockRecord;
use revm::{
    DatabaseRef,
    bytecode::Bytecode,
    primitives::{KECCAK_EMPTY, StorageKey, StorageValue},
    state::AccountInfo,
};

/// Answers reads from the pre-block values of a batch's records; any other read is an error.
///
/// For a key several records list, the first record's value is the pre-batch value (a later record's
/// value may include an earlier block's write, which the BAL overlay supplies anyway). Accounts that
/// did not exist before the batch have no storage, so their slots read as zero.
#[derive(Debug, Default)]
pub struct PreValueDb {
    accounts: HashMap<Address, Option<AccountInfo>>,
    absent: HashSet<Address>,
    storage: HashMap<(Address, U256), U256>,
    codes: HashMap<B256, Bytecode>,
    block_hashes: HashMap<u64, B256>,
}

impl PreValueDb {
    /// The pre-batch values of `records` (consecutive blocks, in order).
    pub fn from_records(records: &[BlockRecord]) -> Self {
        let mut db = Self::default();
        for record in records {
            let pre = &record.pre_state;
            for a in &pre.accounts {
                db.accounts.entry(a.address).or_insert_with(|| {
                    Some(AccountInfo {
                        balance: a.balance,
                        nonce: a.nonce,
                        code_hash: a.code_hash,
                        account_id: None,
                        code: (a.code_hash == KECCAK_EMPTY).then(Bytecode::default),
                    })
                });
            }
            for address in &pre.absent {
                if let std::collections::hash_map::Entry::Vacant(e) = db.accounts.entry(*address) {
                    e.insert(None);
                    db.absent.insert(*address);
                }
            }
            for s in &pre.storage {
                db.storage.entry((s.address, s.slot)).or_insert(s.value);
            }
            for c in &pre.codes {
                db.codes
                    .entry(c.hash)
                    .or_insert_with(|| Bytecode::new_raw(c.code.clone()));
            }
            for h in &record.block_hashes {
                db.block_hashes.insert(h.number, h.hash);
            }
            // Later blocks of the batch may ask for the hashes of earlier ones.
            db.block_hashes
                .insert(record.number(), record.block.header.hash_slow());
        }
        db
    }
}

impl DatabaseRef for PreValueDb {
    type Error = PreValueMissing;

    fn basic_ref(&self, address: Address) -> Result<Option<AccountInfo>, PreValueMissing> {
        self.accounts
            .get(&address)
            .cloned()
            .ok_or(PreValueMissing::Account(address))
    }

    fn code_by_hash_ref(&self, code_hash: B256) -> Result<Bytecode, PreValueMissing> {
        if code_hash == KECCAK_EMPTY {
            return Ok(Bytecode::default());
        }
        self.codes
            .get(&code_hash)
            .cloned()
            .ok_or(PreValueMissing::Code(code_hash))
    }

    fn storage_ref(
        &self,
        address: Address,
        index: StorageKey,
    ) -> Result<StorageValue, PreValueMissing> {
        match self.storage.get(&(address, index)) {
            Some(value) => Ok(*value),
            None if self.absent.contains(&address) => Ok(U256::ZERO),
            None => Err(PreValueMissing::Storage(address, index)),
        }
    }

    fn block_hash_ref(&self, number: u64) -> Result<B256, PreValueMissing> {
        self.block_hashes
            .get(&number)
            .copied()
            .ok_or(PreValueMissing::BlockHash(number))
    }
}
