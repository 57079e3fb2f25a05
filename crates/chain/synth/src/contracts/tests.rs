//! Each contract executed with the reference executor, its storage and logs checked.

use super::*;
use crate::testing::{Call, TestBed, deploy, gas_per_tx};
use alloy_primitives::{Log, address};
use bal_replay_state::StateChanges;

const TOKEN_A: Address = address!("00000000000000000000000000000000000a0001");
const TOKEN_B: Address = address!("00000000000000000000000000000000000a0002");
const PAIR: Address = address!("00000000000000000000000000000000000b0001");
const ROUTER: Address = address!("00000000000000000000000000000000000c0001");
const NFT: Address = address!("00000000000000000000000000000000000d0001");
const READER: Address = address!("00000000000000000000000000000000000e0001");

fn w(x: u64) -> U256 {
    U256::from(x)
}

fn word(a: Address) -> U256 {
    U256::from_be_slice(a.as_slice())
}

fn call_data(selector: [u8; 4], args: &[U256]) -> Bytes {
    let mut data = selector.to_vec();
    for arg in args {
        data.extend_from_slice(&arg.to_be_bytes::<32>());
    }
    data.into()
}

/// EOA index of the test bed's accounts: 0 holds 1,000 of token A, 1 holds nothing.
const ALICE: usize = 0;
const BOB: usize = 1;
const CAROL: usize = 2;

/// Two tokens, a pair of them with 1,000,000 / 2,000,000 reserves, the router, an NFT, the reader
/// with 300 slots. Alice holds 1,000 A and 1,000 B and approved the router without limit.
fn world() -> TestBed {
    let probe = TestBed::new(3, StateChanges::default());
    let (alice, _bob) = (probe.eoas[ALICE], probe.eoas[BOB]);
    let mut c = StateChanges::default();
    let token_storage = |reserve: u64| {
        vec![
            (erc20_layout::balance_slot(alice), w(1_000)),
            (erc20_layout::balance_slot(PAIR), w(reserve)),
            (erc20_layout::allowance_slot(alice, ROUTER), U256::MAX),
            (U256::from(erc20_layout::CONFIG), w(0xdead)),
        ]
    };
    deploy(&mut c, TOKEN_A, &erc20(), &token_storage(1_000_000));
    deploy(&mut c, TOKEN_B, &erc20(), &token_storage(2_000_000));
    deploy(
        &mut c,
        PAIR,
        &pair(),
        &[
            (w(pair_layout::RESERVE0), w(1_000_000)),
            (w(pair_layout::RESERVE1), w(2_000_000)),
            (w(pair_layout::TOKEN0), word(TOKEN_A)),
            (w(pair_layout::TOKEN1), word(TOKEN_B)),
        ],
    );
    deploy(&mut c, ROUTER, &router(), &[]);
    deploy(&mut c, NFT, &nft(), &[(w(nft_layout::MINTED), w(41))]);
    let reader_storage: Vec<_> = (0..300)
        .map(|i| {
            let slot = reader_slot(i);
            (slot, reader_value(slot))
        })
        .collect();
    deploy(&mut c, READER, &reader(), &reader_storage);
    TestBed::new(3, c)
}

fn balance(bed: &TestBed, token: Address, owner: Address) -> U256 {
    bed.slot(token, erc20_layout::balance_slot(owner))
}

fn logs(output: &bal_replay_executor::BlockOutput, tx: usize) -> Vec<Log> {
    output.receipts[tx].logs().to_vec()
}

#[test]
fn erc20_transfer_moves_balances_and_logs() {
    let mut bed = world();
    let (alice, bob) = (bed.eoas[ALICE], bed.eoas[BOB]);
    let out = bed.run(&[Call::new(
        ALICE,
        TOKEN_A,
        call_data(SEL_TRANSFER, &[word(bob), w(300)]),
    )]);
    assert!(out.receipts[0].status());
    assert_eq!(balance(&bed, TOKEN_A, alice), w(700));
    assert_eq!(balance(&bed, TOKEN_A, bob), w(300));
    let logs = logs(&out, 0);
    assert_eq!(logs.len(), 1);
    assert_eq!(logs[0].address, TOKEN_A);
    assert_eq!(
        logs[0].topics(),
        &[transfer_topic(), alice.into_word(), bob.into_word()]
    );
    assert_eq!(logs[0].data.data.as_ref(), &w(300).to_be_bytes::<32>());
    assert!(
        out.logs_bloom
            .contains_input(alloy_primitives::BloomInput::Raw(TOKEN_A.as_slice()))
    );
}

