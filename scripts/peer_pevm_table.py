#!/usr/bin/env python3
"""The tables scripts/peer-pevm.sh prints from its work dir, and the one step of it that reads our
bench results, on its own.

    scripts/peer_pevm_table.py <work dir> <workers>        the race and the per-block table
    scripts/peer_pevm_table.py --page <work dir> <workers> docs/peer-pevm.md: the page around them
                                                         (peer-pevm.sh's last step)
    scripts/peer_pevm_table.py --bench <bench.json> <threads|design>
                                                         each run of one `bal-replay bench --json`
                                                         file as that table reads it: its key, then
                                                         its fastest and median execution, ms
"""
import glob, json, os, random, re, statistics, sys

# Bootstrap resamples for each interval, and the seed that makes a table the same on every print.
RESAMPLES = 2000
SEED = 7928


def pair(times):
    """(fastest, median) of a block's samples: on a shared machine others' work only adds time, so
    the fastest is the nearest to an engine's own cost; the median says how much the machine moved."""
    return (min(times), statistics.median(times)) if times else None


def criterion(work, n, kind, home="criterion"):
    """pevm: the time per iteration of each of criterion's samples, ms."""
    found = glob.glob(os.path.join(work, home, f"Block {n}(*", kind, "new", "sample.json"))
    if not found:
        return None
    s = json.load(open(found[0]))
    return [t / i / 1e6 for t, i in zip(s["times"], s["iters"])]


# The result schemas this reads (`schema_version`, crates/measurement/bench): a bench run's execution time is
# under `timing`, its repeats' throughputs in `repeat_mgas_per_s`; the reference executor's result
# holds each block's first and warm executions, and each warm one's receipts-root check.
BENCH_SCHEMA_VERSION = 3
REFERENCE_SCHEMA_VERSION = 2


def load(path, expected, kind):
    with open(path) as f:
        result = json.load(f)
    version = result.get("schema_version", 1)
    if version != expected:
        sys.exit(f"{path}: {kind} schema version {version}, this script reads version {expected}")
    return result


def engine(path, key):
    """Ours: each run's repeats as execution times, ms, by `key`."""
    out = {}
    if os.path.exists(path):
        for run in load(path, BENCH_SCHEMA_VERSION, "bench result")["runs"]:
            gas = run["gas"]
            times = [gas / m / 1e3 for m in run.get("repeat_mgas_per_s") or [] if m > 0]
            if not times:
                times = [run["timing"]["exec_with_io_s"] * 1e3]
            out[key(run)] = times
    return out


def reference(d, prefix=""):
    """Ours, sequential: each process's first execution of the block, every warm one, and every
    warm one less its receipts-root check, ms (the build's whose files carry `prefix`)."""
    first, warm, unchecked, profile = [], [], [], None
    for path in sorted(glob.glob(os.path.join(d, f"{prefix}reference-*.json"))):
        result = load(path, REFERENCE_SCHEMA_VERSION, "reference executor result")
        profile = result["build_profile"]
        for block in result["per_block"]:
            first.append(block["memory_first_s"] * 1e3)
            warm.extend(s * 1e3 for s in block["memory_warm_s"])
            unchecked.extend((s - root) * 1e3 for s, root in
                             zip(block["memory_warm_s"], block["memory_warm_receipts_root_s"]))
    return first, warm, unchecked, profile


def interval(rows, key, other=None):
    """The sum over `rows` of each block's median of `key` (over `other`'s, a ratio, where given),
    with a bootstrap 95% interval: each block's samples resampled on their own."""
    rng = random.Random(SEED)

    def total(k, resample):
        pick = (lambda xs: [rng.choice(xs) for _ in xs]) if resample else (lambda xs: xs)
        return sum(statistics.median(pick(r[k])) for r in rows)

    def value(resample):
        t = total(key, resample)
        return t if other is None else total(other, resample) / t

    estimate = value(False)
    draws = sorted(value(True) for _ in range(RESAMPLES))
    return estimate, draws[int(0.025 * RESAMPLES)], draws[int(0.975 * RESAMPLES) - 1]


# Our columns of a block's row, in the race table's order.
OURS = ("first", "warm", "unchecked", "one", "par")


