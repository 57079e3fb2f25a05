//! How far a chain's shape is from mainnet's: the state keys its blocks touch per Mgas (what a
//! cold cache must read), and how many of a block's keys no other block touches (what a batch
//! cannot share). `shared/fixtures/mainnet/PROFILE.md` measures mainnet's first: 88 state keys per
//! Mgas over its recent (2023-2024) blocks, 76 over all post-London ones.

use alloy_primitives::{Address, U256, map::HashMap};
use bal_replay_dump::{DumpError, DumpReader};

/// Mainnet's state keys per Mgas over the recent (2023-2024) fixture blocks (PROFILE.md).
pub const MAINNET_RECENT_KEYS_PER_MGAS: f64 = 88.0;

/// A chain's shape, from its dump.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct ChainShape {
    /// Blocks.
    pub blocks: u64,
    /// Gas, Mgas.
    pub mgas: f64,
    /// Accounts and slots the blocks touch (their pre-states), per Mgas.
    pub state_keys_per_mgas: f64,
    /// Of the keys the blocks touch (each counted once per block), the share no other block
    /// touches.
    pub unshared_key_share: f64,
}

impl ChainShape {
    /// The shape of `dump`'s blocks.
    pub fn of_dump(dump: &DumpReader) -> Result<Self, DumpError> {
        let mut blocks_touching: HashMap<(Address, Option<U256>), u32> = HashMap::default();
        let (mut blocks, mut gas, mut keys) = (0u64, 0u64, 0u64);
        for record in dump.records() {
            let record = record?;
            blocks += 1;
            gas = gas.saturating_add(record.gas_used());
            let pre = &record.pre_state;
            keys += pre.key_count() as u64;
            let touched = pre
                .accounts
                .iter()
                .map(|a| (a.address, None))
                .chain(pre.absent.iter().map(|a| (*a, None)))
                .chain(pre.storage.iter().map(|s| (s.address, Some(s.slot))));
            for key in touched {
                *blocks_touching.entry(key).or_default() += 1;
            }
        }
        let mgas = gas as f64 / 1e6;
        let unshared = blocks_touching.values().filter(|n| **n == 1).count() as f64;
        Ok(Self {
            blocks,
            mgas,
            state_keys_per_mgas: keys as f64 / mgas.max(f64::MIN_POSITIVE),
            unshared_key_share: unshared / keys.max(1) as f64,
        })
    }
}
