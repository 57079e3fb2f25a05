#!/usr/bin/env bash
# Execution CPU per Mgas of recent mainnet blocks (the Shanghai and Cancun fixture blocks, each
# over its own pre-state) against `bal-dump generate`'s mainnet-like chain, in one run: full BAL
# (which reads no state) on one worker at batch 1, each transaction's thread CPU summed over its
# gas, from the bench's task profiles; the two inputs alternate (A B B A), each run repeated.
#
#   scripts/cpu-per-gas.sh BIN_DIR WORK_DIR [GENERATED_DUMP GENERATED_STATE]
#
# BIN_DIR holds bal-replay and bal-dump (the build measured); WORK_DIR is a new or empty directory
# for the fixtures' dump and the JSON (nothing else there is touched). Without a generated chain,
# a 50-block mainnet-like one is generated there. Prints a Markdown table.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$1"; work="$2"
if [ -e "$work" ] && [ -n "$(ls -A "$work")" ]; then
    echo "error: $work is not empty: give a new or empty directory" >&2; exit 1
fi
mkdir -p "$work"
fixtures=../shared/fixtures/mainnet
recent=()
# Shanghai activated at block 17,034,870, Cancun at 19,426,587.
for d in "$fixtures"/[0-9]*; do
    [ "$(basename "$d")" -ge 17034870 ] && recent+=("$d")
done
"$bin/bal-dump" import-fixture --out "$work/recent/dump" --state "$work/recent/state" "${recent[@]}" >&2
if [ $# -ge 4 ]; then
    gen_dump="$3"; gen_state="$4"
else
    gen_dump="$work/generated/dump"; gen_state="$work/generated/state"
    "$bin/bal-dump" generate --out "$gen_dump" --state "$gen_state" --blocks 50 >&2
fi
run() {
    "$bin/bal-replay" bench --dump "$1" --state "$2" --io full --threads 1 --batch 1 \
        --no-baselines --repeat 3 --task-profile --json "$3" >/dev/null
}
for round in a b; do
    if [ "$round" = a ]; then order=(recent generated); else order=(generated recent); fi
    for which in "${order[@]}"; do
        if [ "$which" = recent ]; then
            run "$work/recent/dump" "$work/recent/state" "$work/recent-$round.json"
        else
            run "$gen_dump" "$gen_state" "$work/generated-$round.json"
        fi
    done
done
python3 - "$work" "${#recent[@]}" <<'PY'
import json, statistics, sys
work, blocks = sys.argv[1], sys.argv[2]
def per_mgas(path):
    run = json.load(open(path))["runs"][0]
    cpu = sum(sum(p["tasks"]["cpu_ns"]) for p in run["batch_profiles"])
    gas = sum(sum(p["tasks"]["gas"]) for p in run["batch_profiles"])
    return cpu / 1e6 / (gas / 1e6), gas / 1e6
rows = {}
for which in ("recent", "generated"):
    figures = [per_mgas(f"{work}/{which}-{r}.json") for r in "ab"]
    rows[which] = (statistics.median(f[0] for f in figures), min(f[0] for f in figures),
                   max(f[0] for f in figures), figures[0][1])
print("| Chain | Mgas | Execution CPU per Mgas (ms), median of 2 benches | Range |")
print("| --- | --- | --- | --- |")
names = {"recent": f"mainnet, Shanghai and Cancun fixture blocks ({blocks})",
         "generated": "`bal-dump generate` mainnet-like"}
for which, (med, lo, hi, mgas) in rows.items():
    print(f"| {names[which]} | {mgas:.1f} | {med:.3f} | {lo:.3f}-{hi:.3f} |")
ratio = rows["generated"][0] / rows["recent"][0]
print(f"\nThe generated chain's execution CPU per Mgas is {ratio:.2f} times mainnet's recent blocks'.")
PY
