//! Building, executing and recording the blocks, and writing the outputs.

use crate::{
    GeneratorConfig, Profile, SynthError,
    cold::{ColdKey, ColdState},
    config::{HOT_WALLETS, MAINNET_GAS_LIMIT},
    genesis::{self, World},
    staged::StagedPair,
    stats::{ProfileAccumulator, ProfileStats},
    txgen::{GasModel, MAX_PRIORITY_FEE, TxGenerator, TxPlan, worst_case_gas_limit},
};
use alloy_consensus::{
    Block, BlockBody, EMPTY_OMMER_ROOT_HASH, Header, SignableTransaction, TxEip1559, TxEnvelope,
    proofs::{calculate_transaction_root, calculate_withdrawals_root},
};
use alloy_eips::{
    eip1559::{BaseFeeParams, calc_next_block_base_fee},
    eip4895::Withdrawals,
};
use alloy_primitives::{Address, B64, B256, Bytes, Signature, TxKind, U256, keccak256};
use bal_replay_dump::{BlockHashEntry, BlockRecord, DumpMeta, DumpWriter, WriterOptions};
use bal_replay_executor::{ChainConfig, HeaderFields, RecordedBlock, execute_for_dump};
use bal_replay_rocks::{RocksOptions, RocksStore};
use bal_replay_state::{
    AppliedBlock, KeyScheme, MemStore, StateChanges, StateDatabase, StateReader, StateWriter,
};
use std::{
    collections::{HashMap, HashSet, VecDeque},
    path::{Path, PathBuf},
};

/// Timestamp of the first generated block: July 2024, after Cancun and before Prague on mainnet's
/// schedule.
pub const FIRST_TIMESTAMP: u64 = 1_720_000_000;
/// Seconds between blocks.
pub const BLOCK_TIME: u64 = 12;
/// Base fee of the first generated block (10 gwei).
pub const INITIAL_BASE_FEE: u64 = 10_000_000_000;
/// `extra_data` of every generated header.
pub const EXTRA_DATA: &[u8] = b"bal-replay-synth";

/// Genesis entries written to RocksDB per commit: bounded batches for large states.
const GENESIS_CHUNK: usize = 100_000;

/// What [`generate`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct GeneratedChain {
    /// Number of the first block (the genesis state is at `first_block - 1`).
    pub first_block: u64,
    /// Blocks generated.
    pub blocks: u64,
    /// Transactions in all blocks.
    pub txs: u64,
    /// Gas used by all blocks.
    pub gas_used: u64,
    /// Accounts in the genesis state (cold ones included).
    pub genesis_accounts: usize,
    /// Storage slots in the genesis state (cold ones included).
    pub genesis_slots: usize,
    /// Of those accounts and slots, the cold ones (`GeneratorConfig::state_entries`).
    pub cold_entries: u64,
    /// Distinct contract codes in the genesis state.
    pub genesis_codes: usize,
    /// The dump directory.
    pub dump_dir: PathBuf,
    /// The RocksDB state directory.
    pub state_dir: PathBuf,
    /// Per-block shape of the generated blocks, comparable to PROFILE.md.
    pub stats: ProfileStats,
}

/// What `bal-dump generate` prints: the range, counts and directories, then the blocks' shape
/// beside recent mainnet's.
impl std::fmt::Display for GeneratedChain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "generated blocks {}..={}: {} txs, {} gas; genesis {} accounts, {} slots ({} of them cold); dump {}, state {}",
            self.first_block,
            self.first_block + self.blocks.saturating_sub(1),
            self.txs,
            self.gas_used,
            self.genesis_accounts,
            self.genesis_slots,
            self.cold_entries,
            self.dump_dir.display(),
            self.state_dir.display()
        )?;
        write!(
            f,
            "{}",
            self.stats.comparison_table(&ProfileStats::RECENT_MAINNET)
        )
    }
}

/// Generates the chain in memory: the genesis state (everything the state holds at
/// `first_block - 1`, block hashes included) and one record per block.
pub fn generate_in_memory(
    config: &GeneratorConfig,
) -> Result<(StateChanges, Vec<BlockRecord>), SynthError> {
    config.validate()?;
    let (world, genesis) = genesis::build(config);
    if let Some(cold) = &world.cold {
        return Err(SynthError::InvalidConfig {
            reason: format!(
                "state_entries asks for {} cold entries, which only `generate` writes (to RocksDB); \
                 in memory, leave state_entries at 0",
                cold.entries()
            ),
        });
    }
    let mut builder = ChainBuilder::new(config, world, &genesis);
    let records = (0..config.blocks)
        .map(|_| builder.next_block())
        .collect::<Result<Vec<_>, _>>()?;
    Ok((genesis, records))
}

