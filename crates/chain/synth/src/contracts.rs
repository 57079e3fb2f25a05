//! The generated chain's contracts, as bytecode built with [`crate::asm`], and their storage layouts.
//!
//! Each contract exists to give blocks a kind of state access real blocks have:
//!
//! - [`erc20`]: the most called contract kind on mainnet, modelled on USDC. Balances and
//!   allowances live in Solidity-style mapping slots (`keccak256(key . index)`), so slot keys are
//!   spread over the key space like real ones; like USDC it reads a config slot (paused flag) and a
//!   blacklist slot per party, most of them absent keys, as real token calls read more slots
//!   than the balances they move; every call emits a `LOG3`, so receipts and blooms are not empty.
//! - [`pair`]: a constant-product AMM pair (Uniswap V2 style). A swap reads the pair's reserves and
//!   token addresses, asks the input token for the pair's balance (`STATICCALL`), pays out with a
//!   `CALL` to the output token: one transaction touches three contracts, and every swap on a pair
//!   writes the same two reserve slots (a hot key, as on mainnet).
//! - [`router`]: runs a list of swaps and token payments for its caller, so one transaction
//!   reaches several tokens and pairs (mainnet's routers and multicalls).
//! - [`nft`]: an ERC-721-style mint: a counter slot every mint writes (another hot key) and a
//!   fresh owner slot per token id.
//! - [`reader`]: the worst case for a cold state: a read-only loop of `SLOAD`s of distinct,
//!   existing, non-zero slots, the most state a transaction can read per unit of gas.
//!
//! The contracts are deployed by writing their runtime code into the genesis state (no
//! constructor runs); their storage is seeded there too.

use crate::asm::{Assembler, Label, op};
use alloy_primitives::{Address, B256, Bytes, U256, keccak256};

/// `transfer(address,uint256)`.
pub const SEL_TRANSFER: [u8; 4] = [0xa9, 0x05, 0x9c, 0xbb];
/// `transferFrom(address,address,uint256)`.
pub const SEL_TRANSFER_FROM: [u8; 4] = [0x23, 0xb8, 0x72, 0xdd];
/// `approve(address,uint256)`.
pub const SEL_APPROVE: [u8; 4] = [0x09, 0x5e, 0xa7, 0xb3];
/// `balanceOf(address)`.
pub const SEL_BALANCE_OF: [u8; 4] = [0x70, 0xa0, 0x82, 0x31];
/// `mint()`.
pub const SEL_MINT: [u8; 4] = [0x12, 0x49, 0xc5, 0x8b];

/// The 4-byte selector of a Solidity function signature.
pub fn selector(signature: &str) -> [u8; 4] {
    keccak256(signature.as_bytes())[..4]
        .try_into()
        .expect("4 bytes")
}

/// The pair's `swap(address tokenIn, address to)`.
pub fn sel_swap() -> [u8; 4] {
    selector("swap(address,address)")
}

/// The router's `execute(uint256[4][])`-like entry point (the operations are packed, see
/// [`router`]).
pub fn sel_execute() -> [u8; 4] {
    selector("execute(uint256[4][])")
}

/// The reader's `read(uint256 start, uint256 count)`.
pub fn sel_read() -> [u8; 4] {
    selector("read(uint256,uint256)")
}

/// `Transfer(address,address,uint256)`, the ERC-20 and ERC-721 transfer event.
pub fn transfer_topic() -> B256 {
    keccak256("Transfer(address,address,uint256)")
}

/// `Approval(address,address,uint256)`.
pub fn approval_topic() -> B256 {
    keccak256("Approval(address,address,uint256)")
}

/// `Swap(address,address,uint256,uint256)`: sender and recipient indexed, amounts in data.
pub fn swap_topic() -> B256 {
    keccak256("Swap(address,address,uint256,uint256)")
}

/// The storage slot of `mapping[key]` for a mapping declared at slot `index`:
/// `keccak256(key . index)`, both as 32-byte words (Solidity's layout).
pub fn mapping_slot(key: U256, index: u64) -> U256 {
    hash_words(key, U256::from(index))
}

/// `keccak256(a . b)` of two 32-byte words.
fn hash_words(a: U256, b: U256) -> U256 {
    let mut buf = [0u8; 64];
    buf[..32].copy_from_slice(&a.to_be_bytes::<32>());
    buf[32..].copy_from_slice(&b.to_be_bytes::<32>());
    keccak256(buf).into()
}

fn addr_word(address: Address) -> U256 {
    U256::from_be_slice(address.as_slice())
}

