//! Chain configuration: chain id and hardfork schedule.

use alloy_consensus::Header;
use alloy_eips::{eip6110::MAINNET_DEPOSIT_CONTRACT_ADDRESS, eip7840::BlobParams};
use alloy_evm::{EvmEnv, eth::spec::EthExecutorSpec};
use alloy_hardforks::{EthereumChainHardforks, EthereumHardfork, EthereumHardforks, ForkCondition};
use alloy_primitives::Address;

/// A chain's hardfork activations and deposit contract: what alloy-evm's block executor asks of a
/// chain. alloy-evm's own `EthSpec` only comes for the public networks; a node's dev chain (or any
/// chain reth knows) is described by listing its forks here.
#[derive(Debug, Clone)]
pub struct ForkSchedule {
    hardforks: EthereumChainHardforks,
    deposit_contract: Option<Address>,
}

impl ForkSchedule {
    /// A schedule from fork activations and the deposit contract address (EIP-6110).
    pub fn new(
        forks: impl IntoIterator<Item = (EthereumHardfork, ForkCondition)>,
        deposit_contract: Option<Address>,
    ) -> Self {
        Self {
            hardforks: EthereumChainHardforks::new(forks),
            deposit_contract,
        }
    }

    /// The same forks as `spec`, e.g. a node's chain spec.
    pub fn from_spec(spec: &impl EthereumHardforks, deposit_contract: Option<Address>) -> Self {
        Self::new(
            EthereumHardfork::VARIANTS
                .iter()
                .map(|fork| (*fork, spec.ethereum_fork_activation(*fork)))
                .filter(|(_, condition)| *condition != ForkCondition::Never),
            deposit_contract,
        )
    }

    /// Ethereum mainnet's schedule.
    pub fn mainnet() -> Self {
        Self {
            hardforks: EthereumChainHardforks::mainnet(),
            deposit_contract: Some(MAINNET_DEPOSIT_CONTRACT_ADDRESS),
        }
    }
}

impl EthereumHardforks for ForkSchedule {
    fn ethereum_fork_activation(&self, fork: EthereumHardfork) -> ForkCondition {
        self.hardforks.ethereum_fork_activation(fork)
    }
}

impl EthExecutorSpec for ForkSchedule {
    fn deposit_contract_address(&self) -> Option<Address> {
        self.deposit_contract
    }
}

/// Chain id of reth's (and anvil's) dev chain.
pub const RETH_DEV_CHAIN_ID: u64 = 1337;

/// Chain id and hardfork schedule of the chain a block belongs to.
#[derive(Debug, Clone)]
pub struct ChainConfig {
    /// EIP-155 chain id.
    pub chain_id: u64,
    /// Hardfork activations (by block number and timestamp).
    pub spec: ForkSchedule,
}

impl ChainConfig {
    /// Ethereum mainnet (chain id 1, mainnet's hardfork schedule).
    pub fn mainnet() -> Self {
        Self {
            chain_id: 1,
            spec: ForkSchedule::mainnet(),
        }
    }

    /// reth's `--dev` chain (chain id 1337): every fork through Osaka active from genesis, no
    /// deposit contract, as reth v2.5.1's `DEV_HARDFORKS` has it. Dumps of a dev node replay with it.
    pub fn reth_dev() -> Self {
        use EthereumHardfork::*;
        let at_genesis = [
            Frontier,
            Homestead,
            Dao,
            Tangerine,
            SpuriousDragon,
            Byzantium,
            Constantinople,
            Petersburg,
            Istanbul,
            Berlin,
            London,
        ]
        .into_iter()
        .map(|fork| (fork, ForkCondition::Block(0)));
        let paris = (
            Paris,
            ForkCondition::TTD {
                activation_block_number: 0,
                fork_block: None,
                total_difficulty: alloy_primitives::U256::ZERO,
            },
        );
        let by_time = [Shanghai, Cancun, Prague, Osaka]
            .into_iter()
            .map(|fork| (fork, ForkCondition::Timestamp(0)));
        Self {
            chain_id: RETH_DEV_CHAIN_ID,
            spec: ForkSchedule::new(
                at_genesis.chain(std::iter::once(paris)).chain(by_time),
                None,
            ),
        }
    }

    /// The chain config for a chain id this crate knows: mainnet, and reth's dev chain.
    pub fn for_chain_id(chain_id: u64) -> Option<Self> {
        match chain_id {
            1 => Some(Self::mainnet()),
            RETH_DEV_CHAIN_ID => Some(Self::reth_dev()),
            _ => None,
        }
    }

    /// The chain config for the chain a dump's manifest names.
    pub fn for_dump(dump: &bal_replay_dump::DumpReader) -> Result<Self, crate::ExecError> {
        Self::for_chain_id(dump.chain_id()).ok_or_else(|| crate::ExecError::UnknownChain {
            dir: dump.dir().to_path_buf(),
            chain_id: dump.chain_id(),
        })
    }

    /// The EVM environment (spec id, block env, blob fees) for executing `header`.
    pub fn evm_env(&self, header: &Header) -> EvmEnv {
        let at = header.timestamp;
        let blob_params = if self.spec.is_osaka_active_at_timestamp(at) {
            Some(BlobParams::osaka())
        } else if self.spec.is_prague_active_at_timestamp(at) {
            Some(BlobParams::prague())
        } else if self.spec.is_cancun_active_at_timestamp(at) {
            Some(BlobParams::cancun())
        } else {
            None
        };
        EvmEnv::for_eth_block(header, &self.spec, self.chain_id, blob_params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dump_names_its_chain_config_or_why_there_is_none() {
        let tmp = tempfile::tempdir().unwrap();
        for (chain_id, known) in [(1, true), (RETH_DEV_CHAIN_ID, true), (5, false)] {
            let dir = tmp.path().join(chain_id.to_string());
            let meta = bal_replay_dump::DumpMeta {
                chain_id,
                chained: true,
                source: "test".into(),
            };
            bal_replay_dump::DumpWriter::create(&dir, meta, Default::default())
                .unwrap()
                .finish()
                .unwrap();
            let dump = bal_replay_dump::DumpReader::open(&dir).unwrap();
            match ChainConfig::for_dump(&dump) {
                Ok(config) => {
                    assert!(known);
                    assert_eq!(config.chain_id, chain_id);
                }
                Err(e) => {
                    assert!(!known);
                    assert_eq!(
                        e.to_string(),
                        format!(
                            "dump {} is for chain 5, which this build has no hardfork schedule for",
                            dir.display()
                        )
                    );
                }
            }
        }
    }

    #[test]
    fn a_schedule_copied_from_mainnet_agrees_with_mainnet() {
        let copy = ForkSchedule::from_spec(&ForkSchedule::mainnet(), None);
        for fork in EthereumHardfork::VARIANTS {
            assert_eq!(
                copy.ethereum_fork_activation(*fork),
                ForkSchedule::mainnet().ethereum_fork_activation(*fork),
                "{fork:?}"
            );
        }
        assert!(copy.is_cancun_active_at_timestamp(1_710_338_135));
        assert!(!copy.is_cancun_active_at_timestamp(1_710_338_134));
        assert_eq!(copy.deposit_contract_address(), None);
    }
}
