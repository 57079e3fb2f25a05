//! Signed transactions for a live dev node: what the reth-bal end-to-end check sends.
//!
//! A dev node (reth `--dev`) funds well-known test keys at genesis; these transactions, signed with
//! one of them, exercise what a dump must capture: plain transfers (to existing and new
//! accounts), a contract deployment, and calls that read and write storage.

use crate::chain::sign;
use alloy_consensus::{SignableTransaction, TxEip1559, TxEnvelope};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{Address, B256, Bytes, TxKind, U256, hex};
use secp256k1::SecretKey;

/// The first key of the `test test ... junk` mnemonic, funded by reth's (and anvil's) dev genesis.
pub const DEV_KEY: B256 =
    alloy_primitives::b256!("ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80");

/// Runtime of the counter contract the dev transactions deploy: each call increments slot 0 to
/// `c + 1` and stores its first calldata word at slot `c + 1` (a read and two writes per call).
///
/// ```text
/// PUSH1 0 CALLDATALOAD  PUSH1 0 SLOAD  PUSH1 1 ADD  DUP1  PUSH1 0 SSTORE  SSTORE  STOP
/// ```
pub const COUNTER_RUNTIME: [u8; 15] = hex!("600035600054600101806000555500");

/// Init code returning [`COUNTER_RUNTIME`]: `CODECOPY` the 15 bytes after these 12, return them.
pub fn counter_init_code() -> Bytes {
    let mut code = hex!("600f600c600039600f6000f3").to_vec();
    code.extend_from_slice(&COUNTER_RUNTIME);
    code.into()
}

/// Gas limits of the dev transactions. Only the gas used is paid, so they leave room for
/// Amsterdam's state gas (EIP-8037: 1,530 gas per state byte, 183,600 for a new account, 97,920
/// for a new slot, 1,530 per byte of code) as well as for the earlier forks' costs: with
/// the old limits (21,000 for a transfer, 200,000 for the deployment, 100,000 for a call) the
/// deployment and every transfer to a new account fail under Amsterdam, and the counter calls
/// then find no code.
const DEPLOY_GAS: u64 = 500_000;
/// See [`DEPLOY_GAS`]: a counter call writes a new slot each time (two on the first call).
const CALL_GAS: u64 = 300_000;
/// See [`DEPLOY_GAS`]: a transfer may create its recipient.
const TRANSFER_GAS: u64 = 250_000;

