//! The MCP server: the tools over one shared [`Sluice`], and what it says
//! in `initialize`. The file tools ([`crate::tools`]) are always listed; the
//! action tools ([`crate::actions`]) only where actions are configured. Each
//! tool's output schema comes from the one table ([`crate::table`]).

use std::borrow::Cow;
use std::sync::Arc;
use tracing::Instrument as _;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, ErrorData, ExtensionCapabilities,
    Implementation, InitializeRequestParams, InitializeResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, tool_handler};
use sluice::Sluice;

use crate::{reply, table, widget};

/// The protocol versions this server speaks.
pub const PROTOCOL_VERSIONS: &[ProtocolVersion] = &[
    ProtocolVersion::V_2026_07_28,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_03_26,
];

/// Whether a request speaks a protocol without `structuredContent` and
/// output schemas (2025-03-26: a request without `MCP-Protocol-Version`,
/// as that revision's clients send them). Such a client gets what the
/// structured answer says as text.
fn before_structured_content(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v < ProtocolVersion::V_2025_06_18)
}

/// The MCP server: the tools over one shared [`Sluice`].
#[derive(Clone)]
pub struct SluiceTools {
    pub(crate) sluice: Sluice,
    /// Shared: the stateless transport makes a server per request, by
    /// cloning this one (a deep copy of every tool's definition, before).
    tool_router: Arc<ToolRouter<Self>>,
}

impl std::fmt::Debug for SluiceTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SluiceTools").finish_non_exhaustive()
    }
}

impl SluiceTools {
    /// The tools over `sluice`: the file tools (the import tools where
    /// imports are offered), and the action tools when actions are
    /// configured.
    pub fn new(sluice: Sluice) -> Self {
        let mut tool_router = Self::file_tools();
        if !sluice.actions().configured().catalog().is_empty() {
            tool_router += Self::action_tools(&sluice);
        }
        if !sluice.imports().offered() {
            tool_router.remove_route("import_file");
            tool_router.remove_route("get_import_status");
        }
        if !sluice.receipts().enabled() {
            tool_router.remove_route("get_file_receipt");
        }
        for route in tool_router.map.values_mut() {
            if let Some(spec) = table::lookup(&route.attr.name) {
                route.attr.output_schema = Some((spec.output)());
                // An action's tool has its own title (set with its route).
                let title = route
                    .attr
                    .title
                    .get_or_insert_with(|| spec.title.to_owned());
                route.attr.annotations = Some(spec.effect.annotations(title));
            }
            match route.attr.name.as_ref() {
                "request_browser_upload" => route.attr.meta = Some(widget::tool_meta(widget::URI)),
                "get_download_url" => {
                    route.attr.meta = Some(widget::tool_meta(widget::DOWNLOAD_URI))
                }
                // A host that resolves attached files (ChatGPT) fills
                // `file` with one the person attached: it reaches sluice
                // without passing the model or its sandbox.
                "import_file" => {
                    let mut meta = rmcp::model::MetaObject::new();
                    meta.insert(
                        sluice::service::imports::FILE_PARAMS_META.into(),
                        serde_json::json!(["file"]),
                    );
                    route.attr.meta = Some(meta)
                }
                _ => {}
            }
        }
        Self {
            sluice,
            tool_router: Arc::new(tool_router),
        }
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
        if !self.sluice.actions().configured().catalog().is_empty() {
            instructions.push_str(
                " Actions (action_<name>, execute_action) run backend operations; \
                 a File field takes the handle of a file uploaded with request_upload.",
            );
        }
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("sluice", env!("CARGO_PKG_VERSION")))
        .with_instructions(instructions)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(PROTOCOL_VERSIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = self.tool_router.list_all();
        if before_structured_content(&context) {
            for tool in &mut tools {
                tool.output_schema = None;
            }
        }
        let cache_hints = context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        let mut result = ListToolsResult::with_all_items(tools);
        if cache_hints {
            result.ttl_ms = Some(0);
            result.cache_scope = Some(CacheScope::Public);
        }
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let legacy = before_structured_content(&context);
        if tracing::enabled!(tracing::Level::DEBUG) {
            // The client by the name it gives each request (2026-07-28), or
            // by its User-Agent: stateless, a request carries no session.
            // (Not `context.client_info()`: for a request without it, that
            // is the client rmcp makes up, itself.)
            let client = context
                .meta
                .client_info()
                .map(|c| format!("{} {}", c.name, c.version));
            let agent = context
                .extensions
                .get::<http::request::Parts>()
                .and_then(|p| p.headers.get(http::header::USER_AGENT))
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let url_elicitation = context
                .meta
                .client_capabilities()
                .and_then(|c| c.elicitation)
                .is_some_and(|e| e.url.is_some());
            tracing::debug!(
                tool = %request.name,
                url_elicitation,
                protocol = %context.protocol_version().map(|v| v.to_string()).unwrap_or_default(),
                client = client.or(agent).as_deref().unwrap_or("unnamed"),
                "tool call"
            );
        }
        // Labelled by the tool's name only when it is one of ours: a
        // metric's labels never take what a caller makes up.
        let tool = if self.tool_router.has_route(&request.name) {
            request.name.to_string()
        } else {
            "unknown".to_owned()
        };
        let began = std::time::Instant::now();
        // A span per call (OpenTelemetry's MCP conventions), joined to the
        // caller's trace where its `_meta` carries one (SEP-414).
        let parent = context
            .meta
            .get("traceparent")
            .and_then(|v| v.as_str())
            .map(str::to_owned);
        let span = match sluice::traces::exporting() {
            false => tracing::Span::none(),
            true => sluice::traces::join(
                tracing::info_span!(
                    "mcp",
                    otel.name = %format!("tools/call {tool}"),
                    otel.kind = "server",
                    mcp.method.name = "tools/call",
                    gen_ai.operation.name = "execute_tool",
                    gen_ai.tool.name = %tool,
                ),
                parent.as_deref(),
            ),
        };
        let response = self
            .tool_router
            .call(ToolCallContext::new(self, request, context))
            .instrument(span)
            .await;
        let outcome = match &response {
            Ok(CallToolResponse::Complete(r)) if r.is_error == Some(true) => "refused",
            Ok(_) => "ok",
            Err(_) => "error",
        };
        sluice::telemetry::tool_call(tool, outcome, began.elapsed());
        let response = response?;
        Ok(match response {
            CallToolResponse::Complete(result) if legacy => {
                CallToolResponse::Complete(reply::as_text(result))
            }
            other => other,
        })
    }