#[test]
fn erc20_transfer_reverts_on_insufficient_balance_and_when_blacklisted() {
    let mut bed = world();
    let (alice, bob) = (bed.eoas[ALICE], bed.eoas[BOB]);
    let out = bed.run(&[
        Call::new(
            ALICE,
            TOKEN_A,
            call_data(SEL_TRANSFER, &[word(bob), w(1_001)]),
        ),
        Call::new(BOB, TOKEN_A, call_data(SEL_TRANSFER, &[word(alice), w(1)])),
    ]);
    assert!(!out.receipts[0].status());
    assert!(!out.receipts[1].status());
    assert!(out.receipts.iter().all(|r| r.logs().is_empty()));
    assert_eq!(balance(&bed, TOKEN_A, alice), w(1_000));

    // Blacklist Bob as recipient: Alice's transfer to him fails, to Carol succeeds.
    bed.set_slot(TOKEN_A, erc20_layout::blacklist_slot(bob), w(1));
    let carol = bed.eoas[CAROL];
    let out = bed.run(&[
        Call::new(ALICE, TOKEN_A, call_data(SEL_TRANSFER, &[word(bob), w(1)])),
        Call::new(
            ALICE,
            TOKEN_A,
            call_data(SEL_TRANSFER, &[word(carol), w(1)]),
        ),
    ]);
    assert!(!out.receipts[0].status());
    assert!(out.receipts[1].status());

    // Paused: nothing moves.
    bed.set_slot(
        TOKEN_A,
        U256::from(erc20_layout::CONFIG),
        w(1) << erc20_layout::PAUSED_BIT as usize,
    );
    let out = bed.run(&[Call::new(
        ALICE,
        TOKEN_A,
        call_data(SEL_TRANSFER, &[word(carol), w(1)]),
    )]);
    assert!(!out.receipts[0].status());
    assert_eq!(balance(&bed, TOKEN_A, carol), w(1));
}

#[test]
fn erc20_approve_and_transfer_from_spend_limited_allowances_only() {
    let mut bed = world();
    let (alice, bob, carol) = (bed.eoas[ALICE], bed.eoas[BOB], bed.eoas[CAROL]);
    let out = bed.run(&[
        Call::new(ALICE, TOKEN_A, call_data(SEL_APPROVE, &[word(bob), w(500)])),
        // Bob spends 200 of Alice's A, sending it to Carol.
        Call::new(
            BOB,
            TOKEN_A,
            call_data(SEL_TRANSFER_FROM, &[word(alice), word(carol), w(200)]),
        ),
        // More than what is left of the allowance: reverts.
        Call::new(
            BOB,
            TOKEN_A,
            call_data(SEL_TRANSFER_FROM, &[word(alice), word(carol), w(301)]),
        ),
    ]);
    let status: Vec<bool> = out.receipts.iter().map(|r| r.status()).collect();
    assert_eq!(status, [true, true, false]);
    assert_eq!(
        bed.slot(TOKEN_A, erc20_layout::allowance_slot(alice, bob)),
        w(300)
    );
    assert_eq!(balance(&bed, TOKEN_A, alice), w(800));
    assert_eq!(balance(&bed, TOKEN_A, carol), w(200));
    let approval = &logs(&out, 0)[0];
    assert_eq!(
        approval.topics(),
        &[approval_topic(), alice.into_word(), bob.into_word()]
    );
    // The unlimited allowance to the router is never decremented (checked in the router test).
}

#[test]
fn router_swap_pays_out_by_constant_product_and_updates_reserves() {
    let mut bed = world();
    let alice = bed.eoas[ALICE];
    let amount_in = w(1_000);
    let out = bed.run(&[Call::new(
        ALICE,
        ROUTER,
        router_calldata(&[RouterOp::Swap {
            pair: PAIR,
            token_in: TOKEN_A,
            amount: amount_in,
        }]),
    )]);
    assert!(out.receipts[0].status());
    // out = 1000 * 997 * 2_000_000 / (1_000_000 * 1000 + 1000 * 997)
    let expected_out = w(1_000 * 997 * 2_000_000 / (1_000_000 * 1_000 + 1_000 * 997));
    assert_eq!(expected_out, w(1_992));
    assert_eq!(balance(&bed, TOKEN_A, alice), w(0));
    assert_eq!(balance(&bed, TOKEN_B, alice), w(1_000) + expected_out);
    assert_eq!(balance(&bed, TOKEN_A, PAIR), w(1_001_000));
    assert_eq!(balance(&bed, TOKEN_B, PAIR), w(2_000_000) - expected_out);
    assert_eq!(bed.slot(PAIR, w(pair_layout::RESERVE0)), w(1_001_000));
    assert_eq!(
        bed.slot(PAIR, w(pair_layout::RESERVE1)),
        w(2_000_000) - expected_out
    );
    assert_eq!(
        bed.slot(TOKEN_A, erc20_layout::allowance_slot(alice, ROUTER)),
        U256::MAX
    );
    // transferFrom (A), transfer (B), Swap (pair), in that order.
    let logs = logs(&out, 0);
    let emitters: Vec<Address> = logs.iter().map(|l| l.address).collect();
    assert_eq!(emitters, [TOKEN_A, TOKEN_B, PAIR]);
    let swap = &logs[2];
    assert_eq!(
        swap.topics(),
        &[swap_topic(), ROUTER.into_word(), alice.into_word()]
    );
    let mut data = amount_in.to_be_bytes::<32>().to_vec();
    data.extend_from_slice(&expected_out.to_be_bytes::<32>());
    assert_eq!(swap.data.data.as_ref(), data.as_slice());
    // One transaction, four contracts in the BAL.
    let bal = out.bal.unwrap();
    for contract in [ROUTER, PAIR, TOKEN_A, TOKEN_B] {
        assert!(bal.iter().any(|a| a.address == contract), "{contract}");
    }
}