/// Generates the chain and writes it: a dump in `out_dump` (chained, source `"synthetic"`, chain
/// id 1) and, in `out_state`, a new plain-keyed RocksDB flat state holding the genesis state at
/// height `first_block - 1`, ready to replay the dump on.
///
/// Records are appended as their blocks execute, so memory stays bounded by the state, not the
/// chain. Each output is built beside its target, in a fresh `<target>.partial-<pid>-<random>`
/// directory, and both are renamed into place once complete, the state first and the dump last:
/// a dump at `out_dump` is always the whole chain, with its state in place. On error the partial
/// outputs, and the parent directories this run created, are removed; a run killed part-way
/// leaves only its `.partial-` directories, or, killed between the two renames, a marked state
/// that the next run to the same paths finishes placing or removes. Each target must not exist,
/// or be an empty directory of this user's ([`SynthError::OutputExists`] otherwise), and the two
/// must be separate directories, neither inside the other ([`SynthError::OutputsOverlap`]).
pub fn generate(
    config: &GeneratorConfig,
    out_dump: &Path,
    out_state: &Path,
    progress: Option<&indicatif::ProgressBar>,
) -> Result<GeneratedChain, SynthError> {
    config.validate()?;
    let staged = StagedPair::begin(out_state, out_dump)?;
    if let Some(bar) = progress {
        bar.set_length(config.blocks);
        bar.set_message("writing genesis state");
    }
    let (world, genesis) = genesis::build(config);
    let meta = DumpMeta {
        chain_id: 1,
        chained: true,
        source: "synthetic".into(),
        schedule: None,
    };
    write_genesis(
        &genesis,
        world.cold.as_ref(),
        staged.state_path(),
        config.first_block - 1,
        meta.chain_id,
        config.table_layout,
        progress,
    )?;

    let mut writer = DumpWriter::create(staged.dump_path(), meta, WriterOptions::default())?;
    if let Some(bar) = progress {
        bar.set_length(config.blocks);
        bar.set_position(0);
        bar.set_message("generating blocks");
    }
    let mut stats = ProfileAccumulator::for_chain(config.blocks);
    let cold = world.cold.clone();
    let mut builder = ChainBuilder::new(config, world, &genesis);
    for _ in 0..config.blocks {
        let record = builder.next_block()?;
        stats.add(&record);
        writer.append(&record)?;
        if let Some(bar) = progress {
            bar.inc(1);
        }
    }
    writer.finish()?;
    staged.land()?;
    let stats = stats.finish();
    tracing::debug!(
        blocks = stats.blocks,
        txs = stats.txs,
        gas = stats.gas_used,
        dump = %out_dump.display(),
        state = %out_state.display(),
        "generated chain"
    );
    Ok(GeneratedChain {
        first_block: config.first_block,
        blocks: stats.blocks,
        txs: stats.txs,
        gas_used: stats.gas_used,
        genesis_accounts: genesis.accounts.len() + cold.as_ref().map_or(0, |c| c.accounts as usize),
        genesis_slots: genesis.storage.len()
            + cold
                .as_ref()
                .map_or(0, |c| (c.entries() - c.accounts) as usize),
        cold_entries: cold.as_ref().map_or(0, ColdState::entries),
        genesis_codes: genesis.codes.len(),
        dump_dir: out_dump.to_path_buf(),
        state_dir: out_state.to_path_buf(),
        stats,
    })
}

