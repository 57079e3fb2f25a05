#!/usr/bin/env bash
# Regenerates docs/findings.md: the project's own answer, `bal-replay study` pages of six chains
# assembled (the large state's first, the others as appendices, each quoted on the first screen
# where it answers the question another way: on 16 cores, in the research's regime over 2,000
# blocks). Every figure comes from the studies' bench JSON; the page is never edited by hand.
# Needs ../shared/fixtures next to the checkout, about 25 GB free under the work dir, and (for the
# disk's bound) Debian's fio. Takes about an hour and a half on a 2-core machine.
#
#   scripts/findings.sh [WORK_DIR]    (default: a fresh directory under /var/tmp)
#
# The large state's study sweeps the cache regimes too (block caches up to the state's size, and,
# as root, the research's buffered regime with the page cache emptied before each run).
#
# Each dump WORK_DIR already holds whole is reused (a partial one is refused), so an interrupted run
# resumes; a study whose runs are there already (bench.json) only computes its page again from them.
# Only what this script wrote is left there: the states and the studies' outputs, for a look at
# their JSON.
set -euo pipefail
cd "$(dirname "$0")/.."
work="${1:-$(mktemp -d /var/tmp/bal-replay-findings.XXXXXX)}"
mkdir -p "$work"
# Makes a dump (and its state) with the command that follows, unless a complete one is there: a dump
# is reused only if `bal-dump inspect` reads all the blocks it should hold. Anything else at its path
# (an interrupted import's, or a user's) is refused, never studied as if whole and never deleted.
dump_step() {
    local dump="$1" blocks="$2"; shift 2
    for partial in "$dump".partial-*; do
        [ -e "$partial" ] && echo "note: $partial is an interrupted generate's; remove it to free its space" >&2
    done
    if [ ! -e "$dump" ]; then "$@"; return; fi
    local manifest
    # Read whole before matching: grep stopping at the first line would cut inspect short.
    manifest=$("$bin/bal-dump" inspect "$dump" 2>/dev/null) || manifest=""
    if grep -q "^  $blocks records," <<<"$manifest"; then return; fi
    echo "error: $dump is there but is not a complete dump of $blocks blocks (an interrupted run's?);" \
        "move it and its state away, then run this again" >&2
    exit 1
}
# Runs a study, or where its runs exist already (bench.json), computes its page again from them
# (the study leaves its bench.json as it is). As root, each run starts with the page cache emptied,
# which a study does only when asked.
drop_caches=()
[ "$(id -u)" = 0 ] && drop_caches=(--drop-caches)
study() {
    local out="$1"; shift
    if [ -e "$out/bench.json" ]; then "$@" --from-bench "$out/bench.json"; else "$@" "${drop_caches[@]}"; fi
}
fixtures=../shared/fixtures
# Every figure from the measurement build (fat LTO, one codegen unit: Cargo.toml's `measure`).
cargo build -q --profile measure -p bal-replay -p bal-dump
bin="${CARGO_TARGET_DIR:-target}/measure"

# The runs scripts/sixteen-cores.sh made on a 16-core machine (docs/findings/sixteen-cores/): their
# frontier is drawn beside the large state's, and step 5 computes their own page.
sixteen=docs/findings/sixteen-cores
runs="$work/sixteen/runs"
if [ ! -e "$runs/bench.json" ]; then
    mkdir -p "$runs"
    cp "$sixteen/study.json" "$sixteen/sweep.json" "$runs/"
    gunzip -c "$sixteen/bench.json.gz" > "$runs/bench.json.partial"
    mv "$runs/bench.json.partial" "$runs/bench.json"
fi

# 1. On the disk: a 200-block mainnet-like chain over a 200 M-entry state (9.4 GB).
dump_step "$work/big/dump" 200 "$bin/bal-dump" generate --out "$work/big/dump" --state "$work/big/state" --blocks 200 \
    --state-entries 200000000 --holders-per-token 20000 --accounts 200000
