//! The round-trip fuzz target's body (`fuzz/`, run by `.ci/run` under
//! libFuzzer) over a bounded corpus: the seed files the fuzzer starts from,
//! and a fixed stream of pseudo-random inputs. Whatever `save_step` accepts
//! reloads equal; what it refuses stores nothing.

mod support;

use support::everything::{round_trip, Tally};

/// The seed corpus, committed with the fuzz crate.
fn corpus() -> Vec<(String, Vec<u8>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/round_trip");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| (path.display().to_string(), std::fs::read(&path).unwrap()))
        .collect()
}

fn add(total: &mut Tally, one: Tally) {
    total.unread += one.unread;
    total.refused += one.refused;
    total.stored += one.stored;
}

#[test]
fn the_seed_corpus_round_trips() {
    let mut total = Tally::default();
    let files = corpus();
    assert!(files.len() >= 10, "{} seed files", files.len());
    for (name, data) in files {
        let tally = std::panic::catch_unwind(|| round_trip(&data))
            .unwrap_or_else(|_| panic!("{name} broke a rule"));
        add(&mut total, tally);
    }
    assert!(
        total.stored > 0 && total.refused > 0 && total.unread > 0,
        "{total:?}"
    );
}

#[test]
fn pseudo_random_inputs_round_trip() {
    // xorshift64*, fixed seed: the same 3,000 inputs every run.
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let mut next = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    let mut total = Tally::default();
    for _ in 0..3_000 {
        let len = usize::try_from(next() % 512).unwrap();
        let data: Vec<u8> = (0..len).map(|_| next().to_le_bytes()[0]).collect();
        let tally = std::panic::catch_unwind(|| round_trip(&data))
            .unwrap_or_else(|_| panic!("input {data:?} broke a rule"));
        add(&mut total, tally);
    }
    eprintln!("{total:?}");
    // The generator reaches every outcome, stored ones most.
    assert!(total.stored > 1_000, "{total:?}");
    assert!(total.refused > 10 && total.unread > 100, "{total:?}");
}