/// Writes the genesis into a new RocksDB store in bounded commits, without the WAL (a bulk load),
/// and flushes it. Every commit records `applied_block`; the last one also its hash (from the
/// genesis' block hashes) and `chain_id`, so replays can check the dump builds on this state. A
/// crash part-way leaves it in its `.partial-` directory, never at the state path asked for.
fn write_genesis(
    genesis: &StateChanges,
    cold: Option<&ColdState>,
    path: &Path,
    applied_block: u64,
    chain_id: u64,
    table_layout: bal_replay_rocks::TableLayout,
    progress: Option<&indicatif::ProgressBar>,
) -> Result<(), SynthError> {
    let options = RocksOptions {
        write_without_wal: true,
        table_layout,
        ..RocksOptions::default()
    };
    let store = RocksStore::create(path, KeyScheme::Plain, &options)?;
    // The cold state first, into the empty store: its sorted files are ingested into the last
    // level, and the hot world written after it is above them.
    if let Some(cold) = cold {
        if let Some(bar) = progress {
            bar.set_length(cold.entries());
            bar.set_position(0);
            bar.set_message("writing the cold state (sorted SST files, ingested)");
        }
        let written = cold.write(&store, &mut |n| {
            if let Some(bar) = progress {
                bar.set_position(n);
            }
        })?;
        tracing::debug!(entries = written, "wrote cold state");
        if let Some(bar) = progress {
            bar.set_message("writing the hot world");
        }
    }
    for accounts in genesis.accounts.chunks(GENESIS_CHUNK) {
        store.commit(
            &StateChanges {
                accounts: accounts.to_vec(),
                ..StateChanges::default()
            },
            applied_block,
        )?;
    }
    for storage in genesis.storage.chunks(GENESIS_CHUNK) {
        store.commit(
            &StateChanges {
                storage: storage.to_vec(),
                ..StateChanges::default()
            },
            applied_block,
        )?;
    }
    let hash = genesis
        .block_hashes
        .iter()
        .find(|(number, _)| *number == applied_block)
        .map(|(_, hash)| *hash);
    store.commit_block(
        &StateChanges {
            codes: genesis.codes.clone(),
            block_hashes: genesis.block_hashes.clone(),
            ..StateChanges::default()
        },
        AppliedBlock {
            number: applied_block,
            hash,
            chain_id: Some(chain_id),
        },
    )?;
    store.flush()?;
    tracing::debug!(
        accounts = genesis.accounts.len(),
        slots = genesis.storage.len(),
        path = %path.display(),
        "wrote genesis state"
    );
    Ok(())
}

/// Signs `hash` with `key`: RFC 6979 deterministic nonces, low `s` (as EIP-2 requires).
pub(crate) fn sign(key: &secp256k1::SecretKey, hash: B256) -> Signature {
    let message = secp256k1::Message::from_digest(hash.0);
    let (recovery_id, compact) = secp256k1::SECP256K1
        .sign_ecdsa_recoverable(message, key)
        .serialize_compact();
    Signature::new(
        U256::from_be_slice(&compact[..32]),
        U256::from_be_slice(&compact[32..]),
        i32::from(recovery_id) == 1,
    )
}

/// The chain being built: the world, the running state, and the chain's head.
struct ChainBuilder<'a> {
    config: &'a GeneratorConfig,
    chain: ChainConfig,
    world: World,
    txgen: TxGenerator,
    gas: GasModel,
    /// The post-state of the last block.
    state: MemStore,
    /// Next nonce of each EOA.
    nonces: Vec<u64>,
    /// Hashes of the (up to) 256 last blocks, ascending.
    recent_hashes: VecDeque<BlockHashEntry>,
    /// Blocks generated so far.
    index: u64,
    parent_hash: B256,
    /// Gas used, gas limit and base fee of the parent. The genesis's stand-in parent used exactly
    /// its target at [`INITIAL_BASE_FEE`], which is therefore the first block's base fee.
    parent_gas: (u64, u64, u64),
    gas_limit: u64,
    /// Next unread slot index of the worst-case reader.
    next_reader_slot: u64,
    /// Cold keys whose values are already in `state` (put there when a transaction first
    /// touched them; later blocks may have changed them since).
    cold_seeded: HashSet<ColdKey>,
}

