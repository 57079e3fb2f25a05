#!/usr/bin/env bash
# Our engine beside a peer, pevm (risechain/pevm, Block-STM), on the same real mainnet blocks, in
# one run: per block, pevm's sequential and parallel execution (its own `mainnet` criterion bench,
# state in memory, warm: many iterations in one process), our reference executor's sequential
# execution in memory (each process's first execution of the block, then WARM more in the same
# process), our engine's parallel execution from the full BAL's pre-values (in memory) at 1 and
# WORKERS workers, and our engine over the block's RocksDB state kept on the disk. Block by block,
# alternating which side goes first (ABBA), so a noisy minute on a shared machine falls on both.
# It writes docs/peer-pevm.md: the procedure and the tables.
#
#   scripts/peer-pevm.sh <pevm checkout> [WORK_DIR]    (new or empty; default: a fresh directory under /var/tmp)
#
# Builds nothing and changes nothing in the pevm checkout. Build pevm's bench there first (its own
# target dir; on a shared machine at low priority):
#   cd <pevm checkout> && nice -n 19 cargo bench --no-run -p pevm --bench mainnet
# and ours here, in the measurement build (fat LTO, one codegen unit, as pevm's):
#   cargo build --profile measure -p bal-replay -p bal-dump
#
# Environment:
#   PEVM_TARGET   pevm's target dir (default <pevm checkout>/target)
#   BIN           our binaries (default ${CARGO_TARGET_DIR:-target}/measure)
#   NATIVE_BIN    our binaries built again with -C target-cpu=native: our sequential and in-memory
#                 parallel runs are repeated with them on each block (not the disk's)
#   BLOCKS        the block numbers to run (default: every block in both pevm's data/ethereum/blocks
#                 and ../shared/fixtures/mainnet)
#   WORKERS       worker threads, both sides (default 2); the runs are pinned to CPUs 0..WORKERS-1,
#                 which is also what sets pevm's concurrency (min(available_parallelism, 8))
#   REPEAT        our runs per configuration, and reference-executor processes per block (default 5)
#   WARM          the reference executor's executions of a block after its first, per process (default 20)
#   DISK          1 (default) to run our engine over the block's state on the disk too, 0 to leave it out
#   BUILD         what the two builds were, for the record (e.g. "target-cpu=native on both")
#   PEVM_COMMIT   pevm's commit, where the checkout is not a git one (an extracted snapshot)
#   PEVM_NATIVE_TARGET   a second pevm target dir, its bench built with -C target-cpu=native (pevm's
#                 own config), run on each block beside the first: what that flag is worth to pevm
#   PEVM_WARMUP, PEVM_MEASURE   criterion's warm-up and measurement seconds per bench (default 1, 3)
#
# Prints the race (each engine's Mgas/s over the blocks every column has, each the sum of the blocks'
# medians with a bootstrap 95% interval over their repeats, and ours over pevm's), then a table, one
# row per block, of each configuration's median time. "load" is the 1-minute load average as the
# block started. Raw outputs stay in WORK_DIR (criterion's samples included).
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: $0 <pevm checkout> [work dir]"
pevm="$(cd "${1:?$usage}" && pwd)"
work="${2:-$(mktemp -d /var/tmp/peer-pevm.XXXXXX)}"
# The script writes (and truncates) only inside a work dir it made or that was given empty: it
# never removes or overwrites what it did not write.
if [ -e "$work" ] && [ -n "$(ls -A "$work")" ]; then
    echo "$work is not empty: give a new or empty work dir" >&2
    exit 1
fi
mkdir -p "$work"
work="$(cd "$work" && pwd)"
fixtures="$(pwd)/../shared/fixtures/mainnet"
bin="$(cd "${BIN:-${CARGO_TARGET_DIR:-target}/measure}" && pwd)"
pevm_target="${PEVM_TARGET:-$pevm/target}"
workers="${WORKERS:-2}"
repeat="${REPEAT:-5}"
warm="${WARM:-20}"
disk="${DISK:-1}"
warmup="${PEVM_WARMUP:-1}"
measure="${PEVM_MEASURE:-3}"