def ours(d, prefix, key, workers):
    """One of our builds on a block (its files named with `prefix`): its build profile, and its
    columns of the row (`OURS`, each named with `key` before it), None where it did not run."""
    first, warm, unchecked, profile = reference(d, prefix)
    memory = engine(os.path.join(d, f"{prefix}memory.json"), lambda r: r["threads"])
    columns = dict(first=first or None, warm=warm or None, unchecked=unchecked or None,
                   one=memory.get(1), par=memory.get(workers))
    return profile, {key + k: v for k, v in columns.items()}


def table(work, workers, out=print):
    """The race and the per-block table of the blocks peer-pevm.sh ran in `work`."""
    print = out
    rows, profiles = [], set()
    for n in open(os.path.join(work, "results.tsv")).read().split():
        d = os.path.join(work, "blocks", n)
        head = re.search(r"Block (\d+)\((\d+) txs, (\d+) gas\)", open(os.path.join(d, "pevm.txt")).read())
        txs, gas = int(head.group(2)), int(head.group(3))
        profile, plain = ours(d, "", "", workers)
        profiles.add(profile)
        # Ours built with target-cpu=native, where peer-pevm.sh ran it (NATIVE_BIN).
        _, native_build = ours(d, "native-", "n_", workers)
        disk = engine(os.path.join(d, "disk.json"), lambda r: r["design"])
        rows.append(dict(
            n=int(n), txs=txs, gas=gas, load=open(os.path.join(d, "load.txt")).read().strip(),
            pevm_seq=criterion(work, n, "Sequential"), pevm_par=criterion(work, n, "Parallel"),
            native_seq=criterion(work, n, "Sequential", "criterion-native"),
            native_par=criterion(work, n, "Parallel", "criterion-native"),
            **plain, **native_build,
            disk_p=disk.get("parallel"), disk_b=disk.get("batched")))

    # The race: over the blocks every column has and a BAL replays (an empty block adds no gas).
    raced = [r for r in rows if r["gas"] > 0 and all(r[k] for k in ("pevm_seq", "pevm_par") + OURS)]
    gas = sum(r["gas"] for r in raced)
    print(f"Our build: {', '.join(sorted(p or '?' for p in profiles))} profile. "
          f"{len(raced)} blocks, {gas / 1e6:.1f} Mgas; each figure the sum of the blocks' medians as "
          f"Mgas/s, a bootstrap 95% interval ({RESAMPLES} resamples of each block's repeats) in brackets.")
    print()
    print("| engine | sequential, first execution | sequential, warm | sequential, warm, less the "
          f"receipts-root check | 1 worker | {workers} workers |")
    print("| --- | --- | --- | --- | --- | --- |")

    def rate(key):
        if not key:
            return "-"
        t, low, high = interval(raced, key)
        return f"{gas / t / 1e3:.0f} ({gas / high / 1e3:.0f}-{gas / low / 1e3:.0f})"

    native = all(r["native_seq"] and r["native_par"] for r in raced)
    print(f"| pevm (Block-STM) | - | {rate('pevm_seq')} | - | - | {rate('pevm_par')} |")
    if native:
        print(f"| pevm, -C target-cpu=native | - | {rate('native_seq')} | - | - | {rate('native_par')} |")
    ours_native = all(r["n_" + k] for r in raced for k in OURS)
    for label, key in (("ours (reference executor; engine from the full BAL)", ""),
                       ("ours, -C target-cpu=native", "n_")):
        if key != "n_" or ours_native:
            print(f"| {label} | " + " | ".join(rate(key + k) for k in OURS) + " |")
    print()
    print("Ours against pevm, each a time over a time: pevm's over ours (above 1, ours is faster):")
    print()
    ratios = [("sequential, warm", "warm", "pevm_seq"),
              ("sequential, warm, ours less the receipts-root check pevm's timed execution does not make",
               "unchecked", "pevm_seq"),
              (f"parallel at {workers} workers (ours from the full BAL, pevm's Block-STM)", "par", "pevm_par"),
              ("ours at 1 worker against pevm's sequential", "one", "pevm_seq")]
    if native:
        ratios += [("pevm with target-cpu=native against pevm without it, sequential (above 1: native is faster)",
                    "native_seq", "pevm_seq"),
                   (f"the same at {workers} workers", "native_par", "pevm_par")]
    if ours_native:
        ratios += [("ours with target-cpu=native against ours without it, sequential, warm (above 1: native "
                    "is faster)", "n_warm", "warm"),
                   (f"the same at {workers} workers", "n_par", "par")]
    if native and ours_native:
        ratios += [("both with target-cpu=native: sequential, warm", "n_warm", "native_seq"),
                   ("both with target-cpu=native: sequential, warm, ours less the receipts-root check",
                    "n_unchecked", "native_seq"),
                   (f"both with target-cpu=native: parallel at {workers} workers", "n_par", "native_par"),
                   ("both with target-cpu=native: ours at 1 worker against pevm's sequential",
                    "n_one", "native_seq")]
    for label, mine, theirs in ratios:
        estimate, low, high = interval(raced, mine, theirs)
        inside = ", within the repeats' noise" if low <= 1 <= high else ""
        print(f"- {label}: {estimate:.2f} ({low:.2f}-{high:.2f}{inside})")
    print()

    def ms(v):
        return "-" if v is None else f"{v:.3f}" if v < 1 else f"{v:.2f}"

    def ratio(a, b):
        return "-" if a is None or b is None or b == 0 else f"{a / b:.2f}"

    print(f"| block | gas (M) | txs | pevm seq (ms) | pevm par (ms) | ours seq first (ms) | ours seq warm (ms) "
          f"| ours 1 worker (ms) | ours {workers} workers (ms) | pevm par / ours par (time) | ours disk, parallel I/O (ms) "
          f"| ours disk, batched I/O (ms) | disk / memory | load |")
    print("|" + " --- |" * 14)
    for r in rows:
        m = {k: (pair(r[k])[1] if r[k] else None) for k in
             ("pevm_seq", "pevm_par", "first", "warm", "one", "par", "disk_p", "disk_b")}
        print(f"| {r['n']} | {r['gas'] / 1e6:.1f} | {r['txs']} | {ms(m['pevm_seq'])} | {ms(m['pevm_par'])} "
              f"| {ms(m['first'])} | {ms(m['warm'])} | {ms(m['one'])} | {ms(m['par'])} "
              f"| {ratio(m['pevm_par'], m['par'])} | {ms(m['disk_p'])} | {ms(m['disk_b'])} "
              f"| {ratio(m['disk_p'], m['par'])} | {r['load']} |")


