//! `GET /metrics`: parsed by the Prometheus client's own parser (PyPI
//! `prometheus-client`), each counter matching what the test did; the audit
//! line for each change of a file's state names the link by its id, never
//! the link; loopback only without a token, the token with one.

use std::io::Write as _;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::mcp_clients::root;
use crate::util::{Server, bytes, call_tool, request, tool_error, tool_ok};

/// The samples of a scrape, as the Prometheus client's parser reads them.
pub(crate) fn parsed(text: &str) -> Vec<Value> {
    let mut child = Command::new(root().join(".venv/bin/python"))
        .arg(root().join("tests/clients/metrics_parse.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run `make test`: the venv has prometheus-client");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the parser refused the exposition: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The value of sample `name` with exactly `labels` among its labels; 0
/// when there is none (a counter not yet moved is not exposed).
pub(crate) fn value(samples: &[Value], name: &str, labels: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|s| s["name"] == name)
        .filter(|s| labels.iter().all(|(k, v)| s["labels"][*k] == *v))
        .map(|s| s["value"].as_f64().unwrap())
        .sum()
}

pub(crate) fn scrape(server: &Server, headers: &[(&str, &str)]) -> crate::util::Reply {
    request("GET", &format!("{}/metrics", server.base), headers, None)
}

#[test]
fn each_counter_matches_what_was_done_and_each_change_has_its_audit_line() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sluice.log");
    let server = Server::start_logging(&dir.path().join("data"), &[], &log);
    let alice = server.token("alice", &[]);
    // Two files issued: one arrives, one gets other bytes (rejected).
    let a = server.upload(&alice, "a.txt", b"hello");
    server.refused_upload(&alice, "b.bin", &bytes(1000, 1));
    // One download, and its link presented again.
    let handle = a["handle"].as_str().unwrap();
    let link = server.download_url(&alice, handle);
    assert_eq!(request("GET", &link, &[], None).body, b"hello");
    assert_ne!(request("GET", &link, &[], None).status, 200);
    // Tool calls: one listing, one refusal, one delete.
    tool_ok(&call_tool(&server.base, &alice, "list_files", json!({})));
    let wrong = call_tool(
        &server.base,
        &alice,
        "get_download_url",
        json!({"file": "nope"}),
    );
    assert!(!tool_error(&wrong).is_empty());
    tool_ok(&call_tool(
        &server.base,
        &alice,
        "delete_file",
        json!({"file": handle}),
    ));

    let reply = scrape(&server, &[]);
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(
        reply
            .header("content-type")
            .is_some_and(|c| c.starts_with("text/plain")),
        "{:?}",
        reply.header("content-type")
    );
    let s = parsed(&reply.text());
    let files = |change| value(&s, "sluice_files_total", &[("change", change)]);
    assert_eq!(
        (files("issued"), files("ready"), files("rejected")),
        (2.0, 1.0, 1.0)
    );
    assert_eq!((files("downloaded"), files("deleted")), (1.0, 1.0));
    let bytes_of = |d| value(&s, "sluice_file_bytes_total", &[("direction", d)]);
    assert_eq!((bytes_of("up"), bytes_of("down")), (5.0, 5.0));
    assert_eq!(
        value(&s, "sluice_refusals_total", &[("reason", "body_mismatch")]),
        1.0
    );
    let calls = |tool, outcome| {
        value(
            &s,
            "sluice_tool_calls_total",
            &[("tool", tool), ("outcome", outcome)],
        )
    };
    assert_eq!(calls("list_files", "ok"), 1.0);
    assert_eq!(calls("get_download_url", "refused"), 1.0);
    assert_eq!(calls("delete_file", "ok"), 1.0);
    // A histogram, with its buckets: each call counted once.
    assert_eq!(
        value(
            &s,
            "sluice_tool_call_seconds_count",
            &[("tool", "list_files")]
        ),
        1.0
    );
    assert_eq!(
        value(
            &s,
            "sluice_tool_call_seconds_bucket",
            &[("tool", "list_files"), ("le", "+Inf")]
        ),
        1.0
    );
    assert_eq!(value(&s, "sluice_transfers_open", &[]), 0.0);

    // The audit lines: each change, the link by its id, never the link.
    server.stop();
    let log = std::fs::read_to_string(&log).unwrap();
    let audit: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("sluice::audit"))
        .collect();
    let a_id = a["file_id"].as_str().unwrap();
    for change in ["issued", "ready", "downloaded", "deleted"] {
        assert!(
            audit
                .iter()
                .any(|l| l.contains(a_id) && l.contains(&format!("change=\"{change}\""))),
            "no audit line for {change}: {audit:#?}"
        );
    }
    let link_token = link.rsplit('/').next().unwrap();
    assert!(!log.contains(link_token), "the link itself was logged");
    let downloaded = audit
        .iter()
        .find(|l| l.contains("change=\"downloaded\""))
        .unwrap();
    assert!(downloaded.contains("token_id=\""), "{downloaded}");
    assert!(!downloaded.contains("token_id=\"-\""), "{downloaded}");
}

#[test]
fn with_a_token_only_its_bearer_is_answered() {
    let dir = tempfile::tempdir().unwrap();
    let token = "m".repeat(40);
    let server = Server::start_in(dir.path(), &[("SLUICE_METRICS_TOKEN", &token)]);
    let bare = scrape(&server, &[]);
    assert_eq!(bare.status, 403, "{}", bare.text());
    assert!(
        bare.text().contains("SLUICE_METRICS_TOKEN"),
        "{}",
        bare.text()
    );
    let wrong = scrape(&server, &[("Authorization", "Bearer not-the-token")]);
    assert_eq!(wrong.status, 403);
    let bearer = format!("Bearer {token}");
    let right = scrape(&server, &[("Authorization", &bearer)]);
    assert_eq!(right.status, 200, "{}", right.text());
    parsed(&right.text());
}

#[test]
fn metrics_turned_off_are_not_served() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(dir.path(), &[("SLUICE_METRICS", "false")]);
    assert_eq!(scrape(&server, &[]).status, 404);
}

/// A server with a public URL is usually behind a proxy on the same host,
/// which makes every peer loopback: its metrics need the token, even from
/// loopback, and are answered with it.
#[test]
fn a_public_servers_metrics_need_the_token_even_from_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let public = [("SLUICE_PUBLIC_URL", "https://files.example.com")];
    let server = Server::start_in(dir.path(), &public);
    let host = [("Host", "files.example.com")];
    let bare = scrape(&server, &host);
    assert_eq!(bare.status, 403, "{}", bare.text());
    assert!(bare.text().contains("public URL"), "{}", bare.text());
    server.stop();
    let token = "m".repeat(40);
    let server = Server::start_in(dir.path(), &[public[0], ("SLUICE_METRICS_TOKEN", &token)]);
    let bearer = format!("Bearer {token}");
    let right = scrape(&server, &[host[0], ("Authorization", &bearer)]);
    assert_eq!(right.status, 200, "{}", right.text());
}
