//! Calling an action's upstream: `POST` JSON with the configured auth
//! header, under the action's timeout, and reading its answer (bounded).
//! Every failure is a message that quotes what the upstream said.

use std::io;
use std::sync::OnceLock;

use bytes::Bytes;
use http::{HeaderValue, Request, StatusCode, header};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt as _, Full, Limited, StreamBody};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

use super::body::Failure;
use super::catalog::{Action, AuthValue};
use crate::error::Error;
use crate::store::ByteStream;

type UpstreamBody = UnsyncBoxBody<Bytes, io::Error>;

/// The client for every upstream, built on first use.
#[derive(Debug, Default)]
pub(crate) struct Upstreams {
    client: OnceLock<Client<HttpsConnector<HttpConnector>, UpstreamBody>>,
}

/// The longest upstream message quoted back to the model.
const QUOTE_CHARS: usize = 300;

/// What to send.
pub(crate) enum Payload {
    /// A JSON document already in memory.
    Json(Vec<u8>),
    /// A streamed body of a known length; `failure` says why it broke, if it did.
    Stream {
        length: u64,
        stream: ByteStream,
        failure: Failure,
    },
}

impl Upstreams {
    fn client(&self) -> &Client<HttpsConnector<HttpConnector>, UpstreamBody> {
        self.client.get_or_init(|| {
            Client::builder(TokioExecutor::new()).build(crate::http_client::https_connector())
        })
    }

    /// POSTs `payload` to `action`'s upstream and returns its JSON answer,
    /// read up to `max_answer` bytes.
    pub async fn call(
        &self,
        action: &Action,
        payload: Payload,
        max_answer: usize,
    ) -> Result<Value, Error> {
        let (body, length, failure) = body_of(payload);
        let mut request = Request::post(action.url.as_str())
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::CONTENT_LENGTH, length)
            .header(header::ACCEPT, "application/json")
            .header(
                header::USER_AGENT,
                concat!("sluice/", env!("CARGO_PKG_VERSION")),
            )
            .body(body)
            .map_err(Error::internal)?;
        if let Some(auth) = &action.auth {
            let AuthValue::Value(value) = &auth.value else {
                return Err(Error::internal(io::Error::other(format!(
                    "the auth secret of action {} was not read at start",
                    action.name
                ))));
            };
            let mut value = value.clone();
            value.set_sensitive(true);
            request.headers_mut().insert(auth.header.clone(), value);
        }
        let exchange = self.exchange(action, request, failure.as_ref(), max_answer);
        let (status, content_type, bytes) = tokio::time::timeout(action.timeout, exchange)
            .await
            .map_err(|_| {
                // A body that broke before the timeout says why.
                failure.as_ref().and_then(Failure::take).unwrap_or_else(|| {
                    Error::Upstream(format!(
                        "the action's upstream did not answer within {} s: it may still be working; check before running the action again",
                        action.timeout.as_secs()
                    ))
                })
            })??;
        if !status.is_success() {
            return Err(Error::Upstream(format!(
                "the action's upstream answered {}: {}",
                status_text(status),
                quote(&bytes)
            )));
        }
        Ok(answer(content_type.as_ref(), &bytes))
    }

    /// Sends `request` and reads its answer up to `max_answer` bytes: the
    /// status, the content type and the bytes; an upstream out of reach,
    /// or an answer over the limit, said as the action's error (a body
    /// that broke on the way says why first).
    async fn exchange(
        &self,
        action: &Action,
        request: Request<UpstreamBody>,
        failure: Option<&Failure>,
        max_answer: usize,
    ) -> Result<(http::StatusCode, Option<header::HeaderValue>, Bytes), Error> {
        let response = self.client().request(request).await;
        let response = match response {
            Ok(r) => r,
            Err(e) => {
                // A body that broke says why; that beats "connection error".
                if let Some(reason) = failure.and_then(Failure::take) {
                    return Err(reason);
                }
                tracing::warn!(action = %action.name, error = %e, "upstream request failed");
                return Err(Error::Upstream(format!(
                    "the action's upstream could not be reached ({}): try again later",
                    root_cause(&e)
                )));
            }
        };
        let status = response.status();
        let content_type = response.headers().get(header::CONTENT_TYPE).cloned();
        let bytes = Limited::new(response.into_body(), max_answer)
            .collect()
            .await
            .map_err(|e| {
                if e.is::<http_body_util::LengthLimitError>() {
                    tracing::warn!(action = %action.name, max_answer, "upstream answer over the limit");
                    return Error::Upstream(format!(
                        "the action ran (its upstream answered {status}), but its answer is over \
                         the {max_answer} bytes this server reads: check the result in the backend \
                         before running it again"
                    ));
                }
                Error::Upstream(format!(
                    "the action's upstream answered {status}, but its answer could not be read whole ({e})"
                ))
            })?
            .to_bytes();
        Ok((status, content_type, bytes))
    }
}

