//! The disk flags of `run`, `bench` and `bench-db`, and the one value they resolve to.
//!
//! The flags tie together: `--disk-resident` means direct reads, pinned metadata and a small
//! block cache over RocksDB, and a dropped page cache inside a memory cgroup over MDBX, each
//! unless another flag says otherwise; RocksDB's own flags mean nothing over MDBX. Those rules live
//! in [`DiskArgs::resolve`] alone: commands read the [`DiskMode`] it returns, never the flags.

use bal_replay_mdbx_state::StateSpec;
use bal_replay_probe::memory_limit::MemoryLimit;
use bal_replay_rocks::RocksOptions;
use clap::Args;
use eyre::WrapErr;

/// Where the state's reads may be served from: the page cache, RocksDB's block cache, or only the
/// disk (`--disk-resident`). The rules are in [`DiskArgs::resolve`] and the README.
#[derive(Debug, Clone, Copy, Default, Args)]
#[command(next_help_heading = "Disk")]
pub struct DiskArgs {
    /// Drop the page cache before each run (root only).
    #[arg(long)]
    pub drop_caches: bool,
    /// RocksDB: direct reads (O_DIRECT), never served from the page cache.
    #[arg(long)]
    pub direct_io: bool,
    /// Reads reach the disk: RocksDB reads directly, MDBX runs in a memory cgroup.
    #[arg(long)]
    pub disk_resident: bool,
    /// RocksDB block cache, e.g. 64MiB [default: 512MiB; 8MiB with --disk-resident].
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub block_cache: Option<usize>,
    /// RocksDB: index and filters pinned in memory (default with --disk-resident).
    #[arg(long, conflicts_with = "unpinned_metadata")]
    pub pin_metadata: bool,
    /// With --disk-resident: leave RocksDB's index and filters to the block cache.
    #[arg(long)]
    pub unpinned_metadata: bool,
    /// Run in a memory cgroup (v1, root) [default: 512MiB for disk-resident MDBX].
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub memory_limit: Option<usize>,
}

/// The disk flags resolved for the stores a command reads ([`DiskArgs::resolve`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskMode {
    /// Whether the page cache is dropped before each run.
    pub drop_caches: bool,
    /// The memory cgroup the process runs in, bytes, if any.
    pub memory_limit: Option<usize>,
    /// How RocksDB states are read; `None` where the command reads none.
    pub rocksdb: Option<RocksReads>,
}

/// How a RocksDB state is read: what [`RocksOptions`] the disk flags set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RocksReads {
    /// Direct reads: SST blocks never come from the page cache.
    pub direct_io: bool,
    /// The block cache, bytes.
    pub block_cache_bytes: usize,
    /// Every SST file's index and filter partitions loaded at open and pinned beside the block
    /// cache, which then holds data blocks only.
    pub pin_metadata: bool,
}

/// Disk flags that contradict each other or the store they would apply to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiskFlagsError {
    /// A RocksDB flag where only MDBX states are read.
    RocksDbFlagOverMdbx {
        /// The flag, as typed.
        flag: &'static str,
    },
    /// `--unpinned-metadata` without `--disk-resident`, the only mode that pins by default.
    UnpinnedWithoutDiskResident,
    /// `--pin-metadata` and `--unpinned-metadata` together.
    PinnedAndUnpinned,
}

impl std::fmt::Display for DiskFlagsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::RocksDbFlagOverMdbx { flag } => write!(
                f,
                "{flag} applies to RocksDB states only: MDBX is memory-mapped, so its pages are \
                 served from the page cache; bound it with --memory-limit SIZE or \
                 --disk-resident (a memory cgroup around the process, see \
                 docs/notes/2026-11-23-disk-resident-mode.md)"
            ),
            Self::UnpinnedWithoutDiskResident => f.write_str(
                "--unpinned-metadata applies with --disk-resident only: without it RocksDB's \
                 index and filters are not pinned, so there is nothing to leave unpinned",
            ),
            Self::PinnedAndUnpinned => f.write_str(
                "--pin-metadata and --unpinned-metadata contradict each other: give one",
            ),
        }
    }
}

impl std::error::Error for DiskFlagsError {}

impl DiskArgs {
    /// The block cache under `--disk-resident` unless `--block-cache` says otherwise: data blocks
    /// only, the index and filters being pinned beside it (or, with `--unpinned-metadata`, room
    /// for their pinned top levels and little else). With 64 MiB, a
    /// generated chain's hot contracts and senders stay cached and fewer than 80% of the key reads
    /// reach the disk (docs/notes/2026-11-23-disk-resident-mode.md).
    pub const DISK_RESIDENT_BLOCK_CACHE: usize = 8 << 20;