def bench_only(path, key_name):
    """One bench file's runs as the table reads them: key, fastest ms, median ms, a line each."""
    for key, times in engine(path, lambda r: r[key_name]).items():
        fastest, median = pair(times)
        print(f"{key}\t{fastest:.6f}\t{median:.6f}")


PAGE_HEAD = """# A peer on the same blocks: pevm beside our engine

Generated by `scripts/peer-pevm.sh`; never edit it by hand. pevm
([risechain/pevm](https://github.com/risechain/pevm)) executes a block in parallel by Block-STM: it
runs transactions optimistically, detects conflicts as they happen and re-executes, with no access
list. Its `mainnet` criterion benchmark runs real mainnet blocks with their state in memory; every
block of `../shared/fixtures/mainnet` is among its `data/ethereum/blocks` (our fixtures were
normalised from pevm's snapshots). Both engines run on revm, each on the version it pins (below).
This page runs them on the same blocks, in one run, block by block, the side that goes first
alternating (ABBA), both pinned to the same cores.
"""

PAGE_METHOD = """## How each figure is timed

- **pevm**: its own criterion bench (`Pevm::execute` of the block, sequential and parallel, state in
  memory), each sample the mean of many iterations in one warm process; a block's figure is the
  median of its samples. `Pevm::execute` runs a block sequentially, even when asked for parallel,
  below 4 Mgas or with fewer transactions than the concurrency.
- **Ours, sequential**: the reference executor (revm through alloy-evm's block executor, no BAL built)
  over an in-memory store of the block's pre-state (`bal-replay bench-reference --repeat`): in each of
  REPEAT processes the block's first execution (cold: the process has not run it yet), then WARM more
  in the same process, warm as pevm's criterion runs it. Each execution ends with our check of the
  header's receipts root and logs bloom, which pevm's timed execution does not make: the column
  "less the receipts-root check" takes off each warm execution the time of computing that root and
  bloom again on its receipts. Two more costs pevm's timed execution does not have stay in every
  sequential column: each receipt's bloom (alloy-evm's receipt builder) and revm's bundle, through
  which alloy-evm's executor returns the block's changes (a profile of six large blocks put them at
  5.6% and 9.0% of our sequential time: docs/notes/2026-11-28-sequential-against-pevm-split.md).
  Profiled beside pevm on the same blocks, the rest of the difference (7% of our time) is spread
  over the transaction, state reads through revm's `State` and the commit
  (docs/notes/2026-11-28-pevm-profiled-beside-ours.md).
- **Ours, parallel**: the engine executing from the full BAL's pre-values (`bal-replay bench --io full
  --batch 1`), which reads no state, at 1 and WORKERS workers, REPEAT repeats in one process; the time
  is execution (the workers' run), not planning, the header check or merging the changes. Each
  task checks the values it wrote against the BAL's and builds its receipt's bloom (8.4% and 6.2%
  of one worker's time, the mean over the same six blocks, in the same note); with revm's BAL
  machinery, the pre-values' reads and the tasks' set-up, a quarter of one worker's time goes to
  work pevm's sequential run does not do (docs/notes/2026-11-28-pevm-profiled-beside-ours.md).
- **Intervals**: a sum of per-block medians with a bootstrap 95% interval (each block's samples
  resampled on their own); a ratio whose interval holds 1 is within the repeats' noise.
- 11 mainnet fixture blocks wipe a contract's storage by SELFDESTRUCT, which a BAL cannot express:
  they run sequentially only and are left out of the race, as is the empty block 19910734.
"""


