//! The soak's seeded randomness (splitmix64, no dependency): one `VRAMIO_SOAK_SEED` gives the
//! same kills, downtimes, read delays and share-link cycles, so a failing run can be replayed.

use std::time::Duration;

pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// An independent stream for one task, drawn from this one.
    pub fn fork(&mut self) -> Rng {
        Rng(self.next_u64())
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        (self.next_u64() % n as u64) as usize
    }

    /// Uniform in `0.0..1.0`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A duration uniform between `lo` and `hi` seconds.
    pub fn secs(&mut self, lo: f64, hi: f64) -> Duration {
        Duration::from_secs_f64(lo + (hi - lo) * self.unit())
    }
}
