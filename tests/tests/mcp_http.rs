//! The MCP endpoint at the HTTP level: methods, auth challenges, metadata,
//! bad bodies, scopes, and DNS-rebinding protection.

use crate::util::{Reply, Server, request};

const ACCEPT: (&str, &str) = ("Accept", "application/json, text/event-stream");
const JSON: (&str, &str) = ("Content-Type", "application/json");

fn initialize() -> Vec<u8> {
    serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    })
    .to_string()
    .into_bytes()
}

fn post(server: &Server, token: Option<&str>, extra: &[(&str, &str)], body: &[u8]) -> Reply {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![ACCEPT, JSON];
    if let Some(a) = &auth {
        headers.push(("Authorization", a));
    }
    headers.extend_from_slice(extra);
    request(
        "POST",
        &format!("{}/mcp", server.base),
        &headers,
        Some(body),
    )
}

#[test]
fn initialize_answers_json_without_a_session() {
    let (server, _dir) = Server::start();
    let reply = post(
        &server,
        Some(&server.token("alice", &[])),
        &[],
        &initialize(),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(
        reply
            .header("content-type")
            .unwrap()
            .starts_with("application/json")
    );
    assert!(reply.header("mcp-session-id").is_none());
    assert_eq!(reply.json()["result"]["serverInfo"]["name"], "sluice");
}

#[test]
fn get_on_mcp_is_405() {
    let (server, _dir) = Server::start();
    let reply = request("GET", &format!("{}/mcp", server.base), &[ACCEPT], None);
    assert_eq!(reply.status, 405);
    assert_eq!(reply.header("allow"), Some("POST"));
}

#[test]
fn a_missing_or_foreign_token_gets_a_challenge_naming_the_metadata() {
    let (server, _dir) = Server::start();
    let (handle, link) = {
        let token = server.token("alice", &[]);
        let ticket = server.upload(&token, "a.txt", b"a");
        let handle = ticket["handle"].as_str().unwrap().to_owned();
        let url = server.download_url(&token, &handle);
        (handle, url.rsplit('/').next().unwrap().to_owned())
    };
    for token in [
        None,
        Some("garbage"),
        Some(handle.as_str()),
        Some(&handle["$uploadedFile:".len()..]),
        Some(link.as_str()),
    ] {
        let reply = post(&server, token, &[], &initialize());
        assert_eq!(reply.status, 401, "{token:?}");
        let challenge = reply.header("www-authenticate").unwrap();
        assert!(
            challenge.contains(&format!(
                "resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
                server.base
            )),
            "{challenge}"
        );
    }
}

#[test]
fn protected_resource_metadata_lists_the_resource_and_scopes() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(
        dir.path(),
        &[("SLUICE_AUTH_SERVERS", "https://auth.example.com")],
    );
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let reply = request("GET", &format!("{}{path}", server.base), &[], None);
        assert_eq!(reply.status, 200);
        let doc = reply.json();
        assert_eq!(doc["resource"], format!("{}/mcp", server.base));
        assert_eq!(
            doc["authorization_servers"],
            serde_json::json!(["https://auth.example.com"])
        );
        // The example actions are on: their scope is listed too.
        assert_eq!(
            doc["scopes_supported"],
            serde_json::json!(["files:read", "files:write", "actions:execute"])
        );
    }
    let without_actions = Server::start_in(
        &dir.path().join("plain"),
        &[("SLUICE_EXAMPLE_ACTIONS", "false")],
    );
    let doc = request(
        "GET",
        &format!(
            "{}/.well-known/oauth-protected-resource/mcp",
            without_actions.base
        ),
        &[],
        None,
    )
    .json();
    assert_eq!(
        doc["scopes_supported"],
        serde_json::json!(["files:read", "files:write"])
    );
}

#[test]
fn a_tool_call_without_its_scope_is_403_insufficient_scope() {
    let (server, _dir) = Server::start();
    let read_only = server.token("alice", &["files:read"]);
    let call = serde_json::json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "request_upload", "arguments": {"filename": "a", "size": 1, "sha256": "0".repeat(64)}}
    });
    let reply = post(
        &server,
        Some(&read_only),
        &[("MCP-Protocol-Version", "2025-06-18")],
        call.to_string().as_bytes(),
    );
    assert_eq!(reply.status, 403, "{}", reply.text());
    let challenge = reply.header("www-authenticate").unwrap();
    assert!(
        challenge.contains("error=\"insufficient_scope\""),
        "{challenge}"
    );
    assert!(challenge.contains("scope=\"files:write\""), "{challenge}");
}

