//! The full-BAL design's database: the dump's pre-block values, and nothing else.

use crate::PreValueMissing;
use alloy_primitives::{Address, B256, U256, map::HashMap};
use bal_replay_dump::{BlockRecord, FirstPreValues, check_code};
use bal_replay_executor::ExecError;
use bal_replay_state::FlatAccount;
use revm::{
    DatabaseRef,
    bytecode::Bytecode,
    primitives::{KECCAK_EMPTY, StorageKey, StorageValue},
    state::AccountInfo,
};

/// Answers reads from the pre-block values of a batch's records; any other read is an error.
///
/// For a key several records list, the first record's value is the pre-batch value
/// ([`FirstPreValues`]; a later record's value may include an earlier block's write, which the BAL
/// overlay supplies anyway). Accounts that did not exist before the batch have no storage, so
/// their slots the records do not list read as zero.
#[derive(Debug, Default)]
pub struct PreValueDb {
    /// The batch's first values; its codes are moved, decoded, into `codes`.
    values: FirstPreValues,
    codes: HashMap<B256, Bytecode>,
}

impl PreValueDb {
    /// The pre-batch values of `records` (consecutive blocks, in order). A pre-state code revm
    /// cannot load is an error naming its block and hash.
    pub fn from_records(records: &[BlockRecord]) -> Result<Self, ExecError> {
        let mut values = FirstPreValues::default();
        for record in records {
            for code in &record.pre_state.codes {
                check_code(&code.code).map_err(|defect| ExecError::MalformedPreCode {
                    block: record.number(),
                    hash: code.hash,
                    defect,
                })?;
            }
            values.add(record);
            // Later blocks of the batch may ask for the hashes of earlier ones.
            values
                .block_hashes
                .insert(record.number(), record.block.header.hash_slow());
        }
        let codes = values
            .codes
            .drain()
            .map(|(hash, code)| (hash, Bytecode::new_raw(code)))
            .collect();
        Ok(Self { values, codes })
    }

    /// The batch's first values (codes excepted: they are held decoded).
    pub fn values(&self) -> &FirstPreValues {
        &self.values
    }
}

impl DatabaseRef for PreValueDb {
    type Error = PreValueMissing;

    fn basic_ref(&self, address: Address) -> Result<Option<AccountInfo>, PreValueMissing> {
        self.values
            .accounts
            .get(&address)
            .map(|account| account.map(|a| FlatAccount::from(a).into()))
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
        match self.values.storage.get(&(address, index)) {
            Some(value) => Ok(*value),
            None if self.values.is_absent(&address) => Ok(U256::ZERO),
            None => Err(PreValueMissing::Storage(address, index)),
        }
    }

    fn block_hash_ref(&self, number: u64) -> Result<B256, PreValueMissing> {
        self.values
            .block_hashes
            .get(&number)
            .copied()
            .ok_or(PreValueMissing::BlockHash(number))
    }
}