impl<'a> ChainBuilder<'a> {
    fn new(config: &'a GeneratorConfig, world: World, genesis: &StateChanges) -> Self {
        let gas_limit = match config.profile {
            Profile::MainnetLike => MAINNET_GAS_LIMIT,
            // Twice the gas of a block's reads, rounded up to a million: the block sits at the
            // EIP-1559 target, so the base fee does not climb block after block.
            Profile::WorstCaseIo => {
                let per_tx = worst_case_gas_limit(&[0xff; 68], config.worst_case_slots);
                let needed = 2 * config.worst_case_txs as u64 * per_tx;
                needed
                    .div_ceil(1_000_000)
                    .max(MAINNET_GAS_LIMIT / 1_000_000)
                    * 1_000_000
            }
        };
        let recent_hashes = genesis
            .block_hashes
            .iter()
            .map(|(number, hash)| BlockHashEntry {
                number: *number,
                hash: *hash,
            })
            .collect();
        let parent_hash = genesis::prehistory_block_hash(config.seed, config.first_block - 1);
        Self {
            config,
            chain: ChainConfig::mainnet(),
            txgen: TxGenerator::new(&world, config.seed),
            gas: GasModel::default(),
            state: MemStore::from_changes(genesis, config.first_block - 1),
            nonces: world.nonces.clone(),
            world,
            recent_hashes,
            index: 0,
            parent_hash,
            parent_gas: (gas_limit / 2, gas_limit, INITIAL_BASE_FEE),
            gas_limit,
            next_reader_slot: 0,
            cold_seeded: HashSet::new(),
        }
    }

    /// The transactions of the next block, whose base fee is `base_fee`.
    fn plans(&mut self, base_fee: u64) -> Result<Vec<TxPlan>, SynthError> {
        Ok(match self.config.profile {
            Profile::MainnetLike => {
                let max_fee = U256::from(2 * u128::from(base_fee) + MAX_PRIORITY_FEE);
                // What each sender's transactions in this block may cost at most, so that no
                // transaction is invalid for want of ETH however long the chain runs.
                let mut committed: HashMap<usize, U256> = HashMap::new();
                let mut plans = Vec::new();
                let mut estimated = 0;
                while estimated < self.config.gas_per_block {
                    let mut plan = self.txgen.mainnet_like(&self.world);
                    let cost = plan.value + U256::from(plan.gas_limit) * max_fee;
                    let address = self.world.eoas[plan.sender].address;
                    let balance = self
                        .state
                        .account(address)?
                        .map_or(U256::ZERO, |a| a.balance);
                    let spent = committed.get(&plan.sender).copied().unwrap_or_default();
                    if balance < spent + cost {
                        // A drained account hands its transaction to a hot wallet, which holds
                        // every token, has approved the router, and has ETH for any chain.
                        plan.sender = plans.len() % HOT_WALLETS;
                    }
                    *committed.entry(plan.sender).or_default() += cost;
                    estimated += self.gas.estimate(plan.action);
                    plans.push(plan);
                }
                plans
            }
            Profile::WorstCaseIo => (0..self.config.worst_case_txs)
                .map(|i| {
                    let start = self.next_reader_slot;
                    self.next_reader_slot += self.config.worst_case_slots;
                    self.txgen.worst_case_read(
                        &self.world,
                        i % HOT_WALLETS,
                        start,
                        self.config.worst_case_slots,
                    )
                })
                .collect(),
        })
    }

    /// Signs each plan as an EIP-1559 transaction of its sender, at that sender's next nonce:
    /// the transactions and their senders.
    fn sign_plans(&mut self, plans: &[TxPlan], base_fee: u64) -> (Vec<TxEnvelope>, Vec<Address>) {
        let mut transactions = Vec::with_capacity(plans.len());
        let mut senders = Vec::with_capacity(plans.len());
        for plan in plans {
            let eoa = &self.world.eoas[plan.sender];
            let nonce = &mut self.nonces[plan.sender];
            let tip = self.txgen.priority_fee();
            let tx = TxEip1559 {
                chain_id: self.chain.chain_id,
                nonce: *nonce,
                gas_limit: plan.gas_limit,
                max_fee_per_gas: 2 * u128::from(base_fee) + tip,
                max_priority_fee_per_gas: tip,
                to: TxKind::Call(plan.to),
                value: plan.value,
                access_list: Default::default(),
                input: plan.input.clone(),
            };
            *nonce += 1;
            let signature = sign(&eoa.key, tx.signature_hash());
            transactions.push(TxEnvelope::from(tx.into_signed(signature)));
            senders.push(eoa.address);
        }
        (transactions, senders)
    }

