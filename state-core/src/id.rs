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

/// SplitMix64: one add and three multiplies per 64 bits, and every seed
/// gives a full-period sequence, so ids of one thread never repeat.
fn next_u64() -> u64 {
    STATE.with(|state| {
        let z = state.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
        state.set(z);
        let z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    })
}

/// Each byte's two lowercase hex digits.
const HEX_PAIRS: [[u8; 2]; 256] = {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut pairs = [[0u8; 2]; 256];
    let mut b = 0;
    while b < 256 {
        pairs[b] = [HEX[b >> 4], HEX[b & 0x0f]];
        b += 1;
    }
    pairs
};

/// A new random id in uuid4 form (`xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`),
/// spelled on the stack and copied into a string of exactly its length.
pub fn new_message_id() -> String {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&next_u64().to_le_bytes());
    bytes[8..].copy_from_slice(&next_u64().to_le_bytes());
    bytes[6] = (bytes[6] & 0x0f) | 0x40; // version 4
    bytes[8] = (bytes[8] & 0x3f) | 0x80; // RFC 4122 variant
    let mut text = [b'-'; 36];
    let mut at = 0;
    for (i, byte) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            at += 1; // the dash already there
        }
        text[at..at + 2].copy_from_slice(&HEX_PAIRS[usize::from(*byte)]);
        at += 2;
    }
    let mut out = String::with_capacity(36);
    out.push_str(std::str::from_utf8(&text).expect("hex digits and dashes are ASCII"));
    out
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
}
