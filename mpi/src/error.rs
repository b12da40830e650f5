//! The one error type of the distributed operations.

use core::fmt;

/// A distributed operation failed on some rank. Every rank of the
/// communicator receives the same value: the lowest failing rank and its
/// message (see [`Ranks::agree`](crate::Ranks::agree)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DistError {
    /// The rank whose local work failed first (lowest rank number).
    pub rank: u32,
    /// What failed there, in words.
    pub message: String,
}

impl DistError {
    /// An error of `rank`.
    pub fn new(rank: u32, message: impl Into<String>) -> Self {
        Self {
            rank,
            message: message.into(),
        }
    }
}

impl fmt::Display for DistError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rank {}: {}", self.rank, self.message)
    }
}

impl std::error::Error for DistError {}
