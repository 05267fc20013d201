//! The file tools. Each checks its own scope, binds everything it issues to
//! the caller, and returns `structuredContent` matching its `outputSchema`
//! plus a one-line summary. Failures are `isError` results that say what to
//! do next.

use std::borrow::Cow;

use base64::Engine as _;
use http::request::Parts;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::{Extension, schema_for_input, schema_for_output};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::JsonObject;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, ProtocolVersion, ServerCapabilities, ServerConfig,
};
use rmcp::{ErrorData, ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sluice::catalog::FilePage;
use sluice::service::{DownloadTicket, SMALL_FILE_MAX, SmallUpload, UploadRequest, UploadTicket};
use sluice::{ApiError, Caller, FileId, Scope, Sha256, Sluice};

/// The protocol versions this server speaks.
pub const PROTOCOL_VERSIONS: &[ProtocolVersion] = &[
    ProtocolVersion::V_2026_07_28,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2025_06_18,
];

/// JSON Schema without schemars' non-standard integer formats (`uint64`,
/// `uint`), which strict validators in clients warn about; `minimum: 0`
/// already says what they mean.
fn portable(schema: &JsonObject) -> std::sync::Arc<JsonObject> {
    fn clean(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Object(map) => {
                if map
                    .get("format")
                    .and_then(|f| f.as_str())
                    .is_some_and(|f| f.starts_with("uint") || f.starts_with("int"))
                {
                    map.remove("format");
                }
                map.values_mut().for_each(clean);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(clean),
            _ => {}
        }
    }
    let mut value = serde_json::Value::Object(schema.clone());
    clean(&mut value);
    match value {
        serde_json::Value::Object(map) => std::sync::Arc::new(map),
        _ => unreachable!("an object stays an object"),
    }
}

/// The input schema of a tool taking `T`.
fn input<T: JsonSchema + 'static>() -> std::sync::Arc<JsonObject> {
    portable(&schema_for_input::<T>().expect("tool inputs are objects"))
}

/// The output schema of a tool returning `T`.
fn output<T: JsonSchema + 'static>() -> std::sync::Arc<JsonObject> {
    portable(&schema_for_output::<T>())
}

/// The scope a tool needs, or `None` for a name that is not a tool here.
pub fn required_scope(tool: &str) -> Option<Scope> {
    match tool {
        "request_upload" | "upload_small_file" | "request_browser_upload" | "get_upload_status" => {
            Some(Scope::FilesWrite)
        }
        "get_download_url" | "list_files" | "read_small_file" => Some(Scope::FilesRead),
        "list_actions" | "execute_action" => Some(Scope::ActionsExecute),
        t if t.starts_with(crate::actions::TOOL_PREFIX) => Some(Scope::ActionsExecute),
        _ => None,
    }
}

/// Which browser upload.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UploadIdArg {
    /// The `upload_id` request_browser_upload returned.
    pub upload_id: String,
}

/// A file named by its id or its handle.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileArg {
    /// A `file_id` (from list_files) or a handle (`$uploadedFile:…`).
    pub file: String,
}

/// A small file sent inline.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SmallUploadArgs {
    /// The file's name, e.g. `notes.txt`.
    pub filename: String,
    /// The file's bytes, base64-encoded; at most 16 KiB once decoded.
    pub data_base64: String,
    /// SHA-256 of the decoded bytes, 64 hex digits.
    pub sha256: Sha256,
    /// The media type; guessed from the name when absent.
    #[serde(default)]
    pub content_type: Option<String>,
}

/// Which page of the caller's files.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// How many files, 1 to 100 (default 50).
    #[serde(default)]
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page; leave out for the first.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// A small file's bytes, inline.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SmallFile {
    /// The file's id.
    pub file_id: FileId,
    /// The name it was uploaded under.
    pub filename: String,
    /// Size in bytes.
    pub size: u64,
    /// Lowercase hex digest, verified against the bytes.
    pub sha256: Sha256,
    /// The media type.
    pub content_type: String,
    /// The bytes, base64-encoded.
    pub data_base64: String,
}

/// The MCP server: the file tools over one shared [`Sluice`].
#[derive(Clone)]
pub struct SluiceTools {
    sluice: Sluice,
    tool_router: ToolRouter<Self>,
}

impl std::fmt::Debug for SluiceTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SluiceTools").finish_non_exhaustive()
    }
}

