#!/usr/bin/env bash
# Our engine beside a peer, pevm (risechain/pevm, Block-STM), on the same real mainnet blocks, in
# one run: per block, pevm's sequential and parallel execution (its own `mainnet` criterion bench,
# state in memory), our reference executor's sequential execution in memory, our engine's parallel
# execution from the full BAL's pre-values (in memory), and our engine over the block's RocksDB
# state kept on the disk. Block by block, alternating which side goes first, so a noisy minute on a
# shared machine falls on both. docs/peer-pevm.md has the procedure and a table it printed.
#
#   scripts/peer-pevm.sh <pevm checkout> [WORK_DIR]    (new or empty; default: a fresh directory under /var/tmp)
#
# Builds nothing and changes nothing in the pevm checkout. Build pevm's bench there first (its own
# target dir; on a shared machine at low priority):
#   cd <pevm checkout> && nice -n 19 cargo bench --no-run -p pevm --bench mainnet
# and ours here: cargo build -p bal-replay -p bal-dump
#
# Environment:
#   PEVM_TARGET   pevm's target dir (default <pevm checkout>/target)
#   BIN           our binaries (default ${CARGO_TARGET_DIR:-target}/debug)
#   BLOCKS        the block numbers to run (default: every block in both pevm's data/ethereum/blocks
#                 and ../shared/fixtures/mainnet)
#   WORKERS       worker threads, both sides (default 2); the runs are pinned to CPUs 0..WORKERS-1,
#                 which is also what sets pevm's concurrency (min(available_parallelism, 8))
#   REPEAT        our runs per configuration (default 5)
#   PEVM_WARMUP, PEVM_MEASURE   criterion's warm-up and measurement seconds per bench (default 1, 3)
#
# Prints a Markdown table, one row per block, of each side's fastest time: pevm's fastest criterion
# sample (its time per iteration; criterion runs the block many times in one process), ours the
# fastest of REPEAT runs (the reference executor once per process; the engine REPEAT times in one
# process). Others' work on a shared machine only adds time, so the fastest is the nearest to each
# engine's own cost; sums at the end give both the fastest and the median. "load" is the 1-minute
# load average as the block started. Raw outputs stay in WORK_DIR (criterion's samples included).
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
bin="$(cd "${BIN:-${CARGO_TARGET_DIR:-target}/debug}" && pwd)"
pevm_target="${PEVM_TARGET:-$pevm/target}"
workers="${WORKERS:-2}"
repeat="${REPEAT:-5}"
warmup="${PEVM_WARMUP:-1}"
measure="${PEVM_MEASURE:-3}"

# The newest mainnet bench binary cargo left (criterion's harness: a filter and its options).
pevm_bench="$(find "$pevm_target/release/deps" -maxdepth 1 -type f -executable -name 'mainnet-*' \
    -printf '%T@ %p\n' 2>/dev/null | sort -rn | head -n 1 | cut -d' ' -f2-)"
[ -n "$pevm_bench" ] || {
    echo "no pevm mainnet bench under $pevm_target/release/deps; build it with:" >&2
    echo "  cd $pevm && CARGO_TARGET_DIR=$pevm_target nice -n 19 cargo bench --no-run -p pevm --bench mainnet" >&2
    exit 1
}
[ -e "$pevm/data/ethereum/bytecodes.bincode.gz" ] || {
    echo "$pevm/data/ethereum/bytecodes.bincode.gz is missing (a full git clone has it; docs/peer-pevm.md says how it was rebuilt from our fixtures where a snapshot lacked it)" >&2
    exit 1
}
for b in bal-replay bal-dump; do
    [ -x "$bin/$b" ] || { echo "no $bin/$b: cargo build -p bal-replay -p bal-dump" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] && drop=(--drop-caches) || drop=()
pin=()
command -v taskset >/dev/null && pin=(taskset -c "0-$((workers - 1))")

if [ -z "${BLOCKS:-}" ]; then
    BLOCKS="$(comm -12 <(ls "$pevm/data/ethereum/blocks" | sort) <(ls "$fixtures" | sort) | sort -n | tr '\n' ' ')"