# The disk measured once for this machine, over the large state's SST files, and read by every page
# computed here (one calibration per machine): without fio, no page has a disk bound.
disk="$work/disk.txt"
if [ ! -e "$disk" ] && command -v fio >/dev/null; then
    sync
    scripts/fio-random-reads.sh "$work/big/state" "1 4 16 64" 5 > "$disk.partial"
    mv "$disk.partial" "$disk"
fi
disk_args=(--no-fio)
[ -e "$disk" ] && disk_args=(--disk-table "$disk")
big=("$bin/bal-replay" study --dump "$work/big/dump" --state "$work/big/state" --out "$work/big/findings"
    --batch 1,50 --repeat 5 --beside "$runs/bench.json" "${disk_args[@]}"
    --title "a generated mainnet-like chain of 200 blocks over a 200 M-entry state")
study "$work/big/findings" "${big[@]}"

# 2. The research's worst case for I/O: transactions of SLOADs of random slots (10 blocks of 69 M
#    gas over a 50 M-entry state), block by block and as one mega-block of 10 blocks.
dump_step "$work/worst/dump" 10 "$bin/bal-dump" generate --profile worst-case-io --out "$work/worst/dump" \
    --state "$work/worst/state" --blocks 10 --state-entries 50000000
worst=("$bin/bal-replay" study --dump "$work/worst/dump" --state "$work/worst/state" --out "$work/worst/findings"
    --threads 1,32 --batch 1,10 --repeat 5 --no-sweep "${disk_args[@]}"
    --title "the research's worst case for I/O: 10 generated blocks of SLOADs of random slots over a 50 M-entry state")
study "$work/worst/findings" "${worst[@]}"

# 3. The real mainnet fixture blocks a BAL can replay in parallel (those that wipe a contract's
#    storage, which a BAL cannot express, left out), each over its own pre-state, at batch 1.
skip=" 1796867 2675000 8889776 10760440 11114732 11743952 12047794 12159808 12243999 12520364 12522062 "
dirs=()
for d in "$fixtures"/mainnet/[0-9]*; do
    [[ "$skip" == *" $(basename "$d") "* ]] || dirs+=("$d")
done
dump_step "$work/mainnet/dump" "${#dirs[@]}" "$bin/bal-dump" import-fixture --out "$work/mainnet/dump" --state "$work/mainnet/state" "${dirs[@]}"
mainnet=("$bin/bal-replay" study --dump "$work/mainnet/dump" --state "$work/mainnet/state"
    --out "$work/mainnet/findings" --quick --batch 1 --repeat 5 "${disk_args[@]}"
    --title "the ${#dirs[@]} mainnet fixture blocks a BAL can replay in parallel (Frontier to Cancun)")
study "$work/mainnet/findings" "${mainnet[@]}"

# 4. The Amsterdam dev chain: the network's own BALs against each design.
amsterdam_blocks=$(find "$fixtures/amsterdam-dev/blocks" -mindepth 1 -maxdepth 1 -type d | wc -l)
dump_step "$work/amsterdam/dump" "$amsterdam_blocks" "$bin/bal-dump" import-chain --out "$work/amsterdam/dump" --state "$work/amsterdam/state" \
    "$fixtures/amsterdam-dev"
amsterdam=("$bin/bal-replay" study --dump "$work/amsterdam/dump" --state "$work/amsterdam/state"
    --out "$work/amsterdam/findings" --quick --repeat 5 "${disk_args[@]}"
    --title "the Amsterdam dev chain (reth v2.5.1, 80 blocks)")
study "$work/amsterdam/findings" "${amsterdam[@]}"

# 5. The same question on 16 cores: the runs scripts/sixteen-cores.sh made on a 16-core machine
#    (docs/findings/sixteen-cores/), their page computed here over the same chain, generated again
#    (a pure function of its parameters; a 4.7 GB state).
dump_step "$work/sixteen/dump" 50 "$bin/bal-dump" generate --out "$work/sixteen/dump" --state "$work/sixteen/state" \
    --blocks 50 --state-entries 100000000 --holders-per-token 20000 --accounts 200000
"$bin/bal-replay" study --dump "$work/sixteen/dump" --state "$work/sixteen/state" --out "$work/sixteen/findings" \
    --from-bench "$runs/bench.json" --disk-table "$sixteen/disk.txt" \
    --title "a generated mainnet-like chain of 50 blocks over a 100 M-entry state, on a 16-core machine"

