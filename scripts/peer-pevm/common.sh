# What scripts/peer-pevm.sh and scripts/peer-pevm-pack.sh must agree on (sourced by both): the pack
# carries exactly the bench binary and blocks the race would pick.

# The newest mainnet bench binary cargo left in a target dir (criterion's harness: a filter and its
# options).
newest_bench() {
    find "$1/release/deps" -maxdepth 1 -type f -executable -name 'mainnet-*' \
        -printf '%T@ %p\n' 2>/dev/null | sort -rn | head -n 1 | cut -d' ' -f2-
}

# The blocks both pevm's data dir ($1, data/ethereum) and our fixtures ($2) have, one a line, in order.
blocks_on_both_sides() {
    comm -12 <(ls "$1/blocks" | sort) <(ls "$2" | sort) | sort -n
}

# Exits unless $1 holds our measurement build's bal-replay and bal-dump.
need_our_binaries() {
    for b in bal-replay bal-dump; do
        [ -x "$1/$b" ] || { echo "no $1/$b: cargo build --profile measure -p bal-replay -p bal-dump" >&2; exit 1; }
    done
}
