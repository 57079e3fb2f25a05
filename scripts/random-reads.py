#!/usr/bin/env python3
"""The disk's random-read curve where fio is not installed: 4 KiB O_DIRECT random reads over a
RocksDB state's SST files (read-only), `depth` processes each with one read outstanding, for each
depth. Prints scripts/fio-random-reads.sh's table, with a `# source:` line naming this tool.

Usage: scripts/random-reads.py <rocksdb state dir> [depths, default "1 4 16 64 128"] [seconds per depth, default 3]
"""
import bisect, mmap, multiprocessing as mp, os, random, sys, time

state = sys.argv[1]
depths = [int(d) for d in (sys.argv[2] if len(sys.argv) > 2 else "1 4 16 64 128").split()]
seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 3.0
files = sorted(os.path.join(state, f) for f in os.listdir(state)
               if f.endswith(".sst") and os.path.getsize(os.path.join(state, f)) > (1 << 20))
if not files:
    sys.exit(f"no SST files over 1 MiB in {state}")
# Each 4 KiB block of every file equally likely: a cumulative count of blocks per file.
ends = []
for f in files:
    ends.append((ends[-1] if ends else 0) + os.path.getsize(f) // 4096)


def reader(seed, results):
    rng = random.Random(seed)
    fds = [os.open(f, os.O_RDONLY | os.O_DIRECT) for f in files]
    buf = mmap.mmap(-1, 4096)  # page-aligned, as O_DIRECT needs
    reads, waited = 0, 0.0
    stop = time.monotonic() + seconds
    while (start := time.monotonic()) < stop:
        block = rng.randrange(ends[-1])
        i = bisect.bisect_right(ends, block)
        os.preadv(fds[i], [buf], (block - (ends[i - 1] if i else 0)) * 4096)
        waited += time.monotonic() - start
        reads += 1
    results.put((reads, waited))


print("# source: 4 KiB O_DIRECT random preads, one process per read in flight (scripts/random-reads.py)")
print("depth iops mean_latency_us")
for depth in depths:
    results = mp.Queue()
    procs = [mp.Process(target=reader, args=(depth * 1000 + k, results)) for k in range(depth)]
    for p in procs:
        p.start()
    done = [results.get() for _ in procs]
    for p in procs:
        p.join()
    reads = sum(r for r, _ in done)
    print(depth, round(reads / seconds), round(sum(w for _, w in done) / max(reads, 1) * 1e6, 1), flush=True)
