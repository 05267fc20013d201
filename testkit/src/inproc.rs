//! Sluice in-process: a [`Sluice`] over a temporary data directory (the
//! real local backends, no server), and [`call`], which drives any router
//! with `tower::ServiceExt::oneshot`: no sockets, so a test of a route or a
//! tool is a few lines and runs in milliseconds.

use axum::Router;
use axum::body::Body;
use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::BodyExt as _;
use sluice::{Config, Scope, Sluice};
use tower::ServiceExt as _;

/// Where tests pretend the server is; nothing listens there.
pub const BASE: &str = "http://127.0.0.1:8787";

/// The configuration of a server on data directory `dir`: `first`, then
/// `vars` (which may override it).
fn config_in(dir: &tempfile::TempDir, first: (&str, &str), vars: &[(&str, &str)]) -> Config {
    let mut all = vec![
        (
            "SLUICE_DATA_DIR".to_owned(),
            dir.path().display().to_string(),
        ),
        (first.0.to_owned(), first.1.to_owned()),
    ];
    all.extend(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    Config::from_vars(all).expect("the test configuration is valid")
}

/// Sluice over the local backends in a directory of its own.
#[derive(Debug)]
pub struct Local {
    /// The service.
    pub sluice: Sluice,
    /// Its data directory, removed when this is dropped.
    pub dir: tempfile::TempDir,
}

impl Local {
    /// Sluice with the default settings plus `vars`.
    pub fn with(vars: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let config = config_in(&dir, ("SLUICE_PUBLIC_URL", BASE), vars);
        let url = config.urls.public.clone().expect("set above");
        let (sluice, _) = sluice_runtime::local_sluice(&config, url).expect("local backends open");
        Self { sluice, dir }
    }

    /// Sluice with the default settings.
    pub fn new() -> Self {
        Self::with(&[])
    }

    /// A development bearer token for `user` with `scopes`.
    pub fn token(&self, user: &str, scopes: &[Scope]) -> String {
        self.sluice
            .access()
            .mint(user, scopes, std::time::Duration::from_secs(600))
            .expect("local tokens")
    }
}

impl Default for Local {
    fn default() -> Self {
        Self::new()
    }
}

/// An answer, read whole.
#[derive(Debug)]
pub struct Answer {
    /// Its status.
    pub status: StatusCode,
    /// Its headers.
    pub headers: HeaderMap,
    /// Its body.
    pub body: Bytes,
}

impl Answer {
    /// The body as JSON (`Null` if it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_default()
    }
}

/// Sends one request to `router` in-process.
pub async fn call(
    router: Router,
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
    body: impl Into<Body>,
) -> Answer {
    let mut request = Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = router
        .oneshot(request.body(body.into()).expect("a valid request"))
        .await
        .expect("routers are infallible");
    let (parts, body) = response.into_parts();
    Answer {
        status: parts.status,
        headers: parts.headers,
        body: body.collect().await.expect("a body").to_bytes(),
    }
}

/// One JSON-RPC message POSTed to `router`'s `/mcp` with `token`, as a
/// stateless client sends it.
pub async fn mcp(router: Router, token: &str, message: serde_json::Value) -> Answer {
    let auth = format!("Bearer {token}");
    call(
        router,
        "POST",
        "/mcp",
        &[
            ("host", "127.0.0.1:8787"),
            ("accept", "application/json, text/event-stream"),
            ("content-type", "application/json"),
            ("mcp-protocol-version", "2025-11-25"),
            ("authorization", auth.as_str()),
        ],
        message.to_string(),
    )
    .await
}

/// A `tools/call` of `tool` with `arguments`: its JSON-RPC `result`.
pub async fn tool(
    router: Router,
    token: &str,
    tool: &str,
    arguments: serde_json::Value,
) -> serde_json::Value {
    let message = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    });
    let answer = mcp(router, token, message).await;
    assert_eq!(answer.status, StatusCode::OK, "{tool}: {:?}", answer.json());
    answer.json()["result"].clone()
}

/// Sluice served in this process as the `sluice` binary serves it
/// (`sluice_runtime::bind` on port 0, the three functions' routes on one
/// router, `sluice_runtime::serve` with its connection, header, body and
/// write limits), over the local backends in a directory of its own: for
/// a test that needs a real socket (a curl line, a client) and the
/// service at hand. Stopped, gracefully, when dropped.
#[derive(Debug)]
pub struct Served {
    /// The base URL it listens at, e.g. `http://127.0.0.1:40123`.
    pub base: String,
    /// The service it serves.
    pub sluice: Sluice,
    /// Its data directory.
    pub dir: tempfile::TempDir,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Served {
    /// Serves sluice with the default settings plus `vars`.
    pub fn start(vars: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let config = config_in(&dir, ("SLUICE_PORT", "0"), vars);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (ready, started) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Runtime::new().expect("a runtime");
            rt.block_on(async move {
                let (listener, url) = sluice_runtime::bind(&config).await.expect("bound");
                let (sluice, _) =
                    sluice_runtime::local_sluice(&config, url).expect("local backends open");
                let base = sluice.base_url().to_owned();
                let _ = ready.send((base, sluice.clone()));
                sluice_runtime::serve(
                    listener,
                    sluice_local::app(sluice),
                    sluice_runtime::ServeLimits::from_config(&config),
                    async move {
                        let _ = stopped.await;
                    },
                )
                .await
                .expect("served");
            });
        });
        let (base, sluice) = started.recv().expect("the server starts");
        Self {
            base,
            sluice,
            dir,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