/// A successful result: a one-line summary, the JSON for clients that do not
/// read `structuredContent`, and the `structuredContent` itself.
pub(crate) fn success<T: Serialize>(
    summary: String,
    value: &T,
) -> Result<CallToolResult, ApiError> {
    let json = serde_json::to_value(value).map_err(ApiError::internal)?;
    let mut result = CallToolResult::structured(json);
    result.content.insert(0, ContentBlock::text(summary));
    Ok(result)
}

/// The host (and port) a URL points at: what must be reachable to use it.
fn host_of(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => match (u.host_str(), u.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_owned(),
            _ => url.to_owned(),
        },
        Err(_) => url.to_owned(),
    }
}

/// A tool error the model can act on.
pub(crate) fn failure(error: ApiError) -> CallToolResult {
    let message = match &error {
        ApiError::Internal(e) => {
            tracing::error!(error = %e, "internal error in a tool");
            "internal error: try again later".to_owned()
        }
        other => other.to_string(),
    };
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// Folds a tool body's outcome into a result.
fn finish(outcome: Result<CallToolResult, ApiError>) -> Result<CallToolResult, ErrorData> {
    Ok(outcome.unwrap_or_else(failure))
}

/// The caller the gate authenticated, holding `scope`.
fn caller(parts: &Parts, scope: Scope) -> Result<Caller, ApiError> {
    let caller = parts
        .extensions
        .get::<Caller>()
        .cloned()
        .ok_or(ApiError::Unauthorized("a bearer token is required"))?;
    caller.require(scope)?;
    Ok(caller)
}

/// The caller the gate authenticated, holding `scope`, from a tool call's
/// context (for tools built at run time, which take no `Extension`).
pub(crate) fn caller_of(
    extensions: &rmcp::model::Extensions,
    scope: Scope,
) -> Result<Caller, ApiError> {
    let parts = extensions
        .get::<Parts>()
        .ok_or(ApiError::Unauthorized("a bearer token is required"))?;
    caller(parts, scope)
}

#[tool_router]
impl SluiceTools {
    /// The tools over `sluice`: the file tools, and the action tools when
    /// actions are configured.
    pub fn new(sluice: Sluice) -> Self {
        let mut tool_router = Self::tool_router();
        let catalog = sluice.actions().catalog();
        if catalog.is_empty() {
            tool_router.remove_route("list_actions");
            tool_router.remove_route("execute_action");
        } else {
            let names: Vec<&str> = catalog.actions().iter().map(|a| a.name.as_str()).collect();
            if let Some(route) = tool_router.map.get_mut("execute_action") {
                let description = format!(
                    "{} Actions here: {}.",
                    route.attr.description.as_deref().unwrap_or_default(),
                    names.join(", ")
                );
                route.attr.description = Some(description.into());
            }
            for route in crate::actions::routes(&sluice) {
                tool_router.add_route(route);
            }
        }
        Self {
            sluice,
            tool_router,
        }
    }

    /// The shared state the tools call.
    pub(crate) fn sluice(&self) -> &Sluice {
        &self.sluice
    }

    #[tool(
        description = "List the actions (backend operations with a form) you can run, each with its fields as JSON Schema. \
File fields are strings annotated `x-mcp-file`: they take a `$uploadedFile:` handle from request_upload. \
Each action is also its own tool, `action_<name>`.",
        output_schema = output::<crate::actions::ActionList>()
    )]
    async fn list_actions(
        &self,
        Extension(parts): Extension<Parts>,
    ) -> Result<CallToolResult, ErrorData> {
        finish(
            async {
                caller(&parts, Scope::ActionsExecute)?;
                crate::actions::list(&self.sluice)
            }
            .await,
        )
    }

    #[tool(
        description = "Run an action (a backend operation with a form) with its fields; returns the backend's result. \
To pass a file: find the File (or FileList) field, call request_upload with the file's name, size and sha256, \
run the returned curl command where the file is, then pass the returned handle (`$uploadedFile:…`) as the field's value. \
Handles are resolved only in File and FileList fields; any other field receives text as it is. \
Files in the result larger than 16 KiB come back as download links (run their curl command). Call list_actions for each action's fields.",
        input_schema = input::<crate::actions::ExecuteArgs>(),
        output_schema = crate::actions::result_schema()
    )]
    async fn execute_action(
        &self,
        Extension(parts): Extension<Parts>,
        Parameters(args): Parameters<crate::actions::ExecuteArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        finish(
            async {
                let caller = caller(&parts, Scope::ActionsExecute)?;
                crate::actions::execute(
                    &self.sluice,
                    &caller,
                    &args.action,
                    serde_json::Value::Object(args.fields),
                )
                .await
            }
            .await,
        )
    }

    #[tool(
        description = "Let the PERSON upload a file from their own computer through a web page, when the file is on their machine \
or your shell cannot reach the upload host (\"Host not in allowlist\"). Show them the returned `page_url` as a link, with words like: \
\"Open this link to upload the file; tell me when it is done.\" Then wait for them to say so, and call get_upload_status once \
(do not poll in a loop). The page hashes the file in their browser and sends it straight to storage; no bytes pass through the conversation.",
        input_schema = input::<sluice::browser::BrowserUploadRequest>(),
        output_schema = output::<sluice::browser::BrowserUpload>()
    )]
    async fn request_browser_upload(
        &self,
        Extension(parts): Extension<Parts>,
        Parameters(req): Parameters<sluice::browser::BrowserUploadRequest>,
    ) -> Result<CallToolResult, ErrorData> {
        finish(async {
            let caller = caller(&parts, Scope::FilesWrite)?;
            let page = self.sluice.request_browser_upload(&caller.owner, req)?;
            success(
                format!(
                    "Show the person this link: \"Open this link to upload the file; tell me when it is done: {}\" \
                     It works once, until {}. When they say it is done, call get_upload_status with upload_id {}.",
                    page.page_url, page.expires_at, page.upload_id
                ),
                &page,
            )
        }
        .await)
    }

    #[tool(
        description = "After the person says they finished uploading on the page from request_browser_upload, get the result: \
`ready` with the file's `handle` (use it like any handle), `pending` (not uploaded yet: ask them whether the page said it was done, \
and call again only after they answer) or `expired` (ask for a new page). Call it once per answer from the person, never in a loop.",
        input_schema = input::<UploadIdArg>(),
        output_schema = output::<sluice::browser::UploadStatus>()
    )]
    async fn get_upload_status(
        &self,
        Extension(parts): Extension<Parts>,
        Parameters(arg): Parameters<UploadIdArg>,
    ) -> Result<CallToolResult, ErrorData> {
        finish(async {
            let caller = caller(&parts, Scope::FilesWrite)?;
            let status = self.sluice.upload_status(&caller.owner, &arg.upload_id).await?;
            let summary = match (&status.state, &status.filename, status.size) {
                (sluice::browser::UploadState::Ready, Some(name), Some(size)) => {
                    format!("Uploaded: {name} ({size} bytes). Use the handle.")
                }
                (sluice::browser::UploadState::Pending, _, _) => {
                    "Not uploaded yet. Ask the person whether the page said it was done; call again after they answer.".to_owned()
                }
                _ => "The page expired before a file arrived. Call request_browser_upload for a new one.".to_owned(),
            };
            success(summary, &status)
        }
        .await)
    }

    #[tool(
        description = "Get a single-use link to upload a file of any size without passing its bytes through the conversation. \
First compute the file's exact size in bytes and its sha256 (e.g. `stat -c %s FILE` and `sha256sum FILE`). \
Then run the returned `curl` command where the file is: it PUTs the bytes straight to storage, which accepts exactly that size and digest, once. \
The upload host must be reachable from where the command runs (a sandboxed hosted client may need it allowlisted). \
Pass the returned `handle` (`$uploadedFile:…`) wherever the file is needed. Never inline base64 for files over 16 KiB.",
        input_schema = input::<UploadRequest>(),
        output_schema = output::<UploadTicket>()
    )]
    async fn request_upload(
        &self,
        Extension(parts): Extension<Parts>,
        Parameters(req): Parameters<UploadRequest>,
    ) -> Result<CallToolResult, ErrorData> {
        finish(async {
            let caller = caller(&parts, Scope::FilesWrite)?;
            let (name, size) = (req.filename.clone(), req.size);
            let ticket = self.sluice.issue_upload(&caller.owner, req).await?;
            success(
                format!(
                    "Upload link for {name} ({size} bytes) until {}. Run the curl command where the file is; \
                     {} must be reachable from there (a sandboxed client may need it allowlisted). Then use the handle.",
                    ticket.upload.expires_at,
                    host_of(&ticket.upload.url)
                ),
                &ticket,
            )
        }
        .await)
    }

    #[tool(
        description = "Get a single-use, short-lived download link for one of your files (by file_id or handle). \
Run the returned `curl` command to save the file in the current directory; it fails loudly if the link was already used or expired. \
The bytes never pass through the conversation. The size and sha256 are returned so the download can be checked.",
        output_schema = output::<DownloadTicket>()
    )]
    async fn get_download_url(
        &self,
        Extension(parts): Extension<Parts>,
        Parameters(arg): Parameters<FileArg>,
    ) -> Result<CallToolResult, ErrorData> {
        finish(async {
            let caller = caller(&parts, Scope::FilesRead)?;
            let file = self.sluice.resolve_file(&caller, &arg.file).await?;
            let ticket = self.sluice.issue_download(&file).await?;
            success(
                format!(
                    "Download link for {} ({} bytes, sha256 {}), single use, valid until {}: run the curl command.",
                    ticket.filename, ticket.size, ticket.sha256, ticket.download.expires_at
                ),
                &ticket,
            )
        }
        .await)
    }

    #[tool(
        description = "List your files, newest first, a page at a time (50 unless `limit` says otherwise, at most 100): file_id, name, size, sha256, content type, state (`pending` until uploaded, then `ready`) and expiry. When `next_cursor` is present there are more: pass it as `cursor` only if you need older files.",
        input_schema = input::<ListArgs>(),
        output_schema = output::<FilePage>()
    )]
    async fn list_files(
        &self,
        Extension(parts): Extension<Parts>,
        Parameters(args): Parameters<ListArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        finish(
            async {
                let caller = caller(&parts, Scope::FilesRead)?;
                let page = self
                    .sluice
                    .list_files(&caller.owner, args.limit, args.cursor.as_deref())
                    .await?;
                let more = if page.next_cursor.is_some() {
                    " More are on the next page (next_cursor)."
                } else {
                    ""
                };
                success(format!("{} file(s).{more}", page.files.len()), &page)
            }
            .await,
        )
    }

    #[tool(
        description = "Fallback for clients that cannot reach the upload host at all: store a SMALL file (at most 16 KiB) sent as base64, \
with its sha256 (required, checked). Best effort, small files only: prefer request_upload, which handles any size without the bytes passing through the conversation.",
        input_schema = input::<SmallUploadArgs>(),
        output_schema = output::<SmallUpload>()
    )]
    async fn upload_small_file(
        &self,
        Extension(parts): Extension<Parts>,
        Parameters(args): Parameters<SmallUploadArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        finish(async {
            let caller = caller(&parts, Scope::FilesWrite)?;
            let encoded: String = args.data_base64.split_whitespace().collect();
            if encoded.len() > (SMALL_FILE_MAX / 3 + 1) * 4 {
                return Err(ApiError::BadRequest(format!(
                    "data_base64 decodes to more than {SMALL_FILE_MAX} bytes: use request_upload and run its curl command instead"
                )));
            }
            let data = base64::engine::general_purpose::STANDARD
                .decode(&encoded)
                .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(&encoded))
                .map_err(|_| ApiError::BadRequest("data_base64 is not valid base64".into()))?;
            let stored = self
                .sluice
                .upload_small(&caller.owner, args.filename, data, args.sha256, args.content_type)
                .await?;
            success(
                format!("Stored {} ({} bytes) as {}.", stored.filename, stored.size, stored.file_id),
                &stored,
            )
        }
        .await)
    }

    #[tool(
        description = "Fallback for clients that cannot download from the link host: read one of your SMALL files (at most 16 KiB) as base64, \
verified against its sha256. Best effort, small files only: prefer get_download_url.",
        output_schema = output::<SmallFile>()
    )]
    async fn read_small_file(
        &self,
        Extension(parts): Extension<Parts>,
        Parameters(arg): Parameters<FileArg>,
    ) -> Result<CallToolResult, ErrorData> {
        finish(
            async {
                let caller = caller(&parts, Scope::FilesRead)?;
                let file = self.sluice.resolve_file(&caller, &arg.file).await?;
                let data = self.sluice.read_small(&file).await?;
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
            .await,
        )
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for SluiceTools {
    fn get_info(&self) -> ServerConfig {
        let mut instructions = String::from(
            "sluice moves files without their bytes passing through the conversation. \
             To upload: compute size and sha256, call request_upload, run its curl command, use the handle. \
             To download: call get_download_url and run its curl command. \
             upload_small_file / read_small_file are a fallback for files of at most 16 KiB.",
        );
        if !self.sluice.actions().catalog().is_empty() {
            instructions.push_str(
                " Actions (action_<name>, execute_action) run backend operations; \
                 a File field takes the handle of a file uploaded with request_upload.",
            );
        }
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("sluice", env!("CARGO_PKG_VERSION")))
            .with_instructions(instructions)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(PROTOCOL_VERSIONS)
    }
}
