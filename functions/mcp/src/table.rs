//! Every tool once: its name, the scope a call needs, and the schema of
//! what it returns. The gate checks the scope from here before a call
//! reaches a tool; the server sets each tool's output schema from here.

use std::sync::Arc;

use rmcp::handler::server::tool::{schema_for_input, schema_for_output};
use rmcp::model::{JsonObject, ToolAnnotations};
use schemars::JsonSchema;
use sluice::Scope;
use sluice::service::batches::{BatchTicket, DownloadBatch};
use sluice::service::downloads::DownloadTicket;
use sluice::service::files::FilePage;
use sluice::service::files::delete::DeletedFile;
use sluice::service::imports::ImportTicket;
use sluice::service::pages::{BrowserUpload, UploadStatus};
use sluice::service::receipts::ReceiptAnswer;
use sluice::service::uploads::issue::UploadTicket;
use sluice::service::uploads::small::SmallUpload;

use crate::shapes::{ActionList, SmallFile};

/// The prefix of the per-action tools (`action_<name>`).
pub const ACTION_PREFIX: &str = "action_";

/// One tool.
#[derive(Debug, Clone, Copy)]
pub struct ToolSpec {
    /// Its name.
    pub name: &'static str,
    /// The name a host shows a person.
    pub title: &'static str,
    /// What a call does, for a host deciding whether to ask the person
    /// first (`docs/tools.md` says why each is what it is).
    pub effect: Effect,
    /// The scope a call needs.
    pub scope: Scope,
    /// The schema of its `structuredContent`.
    pub output: fn() -> Arc<JsonObject>,
}

/// What a call of a tool does to the world, as MCP's tool annotations say
/// it (`readOnlyHint`, `destructiveHint`, `idempotentHint`,
/// `openWorldHint`; each written out, since MCP's defaults assume the worst).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Reads the caller's files or answers about them; changes nothing the
    /// caller did not already do.
    Reads,
    /// Adds something new (an upload, a file) on each call and never
    /// changes or removes what is there.
    Adds,
    /// Adds a file fetched from the open web (a URL the caller names):
    /// new on each call, and reaching outside sluice.
    FetchesFromWeb,
    /// Removes one of the caller's things for good; doing it again changes
    /// nothing more.
    Deletes,
    /// Runs an operation of the team's backend, which may change or remove
    /// anything there: what it does is the backend's to say.
    RunsUpstream,
}

impl Effect {
    /// The annotations of a tool called `title` with this effect.
    pub fn annotations(self, title: &str) -> ToolAnnotations {
        let (read_only, destructive, idempotent, open_world) = match self {
            Effect::Reads => (true, false, true, false),
            Effect::Adds => (false, false, false, false),
            Effect::FetchesFromWeb => (false, false, false, true),
            Effect::Deletes => (false, true, true, false),
            Effect::RunsUpstream => (false, true, false, true),
        };
        ToolAnnotations::with_title(title)
            .read_only(read_only)
            .destructive(destructive)
            .idempotent(idempotent)
            .open_world(open_world)
    }
}