#[test]
fn bad_bodies_get_json_rpc_errors_with_4xx() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &[]);
    let cases: [(&[u8], u16, i64); 3] = [
        (b"{not json", 400, -32700),
        (
            b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]",
            400,
            -32600,
        ),
        (b"42", 400, -32600),
    ];
    for (body, status, code) in cases {
        let reply = post(&server, Some(&token), &[], body);
        assert_eq!(reply.status, status, "{}", reply.text());
        assert_eq!(reply.json()["error"]["code"], code, "{}", reply.text());
    }
    let huge = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"x\":\"{}\"}}}}",
        "a".repeat(300 * 1024)
    );
    let reply = post(&server, Some(&token), &[], huge.as_bytes());
    assert_eq!(reply.status, 413);
    assert!(reply.json()["error"]["code"].is_i64());
}

#[test]
fn a_foreign_host_or_origin_is_refused() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &[]);
    let reply = post(
        &server,
        Some(&token),
        &[("Host", "evil.example.com")],
        &initialize(),
    );
    assert_eq!(reply.status, 403, "{}", reply.text());
    let reply = post(
        &server,
        Some(&token),
        &[("Origin", "http://evil.example.com")],
        &initialize(),
    );
    assert_eq!(reply.status, 403, "{}", reply.text());
    let reply = post(
        &server,
        Some(&token),
        &[("Origin", server.base.as_str())],
        &initialize(),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
}

#[test]
fn the_three_protocol_versions_are_spoken() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &[]);
    for version in ["2025-06-18", "2025-11-25"] {
        let body = serde_json::json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        });
        let reply = post(&server, Some(&token), &[], body.to_string().as_bytes());
        assert_eq!(reply.json()["result"]["protocolVersion"], version);
    }
    let meta = serde_json::json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let discover = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}});
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "server/discover"),
    ];
    let reply = post(
        &server,
        Some(&token),
        &headers,
        discover.to_string().as_bytes(),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(
        reply.json()["result"]["supportedVersions"],
        serde_json::json!(["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"])
    );
    let list = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta}});
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/list"),
    ];
    let reply = post(&server, Some(&token), &headers, list.to_string().as_bytes());
    assert_eq!(reply.status, 200, "{}", reply.text());
    let json = reply.json();
    let names: Vec<&str> = json["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for tool in [
        "request_upload",
        "get_download_url",
        "list_files",
        "upload_small_file",
        "read_small_file",
        // The example actions are on with no configuration.
        "execute_action",
    ] {
        assert!(names.contains(&tool), "{tool} not in {names:?}");
    }
}

/// The 2026-07-28 envelope: `MCP-Protocol-Version` must match the body's
/// `_meta` protocol version, and `Mcp-Method` (and, for a tool call,
/// `Mcp-Name`) the body; a mismatch is HTTP 400 with JSON-RPC `-32020`
/// (header mismatch), so a middlebox routing on headers cannot be misled.
#[test]
fn the_2026_07_28_header_rules_are_enforced() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &["files:read"]);
    let meta = |version: &str| {
        serde_json::json!({
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}
        })
    };
    let list = |version: &str| {
        serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": meta(version)}})
            .to_string()
    };
    let call = serde_json::json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
        "params": {"name": "list_files", "arguments": {}, "_meta": meta("2026-07-28")}})
    .to_string();
    let ok = post(
        &server,
        Some(&token),
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/list"),
        ],
        list("2026-07-28").as_bytes(),
    );
    assert_eq!(ok.status, 200, "{}", ok.text());
    assert!(ok.json()["result"]["tools"].is_array());
    let named = post(
        &server,
        Some(&token),
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "list_files"),
        ],
        call.as_bytes(),
    );
    assert_eq!(named.status, 200, "{}", named.text());
    for (why, headers, body) in [
        (
            "Mcp-Method names another method",
            vec![
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "tools/call"),
            ],
            list("2026-07-28"),
        ),
        (
            "no Mcp-Method",
            vec![("MCP-Protocol-Version", "2026-07-28")],
            list("2026-07-28"),
        ),
        (
            "the header's version is not the body's",
            vec![
                ("MCP-Protocol-Version", "2025-11-25"),
                ("Mcp-Method", "tools/list"),
            ],
            list("2026-07-28"),
        ),
        (
            "Mcp-Name names another tool",
            vec![
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "request_upload"),
            ],
            call.clone(),
        ),
    ] {
        let reply = post(&server, Some(&token), &headers, body.as_bytes());
        assert_eq!(reply.status, 400, "{why}: {}", reply.text());
        assert_eq!(
            reply.json()["error"]["code"],
            -32020,
            "{why}: {}",
            reply.text()
        );
    }
}

