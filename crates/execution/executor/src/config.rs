//! Chain configuration: chain id and hardfork schedule.

use alloy_consensus::Header;
use alloy_eips::{
    eip6110::MAINNET_DEPOSIT_CONTRACT_ADDRESS, eip7840::BlobParams, eip7892::BlobScheduleBlobParams,
};
use alloy_evm::{EvmEnv, eth::spec::EthExecutorSpec};
use alloy_hardforks::{
    EthereumChainHardforks, EthereumHardfork, EthereumHardforks, ForkCondition,
    ethereum::{MAINNET_BPO1_TIMESTAMP, MAINNET_BPO2_TIMESTAMP},
};
use alloy_primitives::Address;
use bal_replay_dump::{
    Activation, BlobParamsEntry, BlobSchedule, ChainSchedule, ForkEntry, ScheduledBlobParams,
};

/// A chain's hardfork activations, deposit contract and blob parameters: what alloy-evm's block
/// executor and EVM environment ask of a chain. alloy-evm's own `EthSpec` only comes for the public
/// networks; any other chain (a node's dev chain, a genesis file's) is described by listing its
/// forks here, or read from its genesis config ([`ForkSchedule::from_genesis_config`]) or from the
/// schedule a dump carries ([`ForkSchedule::from_schedule`]).
#[derive(Debug, Clone)]
pub struct ForkSchedule {
    hardforks: EthereumChainHardforks,
    deposit_contract: Option<Address>,
    blob_params: BlobScheduleBlobParams,
}

impl ForkSchedule {
    /// A schedule from fork activations and the deposit contract address (EIP-6110), with the
    /// default blob parameters of Cancun, Prague and Osaka and no scheduled updates.
    pub fn new(
        forks: impl IntoIterator<Item = (EthereumHardfork, ForkCondition)>,
        deposit_contract: Option<Address>,
    ) -> Self {
        Self {
            hardforks: EthereumChainHardforks::new(forks),
            deposit_contract,
            blob_params: BlobScheduleBlobParams::default(),
        }
    }

    /// The same schedule with these blob parameters (a chain spec's, a genesis config's).
    pub fn with_blob_params(mut self, blob_params: BlobScheduleBlobParams) -> Self {
        self.blob_params = blob_params;
        self
    }

    /// The same forks as `spec`, e.g. a node's chain spec (blob parameters: see
    /// [`with_blob_params`](Self::with_blob_params)).
    pub fn from_spec(spec: &impl EthereumHardforks, deposit_contract: Option<Address>) -> Self {
        Self::new(
            EthereumHardfork::VARIANTS
                .iter()
                .map(|fork| (*fork, spec.ethereum_fork_activation(*fork)))
                .filter(|(_, condition)| *condition != ForkCondition::Never),
            deposit_contract,
        )
    }

    /// Ethereum mainnet's schedule, with its BPO blob updates as reth v2.5.1 has them.
    pub fn mainnet() -> Self {
        Self {
            hardforks: EthereumChainHardforks::mainnet(),
            deposit_contract: Some(MAINNET_DEPOSIT_CONTRACT_ADDRESS),
            blob_params: BlobScheduleBlobParams::default().with_scheduled([
                (MAINNET_BPO1_TIMESTAMP, BlobParams::bpo1()),
                (MAINNET_BPO2_TIMESTAMP, BlobParams::bpo2()),
            ]),
        }
    }

