//! The shape of a chain's blocks, measured the way PROFILE.md measures mainnet's.

use crate::contracts::{SEL_APPROVE, SEL_TRANSFER, SEL_TRANSFER_FROM};
use alloy_consensus::Transaction;
use alloy_primitives::{Address, U256};
use bal_replay_dump::{BlockRecord, PreState};
use revm::primitives::KECCAK_EMPTY;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

/// Per-block averages of a run of blocks. Works on any records (generated or imported), since it
/// reads only the blocks and their recorded pre-states.
///
/// Definitions (PROFILE.md's): a *plain transfer* is a call with empty input; an *ERC-20 call* is
/// a call whose selector is `transfer`, `transferFrom` or `approve`; *accounts* are the accounts a
/// block touches (its pre-state's existing and absent accounts), *slots* the slots it touches,
/// *contracts* the touched accounts with code; *state keys* are accounts plus slots.
/// Ratios are of totals (gas per tx = all gas / all txs).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ProfileStats {
    /// Blocks measured.
    pub blocks: u64,
    /// Transactions in all blocks.
    pub txs: u64,
    /// Gas used by all blocks.
    pub gas_used: u64,
    /// Transactions per block.
    pub txs_per_block: f64,
    /// Million gas per block.
    pub mgas_per_block: f64,
    /// Gas per transaction.
    pub gas_per_tx: f64,
    /// Share of plain ETH transfers among transactions (0 to 1).
    pub plain_transfer_share: f64,
    /// Share of ERC-20 `transfer` / `transferFrom` / `approve` calls (0 to 1).
    pub erc20_share: f64,
    /// Accounts touched per block.
    pub accounts_per_block: f64,
    /// Storage slots touched per block.
    pub slots_per_block: f64,
    /// Contracts touched per block.
    pub contracts_per_block: f64,
    /// State keys (accounts + slots) per million gas.
    pub state_keys_per_mgas: f64,
    /// Of the state keys each of up to [`KEY_SAMPLES`] blocks spread over the chain touches, the
    /// share that none of the other sampled blocks touches ([`unshared_key_share`]): how much of a
    /// block's reads are of keys outside the small hot set every block shares, i.e. reads that
    /// miss any cache of recent blocks and, on a state far larger than memory, go to the disk.
    pub unshared_key_share: f64,
}

/// [`ProfileStats::unshared_key_share`] of the recent mainnet fixture blocks (number 16,300,000
/// and later; one of them is empty): 85% of a block's keys are touched by none of the others, even
/// among the five of them that lie within 5,052 blocks of each other (86%).
pub const RECENT_MAINNET_UNSHARED_KEY_SHARE: f64 = 0.851;

/// Blocks sampled for [`ProfileStats::unshared_key_share`]: as many as the recent mainnet fixtures
/// have.
pub const KEY_SAMPLES: u64 = 11;

/// A state key a block touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum TouchedKey {
    Account(Address),
    Slot(Address, U256),
}

/// Of the state keys (accounts, absent accounts and slots) each of `blocks` touches, the share no
/// other of `blocks` touches, over all of them (0 for no keys).
pub fn unshared_key_share<'a>(blocks: impl IntoIterator<Item = &'a PreState>) -> f64 {
    let sets: Vec<HashSet<TouchedKey>> = blocks.into_iter().map(touched_keys).collect();
    let mut blocks_touching: HashMap<TouchedKey, u32> = HashMap::new();
    for key in sets.iter().flatten() {
        *blocks_touching.entry(*key).or_default() += 1;
    }
    let total: usize = sets.iter().map(HashSet::len).sum();
    let unshared = blocks_touching.values().filter(|n| **n == 1).count();
    if total == 0 {
        0.0
    } else {
        unshared as f64 / total as f64
    }
}

fn touched_keys(pre: &PreState) -> HashSet<TouchedKey> {
    pre.accounts
        .iter()
        .map(|a| TouchedKey::Account(a.address))
        .chain(pre.absent.iter().map(|a| TouchedKey::Account(*a)))
        .chain(
            pre.storage
                .iter()
                .map(|s| TouchedKey::Slot(s.address, s.slot)),
        )
        .collect()
}

impl ProfileStats {
    /// PROFILE.md's "recent (2023-2024)" row: 12 mainnet blocks.
    pub const RECENT_MAINNET: Self = Self {
        blocks: 12,
        txs: 1_692,
        gas_used: 134_400_000,
        txs_per_block: 141.0,
        mgas_per_block: 11.2,
        gas_per_tx: 79_573.0,
        plain_transfer_share: 0.45,
        erc20_share: 0.28,
        accounts_per_block: 284.0,
        slots_per_block: 703.0,
        contracts_per_block: 119.0,
        state_keys_per_mgas: 88.0,
        // Not in PROFILE.md: measured on the same fixtures (blocks from 16.3 M on) by
        // `recent_mainnet_unshared_key_share_is_measured_from_the_fixtures`.
        unshared_key_share: RECENT_MAINNET_UNSHARED_KEY_SHARE,
    };