/// All three revisions through the official Python client: 2026-07-28 by
/// `server/discover`, 2025-11-25 and 2025-06-18 by `initialize`, each
/// running the whole file flow.
#[test]
fn the_official_client_speaks_all_three_revisions() {
    let python = crate::mcp_clients::root().join(".venv/bin/python");
    let checks = crate::mcp_clients::round_trip(&python, "protocols.py", &[]);
    for version in ["2026-07-28", "2025-11-25", "2025-06-18"] {
        assert!(
            checks
                .iter()
                .any(|c| c.starts_with(&format!("{version}: opened, upload and download"))),
            "{version}: {checks:?}"
        );
    }
}

/// 2025-03-26, through the official Python SDK of that era (1.9.4): agreed
/// in `initialize`, tools listed with annotations and no output schema,
/// and every answer carried by the text alone, the whole file flow run
/// from it.
#[test]
fn the_python_sdk_of_2025_03_26_runs_the_whole_flow_from_the_text() {
    let python = crate::mcp_clients::root().join(".venv-legacy/bin/python");
    let checks = crate::mcp_clients::round_trip(&python, "legacy.py", &[]);
    assert_eq!(checks.len(), 3, "{checks:?}");
    assert!(checks[0].contains("2025-03-26 agreed"), "{checks:?}");
    assert!(checks[2].contains("through the text alone"), "{checks:?}");
}

/// 2025-03-26 through the official TypeScript SDK of that era (1.11.5):
/// the same contract as the Python one above.
#[test]
fn the_typescript_sdk_of_2025_03_26_runs_the_whole_flow_from_the_text() {
    let checks = crate::mcp_clients::round_trip(std::path::Path::new("node"), "legacy.mjs", &[]);
    assert_eq!(checks.len(), 3, "{checks:?}");
    assert!(checks[2].contains("through the text alone"), "{checks:?}");
}

/// The REST routes answer with the same challenge as `/mcp`: a program
/// learns where the authorization server is from either door.
#[test]
fn rest_routes_challenge_like_the_mcp_endpoint() {
    let (server, _dir) = Server::start();
    let metadata = format!(
        "resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
        server.base
    );
    let body = serde_json::json!({"filename": "a", "size": 1, "sha256": "0".repeat(64)});
    let uploads = format!("{}/uploads", server.base);
    let none = crate::util::post_json(&uploads, None, &body);
    assert_eq!(none.status, 401);
    assert!(none.header("www-authenticate").unwrap().contains(&metadata));
    assert_eq!(
        none.json()["www_authenticate"],
        none.header("www-authenticate").unwrap()
    );
    let bad = crate::util::post_json(&uploads, Some("garbage"), &body);
    assert_eq!(bad.status, 401);
    assert!(
        bad.header("www-authenticate")
            .unwrap()
            .contains("error=\"invalid_token\"")
    );
    let read_only = server.token("alice", &["files:read"]);
    let refused = crate::util::post_json(&uploads, Some(&read_only), &body);
    assert_eq!(refused.status, 403, "{}", refused.text());
    let challenge = refused.header("www-authenticate").unwrap();
    assert!(
        challenge.contains("error=\"insufficient_scope\""),
        "{challenge}"
    );
    assert!(challenge.contains("scope=\"files:write\""), "{challenge}");
    assert!(challenge.contains(&metadata), "{challenge}");
}

