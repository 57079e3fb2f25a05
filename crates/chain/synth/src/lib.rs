//! Deterministic synthetic chains: a large generated state, the project's own contracts, and
//! consecutive blocks executed for real, written as a dump and a seeded RocksDB state.
//!
//! Mainnet fixtures are single blocks over their own small pre-states; a replay benchmark also
//! needs long runs of consecutive blocks over a state too large to cache. This crate makes them:
//! every output is a pure function of a [`GeneratorConfig`], so a benchmark can be regenerated
//! anywhere, bit for bit.
//!
//! # What the chain looks like
//!
//! - **Genesis** (the state at `first_block - 1`): `accounts` EOAs, each with a real secp256k1 key
//!   derived from the seed (address from the key), a balance and a nonce; `tokens` ERC-20s with
//!   `holders_per_token` balances each (half of the holders, the *traders*, hold every token and
//!   have approved the router without limit); `pools` AMM pairs with their reserves; `nfts`
//!   collections; the router; the worst-case reader (with its slots under
//!   [`Profile::WorstCaseIo`]); mainnet's EIP-4788 beacon-roots contract, so each block's index-0
//!   system call really writes; and the 256 block hashes before `first_block`.
//! - **Blocks**: Cancun-era headers on mainnet's schedule (chain id 1, timestamps from July 2024
//!   every 12 s, so Cancun is active and Prague is not), EIP-1559 base fees chained from the parent,
//!   empty withdrawals, no blobs, each header hashing its parent. Gas used, receipts root, logs
//!   bloom and transactions root come from executing the block with the reference executor
//!   ([`bal_replay_executor::execute_block`]) over the parent's state; the state root is zero (a flat
//!   state has no trie).
//! - **Transactions**: EIP-1559 transactions with per-sender nonces and real signatures
//!   (libsecp256k1, which revm already links; RFC 6979 nonces, so signatures are deterministic
//!   too). The records carry the senders, so replays never recover them. Under
//!   [`Profile::MainnetLike`] the mix follows PROFILE.md's 2023-2024 mainnet blocks: 45% ETH
//!   transfers, 28% ERC-20 `transfer`/`approve`, and swaps, NFT mints and multi-contract router
//!   calls (100k to 700k gas) for the rest, which brings a transaction to ~91k gas and a block to
//!   ~87 state keys per Mgas (mainnet: 79.6k and 88). Each swap runs a pool's price arithmetic
//!   ([`contracts::SWAP_MATH_ROUNDS`]), so a block's execution CPU per gas is mainnet's recent
//!   blocks' within 10% (`scripts/cpu-per-gas.sh`). Popular tokens, pairs and collections are
//!   chosen Zipf-like (a few get most calls: hot keys), senders and recipients mostly uniformly
//!   among all accounts (a long tail of cold keys), some recipients brand new, and a few "exchange"
//!   hot wallets send a share of the transfers. Under [`Profile::WorstCaseIo`] a block holds only
//!   `worst_case_txs` reads of `worst_case_slots` distinct slots each.
//! - **Records**: each block's [`BlockRecord`](bal_replay_dump::BlockRecord) carries the BAL and
//!   the pre-state execution recorded, and the 256 hashes before it, as the dump format requires.
//!   [`profile_stats`] measures a run of records the way PROFILE.md measures mainnet's.
//!
//! # Why each contract exists
//!
//! The contracts ([`contracts`], assembled by [`asm`]: source in the repository, build
//! reproducible) are small but do the state accesses real ones do: USDC-like ERC-20s (balances and
//! allowances in mapping slots, a paused flag and per-account blacklist checks, `LOG3` events); a
//! pair that reads reserves, `STATICCALL`s and `CALL`s its tokens (one
//! transaction, three contracts, a hot reserve slot); a router chaining several swaps and payments;
//! an NFT mint writing a hot counter and a fresh owner slot; and a read-only loop of cold `SLOAD`s,
//! the worst case for a node's state reads.
//!
//! # Use
//!
//! ```no_run
//! use bal_replay_synth::{GeneratorConfig, ProfileStats, generate};
//!
//! let config = GeneratorConfig { seed: 7, blocks: 100, ..GeneratorConfig::default() };
//! let chain = generate(&config, "dump/".as_ref(), "state/".as_ref(), None)?;
//! println!("{} txs in {} blocks", chain.txs, chain.blocks);
//! println!("{}", chain.stats.comparison_table(&ProfileStats::RECENT_MAINNET));
//! # Ok::<(), bal_replay_synth::SynthError>(())
//! ```
//!
//! Invariant: executing the dump's blocks in order over the written state reproduces every
//! header's gas used, receipts root and logs bloom, and every record's BAL and pre-state.

#![cfg_attr(not(test), warn(unused_crate_dependencies))]

pub mod asm;
mod chain;
mod cold;
mod config;
pub mod contracts;
mod error;
mod genesis;
pub mod node;
mod rng;
mod staged;
mod stats;
#[cfg(test)]
mod testing;
mod txgen;

pub use chain::{
    BLOCK_TIME, EXTRA_DATA, FIRST_TIMESTAMP, GeneratedChain, INITIAL_BASE_FEE, generate,
    generate_in_memory,
};
pub use config::{GeneratorConfig, Profile};
pub use error::SynthError;
pub use stats::{
    KEY_SAMPLES, ProfileAccumulator, ProfileStats, RECENT_MAINNET_UNSHARED_KEY_SHARE,
    profile_stats, unshared_key_share,
};