    /// The schedule a genesis file's `config` describes, read as reth v2.5.1 reads one
    /// (`ChainSpec::from(Genesis)`): block forks from their `*Block` fields (`eip150Block` is
    /// Tangerine Whistle, `eip155Block` Spurious Dragon), the merge at genesis (or at
    /// `mergeNetsplitBlock`) when `terminalTotalDifficulty` is set, time forks from their `*Time`
    /// fields, `depositContractAddress`, and the blob parameters of `blobSchedule` (keys as
    /// alloy-genesis reads them: `cancun`, `prague`, `osaka`, `bpo1`..`bpo5`, `Amsterdam`; a key it
    /// does not know, such as `amsterdam`, leaves the fork on the previous parameters, as in reth).
    /// reth's special case of mainnet's and Sepolia's merge block for their own TTDs is not
    /// repeated: those chains have their own schedules ([`ForkSchedule::mainnet`]).
    pub fn from_genesis_config(config: &alloy_genesis::ChainConfig) -> Self {
        use EthereumHardfork::*;
        let by_block = [
            (Frontier, Some(0)),
            (Homestead, config.homestead_block),
            (Dao, config.dao_fork_block),
            (Tangerine, config.eip150_block),
            (SpuriousDragon, config.eip155_block),
            (Byzantium, config.byzantium_block),
            (Constantinople, config.constantinople_block),
            (Petersburg, config.petersburg_block),
            (Istanbul, config.istanbul_block),
            (MuirGlacier, config.muir_glacier_block),
            (Berlin, config.berlin_block),
            (London, config.london_block),
            (ArrowGlacier, config.arrow_glacier_block),
            (GrayGlacier, config.gray_glacier_block),
        ]
        .into_iter()
        .filter_map(|(fork, block)| block.map(|b| (fork, ForkCondition::Block(b))));
        let paris = config.terminal_total_difficulty.map(|total_difficulty| {
            (
                Paris,
                ForkCondition::TTD {
                    activation_block_number: config.merge_netsplit_block.unwrap_or_default(),
                    fork_block: config.merge_netsplit_block,
                    total_difficulty,
                },
            )
        });
        let by_time = [
            (Shanghai, config.shanghai_time),
            (Cancun, config.cancun_time),
            (Prague, config.prague_time),
            (Osaka, config.osaka_time),
            (Bpo1, config.bpo1_time),
            (Bpo2, config.bpo2_time),
            (Bpo3, config.bpo3_time),
            (Bpo4, config.bpo4_time),
            (Bpo5, config.bpo5_time),
            (Amsterdam, config.amsterdam_time),
        ]
        .into_iter()
        .filter_map(|(fork, time)| time.map(|t| (fork, ForkCondition::Timestamp(t))));
        Self::new(
            by_block.chain(paris).chain(by_time),
            config.deposit_contract_address,
        )
        .with_blob_params(config.blob_schedule_blob_params())
    }

    /// The blob parameters at `timestamp`, as reth v2.5.1's chain spec picks them: the latest
    /// scheduled update at or before it, else Osaka's, Prague's or Cancun's, whichever fork is
    /// active; none before Cancun.
    pub fn blob_params_at_timestamp(&self, timestamp: u64) -> Option<BlobParams> {
        if let Some(params) = self
            .blob_params
            .active_scheduled_params_at_timestamp(timestamp)
        {
            Some(*params)
        } else if self.is_osaka_active_at_timestamp(timestamp) {
            Some(self.blob_params.osaka)
        } else if self.is_prague_active_at_timestamp(timestamp) {
            Some(self.blob_params.prague)
        } else if self.is_cancun_active_at_timestamp(timestamp) {
            Some(self.blob_params.cancun)
        } else {
            None
        }
    }

