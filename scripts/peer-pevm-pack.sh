#!/usr/bin/env bash
# Packs what scripts/peer-pevm.sh needs to race on a machine that builds nothing (a lent many-core
# one): our measurement build's bal-replay and bal-dump (stripped), pevm's `mainnet` bench binary,
# pevm's Cargo.lock and commit, and pevm's data for the blocks both sides have, in one xz tarball
# (about 26 MB: it travels with a device run, which carries 64 MiB at most).
#
#   scripts/peer-pevm-pack.sh <pevm checkout> OUT.tar.xz    (OUT must not exist)
#
# Environment: BIN (our binaries, default ${CARGO_TARGET_DIR:-target}/measure), PEVM_TARGET (pevm's
# target dir, default <pevm checkout>/target), PEVM_COMMIT (where the checkout is not a git one).
#
# Unpacked (tar -xJf OUT -C DIR), DIR/peer-pack holds bin/ (our two binaries), pevm/ (a pevm checkout
# as peer-pevm.sh reads one: Cargo.lock, data/ethereum, crates/pevm, target/release/deps/mainnet-*)
# and pevm-commit. The race there, at 8 and 16 workers, our runs in memory only:
#
#   for w in 8 16; do BIN=DIR/peer-pack/bin PEVM_COMMIT=$(cat DIR/peer-pack/pevm-commit) WORKERS=$w \
#       DISK=0 BLOCKS="..." scripts/peer-pevm.sh DIR/peer-pack/pevm WORK_$w; done
#
# Each WORK_$w keeps the race's raw outputs; `peer_pevm_table.py --page WORK_$w $w` reads them
# without the blocks' dumps and states, which need not come back.
set -euo pipefail
cd "$(dirname "$0")/.."
usage="usage: $0 <pevm checkout> OUT.tar.xz"
pevm="$(cd "${1:?$usage}" && pwd)"
out="${2:?$usage}"
# Never overwrite: the tarball is new, and the staging dir is a fresh one of this script's.
if [ -e "$out" ] || [ -L "$out" ]; then
    echo "$out exists: give a new path" >&2
    exit 1
fi
bin="$(cd "${BIN:-${CARGO_TARGET_DIR:-target}/measure}" && pwd)"
pevm_target="${PEVM_TARGET:-$pevm/target}"
fixtures="$(pwd)/../shared/fixtures/mainnet"
. scripts/peer-pevm/common.sh
need_our_binaries "$bin"
bench="$(newest_bench "$pevm_target")"
[ -n "$bench" ] || { echo "no pevm mainnet bench under $pevm_target/release/deps (cargo bench --no-run -p pevm --bench mainnet)" >&2; exit 1; }
data="$pevm/data/ethereum"
for f in bytecodes.bincode.gz block_hashes.bincode; do
    [ -e "$data/$f" ] || { echo "$data/$f is missing" >&2; exit 1; }
done
commit="${PEVM_COMMIT:-$(git -C "$pevm" rev-parse HEAD 2>/dev/null || true)}"
[ -n "$commit" ] || { echo "$pevm is not a git checkout: set PEVM_COMMIT" >&2; exit 1; }

stage="$(mktemp -d /var/tmp/peer-pack.XXXXXX)"
trap 'rm -rf "$stage"' EXIT
pack="$stage/peer-pack"
mkdir -p "$pack/bin" "$pack/pevm/data/ethereum/blocks" "$pack/pevm/crates/pevm" "$pack/pevm/target/release/deps"
# Their build times are what the race's versions line reports: kept.
for b in bal-replay bal-dump; do strip -o "$pack/bin/$b" "$bin/$b" && touch -r "$bin/$b" "$pack/bin/$b"; done
cp -p "$bench" "$pack/pevm/target/release/deps/"
cp "$pevm/Cargo.lock" "$pack/pevm/"
cp "$data/bytecodes.bincode.gz" "$data/block_hashes.bincode" "$pack/pevm/data/ethereum/"
blocks="$(blocks_on_both_sides "$data" "$fixtures")"
for n in $blocks; do cp -r "$data/blocks/$n" "$pack/pevm/data/ethereum/blocks/"; done
echo "$commit" > "$pack/pevm-commit"
echo "compressing $(du -sh "$pack" | cut -f1) (xz: about a minute on one core)" >&2
tar -cJf "$stage/pack.tar.xz" -C "$stage" peer-pack
[ ! -e "$out" ] && [ ! -L "$out" ] || { echo "$out appeared while packing: left as it is" >&2; exit 1; }
mv "$stage/pack.tar.xz" "$out"
echo "packed $(echo "$blocks" | wc -w) blocks, $(du -h "$out" | cut -f1) in $out" >&2
