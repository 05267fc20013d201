//! Every tool once: its name, the scope a call needs, and the schema of
//! what it returns. The gate checks the scope from here before a call
//! reaches a tool; the server sets each tool's output schema from here.

use std::sync::Arc;

use rmcp::handler::server::tool::{schema_for_input, schema_for_output};
use rmcp::model::JsonObject;
use schemars::JsonSchema;
use sluice::Scope;
use sluice::service::browser::{BrowserUpload, UploadStatus};
use sluice::service::files::FilePage;
use sluice::service::issue::UploadTicket;
use sluice::service::links::DownloadTicket;
use sluice::service::small::SmallUpload;

use crate::shapes::{ActionList, SmallFile};

/// The prefix of the per-action tools (`action_<name>`).
pub const ACTION_PREFIX: &str = "action_";

/// One tool.
#[derive(Debug, Clone, Copy)]
pub struct ToolSpec {
    /// Its name.
    pub name: &'static str,
    /// The scope a call needs.
    pub scope: Scope,
    /// The schema of its `structuredContent`.
    pub output: fn() -> Arc<JsonObject>,
}

/// The tools, with their scopes and outputs.
pub const TOOLS: &[ToolSpec] = &[
    spec("request_upload", Scope::FilesWrite, output::<UploadTicket>),
    spec(
        "upload_small_file",
        Scope::FilesWrite,
        output::<SmallUpload>,
    ),
    spec(
        "request_browser_upload",
        Scope::FilesWrite,
        output::<BrowserUpload>,
    ),
    spec(
        "get_upload_status",
        Scope::FilesWrite,
        output::<UploadStatus>,
    ),
    spec(
        "get_download_url",
        Scope::FilesRead,
        output::<DownloadTicket>,
    ),
    spec("list_files", Scope::FilesRead, output::<FilePage>),
    spec("read_small_file", Scope::FilesRead, output::<SmallFile>),
    spec("list_actions", Scope::ActionsExecute, output::<ActionList>),
    spec("execute_action", Scope::ActionsExecute, any_object),
];

const fn spec(name: &'static str, scope: Scope, output: fn() -> Arc<JsonObject>) -> ToolSpec {
    ToolSpec {
        name,
        scope,
        output,
    }
}

/// The entry of tool `name` (an `action_<name>` tool is run like
/// `execute_action`), or `None` for a name that is not a tool here.
pub fn lookup(name: &str) -> Option<ToolSpec> {
    if let Some(spec) = TOOLS.iter().find(|t| t.name == name) {
        return Some(*spec);
    }
    name.starts_with(ACTION_PREFIX)
        .then(|| lookup("execute_action"))
        .flatten()
}

/// The scope tool `name` needs, or `None` for a name that is not a tool here.
pub fn required_scope(name: &str) -> Option<Scope> {
    lookup(name).map(|t| t.scope)
}

/// JSON Schema without schemars' non-standard integer formats (`uint64`,
/// `uint`), which strict validators in clients warn about; `minimum: 0`
/// already says what they mean.
fn portable(schema: JsonObject) -> Arc<JsonObject> {
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
    let mut map = schema;
    map.values_mut().for_each(clean);
    Arc::new(map)
}

/// The input schema of a tool taking `T`, as the model reads it on every
/// connection: no `$schema` (MCP's default dialect is the one schemars
/// writes), and an optional field is one left out of `required`, its type
/// plain (not `[T, "null"]` with `default: null`, which strict validators
/// warn about and every model pays for).
pub fn input<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    let mut schema =
        (*portable((*schema_for_input::<T>().expect("tool inputs are objects")).clone())).clone();
    schema.remove("$schema");
    if let Some(serde_json::Value::Object(properties)) = schema.get_mut("properties") {
        for property in properties.values_mut() {
            let serde_json::Value::Object(p) = property else {
                continue;
            };
            if p.get("default").is_some_and(serde_json::Value::is_null) {
                p.remove("default");
            }
            if let Some(serde_json::Value::Array(types)) = p.get("type") {
                let plain: Vec<_> = types.iter().filter(|t| *t != "null").cloned().collect();
                if let [one] = plain.as_slice() {
                    p.insert("type".into(), one.clone());
                }
            }
        }
    }
    Arc::new(schema)
}

/// The output schema of a tool returning `T`.
pub fn output<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    portable((*schema_for_output::<T>()).clone())
}

/// The output schema of action results: any JSON object (what the upstream answers).
pub fn any_object() -> Arc<JsonObject> {
    let mut schema = JsonObject::new();
    schema.insert("type".into(), serde_json::Value::from("object"));
    Arc::new(schema)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tool_is_listed_once_and_actions_need_their_scope() {
        let mut names: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), TOOLS.len());
        assert_eq!(required_scope("action_attach"), Some(Scope::ActionsExecute));
        assert_eq!(required_scope("list_files"), Some(Scope::FilesRead));
        assert_eq!(required_scope("no_such_tool"), None);
    }

    #[test]
    fn output_schemas_have_no_integer_formats() {
        for t in TOOLS {
            let text = serde_json::to_string(&*(t.output)()).unwrap();
            assert!(!text.contains("\"format\":\"uint"), "{}: {text}", t.name);
        }
    }
}