/// ERC-20 storage layout.
pub mod erc20_layout {
    use super::*;

    /// Mapping index of `balanceOf`.
    pub const BALANCES: u64 = 0;
    /// Mapping index of `allowance` (owner => spender => amount).
    pub const ALLOWANCES: u64 = 1;
    /// Slot of `totalSupply` (informational; no function reads it).
    pub const TOTAL_SUPPLY: u64 = 2;
    /// Slot of the owner address (low 160 bits) and the paused flag (bit [`PAUSED_BIT`]); read by
    /// every state-changing call, as USDC and USDT read theirs.
    pub const CONFIG: u64 = 3;
    /// Bit of [`CONFIG`] that pauses the token.
    pub const PAUSED_BIT: u64 = 160;
    /// Mapping index of `blacklisted` (address => flag), checked for every party of a transfer or
    /// approval (USDC's `notBlacklisted`): per-account slots that exist only when set, so most
    /// reads are of absent keys.
    pub const BLACKLIST: u64 = 4;

    /// Slot of `blacklisted[account]`.
    pub fn blacklist_slot(account: Address) -> U256 {
        mapping_slot(addr_word(account), BLACKLIST)
    }

    /// Slot of `balanceOf[owner]`.
    pub fn balance_slot(owner: Address) -> U256 {
        mapping_slot(addr_word(owner), BALANCES)
    }

    /// Slot of `allowance[owner][spender]`.
    pub fn allowance_slot(owner: Address, spender: Address) -> U256 {
        let inner = mapping_slot(addr_word(owner), ALLOWANCES);
        hash_words(addr_word(spender), inner)
    }
}

/// AMM pair storage layout.
pub mod pair_layout {
    /// Reserve of token 0.
    pub const RESERVE0: u64 = 0;
    /// Reserve of token 1.
    pub const RESERVE1: u64 = 1;
    /// Address of token 0.
    pub const TOKEN0: u64 = 2;
    /// Address of token 1.
    pub const TOKEN1: u64 = 3;
}

/// NFT storage layout.
pub mod nft_layout {
    use super::*;

    /// Slot of the number of tokens minted (the last id).
    pub const MINTED: u64 = 0;
    /// Mapping index of `ownerOf`.
    pub const OWNERS: u64 = 1;
    /// Mapping index of `balanceOf`.
    pub const BALANCES: u64 = 2;

    /// Slot of `ownerOf[id]`.
    pub fn owner_slot(id: u64) -> U256 {
        mapping_slot(U256::from(id), OWNERS)
    }

    /// Slot of `balanceOf[owner]`.
    pub fn balance_slot(owner: Address) -> U256 {
        mapping_slot(addr_word(owner), BALANCES)
    }
}

/// The slot the [`reader`] reads at step `i`: `keccak256(i)`, `i` as a 32-byte word.
pub fn reader_slot(i: u64) -> U256 {
    keccak256(U256::from(i).to_be_bytes::<32>()).into()
}

/// The value seeded at a [`reader_slot`]: pseudo-random, full width (as real values are), and never
/// zero, so every read hits a stored entry.
pub fn reader_value(slot: U256) -> U256 {
    U256::from_be_bytes(keccak256(slot.to_be_bytes::<32>()).0) | U256::from(1)
}

/// Gas the [`reader`] spends per slot read: a cold `SLOAD` (2,100), the `KECCAK256` of one word
/// (36) and the loop's bookkeeping (50).
pub const READER_GAS_PER_SLOT: u64 = 2_186;

// Memory used as named variables above the 0x00..0x40 hashing scratch space: loading a variable
// is cheaper to get right than deep stack juggling, and costs 6 gas.
const VAR0: u64 = 0x80;
const VAR1: u64 = 0xa0;
const VAR2: u64 = 0xc0;
const VAR3: u64 = 0xe0;
const VAR4: u64 = 0x100;
const VAR5: u64 = 0x120;
const VAR6: u64 = 0x140;
const VAR7: u64 = 0x160;
const VAR8: u64 = 0x180;
const VAR9: u64 = 0x1a0;
const VAR10: u64 = 0x1c0;
const VAR11: u64 = 0x1e0;
/// Where outgoing call data is assembled.
const CALL_BUF: u64 = 0x200;

const ADDRESS_MASK: [u8; 20] = [0xff; 20];