fi

# One line per block: number, pevm's criterion output file, and our timings.
results="$work/results.tsv"
: > "$results"
{
    echo "pevm: $(git -C "$pevm" rev-parse HEAD 2>/dev/null || echo "(not a git checkout)") $pevm_bench"
    echo "ours: checkout at $(git rev-parse HEAD); binaries $bin/bal-replay built $(date -u -r "$bin/bal-replay" +%FT%TZ)"
    echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), workers $workers, repeat $repeat, criterion ${warmup}s+${measure}s, drop caches: ${drop[*]:-no (not root)}"
} > "$work/versions.txt"
cat "$work/versions.txt" >&2

run_pevm() {
    local n="$1"
    # pevm's bench finds its data at ../../data/ethereum.
    (cd "$pevm/crates/pevm" && CRITERION_HOME="$work/criterion" "${pin[@]}" "$pevm_bench" --bench --noplot \
        --warm-up-time "$warmup" --measurement-time "$measure" "^Block $n\(") > "$work/blocks/$n/pevm.txt"
}

run_ours() {
    local n="$1" dir="$work/blocks/$n"
    for r in $(seq "$repeat"); do
        "${pin[@]}" "$bin/bal-replay" bench-reference --dump "$dir/dump" >> "$dir/reference.txt"
    done
    # A block that wipes a contract's storage cannot be replayed from a BAL: sequential only.
    grep -q "cannot express" "$dir/import.err" && return
    "${pin[@]}" "$bin/bal-replay" bench --dump "$dir/dump" --state "$dir/state" --threads "1,$workers" --batch 1 \
        --io full --no-baselines --repeat "$repeat" --json "$dir/memory.json" > /dev/null
    "${pin[@]}" "$bin/bal-replay" bench --dump "$dir/dump" --state "$dir/state" --threads "$workers" --batch 1 \
        --io parallel,batched --no-baselines --disk-resident "${drop[@]}" --repeat "$repeat" \
        --json "$dir/disk.json" > /dev/null
}

i=0
for n in $BLOCKS; do
    dir="$work/blocks/$n"
    mkdir -p "$dir"
    "$bin/bal-dump" import-fixture --out "$dir/dump" --state "$dir/state" "$fixtures/$n" > /dev/null 2> "$dir/import.err"
    echo "block $n" >&2
    # Other processes' share of a shared machine, beside each block's figures.
    cut -d' ' -f1 /proc/loadavg > "$dir/load.txt"
    if [ $((i % 2)) = 0 ]; then run_pevm "$n"; run_ours "$n"; else run_ours "$n"; run_pevm "$n"; fi
    echo "$n" >> "$results"
    i=$((i + 1))
done

python3 - "$work" "$workers" <<'EOF'
import glob, json, os, re, statistics, sys

work, workers = sys.argv[1], int(sys.argv[2])

# Each figure is a pair, (fastest, median): on a shared machine others' work only adds time, so the
# fastest run is the nearest to an engine's own cost; the median says how much the machine moved.
def pair(times):
    return (min(times), statistics.median(times)) if times else None

def criterion(n, kind):
    """pevm: the time per iteration of each of criterion's samples, ms."""
    found = glob.glob(os.path.join(work, "criterion", f"Block {n}(*", kind, "new", "sample.json"))
    if not found:
        return None
    s = json.load(open(found[0]))
    return pair([t / i / 1e6 for t, i in zip(s["times"], s["iters"])])

def engine(path, key):
    """Ours: bench's median run, and its fastest from the highest throughput, ms."""
    out = {}
    if os.path.exists(path):
        for run in json.load(open(path))["runs"]:
            median = run["exec_with_io_s"] * 1e3
            fastest = run["gas"] / run["mgas_per_s_max"] / 1e3 if run["mgas_per_s_max"] > 0 else median
            out[key(run)] = (fastest, median)
    return out

