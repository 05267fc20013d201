//! The MCP server: the tools over one shared [`Sluice`], and what it says
//! in `initialize`. The file tools ([`crate::tools`]) are always listed; the
//! action tools ([`crate::actions`]) only where actions are configured. Each
//! tool's output schema comes from the one table ([`crate::table`]).

use std::borrow::Cow;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{Implementation, ProtocolVersion, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, tool_handler};
use sluice::Sluice;

use crate::table;

/// The protocol versions this server speaks.
pub const PROTOCOL_VERSIONS: &[ProtocolVersion] = &[
    ProtocolVersion::V_2026_07_28,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2025_06_18,
];

/// The MCP server: the tools over one shared [`Sluice`].
#[derive(Clone)]
pub struct SluiceTools {
    pub(crate) sluice: Sluice,
    tool_router: ToolRouter<Self>,
}

impl std::fmt::Debug for SluiceTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SluiceTools").finish_non_exhaustive()
    }
}

impl SluiceTools {
    /// The tools over `sluice`: the file tools, and the action tools when
    /// actions are configured.
    pub fn new(sluice: Sluice) -> Self {
        let mut tool_router = Self::file_tools();
        if !sluice.actions().catalog().is_empty() {
            tool_router += Self::action_tools(&sluice);
        }
        for route in tool_router.map.values_mut() {
            if let Some(spec) = table::lookup(&route.attr.name) {
                route.attr.output_schema = Some((spec.output)());
            }
        }
        Self {
            sluice,
            tool_router,
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
