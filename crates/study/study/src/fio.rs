//! The disk's own random-read limit, measured with fio where it is installed: 4 KiB random reads
//! with O_DIRECT over the state's SST files, read-only (the state is never written and no test
//! file is laid out), one queue depth at a time.

use bal_replay_model::DiskModel;
use std::{path::Path, process::Command};

/// Why the disk's curve could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum FioError {
    /// fio is not on the PATH.
    #[error("fio is not installed (apt-get install fio)")]
    Missing,
    /// The state has no SST file large enough to read from.
    #[error("{}: no SST file of 1 MiB or more to read", dir.display())]
    NoFiles {
        /// The state.
        dir: std::path::PathBuf,
    },
    /// fio failed or printed what is not its JSON.
    #[error("fio at queue depth {depth}: {reason}")]
    Run {
        /// The depth.
        depth: u32,
        /// What went wrong.
        reason: String,
    },
}

/// fio's IOPS and mean latency over the SST files in `state` at each of `depths`, `seconds` each:
/// the disk's model, and the table it was read from (`scripts/fio-random-reads.sh`'s format).
pub fn measure(
    state: &Path,
    depths: &[u32],
    seconds: u32,
) -> Result<(DiskModel, String), FioError> {
    if Command::new("fio").arg("--version").output().is_err() {
        return Err(FioError::Missing);
    }
    // fio refuses a --directory that is a symbolic link ("is not a directory"): give it the
    // directory the link names.
    let state = &std::fs::canonicalize(state).map_err(|_| FioError::NoFiles {
        dir: state.to_path_buf(),
    })?;
    let mut files: Vec<String> = std::fs::read_dir(state)
        .map_err(|_| FioError::NoFiles {
            dir: state.to_path_buf(),
        })?
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name().to_string_lossy().ends_with(".sst")
                && e.metadata().is_ok_and(|m| m.len() >= 1 << 20)
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    // fio limits its --filename to 4096 characters.
    files.truncate(300);
    if files.is_empty() {
        return Err(FioError::NoFiles {
            dir: state.to_path_buf(),
        });
    }
    let mut table = String::from("depth iops mean_latency_us\n");
    for &depth in depths {
        let output = Command::new("fio")
            .args([
                "--name=randread",
                "--readonly",
                "--rw=randread",
                "--bs=4k",
                "--direct=1",
                "--ioengine=libaio",
                "--numjobs=1",
                "--group_reporting",
                "--time_based",
                "--output-format=json",
            ])
            .arg(format!("--directory={}", state.display()))
            .arg(format!("--filename={}", files.join(":")))
            .arg(format!("--iodepth={depth}"))
            .arg(format!("--runtime={seconds}"))
            .output()
            .map_err(|e| FioError::Run {
                depth,
                reason: e.to_string(),
            })?;
        if !output.status.success() {
            return Err(FioError::Run {
                depth,
                reason: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
            });
        }
        let json: serde_json::Value =
            serde_json::from_slice(&output.stdout).map_err(|e| FioError::Run {
                depth,
                reason: format!("its output is not JSON: {e}"),
            })?;
        let read = &json["jobs"][0]["read"];
        let (Some(iops), Some(clat)) = (read["iops"].as_f64(), read["clat_ns"]["mean"].as_f64())
        else {
            return Err(FioError::Run {
                depth,
                reason: "no read IOPS in its JSON".into(),
            });
        };
        table.push_str(&format!("{depth} {iops:.0} {:.1}\n", clat / 1000.0));
    }
    let disk = DiskModel::parse_fio_table(&table, "fio").map_err(|e| FioError::Run {
        depth: depths.last().copied().unwrap_or(1),
        reason: e.to_string(),
    })?;
    Ok((disk, table))
}
