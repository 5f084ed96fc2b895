//! Simulated time: integer picoseconds. At 10 Gbit/s one bit lasts 100 ps,
//! so every serialisation time of a whole number of bytes at the rates of
//! interest is exact, and results never depend on floating-point rounding.

/// Simulated time in picoseconds.
pub type Time = u64;

pub const PS_PER_US: Time = 1_000_000;
pub const PS_PER_MS: Time = 1_000_000_000;
pub const PS_PER_S: Time = 1_000_000_000_000;

/// Time to serialise `bytes` at `rate_bps`, rounded up to a whole picosecond.
/// A zero rate never finishes; callers must not start a frame on a stopped link.
#[inline]
pub fn serialization_ps(bytes: u64, rate_bps: u64) -> Time {
    debug_assert!(rate_bps > 0);
    // u128: a full PAUSE (4 MB of bit times) x 1e12 overflows u64.
    ((bytes as u128 * 8 * PS_PER_S as u128).div_ceil(rate_bps as u128)) as Time
}

/// Duration of `quanta` PAUSE quanta (512 bit times each) at `rate_bps`.
#[inline]
pub fn pause_quanta_ps(quanta: u16, rate_bps: u64) -> Time {
    serialization_ps(quanta as u64 * 512 / 8, rate_bps.max(1))
}

/// Microseconds (a parameter in the user's units) as whole picoseconds,
/// rounded to the nearest (ties to even, as the Python resolver rounds).
#[inline]
pub fn us_to_ps(us: f64) -> Time {
    (us * PS_PER_US as f64).round_ties_even() as Time
}

/// Milliseconds as whole picoseconds (see [`us_to_ps`]).
#[inline]
pub fn ms_to_ps(ms: f64) -> Time {
    (ms * PS_PER_MS as f64).round_ties_even() as Time
}

/// Seconds (floating point) for reporting.
#[inline]
pub fn to_secs(t: Time) -> f64 {
    t as f64 / PS_PER_S as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialization_is_exact_at_common_rates() {
        assert_eq!(serialization_ps(1500, 10_000_000_000), 1_200_000);
        assert_eq!(serialization_ps(64, 10_000_000_000), 51_200);
        assert_eq!(serialization_ps(1500, 500_000_000), 24_000_000);
        assert_eq!(serialization_ps(1500, 2_000_000_000), 6_000_000);
    }

    #[test]
    fn pause_quanta_are_512_bit_times() {
        // 65535 x 512 bit times at 10 Gbit/s = 3.355392 ms
        assert_eq!(pause_quanta_ps(65535, 10_000_000_000), 3_355_392_000);
        assert_eq!(pause_quanta_ps(1, 10_000_000_000), 51_200);
        assert_eq!(pause_quanta_ps(0, 10_000_000_000), 0);
    }
}
