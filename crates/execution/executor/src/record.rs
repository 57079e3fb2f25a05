//! One block to one dump record: execute it with the BAL builder and the pre-value recorder,
//! settle its header against the execution, assemble the record.

use crate::{
    BlockOutput, ChainConfig, ExecError, ExecOptions, HeaderMismatch, check_bal_hash, execute_block,
};
use alloy_consensus::{Block, TxEnvelope};
use alloy_primitives::Address;
use bal_replay_dump::{BlockHashEntry, BlockRecord};
use revm::{DatabaseRef, database_interface::DBErrorMarker};

/// What the header fields that execution determines (gas used, receipts root, logs bloom) are to
/// the record of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderFields {
    /// The block was mined (a fixture, a node's block): the header's values must equal
    /// execution's, or there is no record ([`check_header`](crate::check_header)).
    Check,
    /// The block is being built (the synthetic chain generator): the header takes execution's
    /// values.
    Seal,
}

/// A block executed for a dump: its record, and what execution gave besides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedBlock {
    /// The dump record.
    pub record: BlockRecord,
    /// The execution output. Its `bal` and `pre_state` are `None`: they moved into the record.
    pub output: BlockOutput,
    /// Whether the receipts root was checked (Byzantium on; see [`check_header`](crate::check_header)).
    pub receipts_root_checked: bool,
}

/// Executes `block` over `parent_state` (the state after its parent) with the BAL builder and the
/// pre-value recorder on ([`ExecOptions::for_dump`]), settles its header as `header` says, and
/// returns the record, carrying `senders` and `block_hashes` as given.
///
/// The one policy of every producer of records (fixture import, the synthetic generator, the
/// node's dumper):
/// - **The record's header agrees with its execution.** Under [`HeaderFields::Seal`] the fields
///   are set first; then gas used, logs bloom and (from Byzantium on) receipts root are checked,
///   and a mismatch is the [`HeaderMismatch`], never a record. From Amsterdam on, the BAL must
///   hash to the header's `blockAccessListHash` ([`ExecError::BalHash`]).
/// - **A record's BAL and pre-state come from this execution, and both are required.** Execution
///   always returns both when asked; if it ever did not, that is [`ExecError::MissingOutput`],
///   never an empty default: an empty BAL or pre-state would be a record claiming the block reads
///   and writes nothing.
pub fn execute_for_dump<D, E>(
    config: &ChainConfig,
    parent_state: D,
    block: Block<TxEnvelope>,
    senders: Vec<Address>,
    block_hashes: Vec<BlockHashEntry>,
    header: HeaderFields,
) -> Result<RecordedBlock, E>
where
    D: DatabaseRef + std::fmt::Debug,
    D::Error: DBErrorMarker + std::error::Error + Send + Sync + 'static,
    E: From<ExecError> + From<HeaderMismatch>,
{
    let output = execute_block(
        config,
        parent_state,
        &block,
        &senders,
        ExecOptions::for_dump(),
    )?;
    record_from_output(config, block, senders, block_hashes, output, header)
}

/// The second half of [`execute_for_dump`], for a caller that needs the execution's output even
/// when the block does not check (to carry on along a chain and report every block): `output` is
/// `block` executed with [`ExecOptions::for_dump`]. Settles the header, checks it (gas used, logs
/// bloom, receipts root, and from Amsterdam on the BAL's hash, [`check_bal_hash`]), and assembles
/// the record.
pub fn record_from_output<E>(
    config: &ChainConfig,
    mut block: Block<TxEnvelope>,
    senders: Vec<Address>,
    block_hashes: Vec<BlockHashEntry>,
    mut output: BlockOutput,
    header: HeaderFields,
) -> Result<RecordedBlock, E>
where
    E: From<ExecError> + From<HeaderMismatch>,
{
    if header == HeaderFields::Seal {
        block.header.gas_used = output.gas_used;
        block.header.receipts_root = output.receipts_root;
        block.header.logs_bloom = output.logs_bloom;
        if block.header.block_access_list_hash.is_some() {
            let bal = output.bal.as_deref().unwrap_or_default();
            block.header.block_access_list_hash =
                Some(alloy_eip7928::compute_block_access_list_hash(bal));
        }
    }
    let receipts_root_checked = crate::check_header(
        config,
        &block.header,
        output.gas_used,
        output.receipts_root,
        output.logs_bloom,
    )?;
    let missing = |what| ExecError::MissingOutput {
        block: output.number,
        what,
    };
    let bal = output.bal.take().ok_or_else(|| missing("BAL"))?;
    check_bal_hash(&block.header, &bal, None).map_err(ExecError::from)?;
    let pre_state = output
        .pre_state
        .take()
        .ok_or_else(|| missing("pre-state"))?;
    Ok(RecordedBlock {
        record: BlockRecord {
            block,
            senders,
            bal,
            pre_state,
            block_hashes,
        },
        output,
        receipts_root_checked,
    })
}
