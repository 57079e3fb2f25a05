//! A tiny EVM assembler: opcodes, pushes of the shortest width, and labels with jump fix-ups.
//!
//! The generated contracts are written as Rust that emits bytecode, so their source lives in the
//! repository and every build produces the same bytes (no solc version to pin). Opcode values come
//! from revm's table ([`op`]), so a mnemonic can never map to the wrong byte.
//!
//! ```
//! use bal_replay_synth::asm::{Assembler, op};
//!
//! // Returns 1 if the first calldata word is zero, else loops forever (until out of gas).
//! let mut a = Assembler::new();
//! let spin = a.new_label();
//! a.push(0).op(op::CALLDATALOAD).jumpi(spin);
//! a.push(1).push(0).op(op::MSTORE).push(32).push(0).op(op::RETURN);
//! a.bind(spin).jump(spin);
//! let code = a.finish();
//! assert_eq!(code[0], op::PUSH0);
//! ```

use alloy_primitives::{Bytes, U256};

/// Opcode byte values (`op::ADD`, `op::SLOAD`, ...), revm's table.
pub use revm::bytecode::opcode as op;

/// A jump target, placed with [`Assembler::bind`]; may be referenced before it is placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Label(usize);

/// Emits bytecode, resolving label references when [`finish`](Assembler::finish)ed.
#[derive(Debug, Default)]
pub struct Assembler {
    code: Vec<u8>,
    /// Offset of each label's `JUMPDEST`, once bound.
    labels: Vec<Option<u16>>,
    /// Offsets of 2-byte `PUSH2` immediates that must receive a label's offset.
    fixups: Vec<(usize, Label)>,
}

impl Assembler {
    /// An empty program.
    pub fn new() -> Self {
        Self::default()
    }

    /// Emits one opcode.
    pub fn op(&mut self, opcode: u8) -> &mut Self {
        self.code.push(opcode);
        self
    }

    /// Emits several opcodes in order.
    pub fn ops(&mut self, opcodes: &[u8]) -> &mut Self {
        self.code.extend_from_slice(opcodes);
        self
    }

    /// Pushes `value` with the shortest push: `PUSH0` for zero, else `PUSHn` of its significant
    /// bytes.
    pub fn push(&mut self, value: u64) -> &mut Self {
        self.push_word(U256::from(value))
    }

    /// Pushes a 256-bit `value` with the shortest push.
    pub fn push_word(&mut self, value: U256) -> &mut Self {
        let bytes = value.to_be_bytes::<32>();
        match bytes.iter().position(|b| *b != 0) {
            None => self.op(op::PUSH0),
            Some(first) => self.push_bytes(&bytes[first..]),
        }
    }

    /// Pushes exactly `bytes` (1 to 32 of them) with `PUSHn`, `n = bytes.len()`: for constants
    /// whose width is part of their meaning (selectors, topics, masks).
    ///
    /// # Panics
    ///
    /// If `bytes` is empty or longer than 32.
    pub fn push_bytes(&mut self, bytes: &[u8]) -> &mut Self {
        assert!(
            (1..=32).contains(&bytes.len()),
            "PUSHn takes 1 to 32 bytes, got {}",
            bytes.len()
        );
        self.code.push(op::PUSH1 + (bytes.len() as u8 - 1));
        self.code.extend_from_slice(bytes);
        self
    }

    /// A new, not yet placed label.
    pub fn new_label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() - 1)
    }

    /// Places `label` here, emitting its `JUMPDEST`.
    ///
    /// # Panics
    ///
    /// If `label` was already placed, or the code is past 64 KiB (labels are `PUSH2` targets).
    pub fn bind(&mut self, label: Label) -> &mut Self {
        let offset = u16::try_from(self.code.len()).expect("code fits PUSH2 jump targets");
        let slot = &mut self.labels[label.0];
        assert!(slot.is_none(), "label {} bound twice", label.0);
        *slot = Some(offset);
        self.op(op::JUMPDEST)
    }

    /// Pushes `label`'s offset (`PUSH2`, filled in by [`finish`](Self::finish)).
    pub fn push_label(&mut self, label: Label) -> &mut Self {
        self.code.push(op::PUSH2);
        self.fixups.push((self.code.len(), label));
        self.code.extend_from_slice(&[0, 0]);
        self
    }

    /// Jumps to `label`.
    pub fn jump(&mut self, label: Label) -> &mut Self {
        self.push_label(label).op(op::JUMP)
    }

    /// Jumps to `label` if the top of the stack is non-zero (consuming it).
    pub fn jumpi(&mut self, label: Label) -> &mut Self {
        self.push_label(label).op(op::JUMPI)
    }

    /// The finished bytecode, with every label reference resolved.
    ///
    /// # Panics
    ///
    /// If a referenced label was never placed: a bug in the program, not an input error.
    pub fn finish(mut self) -> Bytes {
        for (at, label) in &self.fixups {
            let target = self.labels[label.0]
                .unwrap_or_else(|| panic!("label {} referenced but never bound", label.0));
            self.code[*at..*at + 2].copy_from_slice(&target.to_be_bytes());
        }
        self.code.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pushes_use_the_shortest_width() {
        let mut a = Assembler::new();
        a.push(0).push(0xff).push(0x100).push_word(U256::MAX);
        let code = a.finish();
        let mut expected = vec![
            op::PUSH0,
            op::PUSH1,
            0xff,
            op::PUSH2,
            0x01,
            0x00,
            op::PUSH32,
        ];
        expected.extend([0xff; 32]);
        assert_eq!(code.as_ref(), expected.as_slice());
    }

    #[test]
    fn forward_and_backward_labels_resolve_to_their_jumpdest() {
        let mut a = Assembler::new();
        let back = a.new_label();
        let fwd = a.new_label();
        a.bind(back); // offset 0
        a.jump(fwd); // PUSH2 xx xx JUMP at 1..5
        a.op(op::STOP); // 5
        a.bind(fwd); // 6
        a.jump(back);
        let code = a.finish();
        assert_eq!(
            code.as_ref(),
            &[
                op::JUMPDEST,
                op::PUSH2,
                0,
                6,
                op::JUMP,
                op::STOP,
                op::JUMPDEST,
                op::PUSH2,
                0,
                0,
                op::JUMP
            ]
        );
    }

    #[test]
    #[should_panic(expected = "never bound")]
    fn unbound_label_is_a_bug() {
        let mut a = Assembler::new();
        let l = a.new_label();
        a.jump(l);
        a.finish();
    }
}
