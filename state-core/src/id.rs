//! Message ids for messages that arrive without one.
//!
//! LangGraph assigns a fresh uuid4 string; so do we, in the same textual
//! form, but from a per-thread generator seeded once from the OS-randomised
//! `RandomState` keys. Asking the OS for entropy per message would cost more
//! than the whole append.

use std::cell::Cell;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::time::{SystemTime, UNIX_EPOCH};

thread_local! {
    static STATE: Cell<u64> = Cell::new(seed());
}

fn seed() -> u64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    RandomState::new().hash_one((nanos, std::thread::current().id()))
}

/// SplitMix64's output function: three multiplies per 64 bits.
fn mix(z: u64) -> u64 {
    let z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// 128 random bits: two steps of SplitMix64, whose every seed gives a
/// full-period sequence, so ids of one thread never repeat.
fn next_u128() -> (u64, u64) {
    const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;
    STATE.with(|state| {
        let a = state.get().wrapping_add(GAMMA);
        let b = a.wrapping_add(GAMMA);
        state.set(b);
        (mix(a), mix(b))
    })
}

/// The 16 lowercase hex digits of `x`, most significant first, computed on
/// all the nibbles at once (each spread to a byte of a `u128`, then turned
/// into its ASCII digit), without a table or a loop.
fn hex16(x: u64) -> [u8; 16] {
    let x = u128::from(x);
    let x = (x & 0xFFFF_FFFF) | ((x & 0xFFFF_FFFF_0000_0000) << 32);
    let x = (x & 0x0000_FFFF_0000_0000_0000_FFFF) | ((x & 0xFFFF_0000_0000_0000_FFFF_0000) << 16);
    let x = (x & 0x0000_00FF_0000_00FF_0000_00FF_0000_00FF)
        | ((x & 0x0000_FF00_0000_FF00_0000_FF00_0000_FF00) << 8);
    let x = (x & 0x000F_000F_000F_000F_000F_000F_000F_000F)
        | ((x & 0x00F0_00F0_00F0_00F0_00F0_00F0_00F0_00F0) << 4);
    // Each byte now holds one nibble n, the most significant in the
    // highest byte: its digit is '0' + n, plus 39 more when n > 9.
    const ONES: u128 = 0x0101_0101_0101_0101_0101_0101_0101_0101;
    let letters = ((x + 6 * ONES) >> 4) & ONES;
    (x + 0x30 * ONES + 39 * letters).to_be_bytes()
}

/// A new random id in uuid4 form (`xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`),
/// spelled straight into the string's own buffer of exactly its length.
pub fn new_message_id() -> String {
    let (hi, lo) = next_u128();
    let hi = (hi & !0xF000) | 0x4000; // version 4
    let lo = (lo & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000; // RFC 4122 variant
    let (h, l) = (hex16(hi), hex16(lo));
    let mut text = Vec::with_capacity(36);
    text.extend_from_slice(&h[..8]);
    text.push(b'-');
    text.extend_from_slice(&h[8..12]);
    text.push(b'-');
    text.extend_from_slice(&h[12..]);
    text.push(b'-');
    text.extend_from_slice(&l[..4]);
    text.push(b'-');
    text.extend_from_slice(&l[4..]);
    String::from_utf8(text).expect("hex digits and dashes are ASCII")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_look_like_uuid4_and_do_not_repeat() {
        let ids: HashSet<String> = (0..10_000).map(|_| new_message_id()).collect();
        assert_eq!(ids.len(), 10_000);
        for id in ids.iter().take(10) {
            assert_eq!(id.len(), 36);
            assert_eq!(&id[14..15], "4");
            assert!(matches!(&id[19..20], "8" | "9" | "a" | "b"), "{id}");
            for (i, c) in id.char_indices() {
                if matches!(i, 8 | 13 | 18 | 23) {
                    assert_eq!(c, '-', "{id}");
                } else {
                    assert!(c.is_ascii_hexdigit() && !c.is_ascii_uppercase(), "{id}");
                }
            }
        }
    }

    #[test]
    fn hex16_spells_every_nibble() {
        let mut z = 0x0123_4567_89ab_cdef_u64;
        for x in [
            0,
            u64::MAX,
            0x0123_4567_89ab_cdef,
            0xfedc_ba98_7654_3210,
            0x9a9a_0f0f_a0a0_5555,
        ] {
            assert_eq!(hex16(x), *format!("{x:016x}").as_bytes());
        }
        for _ in 0..10_000 {
            z = mix(z.wrapping_add(0x9E37_79B9_7F4A_7C15));
            assert_eq!(hex16(z), *format!("{z:016x}").as_bytes());
        }
    }
}
