//! The action tools: `list_actions`, `execute_action {action, fields}`, and
//! one typed tool per action (`action_<name>`), so a model needs no
//! `list_actions` round trip. Both paths run the same
//! [`Sluice::execute_action`]; none is listed when no action is configured.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use rmcp::ErrorData;
use rmcp::handler::server::router::tool::ToolRoute;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{CallToolResponse, CallToolResult, JsonObject, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sluice::actions::{Action, input_schema};
use sluice::{ApiError, Caller, Scope, Sluice};

use crate::tools::{SluiceTools, caller_of, failure, success};

/// The prefix of the per-action tools.
pub const TOOL_PREFIX: &str = "action_";

/// How a model gets a file into a File field, said once for every tool.
pub const FILE_CHAIN: &str = "To pass a file: find the File (or FileList) field, call request_upload with the file's name, size and sha256, \
run the returned curl command where the file is, then pass the returned handle (`$uploadedFile:…`) as the field's value. \
Handles are resolved only in File and FileList fields; any other field receives text as it is. \
Files in the result larger than 16 KiB come back as download links (run their curl command).";

/// What `execute_action` takes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecuteArgs {
    /// The action's name, from list_actions.
    pub action: String,
    /// The action's fields by name; File fields take a `$uploadedFile:` handle (FileList fields an array of them).
    #[serde(default)]
    pub fields: Map<String, Value>,
}

/// One action as `list_actions` shows it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ActionInfo {
    /// The action's name (its own tool is `action_<name>`).
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its fields, as JSON Schema; File fields are strings annotated `x-mcp-file`.
    pub input_schema: Map<String, Value>,
}

/// What `list_actions` returns.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ActionList {
    /// Every configured action.
    pub actions: Vec<ActionInfo>,
}

/// `list_actions` (the tool has checked the caller's scope).
pub fn list(sluice: &Sluice) -> Result<CallToolResult, ApiError> {
    let actions: Vec<ActionInfo> = sluice
        .actions()
        .catalog()
        .actions()
        .iter()
        .map(|a| ActionInfo {
            name: a.name.clone(),
            description: a.description.clone(),
            input_schema: input_schema(a),
        })
        .collect();
    let names: Vec<&str> = actions.iter().map(|a| a.name.as_str()).collect();
    success(
        format!("{} action(s): {}.", actions.len(), names.join(", ")),
        &ActionList { actions },
    )
}

/// Runs `action` with `fields` for `caller`: the one path behind both
/// `execute_action` and `action_<name>` (each has checked the caller's scope).
pub async fn execute(
    sluice: &Sluice,
    caller: &Caller,
    action: &str,
    fields: Value,
) -> Result<CallToolResult, ApiError> {
    let outcome = sluice.execute_action(caller, action, fields).await?;
    let files = match outcome.files_linked {
        0 => String::new(),
        n => format!(" {n} file(s) in the result are download links: run their curl commands."),
    };
    success(
        format!("{action} ran.{files}"),
        &Value::Object(outcome.result),
    )
}

/// The output schema of action results: any JSON object (what the upstream answers).
pub fn result_schema() -> Arc<JsonObject> {
    let mut schema = JsonObject::new();
    schema.insert("type".into(), Value::from("object"));
    Arc::new(schema)
}

fn tool_description(action: &Action) -> String {
    let has_files = action.fields.iter().any(|f| f.kind.is_file());
    if has_files {
        format!("{} {FILE_CHAIN}", action.description)
    } else {
        action.description.clone()
    }
}

/// The `action_<name>` tool of each configured action.
pub fn routes(sluice: &Sluice) -> Vec<ToolRoute<SluiceTools>> {
    sluice
        .actions()
        .catalog()
        .actions()
        .iter()
        .map(|action| {
            let tool = Tool::new(
                format!("{TOOL_PREFIX}{}", action.name),
                tool_description(action),
                Arc::new(input_schema(action)),
            )
            .with_raw_output_schema(result_schema());
            let name = action.name.clone();
            ToolRoute::new_dyn(tool, move |context: ToolCallContext<'_, SluiceTools>| {
                let name = name.clone();
                Box::pin(async move {
                    let outcome = async {
                        let caller =
                            caller_of(&context.request_context.extensions, Scope::ActionsExecute)?;
                        let fields = Value::Object(context.arguments.clone().unwrap_or_default());
                        execute(context.service.sluice(), &caller, &name, fields).await
                    }
                    .await;
                    Ok::<CallToolResponse, ErrorData>(outcome.unwrap_or_else(failure).into())
                }) as BoxFuture<'_, Result<CallToolResponse, ErrorData>>
            })
        })
        .collect()
}
