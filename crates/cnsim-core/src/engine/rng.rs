//! Seeded random-number streams. Every element that draws random numbers
//! (a traffic source, a congestion point...) owns its own stream, derived
//! from the run's seed and the element's *name*, so adding an element to a
//! scenario leaves every other element's stream unchanged, and results depend
//! only on (scenario, seed).

use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

/// The generator used for every stream: PCG-64 (MCG variant), small and fast.
pub type Stream = Pcg64Mcg;

/// SplitMix64 finaliser: a bijective mixer with good avalanche.
#[inline]
pub fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// FNV-1a over the name: stable across platforms and Rust versions (unlike
/// `std`'s hasher, which is randomly keyed).
fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The stream of element `name` (e.g. `"S1"`, `"B5->D/cp"`) in run `seed`.
pub fn stream(seed: u64, name: &str) -> Stream {
    let a = splitmix64(seed);
    let b = splitmix64(fnv1a64(name.as_bytes()));
    let state = ((splitmix64(a ^ b) as u128) << 64) | splitmix64(a.wrapping_add(b).rotate_left(17)) as u128;
    Pcg64Mcg::new(state | 1)
}

/// Also usable with `SeedableRng` where a plain u64 seed is wanted.
pub fn stream_from_u64(seed: u64) -> Stream {
    Pcg64Mcg::seed_from_u64(seed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn streams_depend_on_seed_and_name_only() {
        let x: u64 = stream(7, "S1").gen();
        let y: u64 = stream(7, "S1").gen();
        let z: u64 = stream(8, "S1").gen();
        let w: u64 = stream(7, "S2").gen();
        assert_eq!(x, y);
        assert_ne!(x, z);
        assert_ne!(x, w);
    }
}