. scripts/peer-pevm/common.sh
pevm_bench="$(newest_bench "$pevm_target")"
native_bench=""
if [ -n "${PEVM_NATIVE_TARGET:-}" ]; then
    native_bench="$(newest_bench "$PEVM_NATIVE_TARGET")"
    [ -n "$native_bench" ] || { echo "no pevm mainnet bench under $PEVM_NATIVE_TARGET/release/deps" >&2; exit 1; }
fi
[ -n "$pevm_bench" ] || {
    echo "no pevm mainnet bench under $pevm_target/release/deps; build it with:" >&2
    echo "  cd $pevm && CARGO_TARGET_DIR=$pevm_target nice -n 19 cargo bench --no-run -p pevm --bench mainnet" >&2
    exit 1
}
[ -e "$pevm/data/ethereum/bytecodes.bincode.gz" ] || {
    echo "$pevm/data/ethereum/bytecodes.bincode.gz is missing (a full git clone has it; docs/peer-pevm.md says how it was rebuilt from our fixtures where a snapshot lacked it)" >&2
    exit 1
}
need_our_binaries "$bin"
native_bin=""
if [ -n "${NATIVE_BIN:-}" ]; then
    native_bin="$(cd "$NATIVE_BIN" && pwd)"
    [ -x "$native_bin/bal-replay" ] || { echo "no $native_bin/bal-replay (NATIVE_BIN)" >&2; exit 1; }
fi
[ "$(id -u)" = 0 ] && drop=(--drop-caches) || drop=()
pin=()
command -v taskset >/dev/null && pin=(taskset -c "0-$((workers - 1))")

if [ -z "${BLOCKS:-}" ]; then
    BLOCKS="$(blocks_on_both_sides "$pevm/data/ethereum" "$fixtures" | tr '\n' ' ')"
fi

# The revm versions a Cargo.lock pins (two engines on revm need not be on the same one).
revm_versions() {
    [ -f "$1" ] || { echo "(not said: no $1)"; return; }
    awk '$0 == "name = \"revm\"" { getline; gsub(/"/, "", $3); print $3 }' "$1" | paste -sd, - | sed 's/,/, /g'
}

# One line per block: number, pevm's criterion output file, and our timings.
results="$work/results.tsv"
: > "$results"
{
    echo "pevm: commit ${PEVM_COMMIT:-$(git -C "$pevm" rev-parse HEAD 2>/dev/null || echo "(not said: not a git checkout; set PEVM_COMMIT)")}, bench binary $(basename "$pevm_bench") built $(date -u -r "$pevm_bench" +%FT%TZ)${native_bench:+; with target-cpu=native: $(basename "$native_bench")}"
    echo "ours: commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates bin || echo ' (with uncommitted changes)'), binaries in $bin built $(date -u -r "$bin/bal-replay" +%FT%TZ)${native_bin:+; with target-cpu=native: $native_bin built $(date -u -r "$native_bin/bal-replay" +%FT%TZ)}"
    echo "revm: pevm's $(revm_versions "$pevm/Cargo.lock"), ours $(revm_versions Cargo.lock) (each side's Cargo.lock)"
    echo "builds: ${BUILD:-(not said)}"
    echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), workers $workers, repeat $repeat, warm $warm, criterion ${warmup}s+${measure}s, drop caches: ${drop[*]:-no (not root)}"
} > "$work/versions.txt"
cat "$work/versions.txt" >&2