rows = []
for n in open(os.path.join(work, "results.tsv")).read().split():
    d = os.path.join(work, "blocks", n)
    head = re.search(r"Block (\d+)\((\d+) txs, (\d+) gas\)", open(os.path.join(d, "pevm.txt")).read())
    txs, gas = int(head.group(2)), int(head.group(3))
    # The reference executor's in-memory rate, printed as Mgas/s: more digits than its seconds,
    # which only an empty block needs.
    ref = [gas / float(m) / 1e3 if float(m) > 0 else float(sec) * 1e3 for m, sec in
           re.findall(r"in memory ([\d.]+) Mgas/s \(([\d.]+)s\)", open(os.path.join(d, "reference.txt")).read())
           if float(m) > 0 or float(sec) > 0]
    memory = engine(os.path.join(d, "memory.json"), lambda r: r["threads"])
    disk = engine(os.path.join(d, "disk.json"), lambda r: r["design"])
    rows.append(dict(
        n=int(n), txs=txs, gas=gas, load=open(os.path.join(d, "load.txt")).read().strip(),
        pevm_seq=criterion(n, "Sequential"), pevm_par=criterion(n, "Parallel"),
        seq=pair(ref), one=memory.get(1), par=memory.get(workers),
        disk_p=disk.get("parallel"), disk_b=disk.get("batched")))

def ms(v):
    return "-" if v is None else f"{v:.3f}" if v < 1 else f"{v:.2f}"

def ratio(a, b):
    return "-" if a is None or b is None or b == 0 else f"{a / b:.2f}"

def mgas(gas, t):
    return "-" if t is None or gas == 0 else f"{gas / t / 1e3:.0f}"

def line(label, gas, txs, r, load, e):
    g = lambda k: None if r[k] is None else r[k][e]
    return (f"| {label} | {gas / 1e6:.1f} | {txs} | {ms(g('pevm_seq'))} | {ms(g('pevm_par'))} "
            f"| {ratio(g('pevm_seq'), g('pevm_par'))} | {mgas(gas, g('pevm_par'))} | {ms(g('seq'))} "
            f"| {ms(g('one'))} | {ms(g('par'))} | {ratio(g('seq'), g('par'))} | {ratio(g('one'), g('par'))} "
            f"| {mgas(gas, g('par'))} | {ms(g('disk_p'))} | {ms(g('disk_b'))} | {ratio(g('disk_p'), g('par'))} "
            f"| {load} |")

keys = ["pevm_seq", "pevm_par", "seq", "one", "par", "disk_p", "disk_b"]
def summed(rs):
    return {k: None if any(r[k] is None for r in rs) else tuple(sum(r[k][e] for r in rs) for e in (0, 1))
            for k in keys}

print(f"| block | gas (M) | txs | pevm seq (ms) | pevm par (ms) | pevm speedup | pevm par (Mgas/s) "
      f"| ours seq (ms) | ours 1 worker (ms) | ours {workers} workers (ms) | ours speedup over seq "
      f"| over 1 worker | ours par (Mgas/s) | ours disk, parallel I/O (ms) | ours disk, batched I/O (ms) "
      f"| disk / memory | load |")
print("|" + " --- |" * 17)
for r in rows:
    print(line(r["n"], r["gas"], r["txs"], r, r["load"], 0))
# Sums over the blocks every column has, so each ratio and rate is over the same gas (an empty
# block adds none, and our sequential time of one is below the millisecond it is printed to).
full = [r for r in rows if r["par"] is not None and r["pevm_par"] is not None and r["gas"] > 0]
# pevm runs a block sequentially below 4 Mgas or with fewer transactions than workers.
big = [r for r in full if r["gas"] >= 4_000_000 and r["txs"] >= workers]
for e, estimate in ((0, "fastest"), (1, "median")):
    for label, rs in ((f"{len(full)} blocks with gas a BAL replays", full), (f"{len(big)} of them >= 4 Mgas", big)):
        if rs:
            print(line(f"sum, {label}, {estimate}", sum(r["gas"] for r in rs), sum(r["txs"] for r in rs),
                       summed(rs), "", e))
EOF
echo "inputs and raw outputs in $work" >&2