    /// This schedule as a dump's manifest carries it.
    pub fn to_schedule(&self) -> ChainSchedule {
        let forks = EthereumHardfork::VARIANTS
            .iter()
            .filter_map(|fork| {
                let activation = match self.ethereum_fork_activation(*fork) {
                    ForkCondition::Block(b) => Activation::Block(b),
                    ForkCondition::Timestamp(t) => Activation::Timestamp(t),
                    ForkCondition::TTD {
                        activation_block_number,
                        fork_block,
                        total_difficulty,
                    } => Activation::Ttd {
                        activation_block: activation_block_number,
                        fork_block,
                        total_difficulty,
                    },
                    ForkCondition::Never => return None,
                };
                Some(ForkEntry {
                    fork: fork.name().to_string(),
                    activation,
                })
            })
            .collect();
        let entry = |p: &BlobParams| BlobParamsEntry {
            target_blob_count: p.target_blob_count,
            max_blob_count: p.max_blob_count,
            update_fraction: p.update_fraction,
            min_blob_fee: p.min_blob_fee,
            max_blobs_per_tx: p.max_blobs_per_tx,
            blob_base_cost: p.blob_base_cost,
        };
        ChainSchedule {
            forks,
            deposit_contract: self.deposit_contract,
            blob_params: BlobSchedule {
                cancun: entry(&self.blob_params.cancun),
                prague: entry(&self.blob_params.prague),
                osaka: entry(&self.blob_params.osaka),
                scheduled: self
                    .blob_params
                    .scheduled
                    .iter()
                    .map(|(timestamp, p)| ScheduledBlobParams {
                        timestamp: *timestamp,
                        params: entry(p),
                    })
                    .collect(),
            },
        }
    }

    /// The schedule a dump's manifest carries. A fork name alloy-hardforks does not know, or a
    /// fork listed twice, is an error naming it.
    pub fn from_schedule(schedule: &ChainSchedule) -> Result<Self, String> {
        let mut forks = Vec::with_capacity(schedule.forks.len());
        for entry in &schedule.forks {
            let fork: EthereumHardfork = entry.fork.parse().map_err(|_| {
                format!(
                    "unknown fork {:?} in \"forks\" (expected one of {})",
                    entry.fork,
                    EthereumHardfork::VARIANTS
                        .iter()
                        .map(|f| f.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?;
            if forks.iter().any(|(f, _)| *f == fork) {
                return Err(format!(
                    "fork {:?} is listed twice in \"forks\"",
                    entry.fork
                ));
            }
            let condition = match entry.activation {
                Activation::Block(b) => ForkCondition::Block(b),
                Activation::Timestamp(t) => ForkCondition::Timestamp(t),
                Activation::Ttd {
                    activation_block,
                    fork_block,
                    total_difficulty,
                } => ForkCondition::TTD {
                    activation_block_number: activation_block,
                    fork_block,
                    total_difficulty,
                },
            };
            forks.push((fork, condition));
        }
        let params = |e: &BlobParamsEntry| BlobParams {
            target_blob_count: e.target_blob_count,
            max_blob_count: e.max_blob_count,
            update_fraction: e.update_fraction,
            min_blob_fee: e.min_blob_fee,
            max_blobs_per_tx: e.max_blobs_per_tx,
            blob_base_cost: e.blob_base_cost,
        };
        let blob = &schedule.blob_params;
        if blob
            .scheduled
            .windows(2)
            .any(|w| w[0].timestamp > w[1].timestamp)
        {
            return Err("\"blob_params.scheduled\" is not in ascending timestamp order".into());
        }
        Ok(
            Self::new(forks, schedule.deposit_contract).with_blob_params(BlobScheduleBlobParams {
                cancun: params(&blob.cancun),
                prague: params(&blob.prague),
                osaka: params(&blob.osaka),
                scheduled: blob
                    .scheduled
                    .iter()
                    .map(|s| (s.timestamp, params(&s.params)))
                    .collect(),
            }),
        )
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

    /// The chain a genesis file describes: its `config`'s chain id and schedule
    /// ([`ForkSchedule::from_genesis_config`]).
    pub fn from_genesis(genesis: &alloy_genesis::Genesis) -> Self {
        Self {
            chain_id: genesis.config.chain_id,
            spec: ForkSchedule::from_genesis_config(&genesis.config),
        }
    }

    /// The chain config for a dump: the fork schedule its manifest carries, else the known chain
    /// its chain id names. A schedule that does not parse, or an unknown chain with none, is an
    /// error naming the dump.
    pub fn for_dump(dump: &bal_replay_dump::DumpReader) -> Result<Self, crate::ExecError> {
        let dir = dump.dir().to_path_buf();
        match &dump.manifest().schedule {
            Some(schedule) => Ok(Self {
                chain_id: dump.chain_id(),
                spec: ForkSchedule::from_schedule(schedule)
                    .map_err(|reason| crate::ExecError::InvalidSchedule { dir, reason })?,
            }),
            None => Self::for_chain_id(dump.chain_id()).ok_or(crate::ExecError::UnknownChain {
                dir,
                chain_id: dump.chain_id(),
            }),
        }
    }

    /// The EVM environment (spec id, block env, blob fees) for executing `header`, as reth
    /// v2.5.1's `EthEvmConfig::evm_env` makes it.
    pub fn evm_env(&self, header: &Header) -> EvmEnv {
        let blob_params = self.spec.blob_params_at_timestamp(header.timestamp);
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
                schedule: None,
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
                            "dump {} is for chain 5, which this build has no hardfork schedule for, \
                             and its manifest carries none (\"schedule\")",
                            dir.display()
                        )
                    );
                }
            }
        }
    }

