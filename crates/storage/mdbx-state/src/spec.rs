//! [`StateSpec`]: which store a command reads, as given on the command line.

use std::{path::PathBuf, str::FromStr};

/// A state store named on the command line: `mdbx:<dir>` (reth's database, read in place),
/// `rocksdb:<dir>`, or a plain path, which is a RocksDB flat state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateSpec {
    /// A RocksDB flat state directory.
    RocksDb(PathBuf),
    /// A reth datadir or its `db/` directory.
    Mdbx(PathBuf),
}

impl StateSpec {
    /// The directory named.
    pub fn path(&self) -> &std::path::Path {
        match self {
            Self::RocksDb(p) | Self::Mdbx(p) => p,
        }
    }

    /// `rocksdb` or `mdbx`.
    pub fn backend(&self) -> &'static str {
        match self {
            Self::RocksDb(_) => "rocksdb",
            Self::Mdbx(_) => "mdbx",
        }
    }
}

impl FromStr for StateSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (spec, path) = if let Some(path) = s.strip_prefix("mdbx:") {
            (Self::Mdbx(PathBuf::from(path)), path)
        } else if let Some(path) = s.strip_prefix("rocksdb:") {
            (Self::RocksDb(PathBuf::from(path)), path)
        } else {
            (Self::RocksDb(PathBuf::from(s)), s)
        };
        if path.is_empty() {
            return Err(format!(
                "{s:?} names no directory (expected mdbx:<dir>, rocksdb:<dir> or <dir>)"
            ));
        }
        Ok(spec)
    }
}

impl std::fmt::Display for StateSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.backend(), self.path().display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_prefixed_and_plain_paths() {
        assert_eq!(
            "mdbx:/data/reth".parse(),
            Ok(StateSpec::Mdbx("/data/reth".into()))
        );
        assert_eq!(
            "rocksdb:/data/flat".parse(),
            Ok(StateSpec::RocksDb("/data/flat".into()))
        );
        assert_eq!(
            "/data/flat".parse(),
            Ok(StateSpec::RocksDb("/data/flat".into()))
        );
        assert!("mdbx:".parse::<StateSpec>().is_err());
        assert_eq!(
            StateSpec::Mdbx("/x".into()).to_string(),
            "mdbx:/x".to_string()
        );
    }
}