/// Common instruction sequences.
trait AsmExt {
    /// Pushes calldata word `n` (after the selector).
    fn arg(&mut self, n: u64) -> &mut Self;
    /// Pushes calldata word `n` masked to an address.
    fn addr_arg(&mut self, n: u64) -> &mut Self;
    /// Stores the top of the stack in the memory variable at `at`.
    fn store(&mut self, at: u64) -> &mut Self;
    /// Pushes the memory variable at `at`.
    fn load(&mut self, at: u64) -> &mut Self;
    /// Replaces the key on top of the stack with its mapping slot for mapping `index`.
    fn mapping(&mut self, index: u64) -> &mut Self;
    /// Dispatches on the selector: jumps to the label of the matching selector, reverts otherwise.
    fn dispatch(&mut self, table: &[([u8; 4], Label)], revert: Label) -> &mut Self;
    /// Writes `selector` into the first 4 bytes of the call buffer.
    fn call_selector(&mut self, selector: [u8; 4]) -> &mut Self;
    /// Writes the top of the stack as argument word `n` of the call buffer.
    fn call_arg(&mut self, n: u64) -> &mut Self;
    /// `CALL`s the address on top of the stack with `args` argument words from the call buffer,
    /// reverting if the call fails.
    fn call_checked(&mut self, args: u64, revert: Label) -> &mut Self;
    /// Returns the 32-byte word `1` (Solidity's `true`).
    fn return_true(&mut self) -> &mut Self;
}

impl AsmExt for Assembler {
    fn arg(&mut self, n: u64) -> &mut Self {
        self.push(4 + 32 * n).op(op::CALLDATALOAD)
    }

    fn addr_arg(&mut self, n: u64) -> &mut Self {
        self.arg(n).push_bytes(&ADDRESS_MASK).op(op::AND)
    }

    fn store(&mut self, at: u64) -> &mut Self {
        self.push(at).op(op::MSTORE)
    }

    fn load(&mut self, at: u64) -> &mut Self {
        self.push(at).op(op::MLOAD)
    }

    fn mapping(&mut self, index: u64) -> &mut Self {
        self.push(0).op(op::MSTORE);
        self.push(index).push(0x20).op(op::MSTORE);
        self.push(0x40).push(0).op(op::KECCAK256)
    }

    fn dispatch(&mut self, table: &[([u8; 4], Label)], revert: Label) -> &mut Self {
        self.push(0).op(op::CALLDATALOAD).push(0xe0).op(op::SHR);
        for (selector, label) in table {
            self.op(op::DUP1)
                .push_bytes(selector)
                .op(op::EQ)
                .jumpi(*label);
        }
        self.jump(revert)
    }

    fn call_selector(&mut self, selector: [u8; 4]) -> &mut Self {
        self.push_bytes(&selector)
            .push(0xe0)
            .op(op::SHL)
            .store(CALL_BUF)
    }

    fn call_arg(&mut self, n: u64) -> &mut Self {
        self.store(CALL_BUF + 4 + 32 * n)
    }

    fn call_checked(&mut self, args: u64, revert: Label) -> &mut Self {
        // Stack in: [target]. CALL takes gas, address, value, in offset, in size, out offset,
        // out size from the top: push them in reverse around the target.
        self.push(0x20) // out size
            .push(CALL_BUF) // out offset
            .push(4 + 32 * args) // in size
            .push(CALL_BUF) // in offset
            .push(0) // value
            .op(op::DUP6) // target
            .op(op::GAS)
            .op(op::CALL)
            .op(op::ISZERO)
            .jumpi(revert)
            .op(op::POP) // the target
    }

    fn return_true(&mut self) -> &mut Self {
        self.push(1)
            .push(0)
            .op(op::MSTORE)
            .push(0x20)
            .push(0)
            .op(op::RETURN)
    }
}

/// Reverts if the token is paused.
fn require_not_paused(a: &mut Assembler, revert: Label) {
    a.push(erc20_layout::CONFIG)
        .op(op::SLOAD)
        .push(erc20_layout::PAUSED_BIT)
        .op(op::SHR)
        .push(1)
        .op(op::AND)
        .jumpi(revert);
}

/// Reverts if the address pushed by `account` is blacklisted.
fn require_not_blacklisted(a: &mut Assembler, account: impl FnOnce(&mut Assembler), revert: Label) {
    account(a);
    a.mapping(erc20_layout::BLACKLIST)
        .op(op::SLOAD)
        .jumpi(revert);
}

fn revert_block(a: &mut Assembler, revert: Label) {
    a.bind(revert).push(0).push(0).op(op::REVERT);
}

