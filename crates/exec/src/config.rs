//! Chain configuration: chain id and hardfork schedule.

use alloy_consensus::Header;
use alloy_eips::eip7840::BlobParams;
use alloy_evm::{EvmEnv, eth::spec::EthSpec};
use alloy_hardforks::EthereumHardforks;

/// Chain id and hardfork schedule of the chain a block belongs to.
#[derive(Debug, Clone)]
pub struct ChainConfig {
    /// EIP-155 chain id.
    pub chain_id: u64,
    /// Hardfork activations (by block number and timestamp).
    pub spec: EthSpec,
}

impl ChainConfig {
    /// Ethereum mainnet (chain id 1, mainnet's hardfork schedule).
    pub fn mainnet() -> Self {
        Self {
            chain_id: 1,
            spec: EthSpec::mainnet(),
        }
    }

    /// The chain config for a chain id this crate knows.
    pub fn for_chain_id(chain_id: u64) -> Option<Self> {
        match chain_id {
            1 => Some(Self::mainnet()),
            _ => None,
        }
    }

    /// The EVM environment (spec id, block env, blob fees) for executing `header`.
    pub fn evm_env(&self, header: &Header) -> EvmEnv {
        let blob_params = if self.spec.is_prague_active_at_timestamp(header.timestamp) {
            Some(BlobParams::prague())
        } else if self.spec.is_cancun_active_at_timestamp(header.timestamp) {
            Some(BlobParams::cancun())
        } else {
            None
        };
        EvmEnv::for_eth_block(header, &self.spec, self.chain_id, blob_params)
    }
}