    /// The memory cgroup's limit under `--disk-resident` over MDBX unless `--memory-limit` says
    /// otherwise: the run's own heap growth (shared cache, overlay of commits, decoded dumps:
    /// about 200-300 MiB on a 200-block chain) must fit beside the page cache, or the kernel
    /// kills the process instead of reclaiming.
    pub const DISK_RESIDENT_MEMORY_LIMIT: usize = 512 << 20;

    /// These flags for a command that reads `states`: every rule that ties them together applied,
    /// or the first contradiction.
    ///
    /// - `--disk-resident` over RocksDB: direct reads, metadata pinned unless
    ///   `--unpinned-metadata`, and a block cache of [`Self::DISK_RESIDENT_BLOCK_CACHE`] unless
    ///   `--block-cache`. Over MDBX: the page cache dropped before each run (a page cached before
    ///   the process entered its cgroup would be served uncharged) and a memory cgroup of
    ///   [`Self::DISK_RESIDENT_MEMORY_LIMIT`] unless `--memory-limit`.
    /// - RocksDB's own flags (`--direct-io`, `--block-cache`, `--pin-metadata`,
    ///   `--unpinned-metadata`) are refused where no state is RocksDB: MDBX is memory-mapped, and
    ///   only the page cache and a memory cgroup bound it. Over RocksDB and MDBX at once
    ///   (`bench-db`), they apply to the RocksDB ones.
    /// - `--unpinned-metadata` is refused without `--disk-resident`, as is asking for both it and
    ///   `--pin-metadata`.
    pub fn resolve<'a>(
        &self,
        states: impl IntoIterator<Item = &'a StateSpec>,
    ) -> Result<DiskMode, DiskFlagsError> {
        let (mut any_rocksdb, mut any_mdbx) = (false, false);
        for state in states {
            match state {
                StateSpec::RocksDb(_) => any_rocksdb = true,
                StateSpec::Mdbx(_) => any_mdbx = true,
            }
        }
        if let (false, Some(flag)) = (any_rocksdb, self.rocksdb_flag()) {
            return Err(DiskFlagsError::RocksDbFlagOverMdbx { flag });
        }
        if self.pin_metadata && self.unpinned_metadata {
            return Err(DiskFlagsError::PinnedAndUnpinned);
        }
        if self.unpinned_metadata && !self.disk_resident {
            return Err(DiskFlagsError::UnpinnedWithoutDiskResident);
        }
        let resident_mdbx = any_mdbx && self.disk_resident;
        let rocksdb = any_rocksdb.then(|| RocksReads {
            direct_io: self.direct_io || self.disk_resident,
            block_cache_bytes: self.block_cache.unwrap_or(if self.disk_resident {
                Self::DISK_RESIDENT_BLOCK_CACHE
            } else {
                RocksOptions::default().block_cache_bytes
            }),
            pin_metadata: self.pin_metadata || (self.disk_resident && !self.unpinned_metadata),
        });
        Ok(DiskMode {
            drop_caches: self.drop_caches || resident_mdbx,
            memory_limit: self
                .memory_limit
                .or(resident_mdbx.then_some(Self::DISK_RESIDENT_MEMORY_LIMIT)),
            rocksdb,
        })
    }

    /// The first flag given that only RocksDB reads (MDBX ignores it).
    pub fn rocksdb_flag(&self) -> Option<&'static str> {
        if self.direct_io {
            Some("--direct-io")
        } else if self.block_cache.is_some() {
            Some("--block-cache")
        } else if self.pin_metadata {
            Some("--pin-metadata")
        } else if self.unpinned_metadata {
            Some("--unpinned-metadata")
        } else {
            None
        }
    }
}

impl DiskMode {
    /// How RocksDB reads, or RocksDB's defaults where no RocksDB state is read (the options are
    /// then never used to open one).
    pub fn rocksdb_reads(&self) -> RocksReads {
        self.rocksdb.unwrap_or_else(|| {
            let defaults = RocksOptions::default();
            RocksReads {
                direct_io: defaults.direct_io,
                block_cache_bytes: defaults.block_cache_bytes,
                pin_metadata: defaults.pin_metadata,
            }
        })
    }