/// The request body for `payload`, its length, and where a streamed body
/// that breaks says why.
fn body_of(payload: Payload) -> (UpstreamBody, u64, Option<Failure>) {
    match payload {
        Payload::Json(bytes) => {
            let n = bytes.len() as u64;
            (
                Full::new(Bytes::from(bytes))
                    .map_err(|e| match e {})
                    .boxed_unsync(),
                n,
                None,
            )
        }
        Payload::Stream {
            length,
            stream,
            failure,
        } => {
            use futures_util::StreamExt as _;
            let frames = stream.map(|chunk| chunk.map(http_body::Frame::data));
            (
                StreamBody::new(frames).boxed_unsync(),
                length,
                Some(failure),
            )
        }
    }
}

/// The innermost error's message, which says what happened (refused, DNS…).
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut inner = e;
    while let Some(next) = inner.source() {
        inner = next;
    }
    inner.to_string()
}

fn status_text(status: StatusCode) -> String {
    match status.canonical_reason() {
        Some(reason) => format!("{} {reason}", status.as_u16()),
        None => status.as_u16().to_string(),
    }
}

/// What an error answer said: its JSON `message` or `error`, or its text,
/// cut short and without control characters.
fn quote(bytes: &[u8]) -> String {
    let said = serde_json::from_slice::<Value>(bytes)
        .ok()
        .and_then(|v| {
            ["message", "error", "detail"]
                .iter()
                .find_map(|k| v.get(k).and_then(Value::as_str).map(str::to_owned))
        })
        .unwrap_or_else(|| String::from_utf8_lossy(bytes).into_owned());
    let clean: String = said
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let clean = clean.trim();
    if clean.is_empty() {
        return "(no message)".into();
    }
    match clean.char_indices().nth(QUOTE_CHARS) {
        Some((at, _)) => format!("{}…", &clean[..at]),
        None => clean.to_owned(),
    }
}

/// A successful answer as a JSON object: an object as it is, any other
/// JSON under `result`, and text under `result` as a string.
fn answer(content_type: Option<&HeaderValue>, bytes: &[u8]) -> Value {
    let json = content_type
        .and_then(|v| v.to_str().ok())
        .is_none_or(|ct| ct.contains("json"));
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(map)) => Value::Object(map),
        Ok(other) if json => serde_json::json!({ "result": other }),
        _ if bytes.is_empty() => serde_json::json!({}),
        _ => serde_json::json!({ "result": String::from_utf8_lossy(bytes) }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_answers_are_quoted_short_and_clean() {
        assert_eq!(quote(br#"{"message":"no such review"}"#), "no such review");
        assert_eq!(quote(b"boom\r\nstack"), "boom  stack");
        assert_eq!(quote(b""), "(no message)");
        let long = "x".repeat(1000);
        assert_eq!(quote(long.as_bytes()).chars().count(), QUOTE_CHARS + 1);
    }

    #[test]
    fn answers_become_objects() {
        let json = HeaderValue::from_static("application/json");
        assert_eq!(
            answer(Some(&json), br#"{"a":1}"#),
            serde_json::json!({"a": 1})
        );
        assert_eq!(
            answer(Some(&json), b"[1]"),
            serde_json::json!({"result": [1]})
        );
        let text = HeaderValue::from_static("text/plain");
        assert_eq!(
            answer(Some(&text), b"ok"),
            serde_json::json!({"result": "ok"})
        );
        assert_eq!(answer(None, b""), serde_json::json!({}));
    }
}
