//! What each design's BAL weighs, per block, from the same dump the runs replay: RLP (the wire
//! form) and snappy-compressed (as EIP-7928's size analysis reports it).

use alloy_rlp::Encodable;
use bal_replay_dump::{BlockRecord, DumpError, DumpReader};
use bal_replay_engine::{IoDesign, diffs_only_bal};

/// The mean size of one design's BAL per block, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct MeanSize {
    /// RLP-encoded.
    pub rlp: f64,
    /// The RLP bytes snappy-compressed (raw snappy).
    pub snappy: f64,
}

/// Mean BAL sizes per block of a dump, in each design.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct DesignSizes {
    /// Records measured.
    pub blocks: u64,
    /// Full BAL: the EIP-7928 BAL and the pre-block values of the accounts and slots it names.
    /// Full-verify ships the same BAL.
    pub full: MeanSize,
    /// Batched I/O: the EIP-7928 BAL (diffs and read keys), the protocol's BAL. Hybrid ships the
    /// same BAL.
    pub batched: MeanSize,
    /// Parallel I/O: diffs only.
    pub parallel: MeanSize,
    /// The network's own BAL, over the records whose header commits to the record's BAL (from
    /// Amsterdam on), and how many they are; `None` where no record does.
    pub network: Option<(u64, MeanSize)>,
}

impl DesignSizes {
    /// The sizes of every record of `dump`.
    pub fn of_dump(dump: &DumpReader) -> Result<Self, DumpError> {
        let mut totals = Totals::default();
        for record in dump.records() {
            totals.add(&record?);
        }
        Ok(totals.means())
    }

    /// The mean size of `design`'s BAL.
    pub fn of(&self, design: IoDesign) -> MeanSize {
        match design {
            IoDesign::Full | IoDesign::FullVerify => self.full,
            IoDesign::Batched | IoDesign::Hybrid => self.batched,
            IoDesign::Parallel => self.parallel,
        }
    }
}

#[derive(Debug, Default)]
struct Totals {
    blocks: u64,
    full: (usize, usize),
    batched: (usize, usize),
    parallel: (usize, usize),
    network_blocks: u64,
    network: (usize, usize),
}

impl Totals {
    fn add(&mut self, record: &BlockRecord) {
        let rlp = |value: &dyn Encodable| {
            let mut out = Vec::with_capacity(value.length());
            value.encode(&mut out);
            out
        };
        let batched = rlp(&record.bal);
        let parallel = rlp(&diffs_only_bal(&record.bal));
        // The full BAL carries the read values beside the standard BAL: the pre-block accounts
        // (nonce, balance, code hash) and slots it names, code itself excluded.
        let mut full = batched.clone();
        full.extend(rlp(&record.pre_state.accounts));
        full.extend(rlp(&record.pre_state.storage));
        let add = |sum: &mut (usize, usize), bytes: &[u8]| {
            sum.0 += bytes.len();
            sum.1 += snappy_len(bytes);
        };
        self.blocks += 1;
        add(&mut self.full, &full);
        add(&mut self.batched, &batched);
        add(&mut self.parallel, &parallel);
        let committed = record.block.header.block_access_list_hash;
        if committed.is_some_and(|hash| hash == alloy_primitives::keccak256(&batched)) {
            self.network_blocks += 1;
            add(&mut self.network, &batched);
        }
    }

    fn means(&self) -> DesignSizes {
        let mean = |(rlp, snappy): (usize, usize), n: u64| MeanSize {
            rlp: rlp as f64 / n.max(1) as f64,
            snappy: snappy as f64 / n.max(1) as f64,
        };
        DesignSizes {
            blocks: self.blocks,
            full: mean(self.full, self.blocks),
            batched: mean(self.batched, self.blocks),
            parallel: mean(self.parallel, self.blocks),
            network: (self.network_blocks > 0)
                .then(|| (self.network_blocks, mean(self.network, self.network_blocks))),
        }
    }
}

/// The length of `bytes` compressed with raw snappy.
fn snappy_len(bytes: &[u8]) -> usize {
    snap::raw::Encoder::new()
        .compress_vec(bytes)
        .map_or(bytes.len(), |c| c.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snappy_shrinks_repetition_and_keeps_the_empty_input_small() {
        let repeated = vec![7u8; 4096];
        assert!(snappy_len(&repeated) < 300);
        assert!(snappy_len(&[]) <= 1);
    }
}
