//! The cold state: the bulk of a large generated state, which no block touched recently.
//!
//! Mainnet's state is mostly keys nobody has read for a long time, spread over the whole key
//! space; a first read of one waits for the disk. The hot world (`genesis`) is small and touched
//! over and over, so a chain over it alone reads from memory after its first blocks. With
//! [`GeneratorConfig::state_entries`] the state is filled up to that many entries with cold ones:
//! - *cold accounts*: funded EOAs no key of the world controls, recipients of ETH transfers;
//! - *cold holders*: addresses holding a balance of every token (one slot per token), recipients
//!   of ERC-20 transfers.
//!
//! Every cold key and value is a pure function of the seed and an index, so the state is written
//! by streaming (sorted SST files, ingested: [`bal_replay_rocks::RocksStore::ingest_accounts`])
//! in bounded memory, and the chain generator learns a cold key's value only when a transaction
//! first touches it ([`ColdKey`]).

use crate::{GeneratorConfig, config::TOKEN_UNIT, contracts::erc20_layout};
use alloy_primitives::{Address, U256, keccak256};
use bal_replay_rocks::RocksStore;
use bal_replay_state::{FlatAccount, StateChanges, StateError};
use revm::primitives::KECCAK_EMPTY;

/// Share of the cold entries that are accounts (the rest are token balance slots). Mainnet's flat
/// state holds about 5 slots per account.
const ACCOUNT_SHARE: f64 = 0.2;

/// The cold part of a generated state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ColdState {
    seed: u64,
    /// Cold accounts.
    pub accounts: u64,
    /// Cold holders (each holds every token).
    pub holders: u64,
    /// The tokens, by world index.
    tokens: Vec<Address>,
    /// Per mille of transfer recipients that are cold.
    pub share_permille: u64,
}

/// A cold key a transaction touches: its value must be in the generator's state before the block
/// executes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ColdKey {
    /// Cold account `i`.
    Account(u64),
    /// The balance of cold holder `i` in token (world index) `t`.
    Balance { token: usize, holder: u64 },
}

impl ColdState {
    /// The cold state filling the hot world's `hot_entries` up to `config.state_entries`, or
    /// `None` if the hot world alone reaches it.
    pub fn new(config: &GeneratorConfig, tokens: &[Address], hot_entries: u64) -> Option<Self> {
        let cold = config.state_entries.checked_sub(hot_entries)?;
        if cold == 0 || tokens.is_empty() {
            return None;
        }
        // Whole holders (one slot per token each); the accounts make up the exact total.
        let holders = (cold as f64 * (1.0 - ACCOUNT_SHARE)) as u64 / tokens.len() as u64;
        let accounts = cold - holders * tokens.len() as u64;
        Some(Self {
            seed: config.seed,
            accounts,
            holders,
            tokens: tokens.to_vec(),
            share_permille: config.cold_share_permille,
        })
    }

    /// Entries the cold state adds.
    pub fn entries(&self) -> u64 {
        self.accounts + self.holders * self.tokens.len() as u64
    }

    /// Cold account `i`'s address. Addresses grow with `i` (so they are written in key order
    /// without sorting) and are spread over the whole address space: account `i` lies in the
    /// `i`-th of `accounts` equal stretches, at a pseudo-random place within it.
    pub fn account_address(&self, i: u64) -> Address {
        spread_address(self.seed, 0x636f_6c64_6163, i, self.accounts) // "coldac"
    }

    /// Cold holder `i`'s address: spread like the accounts' (a stream of its own).
    pub fn holder_address(&self, i: u64) -> Address {
        spread_address(self.seed, 0x636f_6c64_686f, i, self.holders) // "coldho"
    }

    /// Cold account `i`'s value: an EOA with a few transactions and some ether.
    pub fn account(&self, i: u64) -> FlatAccount {
        let h = mix(self.seed, 0x6163_6374, i);
        FlatAccount {
            nonce: h % 50,
            balance: U256::from((h >> 8) % 10_000 + 1) * U256::from(10u64.pow(15)),
            code_hash: KECCAK_EMPTY,
        }
    }

    /// Cold holder `i`'s balance of token `t` (never zero: the slot exists).
    pub fn balance(&self, token: usize, i: u64) -> U256 {
        let h = mix(self.seed ^ token as u64, 0x6261_6c61, i);
        U256::from(h % 5_000 + 1) * U256::from(TOKEN_UNIT)
    }

    /// The state change that puts `key`'s value in a store.
    pub fn changes_of(&self, key: ColdKey) -> StateChanges {
        match key {
            ColdKey::Account(i) => StateChanges {
                accounts: vec![(self.account_address(i), Some(self.account(i)))],
                ..StateChanges::default()
            },
            ColdKey::Balance { token, holder } => StateChanges {
                storage: vec![(
                    self.tokens[token],
                    erc20_layout::balance_slot(self.holder_address(holder)),
                    self.balance(token, holder),
                )],
                ..StateChanges::default()
            },
        }
    }