/// The memory variables of an [`erc20`] call: the parties and the amount a call moves.
mod erc20_vars {
    pub(super) const FROM: u64 = super::VAR0;
    pub(super) const TO: u64 = super::VAR1;
    pub(super) const AMOUNT: u64 = super::VAR2;
}

/// An ERC-20 token in the manner of USDC: `transfer`, `transferFrom`, `approve`, `balanceOf`.
///
/// Every state-changing call checks the paused flag and that no party is blacklisted, then
/// reverts on insufficient balance or allowance. An allowance of `2^256 - 1` is unlimited and
/// never decremented (as in OpenZeppelin), so genesis can approve the router once for all swaps.
pub fn erc20() -> Bytes {
    use erc20_layout::BALANCES;
    use erc20_vars::{AMOUNT, FROM, TO};

    let mut a = Assembler::new();
    let revert = a.new_label();
    let transfer = a.new_label();
    let transfer_from = a.new_label();
    let approve = a.new_label();
    let balance_of = a.new_label();
    let do_move = a.new_label();

    a.dispatch(
        &[
            (SEL_TRANSFER, transfer),
            (SEL_TRANSFER_FROM, transfer_from),
            (SEL_APPROVE, approve),
            (SEL_BALANCE_OF, balance_of),
        ],
        revert,
    );

    // transfer(to, amount): move from the caller.
    a.bind(transfer);
    require_not_paused(&mut a, revert);
    a.op(op::CALLER).store(FROM);
    a.addr_arg(0).store(TO);
    a.arg(1).store(AMOUNT);
    a.jump(do_move);

    a.bind(transfer_from);
    erc20_transfer_from(&mut a, do_move, revert);

    a.bind(approve);
    erc20_approve(&mut a, revert);

    // balanceOf(owner)
    a.bind(balance_of);
    a.addr_arg(0).mapping(BALANCES).op(op::SLOAD);
    a.push(0).op(op::MSTORE).push(0x20).push(0).op(op::RETURN);

    a.bind(do_move);
    erc20_move(&mut a, revert);

    revert_block(&mut a, revert);
    a.finish()
}

/// `transferFrom(from, to, amount)`: spends the caller's allowance, then jumps to `do_move`.
fn erc20_transfer_from(a: &mut Assembler, do_move: Label, revert: Label) {
    use erc20_layout::ALLOWANCES;
    use erc20_vars::{AMOUNT, FROM, TO};
    let caller = |a: &mut Assembler| {
        a.op(op::CALLER);
    };
    let unlimited = a.new_label();
    require_not_paused(a, revert);
    require_not_blacklisted(a, caller, revert);
    a.addr_arg(0).store(FROM);
    a.addr_arg(1).store(TO);
    a.arg(2).store(AMOUNT);
    // allowance[from][caller] = keccak(caller . keccak(from . ALLOWANCES))
    a.load(FROM).mapping(ALLOWANCES).push(0x20).op(op::MSTORE);
    a.op(op::CALLER).push(0).op(op::MSTORE);
    a.push(0x40).push(0).op(op::KECCAK256); // [slot]
    a.op(op::DUP1).op(op::SLOAD); // [slot, allowance]
    a.op(op::DUP1).op(op::NOT).op(op::ISZERO).jumpi(unlimited);
    a.op(op::DUP1).load(AMOUNT).op(op::GT).jumpi(revert); // amount > allowance
    a.load(AMOUNT).op(op::SWAP1).op(op::SUB); // [slot, allowance - amount]
    a.op(op::SWAP1).op(op::SSTORE);
    a.jump(do_move);
    a.bind(unlimited).op(op::POP).op(op::POP).jump(do_move);
}

/// `approve(spender, amount)`: sets the caller's allowance, logs `Approval`, returns true.
fn erc20_approve(a: &mut Assembler, revert: Label) {
    use erc20_layout::ALLOWANCES;
    use erc20_vars::{AMOUNT, TO};
    let caller = |a: &mut Assembler| {
        a.op(op::CALLER);
    };
    let to = |a: &mut Assembler| {
        a.load(TO);
    };
    require_not_paused(a, revert);
    a.addr_arg(0).store(TO);
    a.arg(1).store(AMOUNT);
    require_not_blacklisted(a, caller, revert);
    require_not_blacklisted(a, to, revert);
    a.op(op::CALLER)
        .mapping(ALLOWANCES)
        .push(0x20)
        .op(op::MSTORE);
    a.load(TO).push(0).op(op::MSTORE);
    a.push(0x40).push(0).op(op::KECCAK256); // [slot]
    a.load(AMOUNT).op(op::SWAP1).op(op::SSTORE);
    a.load(TO)
        .op(op::CALLER)
        .push_bytes(approval_topic().as_slice())
        .push(0x20)
        .push(AMOUNT)
        .op(op::LOG3);
    a.return_true();
}