run_pevm() {
    local n="$1"
    # pevm's bench finds its data at ../../data/ethereum.
    if [ -n "$native_bench" ]; then
        (cd "$pevm/crates/pevm" && CRITERION_HOME="$work/criterion-native" "${pin[@]}" "$native_bench" --bench --noplot \
            --warm-up-time "$warmup" --measurement-time "$measure" "^Block $n\(") > "$work/blocks/$n/pevm-native.txt"
    fi
    (cd "$pevm/crates/pevm" && CRITERION_HOME="$work/criterion" "${pin[@]}" "$pevm_bench" --bench --noplot \
        --warm-up-time "$warmup" --measurement-time "$measure" "^Block $n\(") > "$work/blocks/$n/pevm.txt"
}

# Ours with the binaries in $2, the result files named with the prefix $3; the disk's runs only with
# the first build (DISK).
run_ours() {
    local n="$1" bin="$2" prefix="$3" dir="$work/blocks/$1"
    for r in $(seq "$repeat"); do
        "${pin[@]}" "$bin/bal-replay" bench-reference --dump "$dir/dump" --repeat "$warm" \
            --json "$dir/${prefix}reference-$r.json" >> "$dir/${prefix}reference.txt"
    done
    # A block that wipes a contract's storage cannot be replayed from a BAL: sequential only.
    grep -q "cannot express" "$dir/import.err" && return
    "${pin[@]}" "$bin/bal-replay" bench --dump "$dir/dump" --state "$dir/state" --threads "1,$workers" --batch 1 \
        --io full --no-baselines --repeat "$repeat" --json "$dir/${prefix}memory.json" > /dev/null
    [ "$disk" = 1 ] && [ -z "$prefix" ] || return 0
    "${pin[@]}" "$bin/bal-replay" bench --dump "$dir/dump" --state "$dir/state" --threads "$workers" --batch 1 \
        --io parallel,batched --no-baselines --disk-resident "${drop[@]}" --repeat "$repeat" \
        --json "$dir/disk.json" > /dev/null
}

# Both of our builds, the order turned on every other block as the sides' is.
run_both_ours() {
    local n="$1" turn="$2"
    if [ -n "$native_bin" ] && [ "$turn" = 1 ]; then run_ours "$n" "$native_bin" native-; fi
    run_ours "$n" "$bin" ""
    if [ -n "$native_bin" ] && [ "$turn" = 0 ]; then run_ours "$n" "$native_bin" native-; fi
}

i=0
for n in $BLOCKS; do
    dir="$work/blocks/$n"
    mkdir -p "$dir"
    "$bin/bal-dump" import-fixture --out "$dir/dump" --state "$dir/state" "$fixtures/$n" > /dev/null 2> "$dir/import.err"
    echo "block $n" >&2
    # Other processes' share of a shared machine, beside each block's figures.
    cut -d' ' -f1 /proc/loadavg > "$dir/load.txt"
    if [ $((i % 2)) = 0 ]; then run_pevm "$n"; run_both_ours "$n" 0; else run_both_ours "$n" 1; run_pevm "$n"; fi
    echo "$n" >> "$results"
    i=$((i + 1))
done

python3 scripts/peer_pevm_table.py "$work" "$workers"
# The page, written whole from raw outputs (never by hand). Its sections of races at more workers
# (studies under ../shared) are computed again from their raw outputs; one whose outputs are not on
# this machine is left out, and said so.
studies=()
if [ -e docs/peer-pevm.md ]; then
    while IFS= read -r s; do
        if [ -d "$s" ]; then
            studies+=("$s")
        else
            echo "docs/peer-pevm.md: its section of $s left out: $s is not on this machine" >&2
        fi
    done < <(python3 scripts/peer_pevm_table.py --studies docs/peer-pevm.md)
fi
python3 scripts/peer_pevm_table.py --page "$work" "$workers" ${studies[@]+"${studies[@]}"} > docs/peer-pevm.md.partial
mv docs/peer-pevm.md.partial docs/peer-pevm.md
echo "wrote docs/peer-pevm.md" >&2
echo "inputs and raw outputs in $work" >&2
