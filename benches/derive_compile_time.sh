#!/usr/bin/env bash
# What `#[derive(AgentState)]` costs to compile, against serde's derive alone
# on the same struct: a 64-field state in a crate of its own, built with the
# derive, and the same struct with `#[derive(Serialize, Deserialize)]` only
# (both also derive Debug, Clone and PartialEq). Two structs:
#
#   * plain: a messages field and 63 fields without a reducer (u32, String,
#     Option<String>, bool, u64, f64, Option<u64>, Vec<u32>);
#   * mixed: a messages field, then plain, optional, `append`, `merge` and
#     `union` fields in turn.
#
# Prints the median time of each crate's build and the ratio.
#
#   bash benches/derive_compile_time.sh [RUNS]     # default 5 runs each
#
# The crates live in $CARGO_TARGET_DIR/derive-compile-time (or
# target/derive-compile-time) and share one target directory; their
# dependencies (agent-state without default features, serde) are built once
# first and not timed. Each timed run touches a crate's source and rebuilds
# it alone, without incremental compilation (`cargo build`, debug, then
# `cargo check`), the derive's crate and serde's in turn, so a slow spell on
# the machine hits both.
set -euo pipefail

runs="${1:-5}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
work="$target/derive-compile-time"
crates=(state_plain serde_plain state_mixed serde_mixed)
for krate in "${crates[@]}"; do mkdir -p "$work/$krate/src"; done

# --- the crates ---------------------------------------------------------------
{
    echo "[workspace]"
    echo "members = [$(printf '"%s", ' "${crates[@]}")]"
    echo 'resolver = "2"'
    echo
    echo "[workspace.dependencies]"
    echo "agent-state = { path = \"$root\", default-features = false }"
    echo 'serde = { version = "1", features = ["derive"] }'
} >"$work/Cargo.toml"
for krate in "${crates[@]}"; do
    {
        echo "[package]"
        echo "name = \"$krate\""
        echo 'version = "0.0.0"'
        echo 'edition = "2021"'
        echo "publish = false"
        echo
        echo "[dependencies]"
        echo "agent-state.workspace = true"
        echo "serde.workspace = true"
    } >"$work/$krate/Cargo.toml"
done

# Field i of struct kind $1: its type and its reducer (-: none).
field() {
    local kind=$1 i=$2
    if [[ $i == 0 ]]; then
        echo "Messages messages"
    elif [[ $kind == plain ]]; then
        case $((i % 8)) in
            0) echo "u32 -" ;;
            1) echo "String -" ;;
            2) echo "Option<String> -" ;;
            3) echo "bool -" ;;
            4) echo "u64 -" ;;
            5) echo "f64 -" ;;
            6) echo "Option<u64> -" ;;
            7) echo "Vec<u32> -" ;;
        esac
    else
        case $((i % 8)) in
            0) echo "u32 -" ;;
            1) echo "String -" ;;
            2) echo "Option<String> -" ;;
            3) echo "bool -" ;;
            4) echo "Vec<String> append" ;;
            5) echo "HashMap<String,String> merge" ;;
            6) echo "UnionVec<String> union" ;;
            7) echo "Option<u64> -" ;;
        esac
    fi
}

# The struct of kind $1 (plain, mixed) with derive $2 (state, serde).
source_of() {
    local kind=$1 derive=$2
    echo "//! A 64-field struct ($kind) with the $derive derive."
    echo "#![allow(unused_imports)]"
    echo "use std::collections::HashMap;"
    if [[ $derive == state ]]; then
        echo "use agent_state::{AgentState, Messages, UnionVec};"
        echo
        echo "/// The state."
        echo "#[derive(AgentState, Debug, Clone, PartialEq)]"
    else
        echo "use agent_state::{Messages, UnionVec};"
        echo "use serde::{Deserialize, Serialize};"
        echo
        echo "/// The state."
        echo "#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]"
    fi
    echo "pub struct Wide {"
    for i in $(seq 0 63); do
        read -r ty reducer < <(field "$kind" "$i")
        echo "    /// Field $i."
        if [[ $derive == state && $reducer != - ]]; then echo "    #[reducer($reducer)]"; fi
        echo "    pub f$i: $ty,"
    done
    echo "}"
}

for kind in plain mixed; do
    for derive in state serde; do
        source_of "$kind" "$derive" >"$work/${derive}_$kind/src/lib.rs"
    done
done

cd "$work"
export CARGO_TARGET_DIR="$work/target" CARGO_INCREMENTAL=0
echo "derive_compile_time: building the dependencies once (not timed)" >&2
cargo build --quiet --workspace
cargo check --quiet --workspace

# Seconds one rebuild of crate $2 takes with `cargo $1`.
time_one() {
    local cmd=$1 krate=$2 start end
    touch "$work/$krate/src/lib.rs"
    start=$(date +%s.%N)
    cargo "$cmd" --quiet -p "$krate"
    end=$(date +%s.%N)
    awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f\n", b - a }'
}

median() {
    sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

echo
echo "| 64-field struct, $runs runs each | #[derive(AgentState)] (s) | serde's derive alone (s) | ratio |"
echo "| --- | ---: | ---: | ---: |"
for kind in plain mixed; do
    for cmd in build check; do
        state_times=()
        serde_times=()
        for _ in $(seq 1 "$runs"); do
            state_times+=("$(time_one "$cmd" "state_$kind")")
            serde_times+=("$(time_one "$cmd" "serde_$kind")")
        done
        state_med=$(printf '%s\n' "${state_times[@]}" | median)
        serde_med=$(printf '%s\n' "${serde_times[@]}" | median)
        awk -v k="$kind" -v c="$cmd" -v a="$state_med" -v b="$serde_med" \
            'BEGIN { printf "| %s, cargo %s | %.2f | %.2f | %.2f× |\n", k, c, a, b, a / b }'
    done
done
