//! What to generate.

use crate::SynthError;

/// Which kind of blocks to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Profile {
    /// Blocks shaped like mainnet's in 2023-2024 (see `fixtures/mainnet/PROFILE.md`): mostly ETH
    /// transfers and ERC-20 calls, some swaps, mints and router calls, popular contracts hot and a
    /// long tail of cold accounts.
    #[default]
    MainnetLike,
    /// Blocks of `worst_case_txs` transactions that each read `worst_case_slots` distinct,
    /// existing, non-zero slots of the reader contract and nothing else: the most cold state a
    /// block can make a node read per unit of gas. No slot is read twice in the whole chain.
    ///
    /// A read costs 2,186 gas ([`READER_GAS_PER_SLOT`]: cold `SLOAD`, `KECCAK256`, loop), so the
    /// default 7,845 reads make a transaction of about 17.2M gas. The header gas limit is twice a
    /// block's reads (138M by default) so every transaction fits and the base fee stays flat.
    ///
    /// [`READER_GAS_PER_SLOT`]: crate::contracts::READER_GAS_PER_SLOT
    WorstCaseIo,
}

impl Profile {
    /// The profile's name on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            Self::MainnetLike => "mainnet-like",
            Self::WorstCaseIo => "worst-case-io",
        }
    }
}

impl std::str::FromStr for Profile {
    type Err = SynthError;

    fn from_str(name: &str) -> Result<Self, SynthError> {
        [Self::MainnetLike, Self::WorstCaseIo]
            .into_iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| SynthError::UnknownProfile(name.to_string()))
    }
}

/// Parameters of a generated chain. Everything generated is a pure function of this value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratorConfig {
    /// Seed of every random choice (keys, balances, transaction mix).
    pub seed: u64,
    /// Externally owned accounts in the genesis state.
    pub accounts: usize,
    /// ERC-20 token contracts.
    pub tokens: usize,
    /// AMM pairs; pair `k` joins the `k`-th pair of tokens in the order (0,1), (0,2), ...,
    /// (0,n-1), (1,2), ..., so the first pairs all trade the hub token 0 (mainnet's WETH).
    pub pools: usize,
    /// NFT collections.
    pub nfts: usize,
    /// Accounts holding each token (one balance slot each). Half of them (the *traders*, the same
    /// accounts for every token) hold every token and have approved the router without limit (one
    /// allowance slot per token), and so can swap.
    pub holders_per_token: usize,
    /// Blocks to generate.
    pub blocks: u64,
    /// Gas a mainnet-like block is filled to: transactions are added until their estimated gas
    /// (the executed average of their kind so far) reaches it. At most 30M: the header gas limit is
    /// 60M, so at 30M blocks sit at the EIP-1559 target and the base fee stays near its 10 gwei
    /// start. (Mainnet's recent fixture blocks average 11.2M; per-Mgas figures barely depend on
    /// it.)
    pub gas_per_block: u64,
    /// Block shape.
    pub profile: Profile,
    /// Distinct slots each worst-case transaction reads.
    pub worst_case_slots: u64,
    /// Worst-case transactions per block (64M gas / 16M per transaction = 4 by default).
    pub worst_case_txs: usize,
    /// Number of the first generated block (at least 15,537,394, mainnet's first post-merge
    /// block); the genesis state is its parent's post-state.
    pub first_block: u64,
    /// Total entries (accounts and slots) of the genesis state: beyond the hot world's, the rest
    /// are cold accounts and cold token holders (see `cold`), written by streaming. 0 (or
    /// anything under the hot world's size) adds none.
    pub state_entries: u64,
    /// Per mille of transfer recipients (ETH and ERC-20) that are cold accounts or holders, when
    /// the state has cold entries.
    pub cold_share_permille: u64,
    /// The index and filter layout of the state's files.
    pub table_layout: bal_replay_rocks::TableLayout,
}

impl Default for GeneratorConfig {
    fn default() -> Self {
        Self {
            seed: 1,
            accounts: 20_000,
            // Enough distinct contracts that a block touches about as many as mainnet's (PROFILE.md):
            // with fewer, contracts and accounts per Mgas fall more than 25% short.
            tokens: 100,
            pools: 50,
            nfts: 20,
            holders_per_token: 2_000,
            blocks: 20,
            gas_per_block: 30_000_000,
            profile: Profile::MainnetLike,
            worst_case_slots: 7_845,
            worst_case_txs: 4,
            first_block: 20_000_000,
            state_entries: 0,
            cold_share_permille: 500,
            table_layout: bal_replay_rocks::TableLayout::Partitioned,
        }
    }
}

/// Hot wallets: the first EOAs, which send a share of transfers (as exchanges do) and all
/// worst-case transactions.
pub(crate) const HOT_WALLETS: usize = 8;

/// One whole token (18 decimals).
pub(crate) const TOKEN_UNIT: u128 = 1_000_000_000_000_000_000;

/// Most cold holders: their balance slots are sorted in memory (40 bytes each) before they are
/// written, which bounds generation's memory to under 1 GiB.
pub const MAX_HOLDERS_PER_TOKEN: u64 = 16 << 20;

/// Most EOAs: the hot world holds each in memory with its signing key and genesis account (about
/// 200 bytes), and derives each key by a scalar multiplication, so this many take about 2 GiB and
/// minutes. A larger state comes from `state_entries`, whose cold entries are streamed to disk.
pub const MAX_ACCOUNTS: usize = 10_000_000;