/// The tools, with their titles, effects, scopes and outputs.
pub const TOOLS: &[ToolSpec] = &[
    spec(
        "request_upload",
        "Get an upload link",
        Effect::Adds,
        Scope::FilesWrite,
        output::<UploadTicket>,
    ),
    spec(
        "upload_small_file",
        "Upload a small file inline",
        Effect::Adds,
        Scope::FilesWrite,
        output::<SmallUpload>,
    ),
    spec(
        "request_browser_upload",
        "Ask the person to upload a file",
        Effect::Adds,
        Scope::FilesWrite,
        output::<BrowserUpload>,
    ),
    spec(
        "get_upload_status",
        "Check a person's upload",
        Effect::Reads,
        Scope::FilesWrite,
        output::<UploadStatus>,
    ),
    spec(
        "get_download_url",
        "Get a download link",
        Effect::Reads,
        Scope::FilesRead,
        output::<DownloadTicket>,
    ),
    spec(
        "import_file",
        "Import a file from a URL",
        Effect::FetchesFromWeb,
        Scope::FilesWrite,
        output::<ImportTicket>,
    ),
    spec(
        "get_import_status",
        "Check an import",
        Effect::Reads,
        Scope::FilesRead,
        output::<ImportTicket>,
    ),
    spec(
        "request_uploads",
        "Upload many files",
        Effect::Adds,
        Scope::FilesWrite,
        output::<BatchTicket>,
    ),
    spec(
        "get_download_urls",
        "Download many files",
        Effect::Reads,
        Scope::FilesRead,
        output::<DownloadBatch>,
    ),
    spec(
        "delete_file",
        "Delete a file",
        Effect::Deletes,
        Scope::FilesWrite,
        output::<DeletedFile>,
    ),
    spec(
        "get_file_receipt",
        "Get a file's signed receipt",
        Effect::Reads,
        Scope::FilesRead,
        output::<ReceiptAnswer>,
    ),
    spec(
        "list_files",
        "List your files",
        Effect::Reads,
        Scope::FilesRead,
        output::<FilePage>,
    ),
    spec(
        "read_small_file",
        "Read a small file inline",
        Effect::Reads,
        Scope::FilesRead,
        output::<SmallFile>,
    ),
    spec(
        "list_actions",
        "List the actions",
        Effect::Reads,
        Scope::ActionsExecute,
        output::<ActionList>,
    ),
    spec(
        "execute_action",
        "Run an action",
        Effect::RunsUpstream,
        Scope::ActionsExecute,
        any_object,
    ),
];

const fn spec(
    name: &'static str,
    title: &'static str,
    effect: Effect,
    scope: Scope,
    output: fn() -> Arc<JsonObject>,
) -> ToolSpec {
    ToolSpec {
        name,
        title,
        effect,
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
    plain_optionals(&mut schema);
    // The same for the objects a list of them names (`request_uploads`' files).
    if let Some(serde_json::Value::Object(defs)) = schema.get_mut("$defs") {
        for def in defs.values_mut() {
            if let serde_json::Value::Object(def) = def {
                plain_optionals(def);
            }
        }
    }
    Arc::new(schema)
}

/// The properties of `schema` with an optional field's type plain, its
/// `default: null` gone.
fn plain_optionals(schema: &mut JsonObject) {
    let Some(serde_json::Value::Object(properties)) = schema.get_mut("properties") else {
        return;
    };
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
        // An object written inline (import_file's `file`): its own fields too.
        plain_optionals(p);
    }
}

/// The output schema of a tool returning `T`.
pub fn output<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    let mut schema = (*portable((*schema_for_output::<T>()).clone())).clone();
    schema.values_mut().for_each(single_types);
    Arc::new(schema)
}

/// A nullable field written `type: [T, "null"]`, as `anyOf` of single
/// types: the same contract, in a form every client's schema dialect maps
/// (strict validators warn about type arrays; Gemini's declarations take
/// one type).
fn single_types(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get("type")
                && types.len() > 1
            {
                let branches = types
                    .iter()
                    .map(|t| serde_json::json!({ "type": t }))
                    .collect();
                map.remove("type");
                map.insert("anyOf".into(), Value::Array(branches));
            }
            map.values_mut().for_each(single_types);
        }
        Value::Array(items) => items.iter_mut().for_each(single_types),
        _ => {}
    }
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

    /// A nullable field is `anyOf` single types, never a type array; the
    /// status's optional fields still allow what they did.
    #[test]
    fn output_schemas_have_one_type_per_schema() {
        fn arrays(value: &serde_json::Value, at: &str, found: &mut Vec<String>) {
            match value {
                serde_json::Value::Object(map) => {
                    if map.get("type").is_some_and(serde_json::Value::is_array) {
                        found.push(at.to_owned());
                    }
                    for (k, v) in map {
                        arrays(v, &format!("{at}.{k}"), found);
                    }
                }
                serde_json::Value::Array(items) => {
                    items.iter().for_each(|v| arrays(v, at, found));
                }
                _ => {}
            }
        }
        let mut found = Vec::new();
        for t in TOOLS {
            arrays(
                &serde_json::Value::Object((*(t.output)()).clone()),
                t.name,
                &mut found,
            );
        }
        assert!(found.is_empty(), "type arrays at {found:?}");
        let status = serde_json::Value::Object((*output::<UploadStatus>()).clone());
        assert_eq!(
            status["properties"]["handle"]["anyOf"],
            serde_json::json!([{"type": "string"}, {"type": "null"}])
        );
    }
}
