//! The file tools. Each binds everything it issues to the caller, and
//! returns `structuredContent` matching its output schema ([`crate::table`])
//! plus a one-line summary; a refusal is a tool error that says what to do
//! next ([`crate::reply`]). The gate has checked each call's scope.

use base64::Engine as _;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::{tool, tool_router};
use sluice::Error;
use sluice::FileId;
use sluice::service::downloads::MODEL_READS;
use sluice::service::imports::ImportRequest;
use sluice::service::pages::BrowserUploadRequest;
use sluice::service::uploads::issue::UploadRequest;
use sluice::service::uploads::small::SMALL_FILE_MAX;

use std::time::Duration;

use rmcp::handler::server::tool::RequestState;
use rmcp::model::{
    CallToolResponse, ElicitRequest, ElicitRequestParams, InputRequest, InputRequests,
    InputRequiredResult, RequestMetaObject,
};
use rmcp::{Peer, RoleServer};

use crate::reply::{By, Refusal, Reply, compact, success};
use crate::server::SluiceTools;
use crate::shapes::{
    FileArg, FilesArg, ImportIdArg, ListArgs, SmallFile, SmallUploadArgs, UploadIdArg, UploadsArgs,
};
use crate::summaries::{self, shown};
use crate::table::input;

#[tool_router(router = file_tools, vis = "pub(crate)")]
impl SluiceTools {
    #[tool(
        description = "Let the PERSON upload a file from their own computer through a web page: when the file is on their machine, \
or your shell cannot reach the upload host (\"Host not in allowlist\"). Show them the returned `page_url` as a link (\"Open this link \
to upload the file; tell me when it is done.\"), wait until they say so, then call get_upload_status once (never in a loop). \
Hosts with MCP Apps show the same form in the chat; it reports the upload itself.",
        input_schema = input::<BrowserUploadRequest>()
    )]
    async fn request_browser_upload(
        &self,
        By(caller): By,
        Parameters(req): Parameters<BrowserUploadRequest>,
        RequestState(state): RequestState,
        meta: RequestMetaObject,
    ) -> Result<CallToolResponse, Refusal> {
        // The call again, once the client showed the person the page.
        if let Some(state) = state {
            return Ok(self.after_elicitation(&caller.owner, &state).await?.into());
        }
        let page = self
            .sluice
            .pages()
            .request_browser_upload(&caller.owner, req)?;
        // A client that shows a URL itself (URL elicitation, declared with
        // the request): it shows the person the page, then calls again
        // with the state, and the model never relays a link.
        let shows_urls = meta
            .client_capabilities()
            .and_then(|c| c.elicitation)
            .is_some_and(|e| e.url.is_some());
        if shows_urls {
            let state = serde_json::to_string(&page).map_err(Error::internal)?;
            let ask = ElicitRequest::new(ElicitRequestParams::UrlElicitationParams {
                meta: None,
                message: "Upload the file on this page; it goes straight to secure storage, not through the chat."
                    .to_owned(),
                url: page.page_url.clone(),
                elicitation_id: page.upload_id.clone(),
            });
            let mut asks = InputRequests::new();
            asks.insert("upload".to_owned(), InputRequest::Elicitation(ask));
            return Ok(InputRequiredResult::new(Some(asks), Some(state)).into());
        }
        // The summary says the link and the id once; the rest is in
        // `structuredContent`.
        Ok(compact(
            format!(
                "Show the person this link: \"Open this link to upload the file; tell me when it is done: {}\" \
                 (if an upload form appears in the conversation, they can use it instead; it tells you when it is done). \
                 It works once, until {}. When they say it is done, call get_upload_status with upload_id {}.",
                page.page_url, page.expires_at, page.upload_id
            ),
            &[],
            &page,
        )?
        .into())
    }

    #[tool(
        description = "After the person says their upload on the page is done: `ready` with the file's `handle`, \
`pending` (ask whether the page said it was done; call again only after they answer) or `expired` (ask for a new page). \
Once per answer from the person, never in a loop; `wait_seconds` waits for the upload to finish.",
        input_schema = input::<UploadIdArg>()
    )]
    async fn get_upload_status(
        &self,
        By(caller): By,
        Parameters(arg): Parameters<UploadIdArg>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
    ) -> Reply {
        // The waits part: a few waits a user, one an upload, within a
        // rate; any other call answers at once.
        let asked = Duration::from_secs(arg.wait_seconds.unwrap_or(0).into());
        let wait = self
            .sluice
            .limits()
            .wait(&caller.owner, &arg.upload_id, asked);
        let status = self
            .wait_for_upload(
                &caller.owner,
                &arg.upload_id,
                wait.time(),
                meta.get_progress_token(),
                &peer,
            )
            .await?;
        drop(wait);
        success(summaries::upload_status(&status), &status)
    }

    #[tool(
        description = "Get a single-use link to upload a file of any size without its bytes passing through the conversation. \
First get the file's exact size and sha256 (`stat -c %s FILE`, `sha256sum FILE`). Run the returned `command` where the file is: \
storage accepts exactly that size and digest, once; run it again to resume. If it says its host is unreachable, \
call request_browser_upload; never read the file into the conversation. \
Pass the returned `handle` (`$uploadedFile:…`) wherever the file is needed. Never inline base64 over 16 KiB.",
        input_schema = input::<UploadRequest>()
    )]
    async fn request_upload(
        &self,
        By(caller): By,
        Parameters(req): Parameters<UploadRequest>,
    ) -> Reply {
        let (name, size) = (shown(&req.filename), req.size);
        let ticket = self
            .sluice
            .uploads()
            .issue_upload(&caller.owner, req)
            .await?;
        // The line says itself which host a sandbox must allow, if one
        // is blocked.
        compact(
            format!(
                "Upload link for {name} ({size} bytes) until {}: run `command` where the file is, \
                 then pass `handle` for the file.",
                ticket.upload.expires_at,
            ),
            &["handle", "file_id", "command"],
            &ticket,
        )
    }

    #[tool(
        description = "Import a file that is on the web (a URL, a presigned link, a host's download_url) without it passing \
through the conversation or your sandbox: the server fetches `url` itself. Give `size` and `sha256` if known. Answers \
`ready` (use `handle`), `rejected` (`reason`) or `pending` (then get_import_status). For a local file use request_upload.",
        input_schema = input::<ImportRequest>()
    )]
    async fn import_file(
        &self,
        By(caller): By,
        Parameters(req): Parameters<ImportRequest>,
    ) -> Reply {
        let ticket = self
            .sluice
            .imports()
            .import_file(&caller.owner, req)
            .await?;
        success(summaries::import(&ticket), &ticket)
    }

    #[tool(
        description = "Where an import_file stands. `wait_seconds` (at most 45) waits for it to end.",
        input_schema = input::<ImportIdArg>()
    )]
    async fn get_import_status(
        &self,
        By(caller): By,
        Parameters(arg): Parameters<ImportIdArg>,
    ) -> Reply {
        let id = FileId::parse(arg.file_id.trim()).ok_or_else(|| {
            Error::Invalid("file_id is not a file id: pass the file_id import_file returned".into())
        })?;
        let wait = Duration::from_secs(u64::from(arg.wait_seconds.unwrap_or(0)));
        let ticket = self
            .sluice
            .imports()
            .import_status(&caller.owner, &id, wait)
            .await?;
        success(summaries::import(&ticket), &ticket)
    }

    #[tool(
        description = "Upload many files with one call and one line (a folder: up to 1000). Give each file's `path` (relative to \
where the line runs), size and sha256. Run the returned `command` there once: it sends every file still missing (a file you \
already stored is not sent again), a line per file, and resumes when run again. Pass `handle` (`$uploadedFiles:…`) to a FileList \
field, or each `file_id`.",
        input_schema = input::<UploadsArgs>()
    )]
    async fn request_uploads(
        &self,
        By(caller): By,
        Parameters(args): Parameters<UploadsArgs>,
    ) -> Reply {
        let batch = self
            .sluice
            .batches()
            .issue_uploads(&caller.owner, args.files)
            .await?;
        let summary = match &batch.command {
            Some(_) => {
                "Run `command` where the files are; then use `handle` or the file_ids (in the order asked)."
            }
            None => {
                "Nothing to send: every file was stored already or refused. Use `handle` or the file_ids."
            }
        };
        compact(
            summary.to_owned(),
            &["handle", "command", "counts", "files"],
            &batch,
        )
    }

    #[tool(
        description = "Download many of your files (file_ids, handles, or a batch's `$uploadedFiles:…` handle) with one call \
and one line. Run `command` where they should go: it saves each under its name (a name taken by another file of the list gets \
\" (2)\"; a different file already there is never overwritten), checks each sha256, and the line works once. \
`zip: true` gives one single-use link to them all as one zip instead, for a person or a host without a shell.",
        input_schema = input::<FilesArg>()
    )]
    async fn get_download_urls(
        &self,
        By(caller): By,
        Parameters(arg): Parameters<FilesArg>,
    ) -> Reply {
        let batch = self
            .sluice
            .batches()
            .issue_downloads(&caller, arg.files, arg.zip)
            .await?;
        let summary = match (&batch.command, &batch.zip) {
            (Some(_), _) => {
                "Run `command` where the files should go (single use; call again for a new line to resume)."
            }
            (_, Some(_)) => {
                "One zip of the files: run `zip.command`, or give the person `zip.url` (single use; a browser shows a page with a Save button)."
            }
            _ => "None of these files can be downloaded: see each one's error.",
        };
        compact(summary.to_owned(), &["command", "zip", "files"], &batch)
    }

    #[tool(
        description = "Get a single-use, short-lived download link for one of your files (by file_id or handle). \
Run the returned `command` where the file should go: it saves it in the current directory, checks its sha256, resumes when run again \
with a new link, and fails loudly if the link was used or expired (if curl cannot reach its host, give the person the link). \
The bytes never pass through the conversation.",
        input_schema = input::<FileArg>()
    )]
    async fn get_download_url(
        &self,
        By(caller): By,
        Parameters(arg): Parameters<FileArg>,
    ) -> Reply {
        let file = self.sluice.files().resolve_file(&caller, &arg.file).await?;
        let ticket = self
            .sluice
            .downloads()
            .issue_download(&caller.owner, &file)
            .await?
            .within(MODEL_READS);
        compact(
            format!(
                "Download link for {} ({} bytes), single use, valid until {}: run `command` where the file \
                 should go (it checks the sha256; run again with a new link, it resumes).",
                shown(&ticket.filename),
                ticket.size,
                ticket.download.expires_at
            ),
            &["file_id", "command"],
            &ticket,
        )
    }

    #[tool(
        description = "Delete one of your files (by file_id or handle) before it expires: its bytes go, and its handle and \
links stop working. Deleting it again answers the same.",
        input_schema = input::<FileArg>()
    )]
    async fn delete_file(&self, By(caller): By, Parameters(arg): Parameters<FileArg>) -> Reply {
        let gone = self.sluice.files().delete_file(&caller, &arg.file).await?;
        success(
            format!("Deleted {} ({} bytes).", shown(&gone.filename), gone.size),
            &gone,
        )
    }

    #[tool(
        description = "A signed receipt of custody for one of your ready files (by file_id or handle): a compact JWS (ES256) \
over its id, sha256, size, owner, type, scan verdict and times, which anyone verifies offline against `jwks_url`. A file \
not ready yet answers what state it is in.",
        input_schema = input::<FileArg>()
    )]
    async fn get_file_receipt(
        &self,
        By(caller): By,
        Parameters(arg): Parameters<FileArg>,
    ) -> Reply {
        let receipt = self.sluice.receipts().receipt(&caller, &arg.file).await?;
        compact(
            format!(
                "Receipt for file {} signed with key {}; verify it against {}.",
                receipt.file_id, receipt.kid, receipt.jwks_url
            ),
            &["receipt"],
            &receipt,
        )
    }

    #[tool(
        description = "List your files, newest first, 50 a page (`limit`: up to 100): file_id, name, size, sha256, content type, \
state (`pending`, `verifying`, `ready`) and expiry. Pass `next_cursor` as `cursor` only if you need older files.",
        input_schema = input::<ListArgs>()
    )]
    async fn list_files(&self, By(caller): By, Parameters(args): Parameters<ListArgs>) -> Reply {
        let page = self
            .sluice
            .files()
            .list_files(&caller.owner, args.limit, args.cursor.as_deref())
            .await?;
        let more = if page.next_cursor.is_some() {
            " More are on the next page (next_cursor)."
        } else {
            ""
        };
        success(format!("{} file(s).{more}", page.files.len()), &page)
    }

    #[tool(
        description = "Fallback for clients that cannot reach the upload host at all: store a SMALL file (at most 16 KiB) sent as base64 \
with its sha256 (checked). Prefer request_upload: any size, and the bytes never pass through the conversation.",
        input_schema = input::<SmallUploadArgs>()
    )]
    async fn upload_small_file(
        &self,
        By(caller): By,
        Parameters(args): Parameters<SmallUploadArgs>,
    ) -> Reply {
        let encoded: String = args.data_base64.split_whitespace().collect();
        if encoded.len() > (SMALL_FILE_MAX / 3 + 1) * 4 {
            return Err(Error::Invalid(format!(
                "data_base64 decodes to more than {SMALL_FILE_MAX} bytes: use request_upload and run its command instead"
            ))
            .into());
        }
        let data = base64::engine::general_purpose::STANDARD
            .decode(&encoded)
            .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(&encoded))
            .map_err(|_| Error::Invalid("data_base64 is not valid base64".into()))?;
        let stored = self
            .sluice
            .uploads()
            .upload_small(
                &caller.owner,
                args.filename,
                data,
                args.sha256,
                args.content_type,
            )
            .await?;
        let scanning = if self.sluice.files().gate().scanning() {
            " It is being scanned for malware: list_files says when it is ready to use."
        } else {
            ""
        };
        success(
            format!(
                "Stored {} ({} bytes) as {}.{scanning}",
                stored.filename, stored.size, stored.file_id
            ),
            &stored,
        )
    }

    #[tool(
        description = "Fallback for clients that cannot download from the link host: one of your SMALL files (at most 16 KiB) \
as base64, verified against its sha256. Prefer get_download_url.",
        input_schema = input::<FileArg>()
    )]
    async fn read_small_file(&self, By(caller): By, Parameters(arg): Parameters<FileArg>) -> Reply {
        let file = self.sluice.files().resolve_file(&caller, &arg.file).await?;
        let data = self.sluice.downloads().read_small(&file).await?;
        let out = SmallFile {
            file_id: file.id,
            filename: file.filename,
            size: file.size,
            sha256: file.sha256,
            content_type: file.content_type,
            data_base64: base64::engine::general_purpose::STANDARD.encode(&data),
        };
        success(
            format!("{}: {} bytes, sha256 verified.", out.filename, out.size),
            &out,
        )
    }
}
