//! What the tools take and return beyond the service's own types: the
//! arguments of the file tools and the action tools, and the answers built
//! here (a small file's bytes, the action list).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sluice::{FileId, Sha256};

/// Which browser upload.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UploadIdArg {
    /// The `upload_id` request_browser_upload returned.
    pub upload_id: String,
    /// Wait up to this many seconds for the upload to finish (at most 45).
    #[serde(default)]
    pub wait_seconds: Option<u32>,
}

/// Which import.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportIdArg {
    /// The `file_id` import_file returned.
    pub file_id: String,
    /// Wait up to this many seconds for the import to end (at most 45).
    #[serde(default)]
    pub wait_seconds: Option<u32>,
}

/// A file named by its id or its handle.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileArg {
    /// A `file_id` (from list_files) or a handle (`$uploadedFile:…`).
    pub file: String,
}

/// Many files to upload.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UploadsArgs {
    /// Up to 1000 files.
    pub files: Vec<sluice::service::batches::BatchEntry>,
}

/// Many files to download.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FilesArg {
    /// Up to 1000 file_ids or handles; a batch's `$uploadedFiles:…` handle stands for its files.
    pub files: Vec<String>,
    /// `true`: one link to all of them as one zip, instead of the line.
    #[serde(default)]
    pub zip: bool,
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

/// What `execute_action` takes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecuteArgs {
    /// The action's name, from list_actions.
    pub action: String,
    /// The action's fields by name; File fields take a `$uploadedFile:` handle (FileList fields an
    /// array of them).
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