    /// Puts the process in its memory cgroup if this mode has one; it leaves the cgroup when the
    /// returned guard drops.
    pub fn enter_memory_limit(&self) -> eyre::Result<Option<MemoryLimit>> {
        self.memory_limit
            .map(|bytes| {
                MemoryLimit::enter(bytes as u64)
                    .wrap_err("--memory-limit / --disk-resident over MDBX needs a memory cgroup")
            })
            .transpose()
    }
}

impl RocksReads {
    /// RocksDB's options for these reads (statistics on: they are the runs' evidence).
    pub fn rocks_options(&self) -> RocksOptions {
        RocksOptions {
            direct_io: self.direct_io,
            block_cache_bytes: self.block_cache_bytes,
            statistics: true,
            pin_metadata: self.pin_metadata,
            ..RocksOptions::default()
        }
    }
}

/// Parses a size in bytes: a number with an optional binary unit (`64MiB`, `64M`, `1GiB`, `4k`).
fn parse_size(s: &str) -> Result<usize, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let number: usize = number
        .parse()
        .map_err(|_| format!("{s:?} is not a size (e.g. 64MiB, 1GiB, 4096)"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        other => {
            return Err(format!(
                "unknown size unit {other:?} in {s:?} (use KiB, MiB, GiB)"
            ));
        }
    };
    number
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("{s:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Cli, Command};
    use clap::Parser;

    fn rocksdb() -> StateSpec {
        StateSpec::RocksDb("/r".into())
    }

    fn mdbx() -> StateSpec {
        StateSpec::Mdbx("/m".into())
    }

    /// `run`'s disk flags parsed from `args`.
    fn parse(args: &[&str]) -> DiskArgs {
        let mut all = vec!["bal-replay", "run", "--dump", "d", "--state", "s"];
        all.extend_from_slice(args);
        match Cli::try_parse_from(all).unwrap().command {
            Command::Run(run) => run.disk,
            other => panic!("{other:?}"),
        }
    }

    fn resolve(args: &[&str], states: &[StateSpec]) -> Result<DiskMode, DiskFlagsError> {
        parse(args).resolve(states)
    }

    /// The RocksDB reads `args` resolve to over a RocksDB state.
    fn rocks(args: &[&str]) -> RocksReads {
        resolve(args, &[rocksdb()]).unwrap().rocksdb.unwrap()
    }

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("64M"), Ok(64 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(
            parse_size("64 parsecs")
                .unwrap_err()
                .contains("unknown size unit")
        );
        assert!(parse_size("MiB").unwrap_err().contains("is not a size"));
    }

    #[test]
    fn no_flags_read_through_every_cache() {
        let plain = RocksReads {
            direct_io: false,
            block_cache_bytes: 512 << 20,
            pin_metadata: false,
        };
        assert_eq!(
            resolve(&[], &[rocksdb()]),
            Ok(DiskMode {
                drop_caches: false,
                memory_limit: None,
                rocksdb: Some(plain),
            })
        );
        assert_eq!(
            resolve(&[], &[mdbx()]),
            Ok(DiskMode {
                drop_caches: false,
                memory_limit: None,
                rocksdb: None,
            })
        );
        // Over MDBX the matrix still names RocksDB options, never used: RocksDB's defaults.
        assert_eq!(resolve(&[], &[mdbx()]).unwrap().rocksdb_reads(), plain);
        assert!(plain.rocks_options().statistics);
    }

    #[test]
    fn disk_resident_over_rocksdb_reads_directly_with_pinned_metadata_and_a_small_cache() {
        let resident = resolve(&["--disk-resident"], &[rocksdb()]).unwrap();
        assert_eq!(
            resident,
            DiskMode {
                drop_caches: false,
                memory_limit: None,
                rocksdb: Some(RocksReads {
                    direct_io: true,
                    block_cache_bytes: 8 << 20,
                    pin_metadata: true,
                }),
            }
        );
        let options = resident.rocksdb_reads().rocks_options();
        assert!(options.statistics && options.direct_io && options.pin_metadata);
        assert_eq!(options.block_cache_bytes, 8 << 20);
        // --block-cache sizes it; --unpinned-metadata leaves the metadata to it.
        assert_eq!(
            rocks(&["--disk-resident", "--block-cache", "64MiB"]).block_cache_bytes,
            64 << 20
        );
        let unpinned = rocks(&["--disk-resident", "--unpinned-metadata"]);
        assert!(!unpinned.pin_metadata && unpinned.direct_io);
        // Asking for what --disk-resident implies changes nothing.
        assert_eq!(
            rocks(&["--disk-resident", "--direct-io", "--pin-metadata"]),
            rocks(&["--disk-resident"])
        );
    }

    #[test]
    fn rocksdb_flags_alone_set_only_themselves() {
        let direct = rocks(&["--direct-io"]);
        assert!(direct.direct_io && !direct.pin_metadata);
        assert_eq!(direct.block_cache_bytes, 512 << 20);
        let pinned = rocks(&["--pin-metadata"]);
        assert!(pinned.pin_metadata && !pinned.direct_io);
        assert_eq!(rocks(&["--block-cache", "1GiB"]).block_cache_bytes, 1 << 30);
        // --drop-caches over RocksDB is the flag alone; --disk-resident does not imply it there.
        assert!(
            resolve(&["--drop-caches"], &[rocksdb()])
                .unwrap()
                .drop_caches
        );
        assert!(
            !resolve(&["--disk-resident"], &[rocksdb()])
                .unwrap()
                .drop_caches
        );
    }

    #[test]
    fn disk_resident_over_mdbx_drops_the_page_cache_in_a_memory_cgroup() {
        assert_eq!(
            resolve(&["--disk-resident"], &[mdbx()]),
            Ok(DiskMode {
                drop_caches: true,
                memory_limit: Some(512 << 20),
                rocksdb: None,
            })
        );
        let sized = resolve(&["--disk-resident", "--memory-limit", "1GiB"], &[mdbx()]).unwrap();
        assert_eq!(sized.memory_limit, Some(1 << 30));
        // --memory-limit alone is a cgroup over either store, and drops nothing.
        for state in [rocksdb(), mdbx()] {
            let limited = resolve(&["--memory-limit", "1GiB"], &[state]).unwrap();
            assert_eq!(limited.memory_limit, Some(1 << 30));
            assert!(!limited.drop_caches);
        }
    }

    #[test]
    fn both_stores_get_each_stores_rules() {
        // bench-db over MDBX and RocksDB at once: the RocksDB flags apply to the RocksDB store,
        // and --disk-resident's cgroup and dropped page cache to the whole process.
        let both = resolve(
            &["--disk-resident", "--block-cache", "64MiB"],
            &[mdbx(), rocksdb()],
        )
        .unwrap();
        assert_eq!(
            both,
            DiskMode {
                drop_caches: true,
                memory_limit: Some(512 << 20),
                rocksdb: Some(RocksReads {
                    direct_io: true,
                    block_cache_bytes: 64 << 20,
                    pin_metadata: true,
                }),
            }
        );
    }

    #[test]
    fn rocksdb_flags_over_mdbx_are_refused_naming_the_flag() {
        for (args, flag) in [
            (&["--direct-io"][..], "--direct-io"),
            (
                &["--disk-resident", "--block-cache", "64MiB"],
                "--block-cache",
            ),
            (&["--pin-metadata"], "--pin-metadata"),
            (
                &["--disk-resident", "--unpinned-metadata"],
                "--unpinned-metadata",
            ),
        ] {
            let err = resolve(args, &[mdbx()]).unwrap_err();
            assert_eq!(err, DiskFlagsError::RocksDbFlagOverMdbx { flag });
            let message = err.to_string();
            assert!(
                message.starts_with(&format!("{flag} applies to RocksDB states only"))
                    && message.contains("--memory-limit SIZE or --disk-resident"),
                "{message}"
            );
            // With a RocksDB store beside the MDBX one, the flag has something to apply to.
            assert!(resolve(args, &[mdbx(), rocksdb()]).is_ok(), "{args:?}");
        }
    }

    #[test]
    fn unpinned_metadata_needs_disk_resident_and_contradicts_pin_metadata() {
        let err = resolve(&["--unpinned-metadata"], &[rocksdb()]).unwrap_err();
        assert_eq!(err, DiskFlagsError::UnpinnedWithoutDiskResident);
        assert!(
            err.to_string()
                .starts_with("--unpinned-metadata applies with --disk-resident only"),
            "{err}"
        );
        // The command line refuses both at once; flags set in code are refused by the resolution.
        let both = "bal-replay run --dump d --state s --pin-metadata --unpinned-metadata";
        assert!(Cli::try_parse_from(both.split(' ')).is_err());
        let args = DiskArgs {
            disk_resident: true,
            pin_metadata: true,
            unpinned_metadata: true,
            ..DiskArgs::default()
        };
        let err = args.resolve(&[rocksdb()]).unwrap_err();
        assert_eq!(err, DiskFlagsError::PinnedAndUnpinned);
        assert_eq!(
            err.to_string(),
            "--pin-metadata and --unpinned-metadata contradict each other: give one"
        );
    }
}
