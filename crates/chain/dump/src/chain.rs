//! Chained dumps: consecutive blocks of one chain, each applied to the previous one's post-state.
//!
//! The reader already checks that a chained dump's block numbers go up by one; [`ChainLinks`]
//! checks that its hashes link too. [`FirstPreValues`] merges the pre-states of consecutive
//! records into the state before the first of them, and [`pre_chain_state`] makes that the state
//! a chained dump starts from.

use crate::{AccountPre, BlockHashEntry, BlockRecord, CodePre, PreState, StoragePre};
use alloy_primitives::{
    Address, B256, Bytes, U256,
    map::{HashMap, HashSet},
};
use std::collections::BTreeMap;

/// A record of a chained dump whose parent hash is not the hash of the record before it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("parent hash {parent_hash} is not the hash of block {previous}, {previous_hash}")]
pub struct BrokenLink {
    /// The record's block number.
    pub block: u64,
    /// Its parent hash.
    pub parent_hash: B256,
    /// The block number of the record before it.
    pub previous: u64,
    /// That record's hash.
    pub previous_hash: B256,
}

/// Checks, one record at a time in dump order, that each record of a chained dump names the
/// record before it as its parent. Over a dump of independent blocks every record passes.
#[derive(Debug, Clone, Default)]
pub struct ChainLinks {
    chained: bool,
    previous: Option<(u64, B256)>,
}

impl ChainLinks {
    /// A check for a dump that is `chained` (see [`Manifest::chained`](crate::Manifest)).
    pub fn new(chained: bool) -> Self {
        Self {
            chained,
            previous: None,
        }
    }

    /// Checks `record` against the one given before it, then remembers it for the next.
    pub fn check(&mut self, record: &BlockRecord) -> Result<(), BrokenLink> {
        if !self.chained {
            return Ok(());
        }
        let header = &record.block.header;
        let previous = self.previous.replace((record.number(), header.hash_slow()));
        match previous {
            Some((previous, previous_hash)) if header.parent_hash != previous_hash => {
                Err(BrokenLink {
                    block: record.number(),
                    parent_hash: header.parent_hash,
                    previous,
                    previous_hash,
                })
            }
            _ => Ok(()),
        }
    }
}

/// The pre-block values of a run of consecutive records, each key at the value of the first
/// record that names it.
///
/// That is the key's value before the run: execution reads every key before it writes it (an
/// SSTORE reads the original value, a balance change loads the account), so no earlier block of
/// the run changed it. One exception: the storage of an account the run creates is never read
/// from the database (revm knows a new account's storage is empty), so a later record can name
/// such a slot with a value the run itself wrote. Users decide what such slots mean to them
/// ([`Self::is_absent`] names the accounts concerned).
#[derive(Debug, Clone, Default)]
pub struct FirstPreValues {
    /// Every account named: `Some` with its value, or `None` if its first record lists it as
    /// absent (it did not exist before the run).
    pub accounts: HashMap<Address, Option<AccountPre>>,
    /// Every slot named, by account and slot.
    pub storage: HashMap<(Address, U256), U256>,
    /// Every code named, by hash.
    pub codes: HashMap<B256, Bytes>,
    /// The union of the records' block hash windows (for a number two windows name, the later
    /// record's hash).
    pub block_hashes: BTreeMap<u64, B256>,
}

impl FirstPreValues {
    /// The first values of `records`, in order.
    pub fn from_records<'a>(records: impl IntoIterator<Item = &'a BlockRecord>) -> Self {
        let mut values = Self::default();
        for record in records {
            values.add(record);
        }
        values
    }

    /// Adds the record after the last one added: only keys no earlier record named take its
    /// values.
    pub fn add(&mut self, record: &BlockRecord) {
        let pre = &record.pre_state;
        for account in &pre.accounts {
            self.accounts
                .entry(account.address)
                .or_insert(Some(*account));
        }
        for address in &pre.absent {
            self.accounts.entry(*address).or_insert(None);
        }
        for s in &pre.storage {
            self.storage.entry((s.address, s.slot)).or_insert(s.value);
        }
        for c in &pre.codes {
            self.codes.entry(c.hash).or_insert_with(|| c.code.clone());
        }
        self.block_hashes
            .extend(record.block_hashes.iter().map(|h| (h.number, h.hash)));
    }

    /// Whether the first record naming `address` lists it as absent: it did not exist before the
    /// run.
    pub fn is_absent(&self, address: &Address) -> bool {
        matches!(self.accounts.get(address), Some(None))
    }

    /// The state before the run as one [`PreState`] (sorted) and the block hashes (ascending). The
    /// slots of accounts that did not exist before the run are left out (they did not exist
    /// either: see the type's doc), and so are zero slots.
    pub fn into_pre_state(self) -> (PreState, Vec<BlockHashEntry>) {
        let absent: HashSet<Address> = self
            .accounts
            .iter()
            .filter(|(_, account)| account.is_none())
            .map(|(address, _)| *address)
            .collect();
        let mut pre = PreState {
            accounts: self.accounts.into_values().flatten().collect(),
            absent: absent.iter().copied().collect(),
            storage: self
                .storage
                .into_iter()
                .filter(|((address, _), value)| !absent.contains(address) && !value.is_zero())
                .map(|((address, slot), value)| StoragePre {
                    address,
                    slot,
                    value,
                })
                .collect(),
            codes: self
                .codes
                .into_iter()
                .map(|(hash, code)| CodePre { hash, code })
                .collect(),
        };
        pre.sort();
        let hashes = self
            .block_hashes
            .into_iter()
            .map(|(number, hash)| BlockHashEntry { number, hash })
            .collect();
        (pre, hashes)
    }
}

