//! A link, either way, verified in one place: an upload link (`PUT`, and
//! the tus requests on it) and a download link (`GET`) are short tokens of
//! their own kind, refused alike (every failure one `NotFound`), and each
//! names a file whose record says what it pins.

use super::base::Base;
use crate::error::Error;
use crate::file::FileMeta;
use crate::time::now_unix;
use crate::token::{Method, Short, ShortKind, TokenError};

impl Base {
    /// Verifies a link token for `method`. Every failure is the same
    /// [`Error::NotFound`], so a caller learns nothing about why; the
    /// reason is logged at debug.
    pub(crate) fn verify_link(&self, token: &str, method: Method) -> Result<Short, Error> {
        let kind = match method {
            Method::Get => ShortKind::Download,
            Method::Put => ShortKind::Upload,
        };
        Short::decode(self.keys(), token, kind, now_unix()).map_err(|e: TokenError| {
            tracing::debug!(reason = %e, %method, "link refused");
            Error::NotFound
        })
    }

    /// The file a verified link names, with when its record expires (the
    /// record was written once when the file was issued).
    pub(crate) async fn file_of(&self, link: &Short) -> Result<(FileMeta, i64), Error> {
        let record = self
            .records()
            .find(&link.file_id)
            .await?
            .ok_or(Error::NotFound)?;
        Ok((record.file, record.expires_at))
    }
}
