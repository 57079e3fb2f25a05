#!/usr/bin/env python3
"""The tables scripts/peer-pevm.sh prints from its work dir, and the one step of it that reads our
bench results, on its own.

    scripts/peer_pevm_table.py <work dir> <workers>        the race and the per-block table
    scripts/peer_pevm_table.py --page <work dir> <workers> [<study dir>...]
                                                         docs/peer-pevm.md: the page around them
                                                         (peer-pevm.sh's last step), and a section
                                                         for each study's races at more workers
                                                         (its work*/ dirs, its machine.txt)
    scripts/peer_pevm_table.py --study <page> <study dir>...
                                                         the page again, its first race kept as it
                                                         has it (that race's raw outputs are not
                                                         here), each study's section computed
    scripts/peer_pevm_table.py --studies <page>          the study dirs the page's sections name
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
# holds each block's first and warm executions, and each warm one's receipts-root check. Versions 4
# to 7 of the bench result only added fields, so version 3 reads the same.
BENCH_SCHEMA_VERSIONS = (3, 4, 5, 6, 7)
REFERENCE_SCHEMA_VERSIONS = (2,)


def load(path, expected, kind):
    with open(path) as f:
        result = json.load(f)
    version = result.get("schema_version", 1)
    if version not in expected:
        if len(expected) == 1:
            reads = f"version {expected[0]}"
        else:
            reads = "versions " + ", ".join(str(v) for v in expected[:-1]) + f" or {expected[-1]}"
        sys.exit(f"{path}: {kind} schema version {version}, this script reads {reads}")
    return result


def engine(path, key):
    """Ours: each run's repeats as execution times, ms, by `key`."""
    out = {}
    if os.path.exists(path):
        for run in load(path, BENCH_SCHEMA_VERSIONS, "bench result")["runs"]:
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
        result = load(path, REFERENCE_SCHEMA_VERSIONS, "reference executor result")
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


def race(work, workers):
    """The rows, one per block, of the blocks peer-pevm.sh ran in `work`, our build profiles among
    them, and the rows of the race: those every column has and a BAL replays (an empty block adds no
    gas)."""
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
    raced = [r for r in rows if r["gas"] > 0 and all(r[k] for k in ("pevm_seq", "pevm_par") + OURS)]
    return rows, profiles, raced


def table(work, workers, out=print):
    """The race and the per-block table of the blocks peer-pevm.sh ran in `work`."""
    print = out
    rows, profiles, raced = race(work, workers)
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

