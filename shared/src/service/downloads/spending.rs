//! What redeeming one single-use link charges and spends ([`Spending`]):
//! its budget of bytes, charged as they are sent, and the ledger's record
//! that its last byte went once, with the `file.downloaded` event of each
//! file it delivered. A download link and a zip link alike.

use super::Span;
use super::ranges;
use crate::error::Error;
use crate::events::{Event, EventType};
use crate::file::FileMeta;
use crate::ledger::Ledger;
use crate::ledger::Spend;
use crate::records::RecordStore;
use crate::service::custody::Reporter;
use crate::store::ByteStream;
use std::sync::Arc;

/// One link's charges and its spend. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Spending {
    pub(crate) jti: String,
    expires_at: i64,
    ledger: Arc<dyn Ledger>,
    records: Arc<dyn RecordStore>,
    reporter: Reporter,
}

impl Spending {
    /// For the link `jti`, kept until `expires_at`.
    pub(super) fn new(
        jti: String,
        expires_at: i64,
        (ledger, records): (Arc<dyn Ledger>, Arc<dyn RecordStore>),
        reporter: Reporter,
    ) -> Self {
        Self {
            jti,
            expires_at,
            ledger,
            records,
            reporter,
        }
    }

    /// The uniform answer to a spent link.
    pub(crate) fn replayed(&self) -> Error {
        tracing::info!(jti = %self.jti, "spent link presented again");
        Error::NotFound
    }

    /// Takes `span`'s bytes from the link's budget (twice `span.size`), or
    /// refuses (`410`).
    pub(crate) async fn charge(&self, span: &Span) -> Result<(), Error> {
        if span.is_empty() {
            return Ok(());
        }
        let key = format!("link-bytes:{}", self.jti);
        let budget = ranges::budget(span.size);
        if self
            .ledger
            .charge(&key, span.len(), budget, self.expires_at)
            .await?
        {
            return Ok(());
        }
        // Spent meanwhile by another redemption (which took the budget as
        // it went): the uniform answer of a spent link.
        if self.ledger.is_spent(&self.jti).await? {
            return Err(self.replayed());
        }
        tracing::info!(jti = %self.jti, "download link past its byte budget");
        Err(Error::LinkBudgetSpent)
    }

    /// Hands out `span` of `files` through a redirect to the store, which
    /// sluice cannot see the bytes of: charged to the budget, and the link
    /// spent by the redirect that hands out the last byte.
    pub(crate) async fn redirected(&self, span: &Span, files: &[FileMeta]) -> Result<(), Error> {
        self.charge(span).await?;
        if span.reaches_end() {
            self.spend(files).await?;
        }
        Ok(())
    }

    /// Spends the link: the last byte of `files` is going out now, and
    /// each is reported downloaded. A link of one file carries its event in
    /// the spent record where the ledger keeps one (DynamoDB's stream);
    /// every event goes to the outbox where there is one. Spent before: the
    /// uniform `404`.
    pub(crate) async fn spend(&self, files: &[FileMeta]) -> Result<(), Error> {
        let events: Vec<Event> = files
            .iter()
            .map(|file| Event::about(EventType::Downloaded, file, Some(&self.jti)))
            .collect();
        let ledger = &*self.ledger;
        let spent = match events.as_slice() {
            [one] => {
                ledger
                    .spend_reporting(&self.jti, self.expires_at, &one.body())
                    .await?
            }
            _ => ledger.spend(&self.jti, self.expires_at).await?,
        };
        if spent == Spend::AlreadySpent {
            return Err(self.replayed());
        }
        for (event, file) in events.iter().zip(files) {
            self.reporter.report(event, file).await;
        }
        Ok(())
    }

    /// The last byte of `files` is going out where sluice sends it: a
    /// delete wins over a download under way (any of them deleted
    /// meanwhile: the uniform `404`, nothing spent, and the client never
    /// holds the whole), else the link is spent ([`Spending::spend`]).
    pub(crate) async fn last_byte(&self, files: &[FileMeta]) -> Result<(), Error> {
        none_deleted(&*self.records, files).await?;
        self.spend(files).await
    }

    /// `stream` (the bytes of `span`), its last chunk released only once
    /// [`Spending::last_byte`] lets it, where `span` holds the file's last
    /// byte: cut instead if the file was deleted meanwhile or another
    /// redemption delivered it first.
    pub(crate) fn at_last_byte(
        &self,
        stream: ByteStream,
        span: Span,
        file: &FileMeta,
    ) -> ByteStream {
        use futures_util::StreamExt as _;
        if !span.reaches_end() {
            return stream;
        }
        let mut sent = 0u64;
        let (spending, file) = (self.clone(), file.clone());
        stream
            .then(move |chunk| {
                let last = match &chunk {
                    Ok(bytes) => {
                        sent += bytes.len() as u64;
                        sent >= span.len()
                    }
                    Err(_) => false,
                };
                let (spending, file) = (spending.clone(), file.clone());
                async move {
                    if !last {
                        return chunk;
                    }
                    match spending.last_byte(std::slice::from_ref(&file)).await {
                        Ok(()) => chunk,
                        Err(e) => {
                            tracing::info!(file_id = %file.id, "download cut before its last byte: {e}");
                            Err(std::io::Error::other(e.to_string()))
                        }
                    }
                }
            })
            .boxed()
    }
}

/// The uniform `404` if any of `files` was deleted: what a delete wins
/// over, before a last byte goes out (or a zip is closed).
pub(crate) async fn none_deleted(
    records: &dyn crate::records::FileRecords,
    files: &[FileMeta],
) -> Result<(), Error> {
    for file in files {
        if records.deleted(&file.id).await?.is_some() {
            tracing::info!(file_id = %file.id, "cut before its last byte: the file was deleted");
            return Err(Error::NotFound);
        }
    }
    Ok(())
}