#[test]
fn router_runs_several_operations_and_reverts_them_all_on_failure() {
    let mut bed = world();
    let (alice, carol) = (bed.eoas[ALICE], bed.eoas[CAROL]);
    let ops = [
        RouterOp::Pay {
            token: TOKEN_A,
            to: carol,
            amount: w(10),
        },
        RouterOp::Swap {
            pair: PAIR,
            token_in: TOKEN_B,
            amount: w(100),
        },
        RouterOp::Pay {
            token: TOKEN_B,
            to: carol,
            amount: w(20),
        },
    ];
    let failing = [
        ops[0],
        RouterOp::Pay {
            token: TOKEN_A,
            to: carol,
            amount: w(1_000_000),
        },
    ];
    let out = bed.run(&[
        Call::new(ALICE, ROUTER, router_calldata(&ops)),
        Call::new(ALICE, ROUTER, router_calldata(&failing)),
    ]);
    assert!(out.receipts[0].status());
    assert!(!out.receipts[1].status());
    // B -> A at 2:1 less the fee: 100 * 997 * 1e6 / (2e6 * 1000 + 100 * 997) = 49.
    assert_eq!(balance(&bed, TOKEN_A, alice), w(1_000 - 10 + 49));
    assert_eq!(balance(&bed, TOKEN_B, alice), w(1_000 - 100 - 20));
    assert_eq!(balance(&bed, TOKEN_A, carol), w(10));
    assert_eq!(balance(&bed, TOKEN_B, carol), w(20));
}

#[test]
fn nft_mint_counts_records_owner_and_logs() {
    let mut bed = world();
    let (alice, bob) = (bed.eoas[ALICE], bed.eoas[BOB]);
    let mut paid = Call::new(ALICE, NFT, SEL_MINT.to_vec());
    paid.value = w(5);
    let out = bed.run(&[
        paid,
        Call::new(BOB, NFT, SEL_MINT.to_vec()),
        Call::new(ALICE, NFT, SEL_MINT.to_vec()),
    ]);
    assert!(out.receipts.iter().all(|r| r.status()));
    assert_eq!(bed.slot(NFT, w(nft_layout::MINTED)), w(44));
    assert_eq!(bed.slot(NFT, nft_layout::owner_slot(42)), word(alice));
    assert_eq!(bed.slot(NFT, nft_layout::owner_slot(43)), word(bob));
    assert_eq!(bed.slot(NFT, nft_layout::owner_slot(44)), word(alice));
    assert_eq!(bed.slot(NFT, nft_layout::balance_slot(alice)), w(2));
    let log = &logs(&out, 1)[0];
    assert_eq!(
        log.topics(),
        &[
            transfer_topic(),
            B256::ZERO,
            bob.into_word(),
            B256::from(w(43))
        ]
    );
    use bal_replay_state::StateReader;
    assert_eq!(bed.state.account(NFT).unwrap().unwrap().balance, w(5));
}

#[test]
fn reader_sums_distinct_slots_at_a_fixed_gas_per_slot() {
    let mut bed = world();
    let read = |start: u64, count: u64| call_data(sel_read(), &[w(start), w(count)]);
    let out = bed.run(&[
        Call::new(ALICE, READER, read(1, 100)),
        Call::new(BOB, READER, read(101, 199)),
        Call::new(CAROL, READER, read(0, 0)),
    ]);
    assert!(out.receipts.iter().all(|r| r.status()));
    let gas = gas_per_tx(&out);
    // Same calldata cost, 99 more cold reads: exactly 99 more loop iterations.
    assert_eq!(gas[1] - gas[0], 99 * READER_GAS_PER_SLOT);
    // Read-only: the reader has no writes, and 299 distinct reads in the BAL.
    let bal = out.bal.unwrap();
    let reader = bal.iter().find(|a| a.address == READER).unwrap();
    assert!(reader.storage_changes.is_empty());
    assert_eq!(reader.storage_reads.len(), 299);
    assert!(out.changes.storage.iter().all(|(a, _, _)| *a != READER));
}

#[test]
fn unknown_selectors_revert() {
    let mut bed = world();
    let out = bed.run(&[
        Call::new(ALICE, TOKEN_A, vec![0xde, 0xad, 0xbe, 0xef]),
        Call::new(ALICE, PAIR, SEL_TRANSFER.to_vec()),
        Call::new(ALICE, ROUTER, Bytes::new()),
        Call::new(ALICE, NFT, SEL_APPROVE.to_vec()),
        Call::new(ALICE, READER, SEL_MINT.to_vec()),
    ]);
    assert!(out.receipts.iter().all(|r| !r.status()));
}
