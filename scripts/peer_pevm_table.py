#!/usr/bin/env python3
"""The table scripts/peer-pevm.sh prints from its work dir, and the one step of it that reads our
bench results, on its own.

    scripts/peer_pevm_table.py <work dir> <workers>        the Markdown table (peer-pevm.sh's last step)
    scripts/peer_pevm_table.py --bench <bench.json> <threads|design>
                                                         each run of one `bal-replay bench --json`
                                                         file as that table reads it: its key, then
                                                         its fastest and median execution, ms
"""
import glob, json, os, re, statistics, sys

# Each figure is a pair, (fastest, median): on a shared machine others' work only adds time, so the
# fastest run is the nearest to an engine's own cost; the median says how much the machine moved.
def pair(times):
    return (min(times), statistics.median(times)) if times else None

def criterion(work, n, kind):
    """pevm: the time per iteration of each of criterion's samples, ms."""
    found = glob.glob(os.path.join(work, "criterion", f"Block {n}(*", kind, "new", "sample.json"))
    if not found:
        return None
    s = json.load(open(found[0]))
    return pair([t / i / 1e6 for t, i in zip(s["times"], s["iters"])])

# The bench result schema this reads (`schema_version`, crates/bench): its runs' execution time
# is under `timing`, their throughput under `throughput`.
BENCH_SCHEMA_VERSION = 3


def engine(path, key):
    """Ours: bench's median run, and its fastest from the highest throughput, ms."""
    out = {}
    if os.path.exists(path):
        with open(path) as f:
            bench = json.load(f)
        version = bench.get("schema_version", 1)
        if version != BENCH_SCHEMA_VERSION:
            sys.exit(f"{path}: bench result schema version {version}, this script reads "
                     f"version {BENCH_SCHEMA_VERSION}")
        for run in bench["runs"]:
            median = run["timing"]["exec_with_io_s"] * 1e3
            best = run["throughput"]["mgas_per_s_max"]
            fastest = run["gas"] / best / 1e3 if best > 0 else median
            out[key(run)] = (fastest, median)
    return out


def table(work, workers):
    """The Markdown table of the blocks peer-pevm.sh ran in `work`, with `workers` workers."""
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
            pevm_seq=criterion(work, n, "Sequential"), pevm_par=criterion(work, n, "Parallel"),
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


def bench_only(path, key_name):
    """One bench file's runs as the table reads them: key, fastest ms, median ms, a line each."""
    for key, (fastest, median) in engine(path, lambda r: r[key_name]).items():
        print(f"{key}\t{fastest:.6f}\t{median:.6f}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--bench":
        bench_only(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3:
        table(sys.argv[1], int(sys.argv[2]))
    else:
        sys.exit(__doc__)