/// The log names the client that connected, its version and the protocol
/// agreed, and at debug each tool call; never the client rmcp makes up for
/// a stateless request (itself).
#[test]
fn the_log_names_the_real_client_and_protocol() {
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("stderr.log");
    let mut command = Command::new(crate::util::BIN);
    command
        .env_clear()
        .env("SLUICE_DATA_DIR", dir.path().join("data"))
        .env("SLUICE_LOG", "info,sluice_mcp=debug")
        .stderr(Stdio::from(std::fs::File::create(&log).unwrap()));
    let process = sluice_testkit::process::Spawned::sluice(command).unwrap();
    let token = crate::util::token_for(&dir.path().join("data"), "alice", &["files:read"]);
    let auth = format!("Bearer {token}");
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "probe-client", "version": "7.1.2"}}
    });
    let url = format!("{}/mcp", process.base);
    let reply = request(
        "POST",
        &url,
        &[ACCEPT, JSON, ("Authorization", &auth)],
        Some(body.to_string().as_bytes()),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    let call = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "list_files", "arguments": {}}});
    let reply = request(
        "POST",
        &url,
        &[
            ACCEPT,
            JSON,
            ("Authorization", &auth),
            ("MCP-Protocol-Version", "2025-11-25"),
            ("User-Agent", "probe-agent/3"),
        ],
        Some(call.to_string().as_bytes()),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    drop(process);
    let text = std::fs::read_to_string(&log).unwrap();
    let connected = text
        .lines()
        .find(|l| l.contains("MCP client connected"))
        .unwrap_or_else(|| panic!("no connection line in:\n{text}"));
    for needle in ["probe-client", "7.1.2", "2025-06-18"] {
        assert!(connected.contains(needle), "{needle}: {connected}");
    }
    let call = text
        .lines()
        .find(|l| l.contains("tool call"))
        .unwrap_or_else(|| panic!("no tool call line in:\n{text}"));
    for needle in ["list_files", "2025-11-25", "probe-agent/3"] {
        assert!(call.contains(needle), "{needle}: {call}");
    }
    assert!(!text.contains("rmcp"), "rmcp's made-up client: {text}");
}

/// Every tool has a title and all four hints, each true to what it does
/// (`docs/tools.md` has the table): hosts ask before a call by them.
#[test]
fn every_tool_has_a_title_and_hints_true_to_what_it_does() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &["files:read", "files:write", "actions:execute"]);
    let listed = crate::util::mcp_call(&server.base, &token, "tools/list", serde_json::json!({}));
    let tools = listed["tools"].as_array().unwrap();
    let hints = |name: &str| -> (bool, bool, bool, bool) {
        let tool = tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} is not listed"));
        let a = &tool["annotations"];
        let flag = |k: &str| {
            a[k].as_bool()
                .unwrap_or_else(|| panic!("{name}: no {k} in {a}"))
        };
        (
            flag("readOnlyHint"),
            flag("destructiveHint"),
            flag("idempotentHint"),
            flag("openWorldHint"),
        )
    };
    for tool in tools {
        let name = tool["name"].as_str().unwrap();
        let title = tool["title"].as_str().unwrap_or_default();
        assert!(!title.is_empty(), "{name} has no title");
        assert_eq!(tool["annotations"]["title"], title, "{name}");
        hints(name);
    }
    // (read-only, destructive, idempotent, open world)
    for reads in [
        "get_download_url",
        "list_files",
        "read_small_file",
        "get_upload_status",
        "list_actions",
    ] {
        assert_eq!(hints(reads), (true, false, true, false), "{reads}");
    }
    for adds in [
        "request_upload",
        "request_browser_upload",
        "upload_small_file",
    ] {
        assert_eq!(hints(adds), (false, false, false, false), "{adds}");
    }
    // An import adds a file fetched from the web: an open world, as
    // docs/tools.md says (imports are on by default).
    assert_eq!(hints("import_file"), (false, false, false, true));
    // Deleting removes for good, and a second delete changes nothing more.
    assert_eq!(hints("delete_file"), (false, true, true, false));
    // An action is the team's backend's to say: the host asks first.
    let action = tools
        .iter()
        .find(|t| t["name"].as_str().unwrap().starts_with("action_"))
        .expect("the example actions are on with no configuration");
    let name = action["name"].as_str().unwrap();
    assert_eq!(hints(name), (false, true, false, true), "{name}");
    assert_eq!(hints("execute_action"), (false, true, false, true));
    assert!(
        action["title"]
            .as_str()
            .unwrap()
            .contains(&name["action_".len()..]),
        "{action}"
    );
}