# 6. The research's own regime over a chain as long as the research's (2,000 blocks): buffered reads
#    through the page cache, emptied once before each run and warmed by the run as it replays the
#    chain in order, beside a 32 MiB block cache. As root only (it empties the page cache).
# One worker too: the page's "what carries" and its cost per key read come from a one-worker run
# (no worker waits for a core), as on the other pages.
long_threads=$(printf '%s\n' 1 "$(nproc)" 32 | sort -nu | paste -sd, -)
if [ "$(id -u)" = 0 ]; then
    dump_step "$work/long/dump" 2000 "$bin/bal-dump" generate --out "$work/long/dump" --state "$work/long/state" \
        --blocks 2000 --state-entries 100000000 --holders-per-token 20000 --accounts 200000
    if [ ! -e "$work/long/bench.json" ]; then
        "$bin/bal-replay" bench --dump "$work/long/dump" --state "$work/long/state" --batch 50 \
            --io full,batched,parallel --no-baselines --drop-caches --block-cache 32MiB --pin-metadata \
            --threads "$long_threads" --repeat 3 --json "$work/long/bench.json.partial" > /dev/null
        mv "$work/long/bench.json.partial" "$work/long/bench.json"
    fi
    "$bin/bal-replay" study --dump "$work/long/dump" --state "$work/long/state" --out "$work/long/findings" \
        --from-bench "$work/long/bench.json" "${disk_args[@]}" \
        --title "a generated mainnet-like chain of 2,000 blocks over a 100 M-entry state, in the research's regime"
else
    echo "note: not root: the research's regime (which empties the page cache) is left out" >&2
fi

# 7. Execution CPU per Mgas of recent mainnet blocks against the large study's chain, in one run.
mkdir -p "$work/cpu"
if [ ! -e "$work/cpu/table.md" ]; then
    scripts/cpu-per-gas.sh "$bin" "$work/cpu/runs" "$work/big/dump" "$work/big/state" > "$work/cpu/table.md.partial"
    mv "$work/cpu/table.md.partial" "$work/cpu/table.md"
fi