/// Most ERC-20 contracts: each is deployed with its holders' balance and allowance slots in
/// memory, and pools are chosen among their pairs.
pub const MAX_TOKENS: usize = 10_000;

/// Most storage slots of the hot world (token balances and allowances, the worst-case reader's
/// slots): all are held in memory (about 100 bytes each) before they are written, so this many
/// take about 3 GiB.
pub const MAX_HOT_SLOTS: u64 = 32 << 20;

/// Mainnet's first proof-of-stake block: mainnet's schedule decides the merge by block number, so
/// generated (post-merge) headers must be numbered from here on.
pub(crate) const FIRST_POST_MERGE_BLOCK: u64 = 15_537_394;

/// Header gas limit of a mainnet-like block.
pub(crate) const MAINNET_GAS_LIMIT: u64 = 60_000_000;

impl GeneratorConfig {
    /// Checks that the parameters can make a chain.
    pub fn validate(&self) -> Result<(), SynthError> {
        let fail = |reason: String| Err(SynthError::InvalidConfig { reason });
        if self.blocks == 0 {
            return fail("blocks is 0, at least 1 is needed".into());
        }
        if self.accounts < 2 * HOT_WALLETS {
            return fail(format!(
                "accounts is {}, at least {} are needed",
                self.accounts,
                2 * HOT_WALLETS
            ));
        }
        if self.cold_share_permille > 1000 {
            return fail(format!(
                "cold share is {} per mille, at most 1000",
                self.cold_share_permille
            ));
        }
        if self.accounts > MAX_ACCOUNTS {
            return fail(format!(
                "accounts is {}, at most {MAX_ACCOUNTS}: the hot world's accounts are held in \
                 memory with their signing keys; for a larger state raise state_entries, whose \
                 cold entries are streamed to disk",
                self.accounts
            ));
        }
        if self.tokens > MAX_TOKENS {
            return fail(format!(
                "tokens is {}, at most {MAX_TOKENS}: each token's contract and holders are held \
                 in memory",
                self.tokens
            ));
        }
        let most_holders = self.state_entries.div_ceil(self.tokens.max(1) as u64);
        if most_holders > MAX_HOLDERS_PER_TOKEN {
            return fail(format!(
                "{} state entries over {} tokens would give each token up to {most_holders} cold holders, at most {} fit in memory: raise tokens",
                self.state_entries, self.tokens, MAX_HOLDERS_PER_TOKEN
            ));
        }
        if self.tokens < 2 {
            return fail(format!("tokens is {}, at least 2 are needed", self.tokens));
        }
        let max_pools = self.tokens * (self.tokens - 1) / 2;
        let hot_slots = self.hot_slots();
        if hot_slots > MAX_HOT_SLOTS {
            return fail(format!(
                "the hot world would hold {hot_slots} storage slots (tokens x holders_per_token \
                 balances, an allowance per trader, and the worst-case reader's slots: blocks x \
                 worst_case_txs x worst_case_slots), at most {MAX_HOT_SLOTS}: they are held in \
                 memory before they are written; lower tokens, holders_per_token or blocks"
            ));
        }
        if self.pools == 0 || self.pools > max_pools {
            return fail(format!(
                "pools is {}, must be 1 to {max_pools} (one per pair of tokens)",
                self.pools
            ));
        }
        if self.nfts == 0 {
            return fail("nfts is 0, at least 1 is needed".into());
        }
        if self.holders_per_token < 2 * HOT_WALLETS || self.holders_per_token > self.accounts {
            return fail(format!(
                "holders_per_token is {}, must be {} to accounts ({})",
                self.holders_per_token,
                2 * HOT_WALLETS,
                self.accounts
            ));
        }
        if self.first_block < FIRST_POST_MERGE_BLOCK {
            return fail(format!(
                "first_block is {}; the headers are post-merge (Cancun), so it must be at least {}",
                self.first_block, FIRST_POST_MERGE_BLOCK
            ));
        }
        if self.profile == Profile::MainnetLike
            && !(100_000..=MAINNET_GAS_LIMIT / 2).contains(&self.gas_per_block)
        {
            return fail(format!(
                "gas_per_block is {}, must be 100000 to {}",
                self.gas_per_block,
                MAINNET_GAS_LIMIT / 2
            ));
        }
        if self.profile == Profile::WorstCaseIo
            && (self.worst_case_slots == 0 || self.worst_case_txs == 0)
        {
            return fail("worst_case_slots and worst_case_txs must be positive".into());
        }
        Ok(())
    }

    /// Slots the worst-case reader holds in genesis: one per read of the whole chain, so no slot is
    /// read twice. ([`validate`](Self::validate) bounds it; saturating, so that it can.)
    pub(crate) fn reader_slots(&self) -> u64 {
        match self.profile {
            Profile::MainnetLike => 0,
            Profile::WorstCaseIo => self
                .blocks
                .saturating_mul(self.worst_case_txs as u64)
                .saturating_mul(self.worst_case_slots),
        }
    }

    /// Storage slots the hot world holds in memory: each token's holders' balances, the traders'
    /// (half the holders) allowances, and the worst-case reader's slots. Saturating.
    fn hot_slots(&self) -> u64 {
        let per_token =
            (self.holders_per_token as u64).saturating_add(self.holders_per_token as u64 / 2);
        (self.tokens as u64)
            .saturating_mul(per_token)
            .saturating_add(self.reader_slots())
    }
}
