//! The fork schedule a dump carries in its manifest, so that replaying its blocks never guesses
//! the rules from a chain id.
//!
//! This is the schedule as data: fork names, activations and blob parameters, in the form
//! `manifest.json` stores them. The executor turns it into the schedule it executes with (and
//! rejects a fork name it does not know); producers fill it from their chain (a node's chain spec,
//! a genesis config).

use alloy_primitives::{Address, U256};
use serde::{Deserialize, Serialize};

/// A chain's hardfork activations, deposit contract and blob parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainSchedule {
    /// Every fork the chain activates, in activation order. A fork not listed never activates.
    pub forks: Vec<ForkEntry>,
    /// The EIP-6110 deposit contract, if the chain has one.
    pub deposit_contract: Option<Address>,
    /// Blob parameters per fork (EIP-7840) and scheduled updates (EIP-7892).
    pub blob_params: BlobSchedule,
}

/// One fork and when it activates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForkEntry {
    /// The fork's name as alloy-hardforks spells it (`"Frontier"`, `"Paris"`, `"Amsterdam"`, ...).
    pub fork: String,
    /// When it activates.
    pub activation: Activation,
}

/// When a fork activates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Activation {
    /// At a block number.
    Block(u64),
    /// At the first block whose timestamp is at least this.
    Timestamp(u64),
    /// The merge: at a total difficulty, known to have happened at `activation_block`.
    Ttd {
        /// The block at which the merge activated.
        activation_block: u64,
        /// The merge netsplit block, if the chain has one.
        fork_block: Option<u64>,
        /// The terminal total difficulty.
        total_difficulty: U256,
    },
}

/// The blob parameters of each fork that has blobs, and the scheduled updates after Osaka.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlobSchedule {
    /// From Cancun on.
    pub cancun: BlobParamsEntry,
    /// From Prague on.
    pub prague: BlobParamsEntry,
    /// From Osaka on.
    pub osaka: BlobParamsEntry,
    /// Updates by timestamp, ascending (BPO forks, and forks after Osaka such as Amsterdam).
    pub scheduled: Vec<ScheduledBlobParams>,
}

/// One set of blob parameters, every field of alloy-eips' `BlobParams` (whose own serde form
/// leaves two of them out).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlobParamsEntry {
    /// Target blobs per block.
    pub target_blob_count: u64,
    /// Most blobs per block.
    pub max_blob_count: u64,
    /// Blob base fee update fraction.
    pub update_fraction: u128,
    /// Minimum blob base fee.
    pub min_blob_fee: u128,
    /// Most blobs per transaction.
    pub max_blobs_per_tx: u64,
    /// Execution gas a blob costs at least (EIP-7918).
    pub blob_base_cost: u64,
}

/// Blob parameters that apply from a timestamp on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduledBlobParams {
    /// First timestamp they apply at.
    pub timestamp: u64,
    /// The parameters.
    pub params: BlobParamsEntry,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schedule_reads_back_from_its_json() {
        let params = BlobParamsEntry {
            target_blob_count: 6,
            max_blob_count: 9,
            update_fraction: 5_007_716,
            min_blob_fee: 1,
            max_blobs_per_tx: 6,
            blob_base_cost: 8192,
        };
        let schedule = ChainSchedule {
            forks: vec![
                ForkEntry {
                    fork: "Frontier".into(),
                    activation: Activation::Block(0),
                },
                ForkEntry {
                    fork: "Paris".into(),
                    activation: Activation::Ttd {
                        activation_block: 0,
                        fork_block: None,
                        total_difficulty: U256::ZERO,
                    },
                },
                ForkEntry {
                    fork: "Amsterdam".into(),
                    activation: Activation::Timestamp(0),
                },
            ],
            deposit_contract: None,
            blob_params: BlobSchedule {
                cancun: params,
                prague: params,
                osaka: params,
                scheduled: vec![ScheduledBlobParams {
                    timestamp: 7,
                    params,
                }],
            },
        };
        let json = serde_json::to_string(&schedule).unwrap();
        assert!(json.contains(r#"{"fork":"Amsterdam","activation":{"timestamp":0}}"#));
        assert!(json.contains(r#""update_fraction":5007716"#));
        assert_eq!(
            serde_json::from_str::<ChainSchedule>(&json).unwrap(),
            schedule
        );
        let unknown = json.replace("\"timestamp\":0", "\"epoch\":0");
        assert!(serde_json::from_str::<ChainSchedule>(&unknown).is_err());
    }
}