# The pages: docs/findings.md opens with the large state's study (its answer first), then the
# generated chain's CPU per gas against mainnet's; the mainnet fixture blocks and the Amsterdam
# chain have a page each under docs/findings/. Command lines name the script's work directory
# and the binary, not this machine's paths.
out=docs/findings.md
mkdir -p docs/findings
machine="$(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
provenance="Generated by \`scripts/findings.sh\` on $(date -u +%Y-%m-%d) ($machine); measurement build (Cargo profile \`measure\`: release, fat LTO, one codegen unit). Regenerate it with that script; never edit it by hand."
# A study's page, one heading level down, its charts copied beside it under docs/findings/
# (`prefix` is the charts' path from the page).
study_page() {
    local study="$1" prefix="$2"
    cp "$work/$study/findings/frontier.svg" "docs/findings/frontier-$study.svg"
    [ -e "$work/$study/findings/sweep.svg" ] && cp "$work/$study/findings/sweep.svg" "docs/findings/sweep-$study.svg"
    [ -e "$work/$study/findings/read-cost.svg" ] && cp "$work/$study/findings/read-cost.svg" "docs/findings/read-cost-$study.svg"
    sed -e 's/^#/##/' -e "s|(frontier.svg)|(${prefix}frontier-$study.svg)|" \
        -e "s|(sweep.svg)|(${prefix}sweep-$study.svg)|" -e "s|(read-cost.svg)|(${prefix}read-cost-$study.svg)|" \
        -e "s|$bin/||g" -e "s|$work|WORK_DIR|g" \
        "$work/$study/findings/findings.md"
}
# Sentences of a study page's answer, for the decision on the first screen: `trade` (parallel
# against batched I/O) or `research` (what parts it from the research's 0.78).
sentence_of() {
    python3 - "$1" "$2" <<'PY'
import re, sys
page, which = open(sys.argv[1]).read(), sys.argv[2]
answer = page.split("## The answer\n\n", 1)[1].split("\n", 1)[0]
sentences = re.split(r"(?<=\.) (?=[A-Z])", answer)
starts = {"trade": "Dropping the read keys", "research": "The research measured"}
print(next(s for s in sentences if s.startswith(starts[which])))
PY
}
# One row of the decision's table: what each design keeps, and what holds parallel I/O there (the
# CPU, the disk at its workers' depth, or both), read from a study page's answer, which computes
# the cause from that row's own figures.
decision_row() {
    python3 - "$@" <<'PY'
import re, sys
page, where, regime = open(sys.argv[1]).read(), sys.argv[2], sys.argv[3]
answer = page.split("## The answer\n\n", 1)[1].split("\n", 1)[0]
share = r" keeps ([0-9.]+ \([0-9.]+-[0-9.]+\)) of "
parallel = re.search(r"parallel I/O" + share + r"full BAL's throughput at (?:under )?\d+% of its size \((\d+) threads\)", answer)
batched = re.search(r"batched I/O" + share + r"full BAL's throughput at (?:under )?\d+% of its size \((\d+) threads\)", answer)
trade = re.search(r"\(parallel I/O against batched I/O, batch \d+\)" + share + "batched I/O's", answer)
causes = {
    "what parts this machine from it is the CPU and the disk alike": "the CPU and the disk alike",
    "what parts this machine from it is the disk at the depth the workers keep": "the disk at its workers' depth",
    "what parts this machine from it is the CPU per Mgas": "the CPU per Mgas",
    "neither the CPU nor the disk parts this machine from it": "neither the CPU nor the disk",
}
cause = next((short for text, short in causes.items() if text in answer), "not measured")
# The engine that ran the row's runs, as its page names it (the bench records its commit).
engine = re.search(r"build of (engine commit [0-9a-f]+(?:-dirty)?|an engine whose commit its runs did not record)", page)
where += f"; {engine[1] if engine else 'engine not named'}" if len(sys.argv) < 5 else f"; {sys.argv[4]}"
print(f"| {where} | {regime} | {parallel[1]}, {parallel[2]} workers | {batched[1]}, {batched[2]} workers | {trade[1]} | {cause} |")
PY
}
# A row's cause in a sentence: the clause of its page's answer that names what parts it from the
# research, with that row's figures.
why_row() {
    python3 - "$1" "$2" <<'PY'
import re, sys
page, where = open(sys.argv[1]).read(), sys.argv[2]
answer = page.split("## The answer\n\n", 1)[1].split("\n", 1)[0]
sentences = re.split(r"(?<=\.) (?=[A-Z])", answer)
research = next(s for s in sentences if s.startswith("The research measured"))
clause = re.search(r"(what parts this machine from it is .*|neither the CPU nor the disk parts .*)$", research)[1]
print(f"- **{where}**: {clause}")
PY
}
# The research's own row, from the research's figures a study page sets beside its own.
research_row() {
    python3 - "$1" <<'PY'
import re, sys
line = re.search(r"^The research \(16 threads, batch 50, NVMe\): .*$", open(sys.argv[1]).read(), re.M)[0]
full = float(re.search(r"full BAL \d+ KB and (\d+) Mgas/s", line)[1])
batched, parallel = (float(re.search(d + r" \d+ KB \([0-9.]+\), (\d+) Mgas/s", line)[1]) for d in ("batched I/O", "parallel I/O"))
print(f"| the research: 16 threads, 2,000 mainnet blocks | its own: page cache emptied before each run, NVMe | {parallel / full:.2f} | {batched / full:.2f} | {parallel / batched:.2f} | - |")
PY
}
# The size half of the answer beside its chain: each part of a BAL in bytes per Mgas (RLP), from
# the "what carries" table of each page named (`label=page` arguments) and the research's sizes per
# block (as the first page sets them beside its own) over its 22.4 Mgas blocks (1,121 Mgas per
# batch of 50), then each design's share of full BAL's size on each, so a reader sees how the
# shares move with the chain.
size_table() {
    python3 - "$@" <<'PY'
import re, sys
RESEARCH_MGAS_PER_BLOCK = 1121 / 50
def sizes(page):
    text = open(page).read()
    head = next(l for l in text.splitlines() if l.startswith("| Design |") and "BAL bytes per Mgas (RLP)" in l)
    cols = [c.strip() for c in head.strip("|").split("|")]
    rlp = cols.index("BAL bytes per Mgas (RLP)")
    rows = text.split(head, 1)[1].splitlines()[2:]
    out = {}
    for row in rows:
        if not row.startswith("|"):
            break
        cells = [c.strip() for c in row.strip("|").split("|")]
        out.setdefault(cells[0], float(cells[rlp]))
    return out["full BAL"], out["batched I/O"], out["parallel I/O"]
pages = [a.split("=", 1) for a in sys.argv[1:]]
rows = [(label, sizes(page)) for label, page in pages]
line = re.search(r"^The research \(16 threads, batch 50, NVMe\): .*$", open(pages[0][1]).read(), re.M)[0]
kbs = [int(re.search(d + r" (\d+) KB", line)[1]) for d in ("full BAL", "batched I/O", "parallel I/O")]
research = tuple(kb * 1000 / RESEARCH_MGAS_PER_BLOCK for kb in kbs)
rows.append((f"the research's 2,000 mainnet blocks ({kbs[0]}, {kbs[1]} and {kbs[2]} KB per 22.4 Mgas block)", research))
print("| Chain | Diffs (parallel I/O's BAL) | Read keys | Read values | Full BAL | Parallel I/O's share of full BAL's size | Batched I/O's |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for label, (full, batched, parallel) in rows:
    print(f"| {label} | {parallel:.0f} | {batched - parallel:.0f} | {full - batched:.0f} | {full:.0f} | {parallel / full:.2f} | {batched / full:.2f} |")
keys = [batched - parallel for _, (full, batched, parallel) in rows]
shares = ", ".join(f"{parallel / full:.2f}" for _, (full, _b, parallel) in rows)
print()
print(f"The first chain's read keys are {keys[0] / keys[1]:.1f} times the second's per Mgas and {keys[0] / keys[-1]:.2f} times the"
      f" research's; what dropping them saves moves with them, and parallel I/O's share of full BAL's size reads {shares} in"
      " the table's order.")
PY
}
{
    echo "# Findings"
    echo
    echo "$provenance The research's worst case for I/O, the mainnet fixture blocks and the Amsterdam dev chain have"
    echo "pages of their own: [worst case for I/O](findings/worst-case.md), [mainnet fixture blocks](findings/mainnet.md),"
    echo "[Amsterdam dev chain](findings/amsterdam.md), [16 cores](findings/sixteen-cores.md), [the research's regime over 2,000 blocks](findings/research-regime.md)."
    echo "The dated notes under docs/notes/ are the history of how the project got here."
    if [ -e "$disk" ]; then
        echo "Every page computed on this machine reads one measurement of its disk, WORK_DIR/disk.txt (\`scripts/fio-random-reads.sh\`"
        echo "over the large state's SST files: 4 KiB O_DIRECT random reads, 5 s per queue depth):" \
            "$(awk 'NR > 1 { printf "%sQD%s %s reads/s", (NR > 2 ? ", " : ""), $1, $2 }' "$disk")."
    fi
    echo
    # The decision: each design's share of full BAL's throughput in each regime measured, one row
    # each, read from the pages that measured them; then the trade's bytes and the research.
    big_page="$work/big/findings/findings.md"
    echo "## The decision"
    echo
    echo "Each design's throughput as a share of full BAL's at batch 50 (mega-blocks of 50 blocks): execution with"
    echo "its reads, each design at its best worker count, the median of the paired repeats with its bootstrap 95%"
    echo "interval in brackets; measurement build. Each row's page gives end-to-end time beside it and how it was"
    echo "measured."
    echo
    echo "| Where | Regime | Parallel I/O keeps | Batched I/O keeps | Parallel over batched | What holds parallel I/O |"
    echo "| --- | --- | --- | --- | --- | --- |"
    decision_row "$big_page" "2 cores, 200 blocks over a 200 M-entry state ([below](#the-answer), 5 repeats)" \
        "disk-resident, direct reads, 8 MiB block cache"
    decision_row "$work/sixteen/findings/findings.md" \
        "16 cores, 50 blocks over a 100 M-entry state ([its page](findings/sixteen-cores.md), 5 repeats)" \
        "disk-resident, direct reads, 8 MiB block cache" \
        "the engine of 2026-11-27 (its runs' commit not recorded; before efaa27a kept a worker's EVM across tasks)"
    if [ -e "$work/long/findings/findings.md" ]; then
        decision_row "$work/long/findings/findings.md" \
            "2 cores, 2,000 blocks over a 100 M-entry state ([its page](findings/research-regime.md), 3 repeats)" \
            "the research's: page cache emptied before each run, 32 MiB block cache"
    fi
    research_row "$big_page"
    echo
    echo "$(sentence_of "$big_page" trade)"
    echo
    # The spread between machines of one kind, from the runs this script made on them before (the
    # notes that hold their figures): an interval is one machine's repeats, not the next machine's.
    echo "How far an interval holds beyond its machine: the same large-state study made earlier on 2-core VMs of this"
    echo "kind gave parallel I/O 0.31 (0.28-0.35) and batched I/O 0.58 (0.57-0.60) of full BAL (an AMD EPYC VM,"
    echo "2026-11-27, the engine before efaa27a), and 0.49 (0.42-0.61) and 0.72 (0.63-0.77) (an Intel Xeon VM, 2026-11-28,"
    echo "engine 3fef671; [the note](notes/2026-11-28-findings-on-a-second-vm.md)). The intervals above are this machine's"
    echo "repeats; machines of one kind part by more than that. What carries from one to another is each design's CPU and"
    echo "device reads per Mgas, in each page's \"what carries\" table."
    echo
    echo "The size half depends on the chain. Each part of a BAL in bytes per Mgas (RLP), from each page's \"what carries\" table"
    echo "and the research's sizes per block (its KB read as 1,000 bytes):"
    echo
    size_table "the generated chain of the large state (200 blocks)=$big_page" \
        "the mainnet fixture blocks (Frontier to Cancun, one at a time)=$work/mainnet/findings/findings.md"
    echo
    echo "What parts each row from the research's parallel I/O at 0.78, from that row's own figures:"
    echo
    why_row "$big_page" "2 cores, 200 M-entry state"
    why_row "$work/sixteen/findings/findings.md" "16 cores, 100 M-entry state"
    [ -e "$work/long/findings/findings.md" ] && why_row "$work/long/findings/findings.md" "2 cores, 2,000 blocks, the research's regime"
    echo
    study_page big findings/
    echo "## Execution CPU per gas: the generated chain against mainnet"
    echo
    echo "Full BAL (which reads no state) on one worker at batch 1, each transaction's thread CPU summed over its gas"
    echo "(\`scripts/cpu-per-gas.sh\`, the two chains alternating). The fixture blocks replay one at a time, each over its"
    echo "own pre-state, so their contracts' code is loaded cold in every block; the generated chain's stays loaded."
    echo
    cat "$work/cpu/table.md"
} > "$out.partial"
appendices=(worst mainnet amsterdam sixteen)
[ -e "$work/long/findings/findings.md" ] && appendices+=(long)
for study in "${appendices[@]}"; do
    {
        echo "# Findings: appendix"
        echo
        echo "$provenance Back to [the findings](../findings.md)."
        [ "$study" = sixteen ] && cat "$sixteen/machine.txt"
        echo
        study_page "$study" ""
    } > "docs/findings/$study.md.partial"
done
mv "$out.partial" "$out"
mv docs/findings/worst.md.partial docs/findings/worst-case.md
mv docs/findings/mainnet.md.partial docs/findings/mainnet.md
mv docs/findings/amsterdam.md.partial docs/findings/amsterdam.md
mv docs/findings/sixteen.md.partial docs/findings/sixteen-cores.md
[ -e docs/findings/long.md.partial ] && mv docs/findings/long.md.partial docs/findings/research-regime.md
echo "wrote $out and docs/findings/{worst-case,mainnet,amsterdam,sixteen-cores,research-regime}.md (inputs and JSON in $work)"
