//! A test bed: a few funded EOAs and hand-placed contracts, blocks of signed calls executed with
//! the reference executor, so contract tests check real execution.

use crate::{
    FIRST_TIMESTAMP,
    chain::sign,
    genesis::{ETHER, address_of},
};
use alloy_consensus::{
    Block, BlockBody, Header, SignableTransaction, TxEip1559, TxEnvelope, proofs,
};
use alloy_eips::eip4895::Withdrawals;
use alloy_primitives::{Address, B256, Bytes, TxKind, U256, keccak256};
use bal_replay_executor::{BlockOutput, ChainConfig, ExecOptions, execute_block};
use bal_replay_state::{
    FlatAccount, MemStore, StateChanges, StateDatabase, StateReader, StateWriter,
};
use revm::primitives::KECCAK_EMPTY;
use secp256k1::SecretKey;

/// Number of the test bed's first block: post-merge, so the header's timestamp (Cancun) and number
/// agree on the fork.
const FIRST_NUMBER: u64 = 20_000_000;

/// One transaction to run.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub from: usize,
    pub to: Address,
    pub input: Bytes,
    pub value: U256,
}

impl Call {
    pub(crate) fn new(from: usize, to: Address, input: impl Into<Bytes>) -> Self {
        Self {
            from,
            to,
            input: input.into(),
            value: U256::ZERO,
        }
    }
}

/// The state of a small test chain.
pub(crate) struct TestBed {
    pub state: MemStore,
    keys: Vec<SecretKey>,
    pub eoas: Vec<Address>,
    nonces: Vec<u64>,
    number: u64,
}

/// Adds a contract with `code` and `storage` to `changes`.
pub(crate) fn deploy(
    changes: &mut StateChanges,
    address: Address,
    code: &Bytes,
    storage: &[(U256, U256)],
) {
    let code_hash = keccak256(code);
    changes.accounts.push((
        address,
        Some(FlatAccount {
            nonce: 1,
            balance: U256::ZERO,
            code_hash,
        }),
    ));
    changes.codes.push((code_hash, code.clone()));
    changes
        .storage
        .extend(storage.iter().map(|(slot, value)| (address, *slot, *value)));
}

impl TestBed {
    /// `eoas` accounts with 1,000 ETH each, plus `contracts`.
    pub(crate) fn new(eoas: usize, mut contracts: StateChanges) -> Self {
        let keys: Vec<SecretKey> = (0..eoas)
            .map(|i| SecretKey::from_byte_array(keccak256(format!("test-eoa/{i}")).0).unwrap())
            .collect();
        let addresses: Vec<Address> = keys.iter().map(address_of).collect();
        contracts.accounts.extend(addresses.iter().map(|a| {
            (
                *a,
                Some(FlatAccount {
                    nonce: 0,
                    balance: U256::from(1_000 * ETHER),
                    code_hash: KECCAK_EMPTY,
                }),
            )
        }));
        Self {
            state: MemStore::from_changes(&contracts, FIRST_NUMBER - 1),
            keys,
            eoas: addresses,
            nonces: vec![0; eoas],
            number: FIRST_NUMBER,
        }
    }

    /// A slot's current value.
    pub(crate) fn slot(&self, address: Address, slot: U256) -> U256 {
        self.state.storage(address, slot).unwrap()
    }

    /// Overwrites one slot between blocks.
    pub(crate) fn set_slot(&self, address: Address, slot: U256, value: U256) {
        let changes = StateChanges {
            storage: vec![(address, slot, value)],
            ..StateChanges::default()
        };
        self.state.commit(&changes, self.number - 1).unwrap();
    }

    /// Executes one block holding `calls` (each with a 5M gas limit) and applies it.
    pub(crate) fn run(&mut self, calls: &[Call]) -> BlockOutput {
        let base_fee = 7;
        let mut senders = Vec::new();
        let transactions: Vec<TxEnvelope> = calls
            .iter()
            .map(|call| {
                let tx = TxEip1559 {
                    chain_id: 1,
                    nonce: self.nonces[call.from],
                    gas_limit: 5_000_000,
                    max_fee_per_gas: 1_000_000_000,
                    max_priority_fee_per_gas: 1,
                    to: TxKind::Call(call.to),
                    value: call.value,
                    access_list: Default::default(),
                    input: call.input.clone(),
                };
                self.nonces[call.from] += 1;
                senders.push(self.eoas[call.from]);
                let signature = sign(&self.keys[call.from], tx.signature_hash());
                tx.into_signed(signature).into()
            })
            .collect();
        let header = Header {
            number: self.number,
            timestamp: FIRST_TIMESTAMP + 12 * (self.number - FIRST_NUMBER),
            gas_limit: 60_000_000,
            base_fee_per_gas: Some(base_fee),
            transactions_root: proofs::calculate_transaction_root(&transactions),
            withdrawals_root: Some(proofs::calculate_withdrawals_root(&[])),
            blob_gas_used: Some(0),
            excess_blob_gas: Some(0),
            parent_beacon_block_root: Some(B256::repeat_byte(1)),
            ..Header::default()
        };
        let block = Block {
            header,
            body: BlockBody {
                transactions,
                ommers: Vec::new(),
                withdrawals: Some(Withdrawals::default()),
            },
        };
        let output = execute_block(
            &ChainConfig::mainnet(),
            StateDatabase::new(&self.state),
            &block,
            &senders,
            ExecOptions::for_dump(),
        )
        .expect("test block executes");
        self.state.commit(&output.changes, self.number).unwrap();
        self.number += 1;
        output
    }
}

/// Gas used by each transaction of `output`.
pub(crate) fn gas_per_tx(output: &BlockOutput) -> Vec<u64> {
    let mut last = 0;
    output
        .receipts
        .iter()
        .map(|r| {
            let used = r.cumulative_gas_used() - last;
            last = r.cumulative_gas_used();
            used
        })
        .collect()
}
