//! Traces (OTLP/HTTP) to a real receiver on loopback that decodes them with
//! the official `opentelemetry-proto` messages (`tests/clients/otlp_receiver.py`):
//! a file's life is one trace, joined to the client's from
//! `_meta.traceparent`: the `tools/call` that issued it, the bytes, the
//! download later; each request is a server span with its route as a
//! template; a malformed `traceparent` starts a trace of its own; no span
//! carries a token, a link or a file's name.

use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::mcp_clients::root;
use crate::util::{Server, bytes, mcp_post, out_text, sh};

/// The receiver, and every span it decoded so far; killed on drop.
struct Receiver {
    child: Child,
    port: u16,
    /// Each span decoded, as a JSON line.
    spans: Arc<Mutex<Vec<String>>>,
}

impl Receiver {
    fn start() -> Self {
        let mut command = Command::new(root().join(".venv/bin/python"));
        command.arg(root().join("tests/clients/otlp_receiver.py"));
        let (child, port, spans) = crate::util::spawn_listening(command);
        Self { child, port, spans }
    }

    /// The spans named `name` in trace `trace`, waiting up to 20 s for one.
    fn named(&self, trace: &str, name: &str) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let found: Vec<Value> = self
                .all()
                .into_iter()
                .filter(|s| s["trace_id"] == trace && s["name"] == name)
                .collect();
            if !found.is_empty() || Instant::now() > deadline {
                return found;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn all(&self) -> Vec<Value> {
        let lines = self.spans.lock().unwrap();
        lines
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// Each of `steps` is in trace `trace`, every span of it under `call`
    /// (the call that issued the file) and naming the file `file_id`.
    fn assert_steps_under(&self, trace: &str, call: &Value, steps: &[&str], file_id: &Value) {
        for step in steps {
            let spans = self.named(trace, step);
            assert!(
                !spans.is_empty(),
                "{step} in the file's trace: {:#?}",
                self.all()
            );
            assert!(
                spans.iter().all(|s| s["parent_span_id"] == call["span_id"]),
                "{step} under the call that issued the file: {spans:#?}"
            );
            assert_eq!(spans[0]["attributes"]["sluice.file.id"], *file_id);
        }
    }

    /// No span decoded so far carries any of `secrets`.
    fn assert_none_carries(&self, secrets: &[&str]) {
        let everything = serde_json::to_string(&self.all()).unwrap();
        for secret in secrets {
            assert!(!everything.contains(secret), "a span carries {secret:?}");
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `tools/call` whose `_meta` carries `traceparent`.
fn call_traced(base: &str, token: &str, tool: &str, arguments: Value, traceparent: &str) -> Value {
    let message = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": {"traceparent": traceparent}},
    });
    let reply = mcp_post(base, token, &message);
    assert_eq!(reply.status, 200, "{}", reply.text());
    let result = reply.json()["result"].clone();
    assert_ne!(result["isError"], true, "{result}");
    result["structuredContent"].clone()
}

/// `name`, holding `data`, issued by `request_upload` in the trace
/// `traceparent` names, and its bytes sent by the line it returned; the
/// ticket.
fn upload_traced(base: &str, token: &str, name: &str, data: &[u8], traceparent: &str) -> Value {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join(name), data).unwrap();
    let ticket = call_traced(
        base,
        token,
        "request_upload",
        json!({"filename": name, "size": data.len(), "sha256": sluice::Sha256::of(data)}),
        traceparent,
    );
    let out = sh(ticket["command"].as_str().unwrap(), work.path());
    assert!(out.status.success(), "{}", out_text(&out));
    ticket
}

/// The file of `ticket` fetched by the line `get_download_url` returned,
/// called in the trace `traceparent` names; its answer.
fn download_traced(base: &str, token: &str, ticket: &Value, traceparent: &str) -> Value {
    let download = call_traced(
        base,
        token,
        "get_download_url",
        json!({"file": ticket["handle"]}),
        traceparent,
    );
    let fetched = tempfile::tempdir().unwrap();
    let out = sh(download["command"].as_str().unwrap(), fetched.path());
    assert!(out.status.success(), "{}", out_text(&out));
    download
}

/// The token a link ends in.
fn token_of(link: &Value) -> &str {
    link.as_str().unwrap().rsplit('/').next().unwrap()
}

#[test]
fn a_files_life_is_one_trace_joined_to_the_clients() {
    let receiver = Receiver::start();
    let dir = tempfile::tempdir().unwrap();
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let server = Server::start_in(
        dir.path(),
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
            ("OTEL_SERVICE_NAME", "sluice-under-test"),
        ],
    );
    let token = server.token("alice", &["files:read", "files:write"]);
    let (trace, parent) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let traceparent = format!("00-{trace}-{parent}-01");

    // Issued, its bytes sent by the line, then a download in another trace.
    let name = "quarterly secret plans.pdf";
    let data = bytes(200_000, 40);
    let ticket = upload_traced(&server.base, &token, name, &data, &traceparent);
    let other = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let download = download_traced(&server.base, &token, &ticket, other);

    // The tree: the call under the client's span, the bytes and the
    // download under the call.
    let call = receiver.named(trace, "tools/call request_upload");
    assert_eq!(call.len(), 1, "{:#?}", receiver.all());
    let call = &call[0];
    assert_eq!(
        call["parent_span_id"], parent,
        "joined to the client's span"
    );
    assert_eq!(call["service"], "sluice-under-test");
    assert_eq!(call["attributes"]["mcp.method.name"], "tools/call");
    assert_eq!(call["attributes"]["gen_ai.tool.name"], "request_upload");
    receiver.assert_steps_under(
        trace,
        call,
        &["file.bytes", "file.download"],
        &ticket["file_id"],
    );
    // The download's own call is in the trace its client sent.
    assert_eq!(
        receiver
            .named(&other[3..35], "tools/call get_download_url")
            .len(),
        1
    );
    // Each request a server span, its route a template.
    let routes: Vec<String> = receiver
        .all()
        .iter()
        .filter_map(|s| s["attributes"]["http.route"].as_str().map(str::to_owned))
        .collect();
    for route in ["/mcp", "/u/{token}", "/l/{token}"] {
        assert!(routes.iter().any(|r| r == route), "{route} in {routes:?}");
    }

    // A malformed traceparent is ignored: the call starts a trace of its own.
    let ignored = call_traced(
        &server.base,
        &token,
        "list_files",
        json!({}),
        "00-not-a-trace-01",
    );
    assert!(ignored.is_object());
    let deadline = Instant::now() + Duration::from_secs(20);
    while !receiver
        .all()
        .iter()
        .any(|s| s["name"] == "tools/call list_files")
    {
        assert!(Instant::now() < deadline, "{:#?}", receiver.all());
        std::thread::sleep(Duration::from_millis(50));
    }
    let listed = receiver
        .all()
        .into_iter()
        .find(|s| s["name"] == "tools/call list_files")
        .unwrap();
    assert_eq!(listed["trace_id"].as_str().unwrap().len(), 32);
    assert_ne!(listed["trace_id"], trace);

    // Nothing secret in any span: no token, no link, no name.
    receiver.assert_none_carries(&[
        token_of(&ticket["upload"]["url"]),
        token_of(&download["download"]["url"]),
        ticket["handle"].as_str().unwrap(),
        token.as_str(),
        name,
        "quarterly",
    ]);
}

/// A file's malware scan (clamd, in the background once its last byte is
/// stored) is a span in the file's trace, under the request that stored
/// its bytes.
#[test]
fn a_files_scan_is_in_its_trace() {
    use sluice_testkit::clamd::Clamd;
    let receiver = Receiver::start();
    let work = tempfile::tempdir().unwrap();
    let clamd = Clamd::start(&Clamd::dir_in(work.path()));
    let (address, endpoint) = (
        clamd.address(),
        format!("http://127.0.0.1:{}", receiver.port),
    );
    let server = Server::start_in(
        &work.path().join("data"),
        &[
            ("SLUICE_SCAN", "clamd"),
            ("SLUICE_CLAMD", address.as_str()),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
    );
    let token = server.token("alice", &["files:read", "files:write"]);
    let trace = "5bf92f3577b34da6a3ce929d0e0e4737";
    let ticket = upload_traced(
        &server.base,
        &token,
        "scanned.bin",
        &bytes(100_000, 41),
        &format!("00-{trace}-00f067aa0ba902b8-01"),
    );
    crate::scanning::until_state(
        &server,
        &token,
        ticket["file_id"].as_str().unwrap(),
        "ready",
    );
    let scans = receiver.named(trace, "file.scan");
    assert!(!scans.is_empty(), "{:#?}", receiver.all());
    let stored: Vec<Value> = receiver.named(trace, "file.bytes");
    assert!(
        stored
            .iter()
            .any(|b| b["span_id"] == scans[0]["parent_span_id"]),
        "the scan under the request that stored the bytes: {scans:#?} {stored:#?}"
    );
    assert_eq!(scans[0]["attributes"]["sluice.file.id"], ticket["file_id"]);
}

/// On Lambda: the mcp, issuer and resolver functions (each under the
/// emulated runtime API, behind API Gateway's routes, on s3s-fs and
/// dynalite) export too, and a file's life crosses them in one trace. The
/// batch delay is an hour, so a span that arrives was sent by the flush
/// after its invocation's response, while the function still runs: what
/// keeps spans from waiting in a frozen instance.
#[test]
fn on_lambda_each_invocations_spans_leave_after_its_response_in_the_files_trace() {
    let receiver = Receiver::start();
    let emulators = crate::util::Emulators::start();
    crate::util::provision(&emulators, "traces-lambda");
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let gateway = crate::gateway::Gateway::start(
        crate::gateway::Topology::ApiGateway { restore: true },
        |base| {
            let mut env = emulators.env("traces-lambda");
            env.extend([
                ("SLUICE_PUBLIC_URL", base.to_owned()),
                ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.clone()),
                ("OTEL_BSP_SCHEDULE_DELAY", "3600000".to_owned()),
            ]);
            env
        },
    );
    let token = crate::util::aws_token(&emulators, "alice", &["files:read", "files:write"]);
    let (trace, parent) = ("6bf92f3577b34da6a3ce929d0e0e4738", "00f067aa0ba902b9");
    let name = "board minutes.pdf";
    // The bytes: the issuer's redirect, then S3's presigned PUT.
    let ticket = upload_traced(
        &gateway.base,
        &token,
        name,
        &bytes(150_000, 42),
        &format!("00-{trace}-{parent}-01"),
    );
    // The mcp function finds them stored (a HEAD of S3, in a listing) and
    // marks the file ready.
    let listed = call_traced(
        &gateway.base,
        &token,
        "list_files",
        json!({}),
        "00-1af7651916cd43dd8448eb211c80319d-b7ad6b7169203333-01",
    );
    assert!(
        listed
            .to_string()
            .contains(ticket["file_id"].as_str().unwrap()),
        "{listed}"
    );
    // The resolver redeems the link.
    let download = download_traced(
        &gateway.base,
        &token,
        &ticket,
        "00-0af7651916cd43dd8448eb211c80319d-b7ad6b7169203332-01",
    );

    let call = receiver.named(trace, "tools/call request_upload");
    assert_eq!(call.len(), 1, "{:#?}", receiver.all());
    assert_eq!(
        call[0]["parent_span_id"], parent,
        "joined to the client's span"
    );
    receiver.assert_steps_under(
        trace,
        &call[0],
        &["file.ready", "file.download"],
        &ticket["file_id"],
    );
    // Each invocation a span of the runtime's (OpenTelemetry's FaaS
    // conventions), named for its function: each of the three sent its own.
    let invoked: Vec<Value> = receiver
        .all()
        .into_iter()
        .filter(|s| s["attributes"]["faas.invocation_id"].is_string())
        .collect();
    for function in ["mcp", "issuer", "resolver"] {
        assert!(
            invoked
                .iter()
                .any(|s| s["attributes"]["faas.name"] == function),
            "{function}'s invocations: {invoked:#?}"
        );
    }
    assert!(
        invoked
            .iter()
            .any(|s| s["attributes"]["faas.coldstart"] == true),
        "{invoked:#?}"
    );
    // Nothing secret in any span.
    receiver.assert_none_carries(&[
        token_of(&ticket["upload"]["url"]),
        token_of(&download["download"]["url"]),
        ticket["handle"].as_str().unwrap(),
        token.as_str(),
        name,
        "minutes",
    ]);
}
