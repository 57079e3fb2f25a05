//! The BAL designs and what each ships.

use alloy_eip7928::BlockAccessList;
use alloy_rlp::Encodable;
use bal_replay_dump::BlockRecord;
use std::{fmt, str::FromStr};

/// How a replay gets the state it reads (the research's three BAL designs, plus one of ours).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IoDesign {
    /// Full BAL: diffs, read keys and read values. The dump's pre-block values answer every read;
    /// no database read at all (a read outside them means the dump is incomplete: an error).
    Full,
    /// Full BAL as a validating node uses it: execution reads the BAL's values as [`Self::Full`]
    /// does, while the prefetch readers (2 x `io_threads`) read every value the BAL claims from
    /// the state, off execution's critical path, and compare; the batch fails on a difference, naming the block,
    /// account and slot. On a disk-resident state, the fair baseline for the other designs.
    #[serde(rename = "full-verify")]
    FullVerify,
    /// Batched I/O BAL: diffs and read keys. Every key the BAL names is fetched before the batch
    /// executes (multi-gets of chunks the 2 x `io_threads` readers take in turn), then execution
    /// reads the cache.
    Batched,
    /// Parallel I/O BAL: diffs only. Each transaction reads what it needs on demand, through the
    /// cache shared by all transactions.
    Parallel,
    /// Parallel I/O BAL, plus prefetching the pre-values of the keys its diffs name (free: no BAL
    /// bytes) while execution starts.
    Hybrid,
}

impl IoDesign {
    /// Every design, in table order.
    pub const ALL: [IoDesign; 5] = [
        Self::Full,
        Self::FullVerify,
        Self::Batched,
        Self::Parallel,
        Self::Hybrid,
    ];

    /// The lowercase name used on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::FullVerify => "full-verify",
            Self::Batched => "batched",
            Self::Parallel => "parallel",
            Self::Hybrid => "hybrid",
        }
    }

    /// Whether execution sees only the diffs (reads not named by the BAL fall back to the state).
    pub const fn diffs_only(self) -> bool {
        matches!(self, Self::Parallel | Self::Hybrid)
    }

    /// Whether the prefetch before a batch loads contract code too: batched I/O executes from what
    /// it prefetched; hybrid's free prefetch covers only the keys the diffs name, and its workers
    /// read code on demand.
    pub const fn prefetches_code(self) -> bool {
        matches!(self, Self::Batched)
    }
}

impl fmt::Display for IoDesign {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for IoDesign {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|d| d.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown I/O design {s:?} (expected full, full-verify, batched, parallel or hybrid)"
                )
            })
    }
}

/// The parallel-I/O BAL: the standard BAL with storage reads and untouched accounts stripped, as that
/// design would ship it.
pub fn diffs_only_bal(bal: &BlockAccessList) -> BlockAccessList {
    bal.iter()
        .filter(|a| {
            !(a.storage_changes.is_empty()
                && a.balance_changes.is_empty()
                && a.nonce_changes.is_empty()
                && a.code_changes.is_empty())
        })
        .map(|a| {
            let mut a = a.clone();
            a.storage_reads.clear();
            a
        })
        .collect()
}

/// RLP-encoded BAL size of one block in each design, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BalSizes {
    /// Full BAL: the standard BAL plus the pre-block values of the accounts and slots it names
    /// (account nonce, balance and code hash; slot value; code itself excluded).
    pub full: usize,
    /// Batched I/O BAL: the standard EIP-7928 BAL (diffs and read keys).
    pub batched: usize,
    /// Parallel I/O BAL: diffs only.
    pub parallel: usize,
    /// The network's EIP-7928 BAL, for a block whose header commits to one (Amsterdam on) and
    /// whose record's BAL hashes to that commitment: then the record's BAL is the network's,
    /// byte for byte. `None` for earlier blocks, and for a record whose BAL is not the header's.
    pub network: Option<usize>,
}

impl BalSizes {
    /// The sizes of a record's BAL.
    pub fn of(record: &BlockRecord) -> Self {
        let batched = record.bal.length();
        let parallel = diffs_only_bal(&record.bal).length();
        let values = record.pre_state.accounts.length() + record.pre_state.storage.length();
        let network = record
            .block
            .header
            .block_access_list_hash
            .filter(|hash| *hash == alloy_eip7928::compute_block_access_list_hash(&record.bal))
            .map(|_| batched);
        Self {
            full: batched + values,
            batched,
            parallel,
            network,
        }
    }
}

impl std::ops::AddAssign for BalSizes {
    fn add_assign(&mut self, other: Self) {
        self.full += other.full;
        self.batched += other.batched;
        self.parallel += other.parallel;
        self.network = match (self.network, other.network) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or_default() + b.unwrap_or_default()),
        };
    }
}

/// The BAL sizes of a run of records, summed, and how many records there were.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BalSizeTotals {
    /// Records summed.
    pub blocks: u64,
    /// Records with the network's BAL ([`BalSizes::network`]).
    pub network_blocks: u64,
    /// Their sizes, summed.
    pub sum: BalSizes,
}

