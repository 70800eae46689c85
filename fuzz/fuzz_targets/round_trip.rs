//! Fuzzes the round trip JSON update → apply → save → load of a state with
//! every reducer over every kind of field type. The body is
//! `tests/support/everything.rs`'s `round_trip`, which `tests/round_trip.rs`
//! also runs over the seed corpus; it panics when a rule breaks: a step
//! `save_step` accepts must reload equal, one it refuses must change and
//! store nothing.
#![no_main]

#[path = "../../tests/support/everything.rs"]
#[allow(dead_code)]
mod everything;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    everything::round_trip(data);
});
