//! The block record: everything needed to re-execute one block with no other source.

use alloy_consensus::{Block, TxEnvelope};
use alloy_eip7928::BlockAccessList;
use alloy_primitives::{Address, B256, Bytes, U256};
use alloy_rlp::{RlpDecodable, RlpEncodable};

/// The pre-block value of an account that exists before the block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, RlpEncodable, RlpDecodable)]
pub struct AccountPre {
    /// Account address.
    pub address: Address,
    /// Nonce before the block.
    pub nonce: u64,
    /// Balance before the block.
    pub balance: U256,
    /// Code hash before the block (`KECCAK_EMPTY` for accounts without code).
    pub code_hash: B256,
}

/// The pre-block value of one storage slot (zero for slots that do not exist).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, RlpEncodable, RlpDecodable)]
pub struct StoragePre {
    /// Account address.
    pub address: Address,
    /// Slot key.
    pub slot: U256,
    /// Value before the block.
    pub value: U256,
}

/// Contract code by hash.
#[derive(Debug, Clone, PartialEq, Eq, Default, RlpEncodable, RlpDecodable)]
pub struct CodePre {
    /// keccak256 of `code`.
    pub hash: B256,
    /// Raw bytecode.
    pub code: Bytes,
}

/// A historical block hash (the answer to `BLOCKHASH(number)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, RlpEncodable, RlpDecodable)]
pub struct BlockHashEntry {
    /// Block number.
    pub number: u64,
    /// Its hash.
    pub hash: B256,
}

/// Pre-block values of everything a block reads or writes.
///
/// Invariant: executing the block over a state that holds exactly these values (and nothing else) gives
/// the same result as executing it over the full state of its parent. Accounts listed in `absent` did
/// not exist before the block; a slot missing from `storage` of an account in `accounts` is zero only if
/// the block never reads it (every slot the block reads is listed, zero or not).
#[derive(Debug, Clone, PartialEq, Eq, Default, RlpEncodable, RlpDecodable)]
pub struct PreState {
    /// Accounts that exist before the block, sorted by address.
    pub accounts: Vec<AccountPre>,
    /// Addresses the block touches that do not exist before it, sorted.
    pub absent: Vec<Address>,
    /// Storage slots read or written, sorted by (address, slot).
    pub storage: Vec<StoragePre>,
    /// Code of every account the block loads code from, sorted by hash.
    pub codes: Vec<CodePre>,
}

impl PreState {
    /// Number of state keys (accounts, absent accounts and slots).
    pub fn key_count(&self) -> usize {
        self.accounts.len() + self.absent.len() + self.storage.len()
    }

    /// Sorts every list into its canonical order.
    pub fn sort(&mut self) {
        self.accounts.sort_unstable_by_key(|a| a.address);
        self.absent.sort_unstable();
        self.storage.sort_unstable_by_key(|s| (s.address, s.slot));
        self.codes.sort_unstable_by_key(|c| c.hash);
    }
}

/// One block and everything needed to replay it.
///
/// Invariant: `senders.len() == block.body.transactions.len()`, and `bal` is the EIP-7928 access list
/// execution builds for this block (index 0 = pre-execution system calls, 1..=n = transactions,
/// n + 1 = post-block changes).
#[derive(Debug, Clone, PartialEq, Eq, RlpEncodable, RlpDecodable)]
pub struct BlockRecord {
    /// The block (header and body).
    pub block: Block<TxEnvelope>,
    /// Recovered sender of every transaction, in order.
    pub senders: Vec<Address>,
    /// The block access list in its wire form.
    pub bal: BlockAccessList,
    /// Pre-block values of every key the block reads or writes.
    pub pre_state: PreState,
    /// Hashes of the (up to) 256 blocks before this one, ascending by number.
    pub block_hashes: Vec<BlockHashEntry>,
}

impl BlockRecord {
    /// The block number.
    pub fn number(&self) -> u64 {
        self.block.header.number
    }

    /// Gas used per the header.
    pub fn gas_used(&self) -> u64 {
        self.block.header.gas_used
    }

    /// Number of transactions.
    pub fn tx_count(&self) -> usize {
        self.block.body.transactions.len()
    }

    /// RLP-encoded size of the BAL in bytes.
    pub fn bal_rlp_len(&self) -> usize {
        alloy_rlp::Encodable::length(&self.bal)
    }
}

/// Encodes a record as RLP: the raw (uncompressed) payload of a frame.
pub fn encode_record(record: &BlockRecord) -> Vec<u8> {
    alloy_rlp::encode(record)
}

/// Decodes a record from RLP, rejecting bytes left over after it.
///
/// A frame's payload is exactly one record, so trailing bytes mean the payload is not what the
/// writer wrote, even if its prefix decodes.
pub fn decode_record(bytes: &[u8]) -> Result<BlockRecord, alloy_rlp::Error> {
    let mut rest = bytes;
    let record = <BlockRecord as alloy_rlp::Decodable>::decode(&mut rest)?;
    if !rest.is_empty() {
        return Err(alloy_rlp::Error::Custom(
            "trailing bytes after block record",
        ));
    }
    Ok(record)
}