impl BalSizeTotals {
    /// Adds one record's sizes.
    pub fn add(&mut self, sizes: BalSizes) {
        self.blocks += 1;
        self.network_blocks += u64::from(sizes.network.is_some());
        self.sum += sizes;
    }

    /// The totals of `records` (a dump's, for instance).
    pub fn of_records<E>(
        records: impl IntoIterator<Item = Result<BlockRecord, E>>,
    ) -> Result<Self, E> {
        let mut totals = Self::default();
        for record in records {
            totals.add(BalSizes::of(&record?));
        }
        Ok(totals)
    }

    /// `bytes` (one of the sums) per record; 0 over no record.
    pub fn mean(&self, bytes: usize) -> f64 {
        bytes as f64 / self.blocks.max(1) as f64
    }
}

/// The summary `bal-dump size` prints: mean and total per design, and their ratios.
impl std::fmt::Display for BalSizeTotals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let BalSizes {
            full,
            batched,
            parallel,
            network,
        } = self.sum;
        let kb = |v: usize| self.mean(v) / 1000.0;
        let percent = |v: usize, of: usize| 100.0 * v as f64 / of.max(1) as f64;
        writeln!(
            f,
            "{} blocks; RLP-encoded BAL size per design (KB = 1000 bytes):",
            self.blocks
        )?;
        writeln!(
            f,
            "  full BAL     (diffs + read keys + read values): mean {:>9.1} KB, total {full:>12} B, 100%",
            kb(full)
        )?;
        writeln!(
            f,
            "  batched I/O  (diffs + read keys):               mean {:>9.1} KB, total {batched:>12} B, {:.0}% of full",
            kb(batched),
            percent(batched, full)
        )?;
        write!(
            f,
            "  parallel I/O (diffs only):                      mean {:>9.1} KB, total {parallel:>12} B, {:.0}% of full, {:.0}% of batched",
            kb(parallel),
            percent(parallel, full),
            percent(parallel, batched)
        )?;
        if let Some(network) = network {
            // Over the blocks that have one: before Amsterdam a header commits to no BAL.
            let mean = network as f64 / self.network_blocks.max(1) as f64 / 1000.0;
            write!(
                f,
                "\n  network EIP-7928 BAL ({} of {} blocks, hash checked against the header): mean {mean:>9.1} KB, total {network:>12} B (the batched I/O BAL's format)",
                self.network_blocks, self.blocks
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_eip7928::{AccountChanges, BalanceChange, BlockAccessIndex};
    use alloy_primitives::{Address, U256};

    #[test]
    fn diffs_only_strips_reads_and_untouched_accounts() {
        let written = AccountChanges::new(Address::with_last_byte(1))
            .with_balance_change(BalanceChange::new(BlockAccessIndex::new(1), U256::from(5)))
            .with_storage_read(U256::from(9));
        let read_only =
            AccountChanges::new(Address::with_last_byte(2)).with_storage_read(U256::from(3));
        let stripped = diffs_only_bal(&vec![written.clone(), read_only]);
        assert_eq!(stripped.len(), 1);
        assert_eq!(stripped[0].address, written.address);
        assert!(stripped[0].storage_reads.is_empty());
        assert_eq!(stripped[0].balance_changes, written.balance_changes);
    }

    #[test]
    fn the_network_size_is_counted_only_where_the_header_commits_to_the_records_bal() {
        let bal = vec![
            AccountChanges::new(Address::with_last_byte(1))
                .with_balance_change(BalanceChange::new(BlockAccessIndex::new(1), U256::from(5))),
        ];
        let mut record = BlockRecord {
            block: Default::default(),
            senders: Vec::new(),
            bal: bal.clone(),
            pre_state: Default::default(),
            block_hashes: Vec::new(),
        };
        let before = BalSizes::of(&record);
        assert_eq!(before.network, None);
        record.block.header.block_access_list_hash =
            Some(alloy_eip7928::compute_block_access_list_hash(&bal));
        let amsterdam = BalSizes::of(&record);
        assert_eq!(amsterdam.network, Some(alloy_rlp::encode(&bal).len()));
        assert_eq!(amsterdam.network, Some(amsterdam.batched));
        record.block.header.block_access_list_hash = Some(Default::default());
        assert_eq!(BalSizes::of(&record).network, None);

        let mut totals = BalSizeTotals::default();
        totals.add(before);
        totals.add(amsterdam);
        assert_eq!((totals.blocks, totals.network_blocks), (2, 1));
        assert_eq!(totals.sum.network, amsterdam.network);
        assert!(
            totals
                .to_string()
                .contains("network EIP-7928 BAL (1 of 2 blocks")
        );
    }

    #[test]
    fn design_names_round_trip() {
        for d in IoDesign::ALL {
            assert_eq!(d.name().parse::<IoDesign>().unwrap(), d);
        }
        assert!("fast".parse::<IoDesign>().is_err());
    }
}
