//! Per-backend lists of vectors known to differ, each with its reason.
//!
//! `vectors/expectations/<backend>.toml` holds `[[known]]` entries `{ vector, reason }`. A listed
//! vector that fails is reported as a known difference; a listed vector that passes fails the run
//! (the list is stale), and so does an unlisted failure — as wgpu does with its per-backend lists.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// An expectations file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ExpectationsError {
    /// The file does not match the schema.
    #[error("{}: {source}", .path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the line.
        source: toml::de::Error,
    },
    /// An entry without a reason.
    #[error("{}: {vector} is listed without a reason", .path.display())]
    NoReason {
        /// The file.
        path: PathBuf,
        /// The vector listed.
        vector: String,
    },
    /// A vector listed twice.
    #[error("{}: {vector} is listed twice", .path.display())]
    Twice {
        /// The file.
        path: PathBuf,
        /// The vector listed.
        vector: String,
    },
}

/// The known differences of one backend: vector name → reason.
#[derive(Clone, Debug, Default)]
pub struct Expectations {
    known: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    known: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    vector: String,
    reason: String,
}

impl Expectations {
    /// Reads `<dir>/<backend>.toml`; a missing file means no known differences.
    ///
    /// # Errors
    /// An [`ExpectationsError`] naming the file when it exists but does not parse, lists a
    /// vector without a reason, or lists one twice.
    pub fn load(dir: &Path, backend: &str) -> Result<Expectations, ExpectationsError> {
        let path = dir.join(format!("{backend}.toml"));
        let Ok(text) = std::fs::read_to_string(&path) else {
            return Ok(Expectations::default());
        };
        let file: File = toml::from_str(&text)
            .map_err(|source| ExpectationsError::Parse { path: path.clone(), source })?;
        let mut known = BTreeMap::new();
        for entry in file.known {
            if entry.reason.trim().is_empty() {
                return Err(ExpectationsError::NoReason { path, vector: entry.vector });
            }
            if known.insert(entry.vector.clone(), entry.reason).is_some() {
                return Err(ExpectationsError::Twice { path, vector: entry.vector });
            }
        }
        Ok(Expectations { known })
    }

    /// The reason a vector is expected to differ, if it is listed.
    pub fn reason(&self, vector: &str) -> Option<&str> {
        self.known.get(vector).map(String::as_str)
    }

    /// Listed vectors, for checking that each still exists.
    pub fn vectors(&self) -> impl Iterator<Item = &str> {
        self.known.keys().map(String::as_str)
    }
}
