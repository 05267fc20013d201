//! The example upstream, on by default in local mode, so the action flow
//! works with no configuration: `attach_document {review_id, document,
//! extras}` answers, per file received, its name, type, size and sha256;
//! `export_report {review_id}` returns a generated 1 MiB CSV file, which
//! sluice hands to the model as a download link.
//!
//! It is an upstream like any other: sluice calls it over HTTP with the
//! configured auth header (a random key made at start), and it reads only
//! what a browser form would send.

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::{Value, json};
use sluice::actions::{Action, AuthValue, Catalog, Field, FieldKind, FileDelivery, UpstreamAuth};
use sluice::datauri::DataUri;
use sluice::{Scope, Sha256};

/// Where the example upstream is mounted.
pub const PREFIX: &str = "/example-upstream";

/// Size of the report `export_report` returns.
pub const REPORT_BYTES: usize = 1 << 20;

/// The key sluice presents to the example upstream.
#[derive(Clone)]
pub struct ExampleKey(String);

impl std::fmt::Debug for ExampleKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ExampleKey(<redacted>)")
    }
}

impl ExampleKey {
    /// A fresh random key.
    pub fn random() -> Self {
        Self(sluice::keys::random_id::<32>())
    }

    fn header(&self) -> String {
        format!("Bearer {}", self.0)
    }
}

fn field(name: &str, kind: FieldKind, required: bool, description: &str) -> Field {
    Field {
        name: name.to_owned(),
        kind,
        required,
        description: Some(description.to_owned()),
        accept: Vec::new(),
        max_size: None,
    }
}

/// The example actions, calling the upstream at `addr` (the listener).
pub fn catalog(addr: SocketAddr, key: &ExampleKey) -> Catalog {
    // The listener may be on all interfaces; the upstream is called on loopback.
    let host = if addr.ip().is_unspecified() {
        SocketAddr::new([127, 0, 0, 1].into(), addr.port())
    } else {
        addr
    };
    let url = |name: &str| {
        format!("http://{host}{PREFIX}/{name}")
            .parse()
            .expect("a socket address makes a valid URL")
    };
    let auth = Some(UpstreamAuth {
        header: header::AUTHORIZATION,
        value: AuthValue::Value(
            HeaderValue::try_from(key.header()).expect("a token is a header value"),
        ),
    });
    let review = field(
        "review_id",
        FieldKind::Number,
        true,
        "The review's id, e.g. 42.",
    );
    Catalog::new(vec![
        Action {
            name: "attach_document".into(),
            description: "Example action: attach a document (and optional extra files) to a review. \
                          Answers what it received: each file's name, type, size and sha256."
                .into(),
            url: url("attach_document"),
            auth: auth.clone(),
            timeout: Duration::from_secs(60),
            file_delivery: FileDelivery::DataUri,
            fields: vec![
                review.clone(),
                field("document", FieldKind::File, true, "The document to attach."),
                field("extras", FieldKind::FileList, false, "More files to attach."),
            ],
        },
        Action {
            name: "export_report".into(),
            description: "Example action: export a review's report, a 1 MiB CSV file, returned as a download link.".into(),
            url: url("export_report"),
            auth,
            timeout: Duration::from_secs(60),
            file_delivery: FileDelivery::DataUri,
            fields: vec![review],
        },
    ])
    .expect("the example actions have distinct names")
}

/// The most the example reads of an authorized body (it reads bodies
/// whole; sluice itself never does).
const MAX_BODY_BYTES: usize = 96 << 20;

/// The example upstream's routes, answering only callers presenting `key`.
pub fn router(key: ExampleKey) -> Router {
    Router::new()
        .route(&format!("{PREFIX}/{{action}}"), post(handle))
        .with_state(key)
}

fn reply(status: StatusCode, body: Value) -> Response {
    (status, axum::Json(body)).into_response()
}

async fn handle(
    State(key): State<ExampleKey>,
    Path(action): Path<String>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    // The key first: nothing of a stranger's body is read.
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if presented != Some(key.header().as_str()) {
        return reply(
            StatusCode::UNAUTHORIZED,
            json!({"message": "unknown caller"}),
        );
    }
    let Ok(body) = axum::body::to_bytes(body, MAX_BODY_BYTES).await else {
        return reply(
            StatusCode::PAYLOAD_TOO_LARGE,
            json!({"message": "the body is too large or broke off"}),
        );
    };
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return reply(
            StatusCode::BAD_REQUEST,
            json!({"message": "the body is not JSON"}),
        );
    };
    let fields = &request["fields"];
    let review_id = fields["review_id"].clone();
    match action.as_str() {
        "attach_document" => {
            let mut received = Vec::new();
            let extras = fields["extras"].as_array().cloned().unwrap_or_default();
            for (name, value) in
                std::iter::once(("document".to_owned(), fields["document"].clone())).chain(
                    extras
                        .into_iter()
                        .enumerate()
                        .map(|(i, v)| (format!("extras[{i}]"), v)),
                )
            {
                let Some(Ok(file)) = value.as_str().map(DataUri::parse) else {
                    return reply(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        json!({"message": format!("{name} is not a data: URI")}),
                    );
                };
                received.push(json!({
                    "field": name,
                    "name": file.name,
                    "content_type": file.mime,
                    "size": file.data.len(),
                    "sha256": Sha256::of(&file.data).to_hex(),
                }));
            }
            reply(
                StatusCode::OK,
                json!({"review_id": review_id, "attached_by": request["user"], "files": received}),
            )
        }
        "export_report" => {
            let id = review_id.as_f64().unwrap_or(0.0);
            let report = report_csv(id);
            reply(
                StatusCode::OK,
                json!({
                    "review_id": review_id,
                    "report": DataUri::encode("text/csv", Some(&format!("review-{id}-report.csv")), &report),
                }),
            )
        }
        _ => reply(StatusCode::NOT_FOUND, json!({"message": "no such action"})),
    }
}

/// A CSV report of exactly [`REPORT_BYTES`] bytes.
fn report_csv(review_id: f64) -> Vec<u8> {
    let mut out = b"review_id,line,value\n".to_vec();
    let mut line = 0u64;
    while out.len() < REPORT_BYTES {
        line += 1;
        out.extend_from_slice(format!("{review_id},{line},{}\n", line * 7919 % 10007).as_bytes());
    }
    out.truncate(REPORT_BYTES);
    out
}

/// The scopes of the development token: everything a local user does.
pub fn dev_scopes() -> Vec<Scope> {
    vec![Scope::FilesRead, Scope::FilesWrite, Scope::ActionsExecute]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_is_exactly_one_mebibyte() {
        assert_eq!(report_csv(42.0).len(), REPORT_BYTES);
    }

    #[test]
    fn the_example_catalog_calls_loopback_even_when_listening_everywhere() {
        let c = catalog("0.0.0.0:8787".parse().unwrap(), &ExampleKey::random());
        let a = c.get("attach_document").unwrap();
        assert_eq!(
            a.url.as_str(),
            "http://127.0.0.1:8787/example-upstream/attach_document"
        );
        assert!(a.field("document").unwrap().kind.is_file());
    }
}
