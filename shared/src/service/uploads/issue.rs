//! Issuing a file, in this order: check the request (name, size, media
//! type) → take one from the caller's issuing rate and admit the file
//! under the caps on pending files, recording it pending
//! ([`super::limits`]) → sign its handle → begin its upload in the store
//! (an upload in parts begun, an empty stream stored) → sign where its
//! bytes go: a presigned PUT of a direct store, which itself enforces
//! size, digest and single use, or a single-use link to sluice's own
//! `PUT /uploads/{token}` ([`super::put`]).

use super::Uploads;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::curl;
use crate::error::Error;
use crate::file::{FileId, FileMeta};
use crate::service::intake::Intake;
use crate::sha::Sha256;
use crate::store::{Access, ByteStream};
use crate::time::{now_unix, rfc3339};

pub(crate) use crate::service::limits::Counted;

/// Who reads an upload target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reader {
    /// The model: every character costs context, and a presigned URL
    /// carries a role's session token.
    Model,
    /// A browser page: the model never sees it.
    Page,
}

/// The longest filename label accepted, in bytes.
pub const MAX_FILENAME_BYTES: usize = 1024;

/// What `request_upload` and `POST /uploads` take.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UploadRequest {
    /// The file's name: the command uploads the file of this name in the current directory.
    pub filename: String,
    /// Exact size in bytes.
    pub size: u64,
    /// SHA-256 of the bytes, 64 hex digits.
    pub sha256: Sha256,
    /// The media type; guessed from the name when absent.
    #[serde(default)]
    pub content_type: Option<String>,
}

/// Where and how to send a file's bytes.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct UploadTarget {
    /// The single-use URL.
    pub url: String,
    /// Always `PUT`.
    pub method: &'static str,
    /// Exactly the headers the client must send.
    pub headers: BTreeMap<String, String>,
    /// When the URL stops working (RFC 3339).
    pub expires_at: String,
}

/// The answer to an upload request.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct UploadTicket {
    /// `$uploadedFile:<token>`: what the model passes to actions.
    pub handle: String,
    /// The new file's id.
    pub file_id: FileId,
    /// Where to PUT the bytes (in one PUT; a file in parts goes through
    /// the same link's part routes, which `command` drives).
    pub upload: UploadTarget,
    /// The one line to run where the file is (POSIX sh and curl); run
    /// again after an interruption, it resumes (a stream from where it
    /// stands; in parts, the parts not stored).
    pub command: String,
    /// The largest size accepted.
    pub max_bytes: u64,
}

impl Uploads {
    /// Issues a handle and a single-use upload link for a file `owner` is about to upload.
    pub async fn issue_upload(
        &self,
        owner: &str,
        req: UploadRequest,
    ) -> Result<UploadTicket, Error> {
        let (file, handle, expires_at) = self.issue_file(owner, req, FileId::random()).await?;
        let intake = self.begin_upload(&file).await?;
        let target = self
            .upload_target((&file, &intake), expires_at, Reader::Model)
            .await?;
        // curl sets Content-Length from the file itself: a file of another
        // size then fails the store's check at once, where an explicit header
        // would leave the request waiting for bytes that never come.
        let headers = target
            .headers
            .iter()
            .filter(|(k, _)| !k.eq_ignore_ascii_case("content-length"))
            .map(|(k, v)| (k.as_str(), v.as_str()));
        let local = curl::local_file_name(&file.filename);
        // What the line tries again when it fails, to tell an unreachable
        // host: the link's origin, or (through a short link to the store)
        // the URL it was reaching when it failed.
        let (command, probe) = match intake {
            // The stream's line tells an unreachable host by itself.
            Intake::Stream(_) => (
                curl::stream_command(&target.url, local, file.size, curl::UPLOAD_INSTEAD),
                vec![],
            ),
            Intake::Parts(_, plan) => {
                let (origin, probed) = self.line_origins().await?;
                (
                    curl::parts_command(&target.url, local, &plan, &origin),
                    probed,
                )
            }
            Intake::Put(Access::Direct(_)) => (
                curl::upload_via_command(&target.url, headers, local),
                vec![curl::ORIGIN_REACHED.to_owned()],
            ),
            Intake::Put(Access::Proxied) => (
                curl::upload_command(&target.url, headers, local),
                vec![curl::shell_quote(&curl::origin_of(&target.url))],
            ),
        };
        let command = match probe.is_empty() {
            true => command,
            false => curl::or_unreachable(&command, &probe, curl::UPLOAD_INSTEAD),
        };
        Ok(UploadTicket {
            handle,
            file_id: file.id,
            upload: target,
            command,
            max_bytes: self.transfers.max_upload_bytes,
        })
    }

