//! Why a block could not be recorded, or the dump not follow the chain.

use alloy_primitives::B256;
use bal_replay_dump::DumpError;
use bal_replay_executor::{ExecError, HeaderMismatch};

/// Why one block could not be turned into a record.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// Re-execution failed.
    #[error(transparent)]
    Exec(#[from] ExecError),
    /// Re-execution disagrees with the block's header: the record would be wrong, so none is made.
    #[error("re-execution disagrees with the header: {0}")]
    Header(#[from] HeaderMismatch),
    /// The node could not provide the block, its parent's state or a block hash.
    #[error("block {block}: the node's provider failed: {message}")]
    Provider {
        /// Block number.
        block: u64,
        /// The provider's error.
        message: String,
    },
}

/// Why the dump could not follow the chain.
#[derive(Debug, thiserror::Error)]
pub enum ExexError {
    /// Reading or writing the dump failed.
    #[error(transparent)]
    Dump(#[from] DumpError),
    /// A block could not be recorded.
    #[error("block {block}: {source}")]
    Record {
        /// Block number.
        block: u64,
        /// What went wrong.
        source: RecordError,
    },
    /// The dump holds this block number under another hash: the chain reorganised without the
    /// dump being told to revert.
    #[error(
        "block {number}: the dump holds hash {dumped}, the chain has {chain}; revert the dump to the fork point first"
    )]
    Diverged {
        /// Block number.
        number: u64,
        /// Hash in the dump.
        dumped: B256,
        /// Hash on the chain.
        chain: B256,
    },
    /// A block does not extend the dump's last block.
    #[error(
        "block {number} (parent {parent}) does not extend the dump, whose last block is {last} ({last_hash})"
    )]
    Unlinked {
        /// The block's number.
        number: u64,
        /// The block's parent hash.
        parent: B256,
        /// The dump's last block number.
        last: u64,
        /// The dump's last block hash.
        last_hash: B256,
    },
    /// The existing dump is not one this dumper can extend.
    #[error("dump in {dir}: {reason}")]
    Incompatible {
        /// The dump directory.
        dir: String,
        /// What is wrong with it.
        reason: String,
    },
    /// At start, the node has none of the dump's last blocks yet: its best block is below them.
    /// The dump is left as it is; cutting it back would delete records the node is merely behind.
    #[error(
        "dump in {dir}: its tip is block {dump_tip} ({dump_tip_hash}) but the node's is block \
         {node_tip}, below every block the dump could be cut back to ({oldest}..={dump_tip}); \
         the dump was left as it is: let the node sync past block {oldest} (without \
         --bal.dump-dir), or dump to another directory"
    )]
    NodeBehind {
        /// The dump directory.
        dir: String,
        /// The dump's last block number.
        dump_tip: u64,
        /// The dump's last block hash.
        dump_tip_hash: B256,
        /// The oldest dumped block the dump could be cut back to.
        oldest: u64,
        /// The node's best block number.
        node_tip: u64,
    },
    /// At start, none of the dump's last blocks is on the node's canonical chain although the node
    /// has reached them: it follows another chain, or a branch that forked before them. The dump
    /// is left as it is.
    #[error(
        "dump in {dir}: none of its blocks {oldest}..={dump_tip} (tip {dump_tip_hash}) is on the \
         node's canonical chain, whose tip is block {node_tip}; the dump was left as it is: it \
         belongs to another chain or branch, so move it away or dump to another directory"
    )]
    OffChain {
        /// The dump directory.
        dir: String,
        /// The dump's last block number.
        dump_tip: u64,
        /// The dump's last block hash.
        dump_tip_hash: B256,
        /// The oldest dumped block the dump could have been cut back to.
        oldest: u64,
        /// The node's best block number.
        node_tip: u64,
    },
    /// A historical range is empty or reversed.
    #[error("invalid block range {from}..={to}")]
    BadRange {
        /// First block.
        from: u64,
        /// Last block.
        to: u64,
    },
}
