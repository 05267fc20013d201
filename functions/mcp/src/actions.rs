//! The action tools: `list_actions`, `execute_action {action, fields}`, and one typed tool per
//! action (`action_<name>`), so a model needs no `list_actions` round trip. Every path runs the
//! same `sluice::service::actions::Actions::execute_action`; none is listed when no action is
//! configured.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::handler::server::tool::{IntoCallToolResult as _, ToolCallContext};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResponse, Tool};
use rmcp::{ErrorData, tool, tool_router};
use serde_json::Value;
use sluice::actions::Action;

use crate::schema::{file_params, input_schema};
use sluice::{Caller, Sluice};

use crate::reply::{By, Reply, caller_of, success};
use crate::server::SluiceTools;
use crate::shapes::{ActionInfo, ActionList, ExecuteArgs};
use crate::table::{ACTION_PREFIX, any_object, input};

/// How a model gets a file into a File field, said once for every tool.
pub const FILE_CHAIN: &str = "To pass a file: find the File (or FileList) field, call request_upload with the file's name, size and sha256, \
run the returned curl command where the file is, then pass the returned handle (`$uploadedFile:…`) as the field's value. \
Handles are resolved only in File and FileList fields; any other field receives text as it is. \
Files in the result larger than 16 KiB come back as download links (run their curl command).";

/// `list_actions`.
fn list(sluice: &Sluice) -> Reply {
    let actions: Vec<ActionInfo> = sluice
        .actions()
        .configured()
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
/// `execute_action` and `action_<name>`.
async fn execute(sluice: &Sluice, caller: &Caller, action: &str, fields: Value) -> Reply {
    let outcome = sluice
        .actions()
        .execute_action(caller, action, fields)
        .await?;
    let files = match outcome.files_linked {
        0 => String::new(),
        n => format!(" {n} file(s) in the result are download links: run their curl commands."),
    };
    success(
        format!("{action} ran.{files}"),
        &Value::Object(outcome.result),
    )
}

fn tool_description(action: &Action) -> String {
    if action.fields.iter().any(|f| f.kind.is_file()) {
        format!("{} {FILE_CHAIN}", action.description)
    } else {
        action.description.clone()
    }
}

/// The `action_<name>` tool of one configured action.
fn route(action: &Action) -> ToolRoute<SluiceTools> {
    let mut tool = Tool::new(
        format!("{ACTION_PREFIX}{}", action.name),
        tool_description(action),
        Arc::new(input_schema(action)),
    )
    .with_raw_output_schema(any_object())
    .with_title(format!("Run the action {}", action.name));
    // A host that resolves attached files fills these fields with one.
    let params = file_params(action);
    if !params.is_empty() {
        let mut meta = rmcp::model::MetaObject::new();
        meta.insert(
            sluice::service::imports::FILE_PARAMS_META.into(),
            serde_json::json!(params),
        );
        tool.meta = Some(meta);
    }
    let name = action.name.clone();
    ToolRoute::new_dyn(tool, move |context: ToolCallContext<'_, SluiceTools>| {
        let name = name.clone();
        Box::pin(async move {
            let reply: Reply = async {
                let caller = caller_of(&context.request_context.extensions)?;
                let fields = Value::Object(context.arguments.clone().unwrap_or_default());
                execute(&context.service.sluice, &caller, &name, fields).await
            }
            .await;
            reply.into_call_tool_result()
        }) as BoxFuture<'_, Result<CallToolResponse, ErrorData>>
    })
}

impl SluiceTools {
    /// `list_actions`, `execute_action` (its description naming the
    /// actions) and one `action_<name>` per action of `sluice`'s catalog.
    pub(crate) fn action_tools(sluice: &Sluice) -> ToolRouter<Self> {
        let catalog = sluice.actions().configured().catalog();
        let mut router = Self::action_router();
        let names: Vec<&str> = catalog.actions().iter().map(|a| a.name.as_str()).collect();
        if let Some(route) = router.map.get_mut("execute_action") {
            let description = format!(
                "{} Actions here: {}.",
                route.attr.description.as_deref().unwrap_or_default(),
                names.join(", ")
            );
            route.attr.description = Some(description.into());
        }
        for action in catalog.actions() {
            router.add_route(route(action));
        }
        router
    }
}

#[tool_router(router = action_router)]
impl SluiceTools {
    #[tool(
        description = "List the actions (backend operations with a form) you can run, each with its fields as JSON Schema. \
File fields are strings annotated `x-mcp-file`: they take a `$uploadedFile:` handle from request_upload. \
Each action is also its own tool, `action_<name>`."
    )]
    async fn list_actions(&self, By(_): By) -> Reply {
        list(&self.sluice)
    }

    #[tool(
        description = "Run an action (a backend operation with a form) with its fields; returns the backend's result. \
To pass a file: find the File (or FileList) field, call request_upload with the file's name, size and sha256, \
run the returned curl command where the file is, then pass the returned handle (`$uploadedFile:…`) as the field's value. \
Handles are resolved only in File and FileList fields; any other field receives text as it is. \
Files in the result larger than 16 KiB come back as download links (run their curl command). Call list_actions for each action's fields.",
        input_schema = input::<ExecuteArgs>()
    )]
    async fn execute_action(
        &self,
        By(caller): By,
        Parameters(args): Parameters<ExecuteArgs>,
    ) -> Reply {
        let fields = Value::Object(args.fields);
        execute(&self.sluice, &caller, &args.action, fields).await
    }
}
