//! The ExEx: reth's notification loop around `bal_replay_exex::ChainDumper`.

use crate::adapter::{chain_config, dump_block};
use alloy_consensus::{Block, BlockHeader, TxEnvelope};
use alloy_primitives::{Address, B256};
use bal_replay_dump::BlockRecord;
use bal_replay_exec::ChainConfig;
use bal_replay_exex::{
    BlockRange, ChainBlock, ChainDumper, RecordError, last_block_hashes, record_block, record_lag,
};
use futures::TryStreamExt;
use reth_ethereum::{
    EthPrimitives,
    chainspec::ChainSpec,
    evm::revm::database::StateProviderDatabase,
    exex::{ExExContext, ExExHead},
    node::api::{FullNodeComponents, NodeTypes},
    provider::{
        BlockHashReader, BlockNumReader, ProviderError, ProviderResult, StateProviderBox,
        StateProviderFactory,
    },
};
use std::{future::Future, path::PathBuf};
use tracing::info;

/// A committed block, ready to record.
pub struct NodeBlock {
    number: u64,
    hash: B256,
    parent_hash: B256,
    block: Block<TxEnvelope>,
    senders: Vec<Address>,
}

impl ChainBlock for NodeBlock {
    fn number(&self) -> u64 {
        self.number
    }
    fn hash(&self) -> B256 {
        self.hash
    }
    fn parent_hash(&self) -> B256 {
        self.parent_hash
    }
}

/// Re-executes `block` over its parent's state (`parent_state`, historical or in memory), with the
/// 256 canonical hashes before it from `hashes`.
pub fn record(
    config: &ChainConfig,
    parent_state: ProviderResult<StateProviderBox>,
    hashes: &impl BlockHashReader,
    block: Block<TxEnvelope>,
    senders: Vec<Address>,
) -> Result<BlockRecord, RecordError> {
    let number = block.header.number;
    let parent_state = parent_state.map_err(|e: ProviderError| RecordError::Provider {
        block: number,
        message: format!("state after the parent block: {e}"),
    })?;
    let hashes = last_block_hashes(number, |n| hashes.block_hash(n))?;
    record_block(config, StateProviderDatabase::new(parent_state), block, senders, hashes)
}

/// The dump ExEx.
pub struct BalDumpExEx;

impl BalDumpExEx {
    /// Opens (or resumes) the dump and returns the ExEx's future. A resumed dump makes reth send
    /// notifications from the dump's last durable block on, backfilling what the node committed
    /// while the ExEx was down.
    pub fn start<Node>(
        mut ctx: ExExContext<Node>,
        dir: PathBuf,
        range: BlockRange,
    ) -> eyre::Result<impl Future<Output = eyre::Result<()>> + Send>
    where
        Node: FullNodeComponents<Types: NodeTypes<Primitives = EthPrimitives, ChainSpec = ChainSpec>>,
    {
        let config = chain_config(&ctx.config.chain);
        let mut dumper = ChainDumper::open(&dir, config.chain_id, range)?;
        // A node stopped before persisting blocks it had notified restarts behind the dump.
        let removed = dumper.rewind_to_canonical(|n| ctx.provider().block_hash(n))?;
        if removed > 0 {
            info!(target: "reth_bal", removed, "cut the dump back to the node's canonical chain");
        }
        let head = match dumper.last_dumped() {
            Some((number, hash)) => Some((number, hash)),
            None => match range.from {
                Some(from) if from > 0 => ctx
                    .provider()
                    .block_hash(from - 1)?
                    .map(|hash| (from - 1, hash)),
                _ => None,
            },
        };
        if let Some((number, hash)) = head {
            info!(target: "reth_bal", number, %hash, dir = %dir.display(), "dump ExEx resumes after block");
            ctx.set_notifications_with_head(ExExHead {
                block: alloy_eips::BlockNumHash { number, hash },
            });
        } else {
            info!(target: "reth_bal", dir = %dir.display(), "dump ExEx starts with the next committed block");
        }
        Ok(run(ctx, dumper, config))
    }
}

async fn run<Node>(
    mut ctx: ExExContext<Node>,
    mut dumper: ChainDumper,
    config: ChainConfig,
) -> eyre::Result<()>
where
    Node: FullNodeComponents<Types: NodeTypes<Primitives = EthPrimitives, ChainSpec = ChainSpec>>,
{
    while let Some(notification) = ctx.notifications.try_next().await? {
        if let Some(reverted) = notification.reverted_chain() {
            // Cut back to the fork point before anything of the new branch is written.
            dumper.revert(reverted.first().number())?;
        }
        if let Some(committed) = notification.committed_chain() {
            let blocks: Vec<NodeBlock> = committed
                .blocks_iter()
                .map(|b| {
                    let (block, senders) = dump_block(b);
                    NodeBlock {
                        number: b.number(),
                        hash: b.hash(),
                        parent_hash: b.parent_hash(),
                        block,
                        senders,
                    }
                })
                .collect();
            let provider = ctx.provider().clone();
            // Re-execution is CPU work: keep it off the async workers' hot path.
            let outcome = tokio::task::block_in_place(|| {
                dumper.commit(&blocks, |b| {
                    let parent_state = provider.history_by_block_hash(b.parent_hash);
                    record(&config, parent_state, &provider, b.block.clone(), b.senders.clone())
                })
            })?;
            info!(
                target: "reth_bal",
                range = ?committed.range(),
                dumped = outcome.dumped,
                skipped = outcome.skipped,
                "dumped committed chain"
            );
            // Only now, with the records durable, may reth consider these blocks done.
            ctx.send_finished_height(committed.tip().num_hash())?;
            record_lag(provider.best_block_number()?, dumper.last_dumped().map(|l| l.0));
        }
    }
    Ok(())
}