    /// Begins the upload of `file` in the store, once, when the file is
    /// issued; what its link speaks. In parts: the upload in parts begun
    /// in the store (so that parts asked for at once all join the one
    /// upload). As a stream: an empty file is stored now
    /// ([`Uploads::stream_empty`]).
    pub(crate) async fn begin_upload(&self, file: &FileMeta) -> Result<Intake<'_>, Error> {
        let intake = Intake::of(&*self.store, &self.transfers, file);
        match intake {
            Intake::Parts(parts, _) => parts.begin(&file.object_key(), &file.content_type).await?,
            Intake::Stream(_) => self.stream_empty(file).await?,
            Intake::Put(_) => {}
        }
        Ok(intake)
    }

    /// Where the bytes of a file go, as the upload and batch lines are told
    /// (their scripts send a part or a whole file nowhere else): the
    /// store's origin, or the issuer's own routes.
    pub(crate) async fn part_origin(&self) -> Result<String, Error> {
        match self.store.access() {
            Access::Direct(_) => self
                .store_origin()
                .await
                .ok_or_else(|| Error::bug("a direct store presigns URLs with an origin")),
            Access::Proxied => Ok(self.endpoints.issuer_base().to_owned()),
        }
    }

    /// [`Uploads::part_origin`], for a line that PUTs there through a link
    /// of the issuer, with what it tries again when it fails
    /// ([`curl::or_unreachable`]): the link's origin, and the bytes' origin
    /// when it is another (a store's).
    pub(crate) async fn line_origins(&self) -> Result<(String, Vec<String>), Error> {
        let origin = self.part_origin().await?;
        let probed = self.origins_probed(&origin);
        Ok((origin, probed))
    }

    fn origins_probed(&self, origin: &str) -> Vec<String> {
        let mut origins = vec![curl::ORIGIN_OF_LINK.to_owned()];
        if curl::origin_of(self.endpoints.issuer_base()) != curl::origin_of(origin) {
            origins.push(curl::shell_quote(origin));
        }
        origins
    }

    /// Checks an upload request, admits and records the file as `id`, and
    /// signs its handle; with the record's expiry.
    pub(crate) async fn issue_file(
        &self,
        owner: &str,
        req: UploadRequest,
        id: FileId,
    ) -> Result<(FileMeta, String, i64), Error> {
        self.issue_file_as(owner, req, id, Counted::Yes).await
    }

    /// [`Uploads::issue_file`] for a person's page that sends the file
    /// before it has hashed it (where the store takes a stream): the file
    /// pinned to its name, size and media type now, its digest to come
    /// with its last bytes ([`crate::Sha256::TO_COME`] in `req`).
    pub(crate) async fn issue_file_to_come(
        &self,
        owner: &str,
        req: UploadRequest,
        id: FileId,
    ) -> Result<(FileMeta, String, i64), Error> {
        let form = self.form(&req)?;
        self.admit_file(owner, &req, form, id, Counted::Yes).await
    }

    /// [`Uploads::issue_file`], counted against the owner's rate and pending
    /// caps or not.
    pub(crate) async fn issue_file_as(
        &self,
        owner: &str,
        req: UploadRequest,
        id: FileId,
        counted: Counted,
    ) -> Result<(FileMeta, String, i64), Error> {
        // Everything checked first: a refused request takes nothing from
        // the caller's rate.
        let form = self.checked(&req)?;
        self.admit_file(owner, &req, form, id, counted).await
    }

    /// The file of `req` (its name and media type as kept: `form`) as
    /// `id`, admitted and recorded; its handle, and the record's expiry.
    async fn admit_file(
        &self,
        owner: &str,
        req: &UploadRequest,
        (filename, content_type): (String, String),
        id: FileId,
        counted: Counted,
    ) -> Result<(FileMeta, String, i64), Error> {
        let file = FileMeta {
            id,
            owner: owner.to_owned(),
            filename,
            content_type,
            size: req.size,
            sha256: req.sha256,
        };
        let expires_at = now_unix() + self.transfers.handle_ttl.as_secs() as i64;
        self.limits.admit(&file, expires_at, counted).await?;
        crate::telemetry::audit(crate::telemetry::Change::Issued, &file, None);
        let handle = self.links.handle(&file.id);
        Ok((file, handle, expires_at))
    }

    /// The checks of an upload request that need nothing stored: its name,
    /// size, digest and media type; the name and the media type as kept.
    pub(crate) fn checked(&self, req: &UploadRequest) -> Result<(String, String), Error> {
        if req.sha256.is_to_come() {
            return Err(Error::the_mark_declared());
        }
        self.form(req)
    }

    /// [`Uploads::checked`] but the digest, which may be to come.
    pub(crate) fn form(&self, req: &UploadRequest) -> Result<(String, String), Error> {
        let filename = req.filename.trim();
        if filename.is_empty() {
            return Err(Error::Invalid("filename must not be empty".into()));
        }
        if filename.len() > MAX_FILENAME_BYTES {
            return Err(Error::Invalid(format!(
                "filename is longer than {MAX_FILENAME_BYTES} bytes"
            )));
        }
        let max = self.transfers.max_upload_bytes;
        if req.size > max {
            return Err(Error::Invalid(format!(
                "size {} is over the limit of {max} bytes",
                req.size
            )));
        }
        if req.size == 0 && req.sha256 != Sha256::of(b"") {
            return Err(Error::Invalid(format!(
                "a file of 0 bytes has the sha256 {}, not {}",
                Sha256::of(b""),
                req.sha256
            )));
        }
        let content_type = match req.content_type.as_deref().map(str::trim) {
            None | Some("") => mime_guess::from_path(filename)
                .first_or_octet_stream()
                .essence_str()
                .to_owned(),
            Some(ct) => parse_content_type(ct)?,
        };
        Ok((filename.to_owned(), content_type))
    }

    /// Where and how to PUT `file`'s bytes: a short link of sluice's
    /// (`/u/<token>`), which a direct store's presigned URL is minted behind
    /// when it is asked for ([`Uploads::upload_location`]); or, for a page
    /// the model never reads, a direct store's presigned URL itself. Never
    /// valid past `record_expires`, when the file's record expires.
    pub(crate) async fn upload_target(
        &self,
        (file, intake): (&FileMeta, &Intake<'_>),
        record_expires: i64,
        reader: Reader,
    ) -> Result<UploadTarget, Error> {
        // A file in parts, or as large in one resumable stream, may take
        // long, and its line resumes: its link lives as long as its record.
        let long = match intake {
            Intake::Parts(..) => true,
            Intake::Stream(_) => file.size > self.transfers.single_put_max_bytes,
            Intake::Put(_) => false,
        };
        let ttl = if long {
            self.transfers.handle_ttl
        } else {
            self.transfers.upload_ttl
        };
        let now = now_unix();
        let expires_at = (now + ttl.as_secs() as i64).min(record_expires);
        let ttl =
            std::time::Duration::from_secs(u64::try_from(expires_at - now).unwrap_or(0).max(1));
        let short = || {
            let link = self.links.upload(&file.id, expires_at);
            tracing::info!(file_id = %file.id, jti = %link.jti, size = file.size, "upload issued");
            link.url
        };
        let parted = intake.plan().is_some();
        let (url, headers) = match self.store.access() {
            // In parts: each part's URL and headers are minted as it goes.
            Access::Direct(_) if reader == Reader::Model && parted => (short(), BTreeMap::new()),
            Access::Direct(presign) => {
                let p = presign_pinned_put(presign, file, ttl).await?;
                let url = match reader {
                    Reader::Model => short(),
                    Reader::Page => {
                        tracing::info!(file_id = %file.id, size = file.size, "direct upload issued");
                        p.url
                    }
                };
                (url, p.headers.into_iter().collect())
            }
            Access::Proxied => (
                short(),
                BTreeMap::from([("Content-Type".to_owned(), file.content_type.clone())]),
            ),
        };
        Ok(UploadTarget {
            url,
            method: "PUT",
            headers,
            expires_at: rfc3339(expires_at),
        })
    }

    /// Stores bytes already in memory as a new file of `owner` (callers
    /// bound their size and have checked `sha256`); returns what it pins
    /// and its handle.
    pub(crate) async fn store_inline(
        &self,
        owner: &str,
        filename: String,
        data: Vec<u8>,
        sha256: Sha256,
        content_type: Option<String>,
        counted: Counted,
    ) -> Result<(FileMeta, String), Error> {
        let req = UploadRequest {
            filename,
            size: data.len() as u64,
            sha256,
            content_type,
        };
        let (file, handle, _) = self
            .issue_file_as(owner, req, FileId::random(), counted)
            .await?;
        let body: ByteStream = Box::pin(futures_util::stream::once(async move {
            Ok(bytes::Bytes::from(data))
        }));
        self.store
            .put(&file.object_key(), file.size, file.sha256, body)
            .await?;
        self.files.gate().stored_now(&file, None).await?;
        tracing::info!(file_id = %file.id, size = file.size, "inline file stored");
        Ok((file, handle))
    }
}