/// `count` EIP-1559 transactions from `key`'s account, nonces from `first_nonce`: first a counter
/// deployment, then, in turn, a counter call, a transfer to a fresh address and a transfer to the
/// deployer's neighbour account. Returns the EIP-2718 encodings (what `eth_sendRawTransaction`
/// takes) and the counter's address.
pub fn dev_transactions(
    chain_id: u64,
    key: B256,
    first_nonce: u64,
    count: usize,
    max_fee_per_gas: u128,
) -> Result<(Vec<Bytes>, Address), secp256k1::Error> {
    let secret = SecretKey::from_byte_array(key.0)?;
    let sender = crate::genesis::address_of(&secret);
    let counter = sender.create(first_nonce);
    let neighbour = Address::with_last_byte(0x42);
    let txs = (0..count as u64)
        .map(|i| {
            let nonce = first_nonce + i;
            let (to, input, value, gas_limit) = match (i, i % 3) {
                (0, _) => (TxKind::Create, counter_init_code(), U256::ZERO, DEPLOY_GAS),
                (_, 1) => (
                    TxKind::Call(counter),
                    Bytes::from(B256::from(U256::from(nonce)).to_vec()),
                    U256::ZERO,
                    CALL_GAS,
                ),
                (_, 2) => {
                    let fresh =
                        Address::from_word(alloy_primitives::keccak256(nonce.to_be_bytes()));
                    (
                        TxKind::Call(fresh),
                        Bytes::new(),
                        U256::from(1_000_000_000u64 + i),
                        TRANSFER_GAS,
                    )
                }
                _ => (
                    TxKind::Call(neighbour),
                    Bytes::new(),
                    U256::from(7u64),
                    TRANSFER_GAS,
                ),
            };
            let tx = TxEip1559 {
                chain_id,
                nonce,
                gas_limit,
                max_fee_per_gas,
                max_priority_fee_per_gas: 1_000_000_000,
                to,
                value,
                access_list: Default::default(),
                input,
            };
            let signature = sign(&secret, tx.signature_hash());
            let envelope: TxEnvelope = tx.into_signed(signature).into();
            Bytes::from(envelope.encoded_2718())
        })
        .collect();
    Ok((txs, counter))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{Call, TestBed, deploy, gas_per_tx};
    use bal_replay_state::StateChanges;

    #[test]
    fn dev_key_is_the_well_known_dev_account() {
        let secret = SecretKey::from_byte_array(DEV_KEY.0).unwrap();
        assert_eq!(
            crate::genesis::address_of(&secret),
            alloy_primitives::address!("f39Fd6e51aad88F6F4ce6aB8827279cffFb92266")
        );
    }

    #[test]
    fn the_counter_counts_and_stores_its_argument() {
        let counter = Address::with_last_byte(0xcc);
        let mut contracts = StateChanges::default();
        deploy(
            &mut contracts,
            counter,
            &Bytes::from_static(&COUNTER_RUNTIME),
            &[],
        );
        let mut bed = TestBed::new(1, contracts);
        for arg in [11u64, 22, 33] {
            let output = bed.run(&[Call::new(0, counter, B256::from(U256::from(arg)).to_vec())]);
            assert!(output.receipts.iter().all(|r| r.status()));
        }
        assert_eq!(bed.slot(counter, U256::ZERO), U256::from(3));
        assert_eq!(bed.slot(counter, U256::from(1)), U256::from(11));
        assert_eq!(bed.slot(counter, U256::from(3)), U256::from(33));
    }

    #[test]
    fn dev_transactions_decode_to_the_planned_shape() {
        use alloy_consensus::{Transaction, transaction::SignerRecoverable};
        use alloy_eips::eip2718::Decodable2718;
        let (txs, counter) = dev_transactions(1337, DEV_KEY, 0, 5, 10_000_000_000).unwrap();
        assert_eq!(txs.len(), 5);
        let decoded: Vec<TxEnvelope> = txs
            .iter()
            .map(|raw| TxEnvelope::decode_2718(&mut raw.as_ref()).unwrap())
            .collect();
        assert!(decoded[0].kind().is_create());
        assert_eq!(decoded[1].to(), Some(counter));
        assert_eq!(decoded[4].to(), Some(counter));
        assert_eq!(
            decoded.iter().map(|t| t.nonce()).collect::<Vec<_>>(),
            vec![0, 1, 2, 3, 4]
        );
        for tx in &decoded {
            assert_eq!(tx.chain_id(), Some(1337));
            assert_eq!(
                tx.recover_signer().unwrap(),
                alloy_primitives::address!("f39Fd6e51aad88F6F4ce6aB8827279cffFb92266")
            );
        }
    }

    /// Under Amsterdam (EIP-8037: a new account costs 120 x 1,530 state gas, a new slot 64 x 1,530,
    /// code 1,530 per byte) every dev transaction must still succeed: executed in a block of the
    /// Amsterdam dev chain (`../shared/fixtures/amsterdam-dev`'s genesis and block 1's header).
    #[test]
    fn dev_transactions_all_succeed_under_amsterdam() {
        use alloy_consensus::{Block, BlockBody};
        use alloy_eips::eip2718::Decodable2718;
        use bal_replay_executor::{ChainConfig, ExecOptions, execute_block};
        use bal_replay_fixtures::{ChainFixture, default_amsterdam_dev_dir};
        use bal_replay_state::{MemStore, StateDatabase};
        let dir = default_amsterdam_dev_dir()
            .expect("../shared/fixtures/amsterdam-dev must exist next to the workspace");
        let fixture = ChainFixture::read(dir).unwrap();
        let config = ChainConfig::from_genesis(&fixture.genesis);
        let state = MemStore::from_changes(
            &StateChanges::from_pre_state(&fixture.genesis_state(), &[]),
            0,
        );
        let (txs, counter) = dev_transactions(1337, DEV_KEY, 0, 12, 20_000_000_000).unwrap();
        let transactions: Vec<TxEnvelope> = txs
            .iter()
            .map(|raw| TxEnvelope::decode_2718(&mut raw.as_ref()).unwrap())
            .collect();
        let sender = alloy_primitives::address!("f39Fd6e51aad88F6F4ce6aB8827279cffFb92266");
        let block = Block {
            header: fixture.blocks[0].block.header.clone(),
            body: BlockBody {
                transactions,
                ommers: Vec::new(),
                withdrawals: fixture.blocks[0].block.body.withdrawals.clone(),
            },
        };
        let output = execute_block(
            &config,
            StateDatabase::new(&state),
            &block,
            &[sender; 12],
            ExecOptions::for_dump(),
        )
        .unwrap();
        let status: Vec<bool> = output.receipts.iter().map(|r| r.status()).collect();
        assert_eq!(
            status,
            vec![true; 12],
            "gas per tx: {:?}",
            gas_per_tx(&output)
        );
        // Deployment, first call (two new slots), transfers to new accounts (183,600 state gas
        // each), later calls (one new slot), transfers to the neighbour once it exists.
        assert_eq!(
            gas_per_tx(&output),
            vec![
                229_942, 237_101, 204_600, 204_600, 139_181, 204_600, 21_000, 139_181, 204_600,
                21_000, 139_181, 204_600
            ]
        );
        // The counter was deployed and counted its four calls.
        let code = output
            .changes
            .accounts
            .iter()
            .find(|(address, _)| *address == counter)
            .and_then(|(_, account)| account.as_ref())
            .map(|account| account.code_hash);
        assert_eq!(code, Some(alloy_primitives::keccak256(COUNTER_RUNTIME)));
        assert!(
            output
                .changes
                .storage
                .contains(&(counter, U256::ZERO, U256::from(4)))
        );
    }
}