def page(work, workers):
    """docs/peer-pevm.md: what ran, how, the race and the per-block table, and how to run it again."""
    lines = []
    out = lambda *a: lines.append(" ".join(str(x) for x in a))
    versions = open(os.path.join(work, "versions.txt")).read().strip().splitlines()
    print(PAGE_HEAD)
    print("## What ran\n")
    for v in versions:
        print(f"- {v}")
    print()
    print(PAGE_METHOD)
    table(work, workers, out)
    race_end = next(i for i, l in enumerate(lines) if l.startswith("| block |"))
    print("## The race\n")
    print("\n".join(lines[:race_end]).rstrip() + "\n")
    print("## Block by block (medians, ms)\n")
    print("\n".join(lines[race_end:]) + "\n")
    print("""## Run it again

```sh
# pevm: its bench, in its own profile (release: fat LTO, one codegen unit; its panic = "abort" does
# not reach a bench target, which cargo builds unwinding, as ours), once without the
# -C target-cpu=native its .cargo/config.toml adds (CARGO_ENCODED_RUSTFLAGS= takes it away), once with
cd <pevm checkout>
CARGO_TARGET_DIR=<plain target> CARGO_ENCODED_RUSTFLAGS= cargo bench --no-run -p pevm --bench mainnet
CARGO_TARGET_DIR=<native target> cargo bench --no-run -p pevm --bench mainnet
# its bytecodes where the checkout lacks data/ethereum/bytecodes.bincode.gz (rebuilt from our fixtures):
cp scripts/peer-pevm/bytecodes_from_fixtures.rs <pevm checkout>/crates/pevm/examples/
(cd <pevm checkout>/crates/pevm && cargo run --release --example bytecodes_from_fixtures -- <fixtures>/mainnet)
# ours, the measurement build (fat LTO, one codegen unit), once without and once with target-cpu=native
cargo build --profile measure -p bal-replay -p bal-dump
CARGO_TARGET_DIR=<our native target> CARGO_ENCODED_RUSTFLAGS=-Ctarget-cpu=native \\
    cargo build --profile measure -p bal-replay -p bal-dump
PEVM_TARGET=<plain target> PEVM_NATIVE_TARGET=<native target> NATIVE_BIN=<our native target>/measure \\
    BUILD="..." scripts/peer-pevm.sh <pevm checkout> <new work dir>
# on a machine that builds nothing (more cores): pack the builds and pevm's blocks here, unpack there
# and race at each worker count (the pack script's header has the loop)
PEVM_TARGET=<plain target> scripts/peer-pevm-pack.sh <pevm checkout> <new pack>.tar.xz
```
""")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--page":
        page(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) == 4 and sys.argv[1] == "--bench":
        bench_only(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3:
        table(sys.argv[1], int(sys.argv[2]))
    else:
        sys.exit(__doc__)