/// The state before a chained dump's first block, rebuilt from its records' pre-values alone.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PreChainState {
    /// The dump's first block (`None` for an empty dump): the state is at the block before it.
    pub first_block: Option<u64>,
    /// Accounts, slots and codes before the first block (see [`FirstPreValues::into_pre_state`]).
    pub pre_state: PreState,
    /// The union of all records' block hash windows, ascending.
    pub block_hashes: Vec<BlockHashEntry>,
}

/// The state before a chained dump's first block, from `records` (the dump's, in order): each
/// key at its first value ([`FirstPreValues`]), without the slots of accounts the dump creates.
pub fn pre_chain_state<E>(
    records: impl IntoIterator<Item = Result<BlockRecord, E>>,
) -> Result<PreChainState, E> {
    let mut first_block = None;
    let mut values = FirstPreValues::default();
    for record in records {
        let record = record?;
        first_block.get_or_insert(record.number());
        values.add(&record);
    }
    let (pre_state, block_hashes) = values.into_pre_state();
    Ok(PreChainState {
        first_block,
        pre_state,
        block_hashes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(number: u64, parent_hash: B256, pre_state: PreState) -> BlockRecord {
        let mut block = alloy_consensus::Block::<alloy_consensus::TxEnvelope>::default();
        block.header.number = number;
        block.header.parent_hash = parent_hash;
        BlockRecord {
            block,
            senders: Vec::new(),
            bal: Vec::new(),
            pre_state,
            block_hashes: vec![BlockHashEntry {
                number: number - 1,
                hash: parent_hash,
            }],
        }
    }

    #[test]
    fn a_chained_dump_links_by_parent_hash() {
        let first = record(1, B256::ZERO, PreState::default());
        let second = record(2, first.block.header.hash_slow(), PreState::default());
        let stray = record(3, B256::repeat_byte(9), PreState::default());
        let mut links = ChainLinks::new(true);
        links.check(&first).unwrap();
        links.check(&second).unwrap();
        let broken = links.check(&stray).unwrap_err();
        assert_eq!(broken.block, 3);
        assert_eq!(broken.previous, 2);
        assert_eq!(broken.previous_hash, second.block.header.hash_slow());
        // Independent blocks need not link.
        let mut links = ChainLinks::new(false);
        links.check(&first).unwrap();
        links.check(&stray).unwrap();
    }

    #[test]
    fn the_first_value_wins_and_created_accounts_have_no_storage() {
        let (old, new) = (Address::repeat_byte(1), Address::repeat_byte(2));
        let account = |nonce| AccountPre {
            address: old,
            nonce,
            ..AccountPre::default()
        };
        let slot = |address, value: u64| StoragePre {
            address,
            slot: U256::from(7),
            value: U256::from(value),
        };
        let first = PreState {
            accounts: vec![account(1)],
            absent: vec![new],
            storage: vec![slot(old, 5)],
            codes: Vec::new(),
        };
        // Block 2 sees what block 1 wrote: its values are not the state before the run.
        let second = PreState {
            accounts: vec![
                account(2),
                AccountPre {
                    address: new,
                    ..AccountPre::default()
                },
            ],
            absent: Vec::new(),
            storage: vec![slot(old, 6), slot(new, 8)],
            codes: Vec::new(),
        };
        let records = [record(1, B256::ZERO, first), record(2, B256::ZERO, second)];
        let values = FirstPreValues::from_records(&records);
        assert!(values.is_absent(&new));
        assert_eq!(values.storage[&(new, U256::from(7))], U256::from(8));
        let chain = pre_chain_state(records.into_iter().map(Ok::<_, ()>)).unwrap();
        assert_eq!(chain.first_block, Some(1));
        assert_eq!(chain.pre_state.accounts, vec![account(1)]);
        assert_eq!(chain.pre_state.absent, vec![new]);
        assert_eq!(chain.pre_state.storage, vec![slot(old, 5)]);
        assert_eq!(chain.block_hashes.len(), 2);
    }
}