/// Moves AMOUNT from FROM to TO, logs `Transfer`, returns true. Reading the recipient's balance
/// after writing the sender's makes a self-transfer come out right.
fn erc20_move(a: &mut Assembler, revert: Label) {
    use erc20_layout::BALANCES;
    use erc20_vars::{AMOUNT, FROM, TO};
    let from = |a: &mut Assembler| {
        a.load(FROM);
    };
    let to = |a: &mut Assembler| {
        a.load(TO);
    };
    require_not_blacklisted(a, from, revert);
    require_not_blacklisted(a, to, revert);
    a.load(FROM).mapping(BALANCES); // [from_slot]
    a.op(op::DUP1).op(op::SLOAD); // [from_slot, balance]
    a.op(op::DUP1).load(AMOUNT).op(op::GT).jumpi(revert); // amount > balance
    a.load(AMOUNT)
        .op(op::SWAP1)
        .op(op::SUB)
        .op(op::SWAP1)
        .op(op::SSTORE);
    a.load(TO).mapping(BALANCES); // [to_slot]
    a.op(op::DUP1)
        .op(op::SLOAD)
        .load(AMOUNT)
        .op(op::ADD)
        .op(op::SWAP1)
        .op(op::SSTORE);
    a.load(TO)
        .load(FROM)
        .push_bytes(transfer_topic().as_slice())
        .push(0x20)
        .push(AMOUNT)
        .op(op::LOG3);
    a.return_true();
}

/// Rounds of price arithmetic a [`pair`]'s swap runs (about 190 gas each: a `KECCAK256` of two
/// words and a 256-bit `MULMOD`, with their bookkeeping), standing for what a concentrated-
/// liquidity pool computes per swap (tick crossings, fixed-point square roots, its oracle). Plain
/// transfers and storage writes cost little CPU per gas; mainnet's recent blocks execute at about
/// twice the generated chain's CPU per gas without it (`scripts/cpu-per-gas.sh`).
pub const SWAP_MATH_ROUNDS: u64 = 120;

/// A prime modulus for the swap's arithmetic (2^255 - 19).
fn swap_math_modulus() -> U256 {
    (U256::from(1) << 255) - U256::from(19)
}

/// The memory variables of a [`pair`]'s swap.
mod pair_vars {
    pub(super) const TOKEN_IN: u64 = super::VAR0;
    pub(super) const TO: u64 = super::VAR1;
    pub(super) const TOKEN_OUT: u64 = super::VAR2;
    pub(super) const RIN_SLOT: u64 = super::VAR3;
    pub(super) const ROUT_SLOT: u64 = super::VAR4;
    pub(super) const RIN: u64 = super::VAR5;
    pub(super) const ROUT: u64 = super::VAR6;
    pub(super) const BAL: u64 = super::VAR7;
    pub(super) const AMOUNT_IN: u64 = super::VAR8;
    pub(super) const AMOUNT_OUT: u64 = super::VAR9;
    pub(super) const ACC: u64 = super::VAR10;
    pub(super) const ROUND: u64 = super::VAR11;
}

/// A constant-product AMM pair of two tokens: `swap(tokenIn, to)`.
///
/// Like a Uniswap V2 pair, it takes as input whatever `tokenIn` balance it holds above its reserve
/// (the caller transfers it in first, in the same transaction), pays
/// `out = in * 997 * reserveOut / (reserveIn * 1000 + in * 997)` of the other token to `to`,
/// updates both reserves and logs `Swap(caller, to, in, out)`. Returns `out`.
pub fn pair() -> Bytes {
    use pair_vars::{TO, TOKEN_IN};

    let mut a = Assembler::new();
    let revert = a.new_label();
    let swap = a.new_label();

    a.dispatch(&[(sel_swap(), swap)], revert);

    a.bind(swap);
    a.addr_arg(0).store(TOKEN_IN);
    a.addr_arg(1).store(TO);
    pair_pick_side(&mut a, revert);
    pair_price(&mut a, revert);
    pair_swap_math(&mut a);
    pair_pay_out(&mut a, revert);

    revert_block(&mut a, revert);
    a.finish()
}

