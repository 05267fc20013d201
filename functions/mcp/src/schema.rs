//! An action's form as JSON Schema: what `list_actions` shows and what each
//! `action_<name>` tool takes. File fields are strings annotated `x-mcp-file`
//! (SEP-2356), so a host that implements it can supply the file itself; a
//! model passes a `$uploadedFile:` handle instead. A top-level File field
//! also takes the object a host that resolves attached files fills
//! (`{download_url, file_id}`, named by the tool's
//! `_meta["openai/fileParams"]`), which sluice imports.

use serde_json::{Map, Value, json};

use sluice::actions::{Action, Field, FieldKind};

/// What a File field takes, in the words the model reads.
pub const FILE_FIELD_HELP: &str = "a `$uploadedFile:` handle from request_upload (upload the file with its command first), \
or a `data:` URI for a small file";

/// The JSON Schema of `action`'s fields: an object with one property per
/// field, the required ones listed, nothing else allowed.
pub fn input_schema(action: &Action) -> Map<String, Value> {
    let properties: Map<String, Value> = action
        .fields
        .iter()
        .map(|f| (f.name.clone(), field_schema(f)))
        .collect();
    let required: Vec<&str> = action
        .fields
        .iter()
        .filter(|f| f.required)
        .map(|f| f.name.as_str())
        .collect();
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        schema.insert("required".into(), json!(required));
    }
    schema.insert("additionalProperties".into(), json!(false));
    schema
}

fn file_schema(field: &Field) -> Value {
    let mut annotation = Map::new();
    if !field.accept.is_empty() {
        annotation.insert("accept".into(), json!(field.accept));
    }
    if let Some(max) = field.max_size {
        annotation.insert("maxSize".into(), json!(max));
    }
    let mut limits = String::new();
    if !field.accept.is_empty() {
        limits.push_str(&format!(" Accepted types: {}.", field.accept.join(", ")));
    }
    if let Some(max) = field.max_size {
        limits.push_str(&format!(" At most {max} bytes."));
    }
    json!({
        "type": "string",
        "description": format!("A file: {FILE_FIELD_HELP}.{limits}"),
        "x-mcp-file": annotation,
    })
}

/// A top-level File field: a handle, or the file a host hands over
/// (`{download_url, file_id}`, the shape a tool's
/// `_meta["openai/fileParams"]` asks the host to fill).
fn file_or_handed(field: &Field) -> Value {
    let mut handle = file_schema(field);
    let object = handle.as_object_mut().expect("a file schema is an object");
    let description = object.remove("description");
    let annotation = object.remove("x-mcp-file");
    json!({
        "description": description,
        "x-mcp-file": annotation,
        "anyOf": [
            handle,
            {
                "type": "object",
                "description": "A file the host hands over.",
                "properties": {
                    "download_url": {"type": "string"},
                    "file_id": {"type": "string"},
                    "file_name": {"type": "string"},
                    "mime_type": {"type": "string"},
                },
                "required": ["download_url", "file_id"],
            },
        ],
    })
}

/// The top-level File fields of `action`: what its tool's
/// `_meta["openai/fileParams"]` names.
pub fn file_params(action: &Action) -> Vec<&str> {
    action
        .fields
        .iter()
        .filter(|f| matches!(f.kind, FieldKind::File))
        .map(|f| f.name.as_str())
        .collect()
}

fn field_schema(field: &Field) -> Value {
    let mut schema = match &field.kind {
        FieldKind::String => json!({ "type": "string" }),
        FieldKind::Number => json!({ "type": "number" }),
        FieldKind::Boolean => json!({ "type": "boolean" }),
        FieldKind::Enum(values) => json!({ "type": "string", "enum": values }),
        FieldKind::Date => json!({
            "type": "string",
            "description": "A date (YYYY-MM-DD) or a date-time (RFC 3339, e.g. 2026-11-30T12:00:00Z).",
        }),
        FieldKind::Json => json!({ "description": "Any JSON value." }),
        FieldKind::File => file_or_handed(field),
        FieldKind::FileList => json!({
            "type": "array",
            "items": file_schema(field),
            "description": format!("Files: an array, each {FILE_FIELD_HELP}."),
        }),
    };
    if let Some(description) = &field.description {
        let object = schema.as_object_mut().expect("field schemas are objects");
        let text = match object.get("description").and_then(Value::as_str) {
            Some(kind_help) => format!("{description} ({kind_help})"),
            None => description.clone(),
        };
        object.insert("description".into(), json!(text));
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice::actions::Catalog;

    #[test]
    fn file_fields_are_annotated_strings_and_lists_arrays_of_them() {
        let catalog = Catalog::from_toml(
            r#"
            [[actions]]
            name = "a"
            description = "d"
            url = "https://x.example"
            [[actions.fields]]
            name = "doc"
            type = "File"
            required = true
            accept = ["application/pdf"]
            max_size = 5
            [[actions.fields]]
            name = "extras"
            type = "FileList"
            [[actions.fields]]
            name = "n"
            type = "Number"
            description = "How many"
            "#,
        )
        .unwrap();
        let schema = Value::Object(input_schema(catalog.get("a").unwrap()));
        assert_eq!(schema["required"], json!(["doc"]));
        assert_eq!(schema["additionalProperties"], json!(false));
        let doc = &schema["properties"]["doc"];
        assert_eq!(doc["anyOf"][0]["type"], "string");
        assert_eq!(
            doc["anyOf"][1]["required"],
            json!(["download_url", "file_id"])
        );
        assert_eq!(file_params(catalog.get("a").unwrap()), ["doc"]);
        assert_eq!(
            doc["x-mcp-file"],
            json!({"accept": ["application/pdf"], "maxSize": 5})
        );
        assert!(
            doc["description"]
                .as_str()
                .unwrap()
                .contains("$uploadedFile:")
        );
        let extras = &schema["properties"]["extras"];
        assert_eq!(extras["type"], "array");
        assert_eq!(extras["items"]["x-mcp-file"], json!({}));
        assert_eq!(schema["properties"]["n"]["description"], "How many");
    }
}
