//! From reth's types to the project's: blocks and chain config.

use alloy_consensus::{Block, TxEnvelope};
use bal_replay_executor::{ChainConfig, ForkSchedule};
use reth_ethereum::{
    chainspec::{ChainSpec, EthChainSpec},
    primitives::RecoveredBlock,
};

/// A reth block as the dump stores it: the body's transactions in alloy's envelope, and the
/// recovered senders.
pub fn dump_block(
    block: &RecoveredBlock<reth_ethereum::Block>,
) -> (Block<TxEnvelope>, Vec<alloy_primitives::Address>) {
    let senders = block.senders().to_vec();
    let block = block.clone_block().map_transactions(TxEnvelope::from);
    (block, senders)
}

/// The chain config of the node's chain spec: its chain id, every fork activation reth knows and
/// its blob parameters. Dumps carry it (`schedule` in the manifest), so they replay under the
/// node's own rules.
pub fn chain_config(spec: &ChainSpec) -> ChainConfig {
    ChainConfig {
        chain_id: spec.chain_id(),
        spec: ForkSchedule::from_spec(spec, spec.deposit_contract().map(|c| c.address))
            .with_blob_params(spec.blob_params.clone()),
    }
}