/// Sets TOKEN_OUT and the reserve slots from which of the pair's tokens TOKEN_IN is; reverts if
/// it is neither.
fn pair_pick_side(a: &mut Assembler, revert: Label) {
    use pair_layout::*;
    use pair_vars::{RIN_SLOT, ROUT_SLOT, TOKEN_IN, TOKEN_OUT};
    let in_is_token0 = a.new_label();
    let picked = a.new_label();
    a.push(TOKEN0).op(op::SLOAD).push(TOKEN1).op(op::SLOAD); // [t0, t1]
    a.op(op::DUP2).load(TOKEN_IN).op(op::EQ).jumpi(in_is_token0);
    a.op(op::DUP1)
        .load(TOKEN_IN)
        .op(op::EQ)
        .op(op::ISZERO)
        .jumpi(revert);
    // tokenIn is token 1: pay out token 0.
    a.op(op::POP).store(TOKEN_OUT);
    a.push(RESERVE1).store(RIN_SLOT);
    a.push(RESERVE0).store(ROUT_SLOT);
    a.jump(picked);
    a.bind(in_is_token0); // [t0, t1]
    a.store(TOKEN_OUT).op(op::POP);
    a.push(RESERVE0).store(RIN_SLOT);
    a.push(RESERVE1).store(ROUT_SLOT);
    a.bind(picked);
}

/// Reads the reserves and the pair's TOKEN_IN balance (by `STATICCALL`), and sets AMOUNT_IN and
/// the non-zero AMOUNT_OUT of the constant-product formula.
fn pair_price(a: &mut Assembler, revert: Label) {
    use pair_vars::{AMOUNT_IN, AMOUNT_OUT, BAL, RIN, RIN_SLOT, ROUT, ROUT_SLOT, TOKEN_IN};
    a.load(RIN_SLOT).op(op::SLOAD).store(RIN);
    a.load(ROUT_SLOT).op(op::SLOAD).store(ROUT);
    // BAL = tokenIn.balanceOf(this), by STATICCALL.
    a.call_selector(SEL_BALANCE_OF);
    a.op(op::ADDRESS).call_arg(0);
    a.push(0x20)
        .push(CALL_BUF)
        .push(0x24)
        .push(CALL_BUF)
        .load(TOKEN_IN)
        .op(op::GAS)
        .op(op::STATICCALL)
        .op(op::ISZERO)
        .jumpi(revert);
    a.load(CALL_BUF).store(BAL);
    // Require BAL > RIN; AMOUNT_IN = BAL - RIN.
    a.load(RIN)
        .load(BAL)
        .op(op::GT)
        .op(op::ISZERO)
        .jumpi(revert);
    a.load(RIN).load(BAL).op(op::SUB).store(AMOUNT_IN);
    // AMOUNT_OUT = AMOUNT_IN * 997 * ROUT / (RIN * 1000 + AMOUNT_IN * 997), non-zero.
    a.load(ROUT)
        .push(997)
        .load(AMOUNT_IN)
        .op(op::MUL)
        .op(op::MUL); // [num]
    a.load(AMOUNT_IN).push(997).op(op::MUL);
    a.load(RIN).push(1000).op(op::MUL).op(op::ADD); // [num, den]
    a.op(op::SWAP1).op(op::DIV); // [num / den]
    a.op(op::DUP1).op(op::ISZERO).jumpi(revert);
    a.store(AMOUNT_OUT);
}

/// The price arithmetic: ACC = mulmod(keccak256(ACC, ROUND), ROUT | 1, P), [`SWAP_MATH_ROUNDS`]
/// times, from ACC = AMOUNT_IN (its result is not used: the work is the point).
fn pair_swap_math(a: &mut Assembler) {
    use pair_vars::{ACC, AMOUNT_IN, ROUND, ROUT};
    let math = a.new_label();
    let math_done = a.new_label();
    a.load(AMOUNT_IN).store(ACC);
    a.push(SWAP_MATH_ROUNDS).store(ROUND);
    a.bind(math);
    a.load(ROUND).op(op::ISZERO).jumpi(math_done);
    a.load(ACC).push(0).op(op::MSTORE);
    a.load(ROUND).push(0x20).op(op::MSTORE);
    a.push(0x40).push(0).op(op::KECCAK256).store(ACC);
    a.push_word(swap_math_modulus())
        .load(ROUT)
        .push(1)
        .op(op::OR)
        .load(ACC)
        .op(op::MULMOD)
        .store(ACC);
    a.push(1).load(ROUND).op(op::SUB).store(ROUND);
    a.jump(math);
    a.bind(math_done);
}

