#!/usr/bin/env bash
# The disk's own random-read limit, for comparison with a disk-resident bench: 4 KiB random reads
# with O_DIRECT (libaio) at each queue depth, over the SST files of a RocksDB state, read-only (the
# state is never written, and no test file is laid out). Needs Debian's `fio`.
#
# Usage: scripts/fio-random-reads.sh <rocksdb state dir> [queue depths, default "1 4 16 64 128"] [seconds per depth, default 10]
# Prints one line per depth: depth, IOPS, mean latency (us).
set -euo pipefail
state="${1:?usage: $0 <rocksdb state dir> [depths] [seconds]}"
depths="${2:-1 4 16 64 128}"
seconds="${3:-10}"
command -v fio >/dev/null || { echo "fio is not installed (apt-get install fio)" >&2; exit 1; }
# Names relative to the state (fio limits its --filename to 4096 characters); at most 300 files.
files=$(find "$state" -maxdepth 1 -name '*.sst' -size +1M -printf '%f\n' | sort | head -n 300 | tr '\n' ':' | sed 's/:$//')
[ -n "$files" ] || { echo "no SST files in $state" >&2; exit 1; }
echo "depth iops mean_latency_us"
for qd in $depths; do
    fio --name=randread --readonly --directory="$state" --filename="$files" --rw=randread --bs=4k --direct=1 \
        --ioengine=libaio --iodepth="$qd" --runtime="$seconds" --time_based --numjobs=1 \
        --group_reporting --output-format=json |
        python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]["read"]; print(sys.argv[1], round(j["iops"]), round(j["clat_ns"]["mean"]/1000, 1))' "$qd"
done