    /// Writes the cold state into an empty plain-keyed `store` by SST ingestion: accounts in
    /// address order, then each token's holder slots (sorted in memory, one token at a time) in
    /// token address order. `progress` gets the entries written so far.
    pub fn write(
        &self,
        store: &RocksStore,
        progress: &mut dyn FnMut(u64),
    ) -> Result<u64, StateError> {
        let accounts = store.ingest_accounts(
            (0..self.accounts).map(|i| (self.account_address(i), self.account(i))),
            progress,
        )?;
        let mut by_address: Vec<usize> = (0..self.tokens.len()).collect();
        by_address.sort_by_key(|&t| self.tokens[t]);
        let mut written = accounts;
        // The holders' slots are the same for every token: hash them once.
        let holder_slots: Vec<(U256, u64)> = {
            let mut s: Vec<(U256, u64)> = (0..self.holders)
                .map(|i| (erc20_layout::balance_slot(self.holder_address(i)), i))
                .collect();
            s.sort_unstable();
            s
        };
        for t in by_address {
            let slots = holder_slots
                .iter()
                .map(|&(slot, i)| (self.tokens[t], slot, self.balance(t, i)));
            let base = written;
            written += store.ingest_storage(slots, &mut |n| progress(base + n))?;
        }
        Ok(written)
    }
}

/// A 64-bit hash of (seed, stream, index).
fn mix(seed: u64, stream: u64, i: u64) -> u64 {
    let mut bytes = [0u8; 24];
    bytes[..8].copy_from_slice(&seed.to_be_bytes());
    bytes[8..16].copy_from_slice(&stream.to_be_bytes());
    bytes[16..].copy_from_slice(&i.to_be_bytes());
    u64::from_be_bytes(keccak256(bytes)[..8].try_into().expect("8 bytes"))
}

/// Address `i` of `count`, increasing with `i`, spread over the 160-bit space.
fn spread_address(seed: u64, stream: u64, i: u64, count: u64) -> Address {
    let space: U256 = U256::from(1) << 160;
    let stride: U256 = space / U256::from(count.max(1));
    let jitter = U256::from(mix(seed, stream, i)) % stride;
    let at: U256 = stride * U256::from(i) + jitter;
    Address::from_slice(&at.to_be_bytes::<32>()[12..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cold(state_entries: u64) -> ColdState {
        let config = GeneratorConfig {
            state_entries,
            ..GeneratorConfig::default()
        };
        let tokens: Vec<Address> = (1..=4u8).map(Address::repeat_byte).collect();
        ColdState::new(&config, &tokens, 1_000).unwrap()
    }

    #[test]
    fn cold_keys_are_spread_sorted_and_sized() {
        let c = cold(101_000);
        // 100,000 cold entries: 20,000 accounts, 20,000 holders of 4 tokens.
        assert_eq!(
            (c.accounts, c.holders, c.entries()),
            (20_000, 20_000, 100_000)
        );
        let addresses: Vec<Address> = (0..c.accounts).map(|i| c.account_address(i)).collect();
        assert!(addresses.windows(2).all(|w| w[0] < w[1]));
        // Spread: the first is in the first 1/20,000th of the space, the last in the last.
        assert_eq!(addresses[0].0[0], 0);
        assert_eq!(addresses[19_999].0[0], 0xff);
        assert_ne!(c.account_address(7), c.holder_address(7));
        assert!(c.balance(2, 5) > U256::ZERO);
        assert!(
            ColdState::new(
                &GeneratorConfig {
                    state_entries: 900,
                    ..GeneratorConfig::default()
                },
                &[Address::ZERO],
                1_000
            )
            .is_none()
        );
    }

    #[test]
    fn the_written_cold_state_holds_every_value_the_generator_knows() {
        let c = cold(11_000);
        let dir = tempfile::tempdir().unwrap();
        let store = RocksStore::create(
            dir.path(),
            bal_replay_state::KeyScheme::Plain,
            &bal_replay_rocks::RocksOptions::default(),
        )
        .unwrap();
        let mut last = 0;
        let written = c.write(&store, &mut |n| last = n).unwrap();
        assert_eq!((written, last), (c.entries(), c.entries()));
        use bal_replay_state::StateReader;
        for key in [
            ColdKey::Account(0),
            ColdKey::Account(c.accounts - 1),
            ColdKey::Balance {
                token: 3,
                holder: c.holders / 2,
            },
        ] {
            let changes = c.changes_of(key);
            for (address, account) in &changes.accounts {
                assert_eq!(store.account(*address).unwrap(), *account);
            }
            for (address, slot, value) in &changes.storage {
                assert_eq!(store.storage(*address, *slot).unwrap(), *value);
            }
        }
    }
}