/// A direct store's presigned PUT of exactly `file` (its size, digest and
/// media type signed), valid for `ttl`.
pub(crate) async fn presign_pinned_put(
    presign: &dyn crate::store::Presigner,
    file: &FileMeta,
    ttl: std::time::Duration,
) -> Result<crate::store::Presigned, Error> {
    Ok(presign
        .presign_put(
            &file.object_key(),
            file.size,
            file.sha256,
            &file.content_type,
            ttl,
        )
        .await?)
}

/// Accepts a media type such as `text/plain; charset=utf-8`.
pub(crate) fn parse_content_type(ct: &str) -> Result<String, Error> {
    let bad = || {
        Error::Invalid(format!(
            "content_type {ct:?} is not a media type such as text/plain"
        ))
    };
    if ct.len() > 255 || ct.chars().any(|c| c.is_control()) {
        return Err(bad());
    }
    ct.parse::<mime::Mime>()
        .map(|m| m.to_string())
        .map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types_are_parsed_and_junk_is_refused() {
        assert_eq!(
            parse_content_type("text/plain; charset=utf-8").unwrap(),
            "text/plain; charset=utf-8"
        );
        for bad in ["not a type", "text/plain\n", &"x".repeat(300)] {
            assert!(
                matches!(parse_content_type(bad), Err(Error::Invalid(_))),
                "{bad:?}"
            );
        }
    }
}