Generated by `scripts/peer_pevm_table.py` from the races' raw outputs (`scripts/peer-pevm.sh`'s
last step); never edit it by hand. pevm
([risechain/pevm](https://github.com/risechain/pevm)) executes a block in parallel by Block-STM: it
runs transactions optimistically, detects conflicts as they happen and re-executes, with no access
list. Its `mainnet` criterion benchmark runs real mainnet blocks with their state in memory; every
block of `../shared/fixtures/mainnet` is among its `data/ethereum/blocks` (our fixtures were
normalised from pevm's snapshots). Both engines run on revm, each on the version it pins (below).
This page runs them on the same blocks, in one run, block by block, the side that goes first
alternating (ABBA), both pinned to the same cores: first on the machine that builds both, then at
more workers on machines that build nothing (from the pack `scripts/peer-pevm-pack.sh` makes), a
section each. Each race sits between markers naming its raw outputs; `--study` computes the
sections of the studies kept under `../shared/studies` again from theirs and keeps the first race as
the page has it (its raw outputs stay on the machine that ran it).
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


RUN_AGAIN = """## Run it again

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
# its work dirs come back as a study (../shared/studies/<date>-<name>/work<N>/ and its machine.txt:
# nproc, /proc/cpuinfo's model name, free -g); its section, the rest of the page as it is:
python3 scripts/peer_pevm_table.py --study docs/peer-pevm.md ../shared/studies/<study> > <new page>
```
"""

# The markers around each race's part of the page: the first race's, and each study's, named by its
# directory (as given, so the page reads the same wherever the checkout lies).
MAIN = "the race of scripts/peer-pevm.sh's work dir"
STUDY = "the races of "


def begin(name):
    return f"<!-- begin: {name} -->"


def end(name):
    return f"<!-- end: {name} -->"


def main_race(work, workers):
    """The first race's part of the page: what ran, the race, and its blocks one by one."""
    lines = []
    table(work, workers, lambda *a: lines.append(" ".join(str(x) for x in a)))
    race_end = next(i for i, l in enumerate(lines) if l.startswith("| block |"))
    versions = open(os.path.join(work, "versions.txt")).read().strip().splitlines()
    return "\n\n".join([
        "## What ran\n\n" + "\n".join(f"- {v}" for v in versions),
        "## The race\n\n" + "\n".join(lines[:race_end]).strip(),
        "## Block by block (medians, ms)\n\n" + "\n".join(lines[race_end:]).strip()])


def kept_race(path):
    """The first race's part of the page at `path`, as it has it: between its markers or, on a page
    from before them, its What ran, The race and Block by block sections."""
    try:
        text = open(path).read()
    except OSError as e:
        sys.exit(f"{path}: {e.strerror} (the page whose first race is kept)")
    if begin(MAIN) in text and end(MAIN) in text:
        return text.split(begin(MAIN), 1)[1].split(end(MAIN), 1)[0].strip("\n")
    kept = [part.rstrip("\n") for part in re.split(r"(?m)^(?=## )", text)
            if part.startswith(("## What ran\n", "## The race\n", "## Block by block"))]
    if len(kept) != 3:
        sys.exit(f"{path}: neither the markers {begin(MAIN)} and {end(MAIN)} nor the first race's "
                 "What ran, The race and Block by block sections")
    return "\n\n".join(kept)


def studies_of(path):
    """The study directories whose sections the page at `path` holds, in its order."""
    return re.findall(r"(?m)^" + re.escape(begin(STUDY)[:-4]) + r"(.+) -->$", open(path).read())


def write_page(main, studies):
    """docs/peer-pevm.md: what it is, how each figure is timed, the first race, each study's races at
    more workers, and how to run it again. Every section is computed before the first line is printed,
    so a study that cannot be read leaves nothing half written."""
    sections = [(STUDY + os.path.normpath(d), study(d)) for d in studies]
    print(PAGE_HEAD)
    print(PAGE_METHOD)
    for name, text in [(MAIN, main)] + sections:
        print(begin(name) + "\n")
        print(text + "\n")
        print(end(name) + "\n")
    print(RUN_AGAIN, end="")


def page(work, workers, studies):
    write_page(main_race(work, workers), studies)


# pevm's `mainnet` bench runs Block-STM at min(available_parallelism, 8) threads on x86 (12 on
# aarch64: crates/pevm/benches/mainnet.rs); peer-pevm.sh pins both sides to WORKERS CPUs.
PEVM_CAP = 8


def machine(d):
    """A study's machine from its machine.txt: cores, CPU model, memory (GiB), and whether taskset
    was there to pin the runs."""
    path = os.path.join(d, "machine.txt")
    try:
        text = open(path).read()
    except OSError as e:
        sys.exit(f"{path}: {e.strerror}: a study names its machine there "
                 "(nproc, /proc/cpuinfo's model name, free -g)")
    cores = text.split("\n", 1)[0].strip()
    model = re.search(r"(?m)^model name\s*:\s*(.+)$", text)
    memory = re.search(r"(?m)^Mem:\s+(\d+)\s", text)
    if not (cores.isdigit() and model and memory):
        sys.exit(f"{path}: expected nproc's count on its first line, /proc/cpuinfo's model name line "
                 "and free -g's Mem: row")
    return int(cores), model.group(1).strip(), int(memory.group(1)), bool(re.search(r"(?m)/taskset$", text))


def study_runs(d):
    """Each of a study's races (its work*/ directories, peer-pevm.sh's raw outputs), by workers."""
    runs = []
    for work in sorted(glob.glob(os.path.join(d, "work*"))):
        path = os.path.join(work, "versions.txt")
        try:
            versions = open(path).read().strip().splitlines()
        except OSError as e:
            sys.exit(f"{path}: {e.strerror} (peer-pevm.sh writes it in its work dir)")
        workers = re.search(r"(?m)^machine: .*\bworkers (\d+)\b", "\n".join(versions))
        if not workers:
            sys.exit(f"{path}: no 'machine: ... workers N' line (peer-pevm.sh writes one)")
        if not os.path.exists(os.path.join(work, "results.tsv")):
            sys.exit(f"{work}: no results.tsv, the blocks peer-pevm.sh ran")
        rows, profiles, raced = race(work, int(workers.group(1)))
        runs.append(dict(dir=os.path.basename(work), workers=int(workers.group(1)), versions=versions,
                         rows=rows, profiles=profiles, raced=raced))
    if not runs:
        sys.exit(f"{d}: no work*/ directory (peer-pevm.sh's raw outputs, one a worker count)")
    return sorted(runs, key=lambda r: r["workers"])


def figure(estimate, low, high, unit=""):
    inside = ", within the repeats' noise" if low <= 1 <= high else ""
    return f"{estimate:.2f}{unit} ({low:.2f}-{high:.2f}{inside})"


def standing(low, high):
    """Ours against pevm from a ratio's interval (pevm's time over ours)."""
    return "ahead of" if low > 1 else "behind" if high < 1 else "level with"


def joined(words):
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def study(d):
    """A study's section: the machine, what ran, each race's figures side by side, where ours stands
    at each worker count, and the blocks one by one."""
    cores, model, memory, pinned = machine(d)
    runs = study_runs(d)
    counts = [r["workers"] for r in runs]
    out = []
    say = out.append
    say(f"## At {joined([str(w) for w in counts])} workers, on {cores} cores\n")
    # The blocks of each race: one sentence where they are the same in every run.
    blocks = {tuple(r["n"] for r in run["raced"]) for run in runs}
    gas = {sum(r["gas"] for r in run["raced"]) for run in runs}
    if len(blocks) == 1:
        (raced,), (total,) = blocks, gas
        what = f"the same {len(raced)} blocks in each, {total / 1e6:.1f} Mgas ({', '.join(map(str, raced))})"
    else:
        what = "; ".join(f"at {run['workers']} workers {len(run['raced'])} blocks, "
                         f"{sum(r['gas'] for r in run['raced']) / 1e6:.1f} Mgas" for run in runs)
    disk = any(r["disk_p"] or r["disk_b"] for run in runs for r in run["rows"])
    capped = [w for w in counts if w > PEVM_CAP]
    say(f"The race again on a machine of {cores} cores ({model}, {memory} GiB of memory), "
        f"at {joined([str(w) for w in counts])} workers"
        + (", each run pinned to as many CPUs (taskset)" if pinned else "")
        + f": {what}; " + ("ours also on the disk" if disk else "ours in memory only (no run on the disk)")
        + f". Raw outputs: `{os.path.normpath(d)}` ({', '.join(run['dir'] + '/' for run in runs)}"
        + " and machine.txt), each figure computed from them as the first race's.\n")
    say("### What ran\n")
    seen = []
    for run in runs:
        for v in run["versions"]:
            if v not in seen:
                seen.append(v)
    for v in seen:
        inside = [run["dir"] + "/" for run in runs if v in run["versions"]]
        say(f"- {v}" + ("" if len(inside) == len(runs) else f" ({', '.join(inside)})"))
    say("")
    say("### The races\n")
    say(f"Each figure the sum of the blocks' medians as Mgas/s, a bootstrap 95% interval ({RESAMPLES} "
        "resamples of each block's repeats) in brackets.\n")
    say("| Mgas/s | " + " | ".join(f"{w} workers" for w in counts) + " |")
    say("|" + " --- |" * (len(counts) + 1))

    def rate(run, key):
        t, low, high = interval(run["raced"], key)
        g = sum(r["gas"] for r in run["raced"])
        return f"{g / t / 1e3:.0f} ({g / high / 1e3:.0f}-{g / low / 1e3:.0f})"

    for label, key in (("pevm sequential, warm", "pevm_seq"),
                       ("ours sequential (reference executor), warm", "warm"),
                       ("ours sequential, warm, less the receipts-root check", "unchecked"),
                       ("ours, engine from the full BAL, 1 worker", "one"),
                       ("pevm, Block-STM", "pevm_par"),
                       ("ours, engine from the full BAL", "par")):
        say(f"| {label} | " + " | ".join(rate(run, key) for run in runs) + " |")
    say("| pevm's Block-STM threads | " + " | ".join(str(min(w, PEVM_CAP)) for w in counts) + " |")
    say("")
    say("Ours against pevm, each a time over a time: pevm's over ours (above 1, ours is faster):\n")
    say("| pevm's time over ours | " + " | ".join(f"{w} workers" for w in counts) + " |")
    say("|" + " --- |" * (len(counts) + 1))
    ratios = {}
    for label, mine, theirs in (("parallel (ours from the full BAL, pevm's Block-STM)", "par", "pevm_par"),
                                ("sequential, warm", "warm", "pevm_seq"),
                                ("sequential, warm, ours less the receipts-root check", "unchecked", "pevm_seq"),
                                ("ours at 1 worker against pevm's sequential", "one", "pevm_seq")):
        ratios[mine] = [interval(run["raced"], mine, theirs) for run in runs]
        say(f"| {label} | " + " | ".join(figure(*f) for f in ratios[mine]) + " |")
    say("")
    # Where ours stands, in words, from the same figures.
    par, seq = ratios["par"], ratios["unchecked"]
    words = {standing(low, high) for _, low, high in par}
    if len(words) == 1:
        sentence = (f"Where ours stands: from the full BAL our engine is {words.pop()} pevm's Block-STM: "
                    + joined([f"{figure(*f, 'x')} " + (f"its speed at {w} workers" if i == 0 else f"at {w}")
                              for i, (w, f) in enumerate(zip(counts, par))]))
    else:
        sentence = ("Where ours stands: from the full BAL our engine is "
                    + joined([f"{standing(f[1], f[2])} pevm's Block-STM at {w} workers "
                              f"({figure(*f, 'x')} its speed)" for w, f in zip(counts, par)]))
    if capped:
        sentence += (f"; pevm's bench caps its concurrency at {PEVM_CAP} on x86, so at "
                     + joined([f"{w} workers it ran {PEVM_CAP} threads on {w} CPUs" for w in capped]))
    words = {standing(low, high) for _, low, high in seq}
    sentence += (". Sequentially ours is "
                 + (f"{words.pop()} pevm in the runs at {joined([str(w) for w in counts])} workers"
                    if len(words) == 1 else
                    joined([f"{standing(low, high)} pevm in the run at {w} workers"
                            for w, (_, low, high) in zip(counts, seq)]))
                 + ": " + joined([figure(*f) for f in seq]) + " of its speed less the receipts-root check, "
                 + joined([f"{e:.2f}" for e, _, _ in ratios["warm"]]) + " with it")
    gains = [interval(run["raced"], "par", "one") for run in runs]
    sentence += (". From 1 worker the engine gains "
                 + joined([f"{figure(*g, 'x')} at {w}" for w, g in zip(counts, gains)]) + " workers.")
    if len(runs) > 1:
        # The same sequential work in each run: how far apart the runs' figures lie is the machine's
        # noise from one run to the next, which a reader needs before comparing across columns.
        spread = []
        for key in ("pevm_seq", "warm", "unchecked", "one"):
            totals = [sum(statistics.median(r[key]) for r in run["raced"]) / sum(r["gas"] for r in run["raced"])
                      for run in runs]
            spread.append(1 - min(totals) / max(totals))
        sentence += (f" The runs' sequential and 1-worker figures, the same work on the same CPUs, differ "
                     f"by {min(spread) * 100:.0f}-{max(spread) * 100:.0f}% from one run to another: "
                     "that machine's noise between runs, to keep in mind when comparing its columns.")
    say(sentence + "\n")
    say("### Block by block (medians, ms)\n")
    columns = (("pevm seq", "pevm_seq"), ("ours seq warm", "warm"), ("ours 1 worker", "one"),
               ("pevm par", "pevm_par"), ("ours par", "par"))
    say("| block | gas (M) | txs | " + " | ".join(f"{w} workers: {label}" for w in counts
                                                 for label, _ in columns) + " |")
    say("|" + " --- |" * (3 + len(columns) * len(runs)))
    by_block = [{r["n"]: r for r in run["rows"]} for run in runs]

    def ms(row, key):
        if not (row and row[key]):
            return "-"
        v = statistics.median(row[key])
        return f"{v:.3f}" if v < 1 else f"{v:.2f}"

    for n in sorted(set().union(*by_block)):
        some = next(rows[n] for rows in by_block if n in rows)
        say(f"| {n} | {some['gas'] / 1e6:.1f} | {some['txs']} | "
            + " | ".join(ms(rows.get(n), key) for rows in by_block for _, key in columns) + " |")
    return "\n".join(out)


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "--page":
        page(sys.argv[2], int(sys.argv[3]), sys.argv[4:])
    elif len(sys.argv) >= 4 and sys.argv[1] == "--study":
        write_page(kept_race(sys.argv[2]), sys.argv[3:])
    elif len(sys.argv) == 3 and sys.argv[1] == "--studies":
        for d in studies_of(sys.argv[2]):
            print(d)
    elif len(sys.argv) == 4 and sys.argv[1] == "--bench":
        bench_only(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3:
        table(sys.argv[1], int(sys.argv[2]))
    else:
        sys.exit(__doc__)
