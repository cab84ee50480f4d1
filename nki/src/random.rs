//! The executor's random numbers: one SplitMix64 stream per run, seeded by the program's `seed`.
//!
//! The hardware's generators (XORWOW per engine lane, seeded by `set_rng_seed` and
//! `rand_set_state`) are not modelled: a kernel's random values are only required to be
//! random, and a simulator's to be reproducible. SplitMix64 (Steele, Lea and Flood, *Fast
//! splittable pseudorandom number generators*, OOPSLA 2014; the generator `java.util.SplittableRandom`
//! and xoshiro's seeding use) is one addition and a 64-bit mix per value, and has published
//! outputs to pin it by. The random instructions draw from the stream in program order, one value
//! per element of the iteration shape in row-major order, masked elements included, so the same
//! program and seed give the same bits, and a mask never shifts the values of later elements.

/// A SplitMix64 stream.
pub(crate) struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// The stream whose first value mixes `seed + γ`.
    pub(crate) fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// The next 32 random bits: the high half of the next value.
    pub(crate) fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// The next uniform float32 in `[0, 1)`: the top 24 bits of the next value times 2^-24, so
    /// every value is a multiple of 2^-24 and exact in float32.
    pub(crate) fn next_unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 * (1.0 / 16_777_216.0)
    }
}

#[cfg(test)]
mod tests {
    use super::SplitMix64;

    #[test]
    fn splitmix64_gives_its_published_first_value() {
        // The reference implementation's first output for seed 0 is 0xe220a8397b1dcdaf.
        let mut stream = SplitMix64::new(0);
        assert_eq!(stream.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(stream.next_u64(), 0x6e78_9e6a_a1b9_65f4);
    }

    #[test]
    fn u32_and_unit_values_come_from_the_high_bits() {
        // Seed 7's first two values are 0x63cbe1e459320dd7 and 0x044c3cd7f43c661c.
        let mut stream = SplitMix64::new(7);
        assert_eq!(stream.next_u32(), 0x63cb_e1e4);
        // 0x044c3c (the top 24 bits) = 281660; 281660 / 2^24.
        assert_eq!(stream.next_unit(), 281_660.0 / 16_777_216.0);
    }
}
