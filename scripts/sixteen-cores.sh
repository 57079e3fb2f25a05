#!/usr/bin/env bash
# The findings page's 16-core study, on a machine with that many cores: generates the 50-block
# mainnet-like chain over a 100 M-entry state (4.7 GB), measures the disk's random reads (fio, or
# scripts/random-reads.py where fio is not installed) and studies the chain at one worker and at
# the cores, batch 50, 5 repeats, with the regime sweep (as root, the research's buffered regime
# too). Builds nothing: BIN_DIR holds the measurement build's bal-replay and bal-dump. About 7
# minutes on 16 cores.
#
#   scripts/sixteen-cores.sh BIN_DIR WORK_DIR    (WORK_DIR new or empty)
#
# docs/findings/sixteen-cores/ keeps what scripts/findings.sh computes the page from: the study's
# bench.json (gzipped), study.json and sweep.json, and the disk's table.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(cd "${1:?usage: $0 BIN_DIR WORK_DIR}" && pwd)"
work="${2:?usage: $0 BIN_DIR WORK_DIR}"
if [ -e "$work" ] && [ -n "$(ls -A "$work")" ]; then
    echo "error: $work is not empty: give a new or empty directory" >&2; exit 1
fi
mkdir -p "$work"
"$bin/bal-dump" generate --out "$work/dump" --state "$work/state" --blocks 50 --state-entries 100000000 \
    --holders-per-token 20000 --accounts 200000
if command -v fio >/dev/null; then
    scripts/fio-random-reads.sh "$work/state" "1 4 16 64 128" 3 > "$work/disk.txt"
else
    scripts/random-reads.py "$work/state" "1 4 16 64 128" 3 > "$work/disk.txt"
fi
drop=()
[ "$(id -u)" = 0 ] && drop=(--drop-caches)
cores=$(nproc)
"$bin/bal-replay" study --dump "$work/dump" --state "$work/state" --out "$work/study" --threads "1,$cores" \
    --batch 50 --repeat 5 --disk-table "$work/disk.txt" "${drop[@]}" \
    --title "a generated mainnet-like chain of 50 blocks over a 100 M-entry state, on a $cores-core machine"
