//! Sequential execution of one block.

use crate::{ChainConfig, ExecError, RecordingDb, state_changes_from_bundle};
use alloy_consensus::{Block, ReceiptEnvelope, TxEnvelope};
use alloy_eip7928::BlockAccessList;
use alloy_evm::{
    Evm, EvmFactory,
    block::{BalIndexedDatabase, BlockExecutor},
    eth::{
        EthBlockExecutionCtx, EthBlockExecutor, EthEvmFactory, receipt_builder::AlloyReceiptBuilder,
    },
};
use alloy_primitives::{Address, B256, Bloom};
use bal_replay_dump::{BlockHashEntry, PreState};
use bal_replay_state::StateChanges;
use revm::{
    DatabaseRef,
    database::{State, states::bundle_state::BundleRetention},
    database_interface::DBErrorMarker,
};
use std::borrow::Cow;

/// What to produce besides receipts and state changes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExecOptions {
    /// Build the block's EIP-7928 access list.
    pub build_bal: bool,
    /// Record the pre-block value of every key read.
    pub record_pre_state: bool,
}

impl ExecOptions {
    /// Everything a dump record needs: the BAL and the pre-state.
    pub const fn for_dump() -> Self {
        Self {
            build_bal: true,
            record_pre_state: true,
        }
    }

    /// What verifying a block against its record needs: the BAL it builds.
    pub const fn for_verify() -> Self {
        Self {
            build_bal: true,
            record_pre_state: false,
        }
    }
}

/// The result of executing one block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockOutput {
    /// Block number.
    pub number: u64,
    /// Receipts, one per transaction.
    pub receipts: Vec<ReceiptEnvelope>,
    /// Gas used by the block.
    pub gas_used: u64,
    /// Root of the receipts trie (comparable to the header from Byzantium on).
    pub receipts_root: B256,
    /// Bloom of all logs.
    pub logs_bloom: Bloom,
    /// The block's changes to the flat state.
    pub changes: StateChanges,
    /// The block's access list, if asked for.
    pub bal: Option<BlockAccessList>,
    /// Pre-block value of every key read, if asked for.
    pub pre_state: Option<PreState>,
    /// Block hashes the block read (BLOCKHASH), if recording.
    pub block_hashes_read: Vec<BlockHashEntry>,
}

/// The block-level inputs of alloy-evm's Ethereum block executor for `block`: parent hash, beacon
/// root, ommers, withdrawals, extra data. Every way this project runs a block, whole or task by task,
/// starts from it.
pub fn execution_ctx(block: &Block<TxEnvelope>) -> EthBlockExecutionCtx<'_> {
    EthBlockExecutionCtx {
        parent_hash: block.header.parent_hash,
        parent_beacon_block_root: block.header.parent_beacon_block_root,
        ommers: &block.body.ommers,
        withdrawals: block
            .body
            .withdrawals
            .as_ref()
            .map(|w| Cow::Borrowed(w.as_slice())),
        extra_data: block.header.extra_data.clone(),
        tx_count_hint: Some(block.body.transactions.len()),
        // EIP-7843 (Amsterdam): the beacon slot, which the SLOTNUM opcode returns.
        slot_number: block.header.slot_number,
    }
}

/// [`execution_ctx`] for an executor that runs one step of `block` alone (a transaction, or the
/// pre- or post-block changes): room for one receipt, not the block's (the executor reserves the
/// hint, which for a large block made a small transaction's run allocate for all its receipts).
pub fn step_execution_ctx(block: &Block<TxEnvelope>) -> EthBlockExecutionCtx<'_> {
    EthBlockExecutionCtx {
        tx_count_hint: Some(1),
        ..execution_ctx(block)
    }
}

/// Executes `block` over `db` with alloy-evm's Ethereum block executor.
///
/// `senders[i]` is the sender of transaction `i`. The BAL indices follow EIP-7928: 0 for the
/// pre-execution system calls, `i + 1` for transaction `i`, `n + 1` for the post-block changes.
pub fn execute_block<D>(
    config: &ChainConfig,
    db: D,
    block: &Block<TxEnvelope>,
    senders: &[Address],
    options: ExecOptions,
) -> Result<BlockOutput, ExecError>
where
    D: DatabaseRef + std::fmt::Debug,
    D::Error: DBErrorMarker + std::error::Error + Send + Sync + 'static,
{
    let number = block.header.number;
    let txs = &block.body.transactions;
    if senders.len() != txs.len() {
        return Err(ExecError::SenderCount {
            block: number,
            senders: senders.len(),
            txs: txs.len(),
        });
    }
    let exec_err =
        |index: u64, e| ExecError::from_execution::<D::Error>(number, index, txs.len(), e);

    let state = State::builder()
        .with_database(RecordingDb::new(db, options.record_pre_state))
        .with_bundle_update()
        .with_bal_builder_if(options.build_bal)
        .build();
    let evm = EthEvmFactory::default().create_evm(state, config.evm_env(&block.header));
    let ctx = execution_ctx(block);
    let mut executor =
        EthBlockExecutor::new(evm, ctx, &config.spec, AlloyReceiptBuilder::default());

    BalIndexedDatabase::set_bal_index(executor.evm_mut().db_mut(), 0);
    executor
        .apply_pre_execution_changes()
        .map_err(|e| exec_err(0, e))?;
    for (index, (tx, sender)) in txs.iter().zip(senders).enumerate() {
        let recovered = alloy_consensus::transaction::Recovered::new_unchecked(tx, *sender);
        executor
            .execute_transaction_with_index(recovered, index)
            .map_err(|e| exec_err(index as u64 + 1, e))?;
    }
    BalIndexedDatabase::set_bal_index(executor.evm_mut().db_mut(), txs.len() as u64 + 1);
    let (evm, result) = executor
        .finish()
        .map_err(|e| exec_err(txs.len() as u64 + 1, e))?;
    let mut state = evm.into_db();

    state.merge_transitions(BundleRetention::PlainState);
    let bundle = state.take_bundle();
    let changes = state_changes_from_bundle(&bundle);
    let bal = state.take_built_alloy_bal();
    let (pre_state, block_hashes_read) = if options.record_pre_state {
        let (pre, hashes) = state.database.into_recorded();
        (Some(pre), hashes)
    } else {
        (None, Vec::new())
    };

    let (receipts_root, logs_bloom) = crate::receipts_root_and_bloom(&result.receipts);

    Ok(BlockOutput {
        number,
        gas_used: result.gas_used,
        receipts: result.receipts,
        receipts_root,
        logs_bloom,
        changes,
        bal,
        pre_state,
        block_hashes_read,
    })
}
