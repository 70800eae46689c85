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

/// The two lowercase hex digits of every byte.
const HEX_PAIRS: [[u8; 2]; 256] = {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut pairs = [[0; 2]; 256];
    let mut byte = 0;
    while byte < 256 {
        pairs[byte] = [DIGITS[byte >> 4], DIGITS[byte & 15]];
        byte += 1;
    }
    pairs
};

/// A new random id in uuid4 form (`xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`),
/// spelled a byte (two digits) at a time from a table into an array of
/// fixed length on the stack, then copied into a string of exactly its
/// length.
pub fn new_message_id() -> String {
    let (hi, lo) = next_u128();
    let hi = (hi & !0xF000) | 0x4000; // version 4
    let lo = (lo & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000; // RFC 4122 variant
    let bytes = ((u128::from(hi) << 64) | u128::from(lo)).to_be_bytes();
    let mut text = [b'-'; 36];
    let mut at = 0;
    for (i, byte) in bytes.iter().enumerate() {
        // A dash before bytes 4, 6, 8 and 10 (8-4-4-4-12 digits).
        if matches!(i, 4 | 6 | 8 | 10) {
            at += 1;
        }
        text[at..at + 2].copy_from_slice(&HEX_PAIRS[usize::from(*byte)]);
        at += 2;
    }
    String::from_utf8(text.to_vec()).expect("hex digits and dashes are ASCII")
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
    fn ids_spell_their_random_bits_in_order() {
        for byte in 0..=255u8 {
            assert_eq!(
                HEX_PAIRS[usize::from(byte)],
                *format!("{byte:02x}").as_bytes()
            );
        }
        // The same generator state twice gives the same bits, spelled
        // in order with the version and variant set.
        let before = STATE.with(Cell::get);
        let (hi, lo) = next_u128();
        STATE.with(|state| state.set(before));
        let hi = (hi & !0xF000) | 0x4000;
        let lo = (lo & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000;
        let hex = format!("{hi:016x}{lo:016x}");
        let want = format!(
            "{}-{}-{}-{}-{}",
            &hex[..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..]
        );
        assert_eq!(new_message_id(), want);
    }
}