    /// A table of these figures next to `reference`'s, with their ratio: what a CLI prints to show
    /// how close a generated chain is to mainnet.
    pub fn comparison_table(&self, reference: &Self) -> String {
        let rows = [
            ("txs / block", self.txs_per_block, reference.txs_per_block),
            (
                "Mgas / block",
                self.mgas_per_block,
                reference.mgas_per_block,
            ),
            ("gas / tx", self.gas_per_tx, reference.gas_per_tx),
            (
                "plain transfers %",
                100.0 * self.plain_transfer_share,
                100.0 * reference.plain_transfer_share,
            ),
            (
                "ERC-20 calls %",
                100.0 * self.erc20_share,
                100.0 * reference.erc20_share,
            ),
            (
                "accounts / block",
                self.accounts_per_block,
                reference.accounts_per_block,
            ),
            (
                "slots / block",
                self.slots_per_block,
                reference.slots_per_block,
            ),
            (
                "contracts / block",
                self.contracts_per_block,
                reference.contracts_per_block,
            ),
            (
                "state keys / Mgas",
                self.state_keys_per_mgas,
                reference.state_keys_per_mgas,
            ),
            (
                "unshared keys %",
                100.0 * self.unshared_key_share,
                100.0 * reference.unshared_key_share,
            ),
        ];
        let mut out = format!(
            "{:<20} {:>12} {:>12} {:>7}\n",
            "", "this", "reference", "ratio"
        );
        for (name, ours, theirs) in rows {
            let ratio = if theirs == 0.0 { 0.0 } else { ours / theirs };
            let _ = writeln!(out, "{name:<20} {ours:>12.1} {theirs:>12.1} {ratio:>7.2}");
        }
        out
    }
}

/// Accumulates [`ProfileStats`] one record at a time (so a generator can measure as it writes).
#[derive(Debug, Clone, Default)]
pub struct ProfileAccumulator {
    /// Keep every this many blocks' keys for the unshared-key share (0: the first block only).
    sample_every: u64,
    samples: Vec<PreState>,
    blocks: u64,
    txs: u64,
    gas: u64,
    plain: u64,
    erc20: u64,
    accounts: u64,
    slots: u64,
    contracts: u64,
}

impl ProfileAccumulator {
    /// An accumulator for a chain of `blocks` blocks, sampling [`KEY_SAMPLES`] of them evenly for
    /// the unshared-key share.
    pub fn for_chain(blocks: u64) -> Self {
        Self {
            sample_every: (blocks / KEY_SAMPLES).max(1),
            ..Self::default()
        }
    }

    /// Adds one block.
    pub fn add(&mut self, record: &BlockRecord) {
        if (self.samples.len() as u64) < KEY_SAMPLES
            && self.blocks.is_multiple_of(self.sample_every.max(1))
        {
            self.samples.push(PreState {
                codes: Vec::new(),
                ..record.pre_state.clone()
            });
        }
        self.blocks += 1;
        self.gas += record.gas_used();
        for tx in &record.block.body.transactions {
            self.txs += 1;
            if tx.to().is_none() {
                continue;
            }
            let input = tx.input();
            if input.is_empty() {
                self.plain += 1;
            } else if input.len() >= 4
                && [SEL_TRANSFER, SEL_TRANSFER_FROM, SEL_APPROVE]
                    .contains(&[input[0], input[1], input[2], input[3]])
            {
                self.erc20 += 1;
            }
        }
        let pre = &record.pre_state;
        self.accounts += (pre.accounts.len() + pre.absent.len()) as u64;
        self.slots += pre.storage.len() as u64;
        self.contracts += pre
            .accounts
            .iter()
            .filter(|a| a.code_hash != KECCAK_EMPTY)
            .count() as u64;
    }

    /// The averages over the blocks added.
    pub fn finish(&self) -> ProfileStats {
        let per = |x: u64, n: u64| if n == 0 { 0.0 } else { x as f64 / n as f64 };
        let mgas = self.gas as f64 / 1e6;
        ProfileStats {
            blocks: self.blocks,
            txs: self.txs,
            gas_used: self.gas,
            txs_per_block: per(self.txs, self.blocks),
            mgas_per_block: per(self.gas, self.blocks) / 1e6,
            gas_per_tx: per(self.gas, self.txs),
            plain_transfer_share: per(self.plain, self.txs),
            erc20_share: per(self.erc20, self.txs),
            accounts_per_block: per(self.accounts, self.blocks),
            slots_per_block: per(self.slots, self.blocks),
            contracts_per_block: per(self.contracts, self.blocks),
            state_keys_per_mgas: if mgas == 0.0 {
                0.0
            } else {
                (self.accounts + self.slots) as f64 / mgas
            },
            unshared_key_share: unshared_key_share(&self.samples),
        }
    }
}

/// [`ProfileStats`] of `records`.
pub fn profile_stats(records: &[BlockRecord]) -> ProfileStats {
    let mut acc = ProfileAccumulator::for_chain(records.len() as u64);
    for record in records {
        acc.add(record);
    }
    acc.finish()
}