    /// The header of block `number`, before execution: gas used, receipts root and logs bloom
    /// are sealed from the execution.
    fn header(
        &self,
        number: u64,
        base_fee: u64,
        transactions: &[TxEnvelope],
        withdrawals: &Withdrawals,
    ) -> Header {
        Header {
            parent_hash: self.parent_hash,
            ommers_hash: EMPTY_OMMER_ROOT_HASH,
            beneficiary: self.world.fee_recipient,
            // A flat state has no trie; the field is not checked anywhere in this project.
            state_root: B256::ZERO,
            transactions_root: calculate_transaction_root(transactions),
            number,
            gas_limit: self.gas_limit,
            timestamp: FIRST_TIMESTAMP + BLOCK_TIME * self.index,
            extra_data: Bytes::from_static(EXTRA_DATA),
            mix_hash: keccak256(format!(
                "bal-replay-synth/prevrandao/{}/{number}",
                self.config.seed
            )),
            nonce: B64::ZERO,
            base_fee_per_gas: Some(base_fee),
            withdrawals_root: Some(calculate_withdrawals_root(withdrawals)),
            blob_gas_used: Some(0),
            excess_blob_gas: Some(0),
            parent_beacon_block_root: Some(keccak256(number.to_be_bytes())),
            ..Header::default()
        }
    }

    /// Builds, executes and records the next block, and applies it to the running state.
    fn next_block(&mut self) -> Result<BlockRecord, SynthError> {
        let number = self.config.first_block + self.index;
        let (parent_used, parent_limit, parent_base_fee) = self.parent_gas;
        let base_fee = calc_next_block_base_fee(
            parent_used,
            parent_limit,
            parent_base_fee,
            BaseFeeParams::ethereum(),
        );

        let plans = self.plans(base_fee)?;
        // The cold keys these transactions touch for the first time join the state they
        // execute over, with the values the written state holds.
        for key in self.txgen.take_cold() {
            if let Some(cold) = &self.world.cold
                && self.cold_seeded.insert(key)
            {
                self.state.commit(&cold.changes_of(key), number - 1)?;
            }
        }
        let (transactions, senders) = self.sign_plans(&plans, base_fee);
        let withdrawals = Withdrawals::default();
        let header = self.header(number, base_fee, &transactions, &withdrawals);
        let block = Block {
            header,
            body: BlockBody {
                transactions,
                ommers: Vec::new(),
                withdrawals: Some(withdrawals),
            },
        };

        let RecordedBlock { record, output, .. } = execute_for_dump::<_, SynthError>(
            &self.chain,
            StateDatabase::new(&self.state),
            block,
            senders,
            self.recent_hashes.iter().copied().collect(),
            HeaderFields::Seal,
        )?;
        let hash = record.block.header.hash_slow();

        let mut cumulative = 0;
        for (plan, receipt) in plans.iter().zip(&output.receipts) {
            let used = receipt.cumulative_gas_used() - cumulative;
            cumulative = receipt.cumulative_gas_used();
            self.gas.observe(plan.action, used);
        }

        let mut changes = output.changes;
        changes.block_hashes.push((number, hash));
        self.state.commit(&changes, number)?;

        if self.recent_hashes.len() == 256 {
            self.recent_hashes.pop_front();
        }
        self.recent_hashes
            .push_back(BlockHashEntry { number, hash });
        self.parent_hash = hash;
        self.parent_gas = (output.gas_used, self.gas_limit, base_fee);
        self.index += 1;
        Ok(record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::Address;
    use bal_replay_state::FlatAccount;

    #[test]
    fn drained_senders_hand_their_transactions_to_hot_wallets() {
        let config = GeneratorConfig {
            accounts: 64,
            holders_per_token: 16,
            tokens: 3,
            pools: 2,
            nfts: 1,
            blocks: 1,
            gas_per_block: 2_000_000,
            ..GeneratorConfig::default()
        };
        let (world, genesis) = genesis::build(&config);
        let mut builder = ChainBuilder::new(&config, world, &genesis);
        // Every account but the hot wallets is left with 1,000 wei.
        let drained: Vec<(Address, Option<FlatAccount>)> = builder.world.eoas[HOT_WALLETS..]
            .iter()
            .map(|eoa| {
                let mut account = builder.state.account(eoa.address).unwrap().unwrap();
                account.balance = U256::from(1_000);
                (eoa.address, Some(account))
            })
            .collect();
        let changes = StateChanges {
            accounts: drained,
            ..StateChanges::default()
        };
        builder
            .state
            .commit(&changes, config.first_block - 1)
            .unwrap();

        let record = builder.next_block().unwrap();
        let hot: Vec<Address> = builder.world.eoas[..HOT_WALLETS]
            .iter()
            .map(|eoa| eoa.address)
            .collect();
        assert!(record.tx_count() > 10);
        assert!(record.senders.iter().all(|s| hot.contains(s)));
    }
}
