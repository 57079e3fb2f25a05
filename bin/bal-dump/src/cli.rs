//! The command line of `bal-dump`: its subcommands and their arguments.

use bal_replay_synth::{GeneratorConfig, Profile};
use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "bal-dump",
    version,
    about = "Import, verify and inspect BAL dumps"
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Turn fixture directories into a dump plus, per block, a RocksDB state seeded with its pre-state
    /// (`<state>/<number>`: fixture blocks are independent, not a chain).
    ImportFixture {
        /// Fixture directories (`<number>/` with block.json and pre_state.json).
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// Dump directory to create.
        #[arg(long)]
        out: PathBuf,
        /// Directory for the seeded RocksDB states (one per block).
        #[arg(long)]
        state: PathBuf,
    },
    /// Execute a chain fixture (genesis.json + blocks/NNNN/{block,receipts}.json, bal.rlp.hex) from
    /// genesis, checking every block against the network: gas used, logs bloom and receipts root
    /// against the header, each receipt's status and gas, and the BAL we build byte for byte against
    /// the network's (so it hashes to the header's blockAccessListHash). Writes a chained dump that
    /// carries the genesis's fork schedule, and a RocksDB state at the genesis to replay it from.
    /// Prints one line per block and `N passed, M failed`; exits non-zero if a block failed.
    ImportChain {
        /// The chain fixture directory.
        dir: PathBuf,
        /// Dump directory to create.
        #[arg(long)]
        out: PathBuf,
        /// RocksDB state directory to create (the genesis state, at block 0).
        #[arg(long)]
        state: PathBuf,
    },
    /// Import and check every fixture under a directory: header gas/bloom/receipts root, RocksDB vs
    /// in-memory, per-transaction BAL replay. Prints one line per block and `N passed, M failed`.
    VerifyFixtures {
        /// Directory of fixture directories.
        dir: PathBuf,
    },
    /// Print the RLP-encoded BAL size of every block in each design (full, batched, parallel), and
    /// the network's EIP-7928 BAL where the header commits to the record's (Amsterdam on), with
    /// mean and total.
    Size {
        /// Dump directory.
        dump: PathBuf,
        /// Only the summary, not one line per block.
        #[arg(long)]
        summary: bool,
    },
    /// Generate a synthetic chain: a chained dump and a RocksDB state seeded with its genesis.
    Generate(GenerateArgs),
    /// Print signed transactions for a dev node (reth-bal's end-to-end check), one EIP-2718 hex
    /// string per line, ready for `eth_sendRawTransaction`: a counter contract deployment, then
    /// counter calls (storage reads and writes) and transfers, in turn.
    DevTxs {
        /// Chain id of the node (reth `--dev`: 1337).
        #[arg(long, default_value_t = 1337)]
        chain_id: u64,
        /// Private key (hex) of a funded account; default: the dev genesis's first test key.
        #[arg(long)]
        key: Option<alloy_primitives::B256>,
        /// Nonce of the first transaction (the account's current nonce).
        #[arg(long, default_value_t = 0)]
        nonce: u64,
        /// Number of transactions.
        #[arg(long, default_value_t = 12)]
        count: usize,
        /// Max fee per gas, in wei.
        #[arg(long, default_value_t = 20_000_000_000)]
        max_fee: u128,
    },
    /// Create a RocksDB state holding the state before a chained dump's first block, rebuilt from
    /// the records' pre-values (e.g. to replay a reth-bal dump without the node's database).
    SeedState {
        /// Dump directory.
        dump: PathBuf,
        /// RocksDB state directory to create.
        #[arg(long)]
        state: PathBuf,
    },
    /// Print a dump's manifest and a summary line per block.
    Inspect {
        /// Dump directory.
        dump: PathBuf,
    },
    /// Check every block of a dump on its own, with no state: frames and checksums, parent hashes
    /// in a chained dump, and each block executed over its record's pre-block values alone, with
    /// gas used, receipts root and logs bloom against the header and the built BAL against the
    /// record's. Prints each invalid block and exits non-zero if there is one.
    Validate {
        /// Dump directory.
        dump: PathBuf,
    },
}

/// The arguments of `generate`: a [`GeneratorConfig`] with some of its fields given.
#[derive(clap::Args)]
pub struct GenerateArgs {
    /// Dump directory to create.
    #[arg(long)]
    pub out: PathBuf,
    /// RocksDB state directory to create.
    #[arg(long)]
    pub state: PathBuf,
    /// mainnet-like or worst-case-io.
    #[arg(long, default_value = "mainnet-like")]
    pub profile: Profile,
    /// Blocks.
    #[arg(long, default_value_t = 50)]
    pub blocks: u64,
    /// Externally owned accounts in the genesis state.
    #[arg(long)]
    pub accounts: Option<usize>,
    /// ERC-20 contracts.
    #[arg(long)]
    pub tokens: Option<usize>,
    /// AMM pools.
    #[arg(long)]
    pub pools: Option<usize>,
    /// Storage slots (token holders) seeded per token.
    #[arg(long)]
    pub holders_per_token: Option<usize>,
    /// Target gas per block.
    #[arg(long)]
    pub gas_per_block: Option<u64>,
    /// Total entries (accounts + slots) of the genesis state: the hot world's, then cold
    /// accounts and token holders no recent block touched, written by streaming (sorted SST files,
    /// ingested). E.g. 200000000 for a state of about 10 GB that must be read from the disk.
    #[arg(long)]
    pub state_entries: Option<u64>,
    /// Per mille of transfer recipients that are cold (when the state has cold entries).
    #[arg(long)]
    pub cold_share: Option<u64>,
    /// Seed (the chain is a pure function of the parameters).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The state's index and filter layout: partitioned, or unpartitioned (cheaper reads pinned).
    #[arg(long, value_name = "LAYOUT", default_value = "partitioned")]
    pub table_layout: bal_replay_rocks::TableLayout,
}

impl GenerateArgs {
    /// The generator's configuration: the defaults, overridden by what was given.
    pub fn config(&self) -> GeneratorConfig {
        let d = GeneratorConfig::default();
        GeneratorConfig {
            blocks: self.blocks,
            seed: self.seed,
            profile: self.profile,
            accounts: self.accounts.unwrap_or(d.accounts),
            tokens: self.tokens.unwrap_or(d.tokens),
            pools: self.pools.unwrap_or(d.pools),
            holders_per_token: self.holders_per_token.unwrap_or(d.holders_per_token),
            gas_per_block: self.gas_per_block.unwrap_or(d.gas_per_block),
            state_entries: self.state_entries.unwrap_or(d.state_entries),
            cold_share_permille: self.cold_share.unwrap_or(d.cold_share_permille),
            table_layout: self.table_layout,
            ..d
        }
    }
}
