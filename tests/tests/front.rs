//! The deployment's HTTP API in front of the real functions: a front read
//! from `template.yaml` itself ([`crate::template::api_routes`]: the
//! functions' events and the routes declared on their own), forwarding
//! each request it routes to the function `cargo lambda watch` serves,
//! and answering as API Gateway's HTTP API does where it routes nothing:
//! `404 {"message":"Not Found"}` for a method and path the template does
//! not declare (a CORS preflight included: the API has no
//! `CorsConfiguration`, so only a declared `OPTIONS` route reaches a
//! function), `413` for a request body over its 10 MB payload limit, and
//! `503` after its 30 s integration timeout. Like API Gateway (reported for
//! HTTP APIs) it renames a function's `WWW-Authenticate` to
//! `x-amzn-remapped-www-authenticate`, and then applies the template's own
//! response mapping on the mcp integration, which puts it back.
//!
//! `cargo lambda watch` routes by function prefix (`/lambda-url/<binary>`)
//! and so serves any route a function has; this front is what fails a test
//! when a function serves a route the template does not declare.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode};
use http_body_util::BodyExt as _;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use crate::template::{ApiRoute, api_route, api_routes, mcp_response_mappings};

/// API Gateway's HTTP API payload limit.
const MAX_PAYLOAD: usize = 10 * 1024 * 1024;
/// An HTTP API integration's longest wait.
const INTEGRATION_TIMEOUT: Duration = Duration::from_secs(30);

struct Front {
    routes: Vec<ApiRoute>,
    /// `http://127.0.0.1:<port>/lambda-url`: where `cargo lambda watch`
    /// serves each function under its binary's name.
    functions: String,
    client: Client<HttpConnector, Body>,
}

/// The template's API on a port of its own, until the test process ends.
pub struct ApiFront {
    /// Its base URL, e.g. `http://127.0.0.1:40123`: what a deployment's
    /// stage URL is.
    pub base: String,
    listener: Option<std::net::TcpListener>,
}

impl ApiFront {
    /// Binds a port; [`ApiFront::serve`] starts answering on it.
    pub fn bind() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        Self {
            base: format!("http://{}", listener.local_addr().unwrap()),
            listener: Some(listener),
        }
    }

    /// Answers on the bound port, forwarding to the functions at `functions`
    /// (`http://127.0.0.1:<invoke port>/lambda-url`).
    pub fn serve(&mut self, functions: String) {
        let listener = self.listener.take().expect("served once");
        let front = Arc::new(Front {
            routes: api_routes(),
            functions,
            client: Client::builder(TokioExecutor::new()).build_http(),
        });
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let app = axum::Router::new().fallback(forward).with_state(front);
                axum::serve(listener, app).await.unwrap();
            });
        });
    }
}

/// The header this stand-in adds to its answer when the connection to
/// `cargo lambda watch` failed: the gateway's answer, marked as the test
/// harness's trouble rather than a function's (see
/// `Stack::assert_client_succeeds`).
pub(crate) const UNREACHABLE: &str = "x-sluice-test-front-unreachable";

/// API Gateway's answer when its integration fails, given when the
/// connection to the emulator failed, with [`UNREACHABLE`].
fn emulator_unreachable() -> Response {
    let mut answer = gateway_answer(StatusCode::BAD_GATEWAY, "Internal Server Error");
    answer
        .headers_mut()
        .insert(UNREACHABLE, HeaderValue::from_static("true"));
    answer
}

fn gateway_answer(status: StatusCode, message: &str) -> Response {
    (
        status,
        [(http::header::CONTENT_TYPE, "application/json")],
        serde_json::json!({ "message": message }).to_string(),
    )
        .into_response()
}

async fn forward(State(front): State<Arc<Front>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().to_owned();
    let Some(route) = api_route(&front.routes, parts.method.as_str(), &path) else {
        return gateway_answer(StatusCode::NOT_FOUND, "Not Found");
    };
    let Ok(body) = http_body_util::Limited::new(body, MAX_PAYLOAD)
        .collect()
        .await
    else {
        return gateway_answer(StatusCode::PAYLOAD_TOO_LARGE, "Request Entity Too Large");
    };
    let target = format!(
        "{}/{}{}",
        front.functions,
        route.function,
        parts.uri.path_and_query().map_or("/", |p| p.as_str())
    );
    let mut upstream = http::Request::builder()
        .method(parts.method.clone())
        .uri(target);
    for (name, value) in &parts.headers {
        upstream = upstream.header(name, value);
    }
    let sent = front
        .client
        .request(upstream.body(Body::from(body.to_bytes())).unwrap());
    let answer = match tokio::time::timeout(INTEGRATION_TIMEOUT, sent).await {
        Ok(Ok(answer)) => answer,
        Ok(Err(_)) => return emulator_unreachable(),
        Err(_) => return gateway_answer(StatusCode::SERVICE_UNAVAILABLE, "Service Unavailable"),
    };
    let (mut parts, body) = answer.into_parts();
    let Ok(body) = body.collect().await.map(|b| b.to_bytes()) else {
        return emulator_unreachable();
    };
    if let Some(challenge) = parts.headers.remove(http::header::WWW_AUTHENTICATE) {
        parts
            .headers
            .insert("x-amzn-remapped-www-authenticate", challenge);
    }
    // The template's response mapping, on the mcp integration only.
    if route.function == "sluice-mcp" {
        let json = serde_json::from_slice::<serde_json::Value>(&body).unwrap_or_default();
        for (on, header, field) in mcp_response_mappings() {
            if on == parts.status.as_u16()
                && let Some(value) = json[&field].as_str()
                && let (Ok(name), Ok(value)) = (
                    http::HeaderName::try_from(header.as_str()),
                    HeaderValue::from_str(value),
                )
            {
                parts.headers.insert(name, value);
            }
        }
    }
    parts.headers.remove(http::header::TRANSFER_ENCODING);
    parts.headers.remove(http::header::CONNECTION);
    Response::from_parts(parts, Body::from(body))
}