/// Pays AMOUNT_OUT of TOKEN_OUT to TO, updates both reserves, logs `Swap` and returns AMOUNT_OUT.
fn pair_pay_out(a: &mut Assembler, revert: Label) {
    use pair_vars::{AMOUNT_IN, AMOUNT_OUT, BAL, RIN_SLOT, ROUT, ROUT_SLOT, TO, TOKEN_OUT};
    // tokenOut.transfer(to, AMOUNT_OUT)
    a.call_selector(SEL_TRANSFER);
    a.load(TO).call_arg(0);
    a.load(AMOUNT_OUT).call_arg(1);
    a.load(TOKEN_OUT).call_checked(2, revert);
    // Reserves: in = BAL, out -= AMOUNT_OUT.
    a.load(BAL).load(RIN_SLOT).op(op::SSTORE);
    a.load(AMOUNT_OUT)
        .load(ROUT)
        .op(op::SUB)
        .load(ROUT_SLOT)
        .op(op::SSTORE);
    // Swap(caller, to, AMOUNT_IN, AMOUNT_OUT); return AMOUNT_OUT.
    a.load(AMOUNT_IN).push(0).op(op::MSTORE);
    a.load(AMOUNT_OUT).push(0x20).op(op::MSTORE);
    a.load(TO)
        .op(op::CALLER)
        .push_bytes(swap_topic().as_slice())
        .push(0x40)
        .push(0)
        .op(op::LOG3);
    a.push(0x20).push(0x20).op(op::RETURN);
}

/// Router operation: swap `amount` of `token_in` on `pair` (pays the caller).
pub const ROUTER_OP_SWAP: u64 = 0;
/// Router operation: pay `amount` of `token` from the caller to `to`.
pub const ROUTER_OP_PAY: u64 = 1;

/// One operation of a [`router`] call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouterOp {
    /// `token_in.transferFrom(caller, pair, amount)`, then `pair.swap(token_in, caller)`.
    Swap {
        /// The pair.
        pair: Address,
        /// The token sold.
        token_in: Address,
        /// How much of it.
        amount: U256,
    },
    /// `token.transferFrom(caller, to, amount)`.
    Pay {
        /// The token.
        token: Address,
        /// The recipient.
        to: Address,
        /// How much.
        amount: U256,
    },
}

/// Calldata of a [`router`] call: the selector, then four words per operation
/// (`kind, target, a, b`).
pub fn router_calldata(ops: &[RouterOp]) -> Bytes {
    let mut data = Vec::with_capacity(4 + 128 * ops.len());
    data.extend_from_slice(&sel_execute());
    for op in ops {
        let words = match *op {
            RouterOp::Swap {
                pair,
                token_in,
                amount,
            } => [
                U256::from(ROUTER_OP_SWAP),
                addr_word(pair),
                addr_word(token_in),
                amount,
            ],
            RouterOp::Pay { token, to, amount } => [
                U256::from(ROUTER_OP_PAY),
                addr_word(token),
                addr_word(to),
                amount,
            ],
        };
        for word in words {
            data.extend_from_slice(&word.to_be_bytes::<32>());
        }
    }
    data.into()
}