    /// A host that renders MCP Apps says so in `initialize`; the answer
    /// says that this server has one (the widget), for that host only.
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        let mut result = self.negotiate_initialize(&request)?;
        // Once per connection: which client, and the protocol agreed.
        tracing::info!(
            client = %request.client_info.name,
            client_version = %request.client_info.version,
            protocol = %result.protocol_version,
            "MCP client connected"
        );
        let renders_apps = request
            .capabilities
            .extensions
            .as_ref()
            .and_then(|e| e.get(widget::EXTENSION))
            .is_some();
        if renders_apps {
            let mut extensions = ExtensionCapabilities::new();
            extensions.insert(widget::EXTENSION.into(), Default::default());
            result.capabilities.extensions = Some(extensions);
        }
        Ok(result)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new(widget::URI, "upload")
                .with_title("Upload a file")
                .with_description(
                    "The upload form request_browser_upload shows inside the conversation, for hosts that render MCP Apps",
                )
                .with_mime_type(widget::MIME)
                .with_meta(widget::meta(&self.sluice).await),
            Resource::new(widget::DOWNLOAD_URI, "download")
                .with_title("Download a file")
                .with_description(
                    "The button get_download_url shows inside the conversation to save the file, for hosts that render MCP Apps",
                )
                .with_mime_type(widget::MIME)
                .with_meta(widget::download_meta(&self.sluice).await),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let (html, meta) = match request.uri.as_str() {
            widget::URI => (widget::html().to_owned(), widget::meta(&self.sluice).await),
            widget::DOWNLOAD_URI => (
                widget::download_html(&self.sluice),
                widget::download_meta(&self.sluice).await,
            ),
            other => {
                return Err(ErrorData::resource_not_found(
                    format!(
                        "no resource {other}: the resources are {} and {}",
                        widget::URI,
                        widget::DOWNLOAD_URI
                    ),
                    None,
                ));
            }
        };
        let content = ResourceContents::text(html, request.uri.clone())
            .with_mime_type(widget::MIME)
            .with_meta(meta);
        Ok(ReadResourceResult::new(vec![content]).into())
    }
}
