//! The ExEx: reth's notification loop around `bal_replay_exex::ChainDumper`.

use crate::adapter::{chain_config, dump_block};
use alloy_consensus::{Block, BlockHeader, TxEnvelope};
use alloy_primitives::{Address, B256};
use bal_replay_dump::BlockRecord;
use bal_replay_executor::ChainConfig;
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
        BalProvider, BlockHashReader, BlockNumReader, ProviderError, ProviderResult,
        StateProviderBox, StateProviderFactory,
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

/// Re-executes `block` (hash `hash`) over its parent's state (`parent_state`, historical or in
/// memory), with the 256 canonical hashes before it from `node`, and checks our BAL against the
/// block's as the node holds it (reth's BAL store), when it still does.
pub fn record(
    config: &ChainConfig,
    parent_state: ProviderResult<StateProviderBox>,
    node: &(impl BlockHashReader + BalProvider),
    hash: B256,
    block: Block<TxEnvelope>,
    senders: Vec<Address>,
) -> Result<BlockRecord, RecordError> {
    let number = block.header.number;
    let provider = |what: &str, e: ProviderError| RecordError::Provider {
        block: number,
        message: format!("{what}: {e}"),
    };
    let parent_state = parent_state.map_err(|e| provider("state after the parent block", e))?;
    let hashes = last_block_hashes(number, |n| node.block_hash(n))?;
    let network_bal = node
        .get_bal_by_hash(hash)
        .map_err(|e| provider("the block's BAL", e))?;
    record_block(
        config,
        StateProviderDatabase::new(parent_state),
        block,
        senders,
        hashes,
        network_bal.as_ref().map(|b| b.as_ref()),
    )
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
        Node:
            FullNodeComponents<Types: NodeTypes<Primitives = EthPrimitives, ChainSpec = ChainSpec>>,
    {
        let config = chain_config(&ctx.config.chain);
        let mut dumper = ChainDumper::open_with_schedule(
            &dir,
            config.chain_id,
            Some(config.spec.to_schedule()),
            range,
        )?;
        // A node stopped before persisting blocks it had notified restarts behind the dump: cut
        // back to the last block it has, or stop (naming both tips) if it has none of them.
        let node_tip = ctx.provider().best_block_number()?;
        let removed = dumper.rewind_to_canonical(node_tip, |n| ctx.provider().block_hash(n))?;
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
                    record(
                        &config,
                        parent_state,
                        &provider,
                        b.hash,
                        b.block.clone(),
                        b.senders.clone(),
                    )
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
            record_lag(
                provider.best_block_number()?,
                dumper.last_dumped().map(|l| l.0),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! The ExEx inside reth's ExEx test harness: a real provider over a temporary database with
    //! mainnet's genesis, notifications sent by hand.

    use super::*;
    use alloy_consensus::{EMPTY_OMMER_ROOT_HASH, EMPTY_ROOT_HASH, Header};
    use alloy_primitives::U256;
    use bal_replay_dump::DumpReader;
    use reth_ethereum::{exex::ExExEvent, primitives::RecoveredBlock, provider::Chain};
    use reth_exex_test_utils::test_exex_context;
    use std::time::Duration;

    /// An empty block on top of `parent` (a Frontier block: its only change is the block reward).
    fn empty_child(
        parent: &RecoveredBlock<reth_ethereum::Block>,
        extra: &'static [u8],
    ) -> RecoveredBlock<reth_ethereum::Block> {
        let header = Header {
            parent_hash: parent.hash(),
            number: parent.number() + 1,
            timestamp: parent.timestamp + 15,
            gas_limit: parent.gas_limit,
            beneficiary: Address::with_last_byte(0xbe),
            difficulty: U256::from(17_179_869_184u64),
            ommers_hash: EMPTY_OMMER_ROOT_HASH,
            transactions_root: EMPTY_ROOT_HASH,
            receipts_root: EMPTY_ROOT_HASH,
            extra_data: extra.into(),
            ..Default::default()
        };
        let block = reth_ethereum::Block {
            header,
            body: Default::default(),
        };
        RecoveredBlock::new_unhashed(block, Vec::new())
    }

    fn chain(blocks: &[RecoveredBlock<reth_ethereum::Block>]) -> Chain {
        Chain::new(blocks.to_vec(), Default::default(), Default::default())
    }

    async fn wait_for_records(dir: &std::path::Path, count: u64) -> Vec<BlockRecord> {
        for _ in 0..200 {
            let reader = DumpReader::open(dir).unwrap();
            if reader.manifest().record_count == count {
                return reader.records().collect::<Result<_, _>>().unwrap();
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("the dump never reached {count} records");
    }

    async fn finished_height(
        handle: &mut reth_exex_test_utils::TestExExHandle,
    ) -> Option<ExExEvent> {
        tokio::time::timeout(Duration::from_secs(30), handle.events_rx.recv())
            .await
            .ok()
            .flatten()
    }

    // The harness's provider knows only the genesis (notifications are sent by hand, not
    // executed by the node), so every block here is a child of the genesis.
    #[tokio::test(flavor = "multi_thread")]
    async fn commit_reorg_revert_and_restart() -> eyre::Result<()> {
        let (ctx, mut handle) = test_exex_context().await?;
        let dir = tempfile::tempdir()?;
        let exex = BalDumpExEx::start(ctx, dir.path().to_path_buf(), BlockRange::default())?;
        let task = tokio::spawn(exex);

        // Commit: re-executed over the genesis state, durable, then FinishedHeight.
        let b1 = empty_child(&handle.genesis, b"a");
        handle
            .send_notification_chain_committed(chain(std::slice::from_ref(&b1)))
            .await?;
        let event = finished_height(&mut handle).await;
        assert!(
            matches!(event, Some(ExExEvent::FinishedHeight(h)) if h == b1.num_hash()),
            "{event:?}; exex: {:?}",
            task.is_finished()
        );
        let records = wait_for_records(dir.path(), 1).await;
        assert_eq!(records[0].block.header.hash_slow(), b1.hash());
        assert_eq!(records[0].block_hashes.len(), 1);
        assert_eq!(records[0].block_hashes[0].hash, handle.genesis.hash());
        // The BAL holds the Frontier block reward to the beneficiary.
        assert!(
            records[0]
                .bal
                .iter()
                .any(|a| a.address == Address::with_last_byte(0xbe))
        );

        // Reorg: block 1 replaced by 1'.
        let b1b = empty_child(&handle.genesis, b"b");
        handle
            .send_notification_chain_reorged(
                chain(std::slice::from_ref(&b1)),
                chain(std::slice::from_ref(&b1b)),
            )
            .await?;
        let event = finished_height(&mut handle).await;
        assert!(matches!(event, Some(ExExEvent::FinishedHeight(h)) if h == b1b.num_hash()));
        let records = wait_for_records(dir.path(), 1).await;
        assert_eq!(records[0].block.header.hash_slow(), b1b.hash());

        // Revert of 1': nothing left.
        handle
            .send_notification_chain_reverted(chain(std::slice::from_ref(&b1b)))
            .await?;
        wait_for_records(dir.path(), 0).await;

        // Restart over a dump that holds only a block the node does not have (as after a node
        // stopped before persisting it): the node, at genesis, has none of the dump's blocks, so
        // the ExEx refuses to start, naming both tips, and the dump is kept.
        handle
            .send_notification_chain_committed(chain(std::slice::from_ref(&b1)))
            .await?;
        assert!(finished_height(&mut handle).await.is_some());
        wait_for_records(dir.path(), 1).await;
        task.abort();
        // The aborted ExEx's writer (and its lock on the dump) is dropped once the task ends.
        let _ = task.await;
        let (ctx, _handle) = test_exex_context().await?;
        let Err(err) = BalDumpExEx::start(ctx, dir.path().to_path_buf(), BlockRange::default())
        else {
            panic!("the ExEx started over a dump the node is behind");
        };
        let message = format!("{err:#}");
        assert!(
            message.contains(&format!("its tip is block 1 ({})", b1.hash())),
            "{message}"
        );
        assert!(message.contains("the node's is block 0"), "{message}");
        wait_for_records(dir.path(), 1).await;
        Ok(())
    }
}