/// A router: runs a packed list of [`RouterOp`]s for its caller (see [`router_calldata`]).
///
/// It spends the caller's allowance to the router (genesis gives every trader an unlimited one),
/// so callers hold no approvals per pair. Any failing call reverts the whole transaction.
pub fn router() -> Bytes {
    const PTR: u64 = VAR0;
    const TARGET: u64 = VAR1;
    const A: u64 = VAR2;
    const B: u64 = VAR3;

    let mut a = Assembler::new();
    let revert = a.new_label();
    let execute = a.new_label();
    let next_op = a.new_label();
    let op_swap = a.new_label();
    let op_pay = a.new_label();
    let advance = a.new_label();
    let done = a.new_label();

    a.dispatch(&[(sel_execute(), execute)], revert);

    a.bind(execute);
    a.push(4).store(PTR);
    a.bind(next_op);
    a.load(PTR)
        .op(op::CALLDATASIZE)
        .op(op::SWAP1)
        .op(op::LT)
        .op(op::ISZERO)
        .jumpi(done); // !(ptr < size)
    a.load(PTR)
        .push(32)
        .op(op::ADD)
        .op(op::CALLDATALOAD)
        .store(TARGET);
    a.load(PTR)
        .push(64)
        .op(op::ADD)
        .op(op::CALLDATALOAD)
        .store(A);
    a.load(PTR)
        .push(96)
        .op(op::ADD)
        .op(op::CALLDATALOAD)
        .store(B);
    a.load(PTR).op(op::CALLDATALOAD); // [kind]
    a.op(op::DUP1).op(op::ISZERO).jumpi(op_swap);
    a.push(ROUTER_OP_PAY).op(op::EQ).jumpi(op_pay);
    a.jump(revert);

    // Swap: A = token in, B = amount, TARGET = pair.
    a.bind(op_swap).op(op::POP);
    a.call_selector(SEL_TRANSFER_FROM);
    a.op(op::CALLER).call_arg(0);
    a.load(TARGET).call_arg(1);
    a.load(B).call_arg(2);
    a.load(A).call_checked(3, revert);
    a.call_selector(sel_swap());
    a.load(A).call_arg(0);
    a.op(op::CALLER).call_arg(1);
    a.load(TARGET).call_checked(2, revert);
    a.jump(advance);

    // Pay: TARGET = token, A = recipient, B = amount.
    a.bind(op_pay);
    a.call_selector(SEL_TRANSFER_FROM);
    a.op(op::CALLER).call_arg(0);
    a.load(A).call_arg(1);
    a.load(B).call_arg(2);
    a.load(TARGET).call_checked(3, revert);

    a.bind(advance);
    a.load(PTR).push(128).op(op::ADD).store(PTR);
    a.jump(next_op);

    a.bind(done).op(op::STOP);
    revert_block(&mut a, revert);
    a.finish()
}

/// An ERC-721-style collection with a public, payable `mint()`: the next id goes to the caller.
/// Logs `Transfer(0, caller, id)` (`LOG4`) and returns the id.
pub fn nft() -> Bytes {
    use nft_layout::*;
    let mut a = Assembler::new();
    let revert = a.new_label();
    let mint = a.new_label();

    a.dispatch(&[(SEL_MINT, mint)], revert);

    a.bind(mint);
    a.push(MINTED).op(op::SLOAD).push(1).op(op::ADD); // [id]
    a.op(op::DUP1).push(MINTED).op(op::SSTORE);
    a.op(op::DUP1)
        .mapping(OWNERS)
        .op(op::CALLER)
        .op(op::SWAP1)
        .op(op::SSTORE);
    a.op(op::CALLER).mapping(BALANCES); // [id, bslot]
    a.op(op::DUP1)
        .op(op::SLOAD)
        .push(1)
        .op(op::ADD)
        .op(op::SWAP1)
        .op(op::SSTORE);
    a.op(op::DUP1)
        .op(op::CALLER)
        .push(0)
        .push_bytes(transfer_topic().as_slice())
        .push(0)
        .push(0)
        .op(op::LOG4);
    a.push(0).op(op::MSTORE).push(0x20).push(0).op(op::RETURN);

    revert_block(&mut a, revert);
    a.finish()
}

/// The worst-case reader: `read(start, count)` sums `SLOAD(keccak256(i))` for
/// `i in start..start + count` ([`reader_slot`]) and returns the sum. Read-only.
///
/// The loop is kept tight ([`READER_GAS_PER_SLOT`] gas a slot) so a transaction's gas goes to
/// state reads; the slots are hashes so they scatter over the key space as real slots do.
pub fn reader() -> Bytes {
    let mut a = Assembler::new();
    let revert = a.new_label();
    let read = a.new_label();
    let repeat = a.new_label();
    let empty = a.new_label();

    a.dispatch(&[(sel_read(), read)], revert);

    a.bind(read);
    a.arg(1).op(op::DUP1).op(op::ISZERO).jumpi(empty); // [count]
    a.arg(0).op(op::DUP1).push(0).op(op::MSTORE).op(op::ADD); // [end], mem[0] = start
    a.push(0); // [end, sum]
    a.bind(repeat);
    a.push(0x20)
        .push(0)
        .op(op::KECCAK256)
        .op(op::SLOAD)
        .op(op::ADD); // [end, sum]
    a.push(0)
        .op(op::MLOAD)
        .push(1)
        .op(op::ADD)
        .op(op::DUP1)
        .push(0)
        .op(op::MSTORE); // [end, sum, i + 1]
    a.op(op::DUP3).op(op::EQ).op(op::ISZERO).jumpi(repeat);
    a.push(0).op(op::MSTORE).push(0x20).push(0).op(op::RETURN);
    a.bind(empty);
    a.push(0x20).push(0x40).op(op::RETURN); // 32 zero bytes

    revert_block(&mut a, revert);
    a.finish()
}

#[cfg(test)]
mod tests;
