//! A small seeded PRNG and the distributions the generator draws from.
//!
//! Integer arithmetic only: floating point `pow`/`ln` may differ in the last bit between platforms'
//! libms, and one flipped choice would change every block after it.

/// SplitMix64 (Steele, Lea, Flood 2014): tiny, fast, and good enough for choosing transactions.
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A generator seeded with `seed`, for the stream named `stream` (independent streams from one
    /// seed, so adding draws to one part of the generator does not shift the others).
    pub fn new(seed: u64, stream: u64) -> Self {
        let mut rng = Self {
            state: seed ^ stream.wrapping_mul(0xd1b5_4a32_d192_ed03),
        };
        rng.next_u64();
        rng
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`), by Lemire's multiply-shift (bias below 2^-32 for our `n`).
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0, "below(0)");
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// An index in `0..n`.
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// `true` with probability `per_mille / 1000`.
    pub fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }

    /// 32 random bytes.
    pub fn bytes32(&mut self) -> [u8; 32] {
        let mut out = [0u8; 32];
        for chunk in out.chunks_mut(8) {
            chunk.copy_from_slice(&self.next_u64().to_be_bytes());
        }
        out
    }
}

/// A Zipf-like choice among `n` items: item `k` has weight `1 / (k + 1)`, so the first few items
/// (the popular tokens and pairs) get most of the draws and the rest a long tail.
#[derive(Debug, Clone)]
pub struct Zipf {
    /// Cumulative integer weights, strictly increasing.
    cumulative: Vec<u64>,
}

impl Zipf {
    /// The distribution over `0..n`; `n` must be positive.
    pub fn new(n: usize) -> Self {
        assert!(n > 0, "Zipf over no items");
        let mut total = 0u64;
        let cumulative = (1..=n as u64)
            .map(|rank| {
                total += (1u64 << 32) / rank;
                total
            })
            .collect();
        Self { cumulative }
    }

    /// Draws an index.
    pub fn sample(&self, rng: &mut Rng) -> usize {
        let total = *self.cumulative.last().expect("non-empty");
        let x = rng.below(total);
        self.cumulative.partition_point(|c| *c <= x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_same_numbers() {
        let a: Vec<u64> = (0..8)
            .scan(Rng::new(7, 1), |r, _| Some(r.next_u64()))
            .collect();
        let b: Vec<u64> = (0..8)
            .scan(Rng::new(7, 1), |r, _| Some(r.next_u64()))
            .collect();
        let c: Vec<u64> = (0..8)
            .scan(Rng::new(7, 2), |r, _| Some(r.next_u64()))
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn below_and_range_stay_in_bounds() {
        let mut rng = Rng::new(1, 0);
        for _ in 0..10_000 {
            assert!(rng.below(3) < 3);
            let x = rng.range(5, 9);
            assert!((5..=9).contains(&x));
        }
    }

    #[test]
    fn zipf_prefers_low_ranks() {
        let zipf = Zipf::new(10);
        let mut rng = Rng::new(3, 0);
        let mut counts = [0u32; 10];
        for _ in 0..100_000 {
            counts[zipf.sample(&mut rng)] += 1;
        }
        // Weight of rank 1 is 1 / H(10) = 34%; rank 10 gets 3.4%.
        assert!((32_000..36_500).contains(&counts[0]), "{counts:?}");
        assert!((2_800..4_000).contains(&counts[9]), "{counts:?}");
        assert!(counts.windows(2).all(|w| w[0] > w[1]), "{counts:?}");
    }
}