    #[test]
    fn the_amsterdam_dev_genesis_reads_as_reth_reads_it_and_survives_the_manifest() {
        let dir = bal_replay_fixtures::default_amsterdam_dev_dir()
            .expect("../shared/fixtures/amsterdam-dev must exist next to the workspace");
        let fixture = bal_replay_fixtures::ChainFixture::read(dir).unwrap();
        let config = ChainConfig::from_genesis(&fixture.genesis);
        assert_eq!(config.chain_id, 1337);
        let spec = &config.spec;
        assert!(spec.is_amsterdam_active_at_timestamp(0));
        assert!(spec.is_paris_active_at_block(0));
        assert_eq!(spec.deposit_contract_address(), Some(Address::ZERO));
        let header = Header {
            timestamp: 1_795_420_604,
            ..Default::default()
        };
        assert_eq!(
            config.evm_env(&header).cfg_env.spec,
            revm::primitives::hardfork::SpecId::AMSTERDAM
        );
        // The genesis's "amsterdam" blob entry is not a key alloy-genesis knows: Osaka's
        // parameters apply, with Osaka's per-transaction limit and base cost.
        let blob = spec.blob_params_at_timestamp(header.timestamp).unwrap();
        assert_eq!(
            (
                blob.target_blob_count,
                blob.max_blob_count,
                blob.update_fraction
            ),
            (6, 9, 5_007_716)
        );
        assert_eq!(blob.blob_base_cost, alloy_eips::eip7840::BLOB_BASE_COST);
        assert_eq!(
            blob.max_blobs_per_tx,
            alloy_eips::eip7594::MAX_BLOBS_PER_TX_FUSAKA
        );

        let written = spec.to_schedule();
        let read = ForkSchedule::from_schedule(&written).unwrap();
        assert_eq!(read.to_schedule(), written);
        for fork in EthereumHardfork::VARIANTS {
            assert_eq!(
                read.ethereum_fork_activation(*fork),
                spec.ethereum_fork_activation(*fork),
                "{fork:?}"
            );
        }
        // reth's dev chain through Osaka has no Amsterdam: its schedule says so.
        assert!(
            ChainConfig::reth_dev()
                .spec
                .to_schedule()
                .forks
                .iter()
                .all(|f| f.fork != "Amsterdam")
        );
        let mut unknown = written.clone();
        unknown.forks[0].fork = "Glamsterdam".into();
        assert!(
            ForkSchedule::from_schedule(&unknown)
                .unwrap_err()
                .starts_with("unknown fork \"Glamsterdam\"")
        );
        let mut twice = written;
        twice.forks.push(twice.forks[0].clone());
        assert!(ForkSchedule::from_schedule(&twice).is_err());
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
