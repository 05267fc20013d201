//! Why a record store refused or failed: the records' own error, apart from
//! the object store's ([`crate::store::StoreError`]), since records fail in
//! fewer ways than bytes do.

use std::io;

/// Why a record could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// A record is already written under this id: nothing was written.
    #[error("a record is already written under this id")]
    AlreadyExists,
    /// Another issue of the same user is being admitted (DynamoDB's
    /// admission lease): nothing was written, and the same request may
    /// succeed in a moment.
    #[error("another issue of this user is being admitted")]
    Admitting,
    /// The records cannot answer right now (out of reach, throttling,
    /// refusing access): nothing was read or written.
    #[error("records unavailable: {0}")]
    Unavailable(String),
    /// The records failed. A full disk is `ErrorKind::StorageFull`.
    #[error("records failed: {0}")]
    Io(#[from] io::Error),
}

/// A flow that reads records and bytes in one step (proving an object,
/// whose progress is kept in its record) carries both as the store's error.
impl From<RecordError> for crate::store::StoreError {
    fn from(e: RecordError) -> Self {
        use crate::store::{Busy, StoreError};
        match e {
            RecordError::AlreadyExists => StoreError::AlreadyExists,
            RecordError::Admitting => StoreError::Busy(Busy::Admitting),
            RecordError::Unavailable(why) => StoreError::Unavailable(why),
            RecordError::Io(e) => StoreError::Io(e),
        }
    }
}
