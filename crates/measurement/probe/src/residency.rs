//! Whether a run's state reads waited for the device or were served from memory: the one rule
//! `bench`'s tables, its JSON, `run --json` and `study`'s page judge a run by.
//!
//! A run is judged by what reached the device, counted in data blocks (with direct reads every
//! block-cache miss is a device read) or in the bytes the device read (through the page cache a
//! miss reaches the device only as far as its bytes say), never in device requests per key read: a
//! sorted multi-get reads neighbouring blocks in one request and serves neighbouring keys from one
//! block, which a count of requests or of keys would take for cache hits.

/// The counters a run's residency is judged from (a part of its
/// [`DiskEvidence`](crate::DiskEvidence)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResidencyCounts {
    /// Keys the run read from the state.
    pub key_reads: u64,
    /// RocksDB block-cache hits.
    pub block_cache_hits: Option<u64>,
    /// RocksDB block-cache misses.
    pub block_cache_misses: Option<u64>,
    /// Of the misses, data blocks.
    pub block_cache_data_misses: Option<u64>,
    /// Bytes the device read.
    pub device_read_bytes: Option<u64>,
}

/// RocksDB's data block size in this project's states: a stored key's read reads one.
pub const DATA_BLOCK_BYTES: f64 = 4096.0;

/// The share of block lookups that must reach the device for a run to be disk-resident.
pub const DISK_RESIDENT_SHARE: f64 = 0.8;

/// Fewer key reads from the state than this and a run "reads no state" (full BAL reads a handful,
/// e.g. the beacon roots contract's code).
pub const MIN_KEY_READS: u64 = 100;

/// Where a run's state reads were served from, judged by what reached the device, and how it was
/// judged.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Residency {
    /// At least [`DISK_RESIDENT_SHARE`] of the block lookups reached the device.
    pub disk_resident: bool,
    /// The share of the run's block lookups that reached the device; `None` where the counters
    /// cannot tell (no RocksDB counters, or no key read from the store).
    pub reached_device: Option<f64>,
    /// How it was judged.
    pub basis: ResidencyBasis,
}

/// What [`Residency::reached_device`] counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResidencyBasis {
    /// With direct reads every block-cache miss is a device read: the share of the run's
    /// block-cache lookups that missed. Counted in blocks, neither in requests (a sorted multi-get
    /// reads neighbouring blocks in one device request, which a count of requests would take for
    /// cache hits) nor in keys (one block serves the neighbouring keys a sorted multi-get asks
    /// for, which a count per key would take for cache hits).
    DataBlocks,
    /// Through the page cache: the bytes the device read, in 4 KiB blocks, per block-cache miss.
    DeviceBytes,
    /// The run read (next to) no key from the state: full BAL executes from the BAL's values.
    NoReads,
    /// No counter tells (no RocksDB counters: MDBX, memory, independent blocks).
    #[default]
    Unknown,
}

impl Residency {
    /// Judges a run's evidence; `direct_io`: the run read with O_DIRECT.
    pub fn judge(disk: &ResidencyCounts, direct_io: bool) -> Self {
        if disk.key_reads < MIN_KEY_READS {
            return Self {
                disk_resident: false,
                reached_device: None,
                basis: ResidencyBasis::NoReads,
            };
        }
        let lookups = disk
            .block_cache_hits
            .zip(disk.block_cache_misses)
            .map(|(hits, misses)| hits + misses)
            .filter(|n| *n > 0);
        let (reached_device, basis) = match (lookups, disk.block_cache_data_misses) {
            (Some(lookups), Some(misses)) if direct_io => (
                Some(misses as f64 / lookups as f64),
                ResidencyBasis::DataBlocks,
            ),
            // Through the page cache a miss reached the device only as far as its bytes say.
            (Some(lookups), Some(misses)) => match disk.device_read_bytes {
                Some(bytes) => (
                    Some((bytes as f64 / DATA_BLOCK_BYTES).min(misses as f64) / lookups as f64),
                    ResidencyBasis::DeviceBytes,
                ),
                None => (None, ResidencyBasis::Unknown),
            },
            _ => (None, ResidencyBasis::Unknown),
        };
        Self {
            disk_resident: reached_device.is_some_and(|share| share >= DISK_RESIDENT_SHARE),
            reached_device,
            basis,
        }
    }

    /// Whether the run read from the state at all.
    pub fn reads_state(&self) -> bool {
        self.basis != ResidencyBasis::NoReads
    }

    /// "disk-resident", "cache-resident", "reads no state" or "regime unknown".
    pub fn label(&self) -> &'static str {
        match (self.basis, self.reached_device) {
            (ResidencyBasis::NoReads, _) => "reads no state",
            (_, None) => "regime unknown",
            (_, Some(_)) if self.disk_resident => "disk-resident",
            (_, Some(_)) => "cache-resident",
        }
    }

    /// How [`Residency::reached_device`] was counted, as tables name it.
    pub fn basis_label(&self) -> &'static str {
        match self.basis {
            ResidencyBasis::DataBlocks => "block lookups that missed (direct reads)",
            ResidencyBasis::DeviceBytes => "device bytes per missed block (page cache)",
            ResidencyBasis::NoReads => "-",
            ResidencyBasis::Unknown => "no counter",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn residency_counts_blocks_with_direct_reads_and_bytes_without() {
        // What a batched I/O run over a 200 M-entry state counted: a sorted multi-get reads
        // neighbouring blocks in one request (70,606 device requests) and serves neighbouring keys
        // from one block (211,964 stored-key reads, 125,447 block lookups).
        let disk = ResidencyCounts {
            key_reads: 394_306,
            block_cache_hits: Some(12_381),
            block_cache_misses: Some(113_066),
            block_cache_data_misses: Some(113_066),
            device_read_bytes: Some(719_521_280),
        };
        let direct = Residency::judge(&disk, true);
        assert_eq!(direct.basis, ResidencyBasis::DataBlocks);
        let share = direct.reached_device.unwrap();
        assert!((share - 113_066.0 / 125_447.0).abs() < 1e-12, "{share}");
        assert!(direct.disk_resident);
        let cached = ResidencyCounts {
            device_read_bytes: Some(4096 * 10),
            ..disk
        };
        let through_page_cache = Residency::judge(&cached, false);
        assert_eq!(through_page_cache.basis, ResidencyBasis::DeviceBytes);
        assert_eq!(through_page_cache.label(), "cache-resident");
        let full = ResidencyCounts {
            key_reads: 5,
            ..disk
        };
        assert_eq!(Residency::judge(&full, true).label(), "reads no state");
    }
}
