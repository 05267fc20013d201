//! Production auth: RS256 and ES256 bearer tokens from an authorization
//! server, verified with the keys of its JWKS document, which is fetched,
//! cached, and fetched again when a token names an unknown key.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

use crate::util::{Server, post_json};

pub const ISSUER: &str = "https://auth.example.com";
pub const AUDIENCE: &str = "https://files.example.com/mcp";

/// A JWKS endpoint serving whatever document it currently holds.
pub struct JwksServer {
    pub url: String,
    document: Arc<Mutex<Value>>,
    fetches: Arc<AtomicUsize>,
}

impl JwksServer {
    pub fn start(document: Value) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
        let document = Arc::new(Mutex::new(document));
        let fetches = Arc::new(AtomicUsize::new(0));
        let (doc, count) = (document.clone(), fetches.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                count.fetch_add(1, Ordering::SeqCst);
                let body = doc.lock().unwrap().to_string();
                let mut stream = stream;
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Self {
            url,
            document,
            fetches,
        }
    }
}

pub fn keys() -> Value {
    let out = std::process::Command::new("node")
        .arg(crate::mcp_clients::root().join("tests/clients/keys.mjs"))
        .output()
        .expect("node runs");
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).unwrap()
}

pub fn sign(alg: Algorithm, pem: &str, kid: &str, claims: Value) -> String {
    let key = match alg {
        Algorithm::RS256 => EncodingKey::from_rsa_pem(pem.as_bytes()).unwrap(),
        _ => EncodingKey::from_ec_pem(pem.as_bytes()).unwrap(),
    };
    let header = Header {
        kid: Some(kid.to_owned()),
        typ: Some("at+jwt".to_owned()),
        ..Header::new(alg)
    };
    jsonwebtoken::encode(&header, &claims, &key).unwrap()
}

pub fn claims(sub: &str, scope: &str, exp_in: i64) -> Value {
    let now = sluice::time::now_unix();
    json!({"iss": ISSUER, "aud": AUDIENCE, "sub": sub, "scope": scope, "iat": now, "exp": now + exp_in})
}

/// A sluice process that takes its bearer tokens from `jwks`.
fn start_with(jwks: &JwksServer, refresh_secs: &str) -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(
        dir.path(),
        &[
            ("SLUICE_AUTH_JWKS_URL", &jwks.url),
            ("SLUICE_AUTH_ISSUER", ISSUER),
            ("SLUICE_AUTH_AUDIENCE", AUDIENCE),
            ("SLUICE_AUTH_JWKS_REFRESH_SECS", refresh_secs),
        ],
    );
    (server, dir)
}

fn upload_status(server: &Server, token: &str) -> u16 {
    let body = json!({"filename": "a.txt", "size": 1, "sha256": sluice::Sha256::of(b"a").to_hex()});
    post_json(&format!("{}/uploads", server.base), Some(token), &body).status
}

#[test]
fn tokens_from_the_authorization_server_are_verified_with_its_jwks() {
    let keys = keys();
    let jwks = JwksServer::start(json!({"keys": [keys["rsa"]["jwk"]]}));
    let (server, dir) = start_with(&jwks, "1");
    let rsa_pem = keys["rsa"]["pem"].as_str().unwrap();
    let ec_pem = keys["ec"]["pem"].as_str().unwrap();

    let good = sign(
        Algorithm::RS256,
        rsa_pem,
        "rsa-1",
        claims("alice", "files:read files:write", 300),
    );
    assert_eq!(upload_status(&server, &good), 200);
    assert_eq!(upload_status(&server, &good), 200);
    assert_eq!(jwks.fetches.load(Ordering::SeqCst), 1, "the JWKS is cached");

    // Refused: expired, another audience, another issuer, missing scope,
    // a local development token, a key the JWKS does not hold.
    let expired = sign(
        Algorithm::RS256,
        rsa_pem,
        "rsa-1",
        claims("alice", "files:write", -120),
    );
    assert_eq!(upload_status(&server, &expired), 401);
    let mut other = claims("alice", "files:write", 300);
    other["aud"] = json!("https://elsewhere.example.com");
    assert_eq!(
        upload_status(&server, &sign(Algorithm::RS256, rsa_pem, "rsa-1", other)),
        401
    );
    let mut other = claims("alice", "files:write", 300);
    other["iss"] = json!("https://evil.example.com");
    assert_eq!(
        upload_status(&server, &sign(Algorithm::RS256, rsa_pem, "rsa-1", other)),
        401
    );
    let read_only = sign(
        Algorithm::RS256,
        rsa_pem,
        "rsa-1",
        claims("alice", "files:read", 300),
    );
    assert_eq!(upload_status(&server, &read_only), 403);
    let local = crate::util::token_for(dir.path(), "alice", &[]);
    assert_eq!(upload_status(&server, &local), 401);
    // Signed by the EC key under the RSA key's id: the signature fails.
    let forged = sign(
        Algorithm::ES256,
        ec_pem,
        "rsa-1",
        claims("alice", "files:write", 300),
    );
    assert_eq!(upload_status(&server, &forged), 401);

    // The server rotates in an ES256 key: a token naming it makes sluice
    // fetch the JWKS again.
    let ec = sign(
        Algorithm::ES256,
        ec_pem,
        "ec-1",
        claims("bob", "files:write", 300),
    );
    std::thread::sleep(std::time::Duration::from_millis(1100));
    *jwks.document.lock().unwrap() = json!({"keys": [keys["rsa"]["jwk"], keys["ec"]["jwk"]]});
    assert_eq!(upload_status(&server, &ec), 200);
    assert!(jwks.fetches.load(Ordering::SeqCst) >= 2);

    // The same token works on the MCP endpoint.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let reply = crate::util::request(
        "POST",
        &format!("{}/mcp", server.base),
        &[
            ("Authorization", &format!("Bearer {ec}")),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        Some(init.to_string().as_bytes()),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
}

#[test]
fn an_unknown_key_id_is_refetched_at_most_once_per_interval() {
    let keys = keys();
    let jwks = JwksServer::start(json!({"keys": [keys["rsa"]["jwk"]]}));
    let (server, _dir) = start_with(&jwks, "30");
    let rsa_pem = keys["rsa"]["pem"].as_str().unwrap();
    for i in 0..5 {
        let t = sign(
            Algorithm::RS256,
            rsa_pem,
            &format!("nope-{i}"),
            claims("alice", "files:write", 300),
        );
        assert_eq!(upload_status(&server, &t), 401);
    }
    assert_eq!(
        jwks.fetches.load(Ordering::SeqCst),
        1,
        "garbage key ids must not hammer the JWKS"
    );
}

/// An access token in Cognito's exact shape: no `aud`, the app client in
/// `client_id`, `token_use: access`, custom scopes prefixed with the
/// resource server's identifier, and no `typ` in the header.
fn cognito_token(pem: &str, client_id: &str, token_use: &str, scope: &str) -> String {
    let now = sluice::time::now_unix();
    let mut claims = json!({
        "sub": "5f1c2b3a-0000-4000-8000-000000000001", "iss": ISSUER,
        "client_id": client_id, "origin_jti": "o-1", "event_id": "e-1",
        "token_use": token_use, "scope": scope, "auth_time": now, "iat": now,
        "exp": now + 300, "jti": "j-1", "username": "alice", "version": 2,
    });
    if token_use == "id" {
        // ID tokens name the client as their audience instead.
        claims["aud"] = json!(client_id);
    }
    let header = Header {
        kid: Some("rsa-1".to_owned()),
        ..Header::new(Algorithm::RS256)
    };
    jsonwebtoken::encode(
        &header,
        &claims,
        &EncodingKey::from_rsa_pem(pem.as_bytes()).unwrap(),
    )
    .unwrap()
}

#[test]
fn cognito_access_tokens_are_accepted_only_as_configured() {
    let keys = keys();
    let jwks = JwksServer::start(json!({"keys": [keys["rsa"]["jwk"]]}));
    let pem = keys["rsa"]["pem"].as_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cognito = Server::start_in(
        dir.path(),
        &[
            ("SLUICE_AUTH_JWKS_URL", &jwks.url),
            ("SLUICE_AUTH_ISSUER", ISSUER),
            ("SLUICE_AUTH_CLIENT_IDS", "app-client-1,app-client-2"),
            ("SLUICE_AUTH_SCOPE_PREFIX", "sluice/"),
        ],
    );
    let good = cognito_token(
        pem,
        "app-client-2",
        "access",
        "sluice/files:read sluice/files:write",
    );
    assert_eq!(upload_status(&cognito, &good), 200);
    for (why, token, status) in [
        (
            "another app client",
            cognito_token(pem, "app-client-9", "access", "sluice/files:write"),
            401,
        ),
        (
            "an ID token",
            cognito_token(pem, "app-client-1", "id", "sluice/files:write"),
            401,
        ),
        // Another resource server's scope of the same name is not ours.
        (
            "an unprefixed scope",
            cognito_token(pem, "app-client-1", "access", "files:write"),
            403,
        ),
        (
            "the read scope only",
            cognito_token(pem, "app-client-1", "access", "sluice/files:read"),
            403,
        ),
    ] {
        assert_eq!(upload_status(&cognito, &token), status, "{why}");
    }
    // Without SLUICE_AUTH_CLIENT_IDS the audience (the MCP URL) is
    // required, and a Cognito access token has none.
    let plain_dir = tempfile::tempdir().unwrap();
    let rfc8707 = Server::start_in(
        plain_dir.path(),
        &[
            ("SLUICE_AUTH_JWKS_URL", &jwks.url),
            ("SLUICE_AUTH_ISSUER", ISSUER),
            ("SLUICE_AUTH_SCOPE_PREFIX", "sluice/"),
        ],
    );
    assert_eq!(upload_status(&rfc8707, &good), 401);
}

/// With no SLUICE_AUTH_AUDIENCE, the audience is the MCP URL itself, so one
/// deploy is enough: the URL is known when the first request arrives.
#[test]
fn without_a_configured_audience_the_mcp_url_is_the_audience() {
    let keys = keys();
    let jwks = JwksServer::start(json!({"keys": [keys["rsa"]["jwk"]]}));
    let pem = keys["rsa"]["pem"].as_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(
        dir.path(),
        &[
            ("SLUICE_AUTH_JWKS_URL", &jwks.url),
            ("SLUICE_AUTH_ISSUER", ISSUER),
        ],
    );
    let now = sluice::time::now_unix();
    let for_aud = |aud: &str| {
        sign(
            Algorithm::RS256,
            pem,
            "rsa-1",
            json!({"iss": ISSUER, "aud": aud, "sub": "alice", "scope": "files:write", "iat": now, "exp": now + 60}),
        )
    };
    assert_eq!(
        upload_status(&server, &for_aud(&format!("{}/mcp", server.base))),
        200
    );
    assert_eq!(upload_status(&server, &for_aud(AUDIENCE)), 401);
}

/// A token not valid yet (`nbf`, or an `iat` in the future beyond the
/// allowed skew), or whose subject could not own files, is refused.
#[test]
fn tokens_not_yet_valid_or_with_unusable_subjects_are_refused() {
    let keys = keys();
    let jwks = JwksServer::start(json!({"keys": [keys["rsa"]["jwk"]]}));
    let (server, _dir) = start_with(&jwks, "1");
    let pem = keys["rsa"]["pem"].as_str().unwrap();
    let now = sluice::time::now_unix();
    let token = |changes: Value| {
        let mut c = claims("alice", "files:write", 300);
        for (k, v) in changes.as_object().unwrap() {
            c[k] = v.clone();
        }
        sign(Algorithm::RS256, pem, "rsa-1", c)
    };
    assert_eq!(upload_status(&server, &token(json!({}))), 200);
    for (why, changes) in [
        ("nbf in ten minutes", json!({"nbf": now + 600})),
        ("issued an hour from now", json!({"iat": now + 3600})),
        ("an empty subject", json!({"sub": ""})),
        ("a 300-byte subject", json!({"sub": "a".repeat(300)})),
        ("a subject with a newline", json!({"sub": "alice\nbob"})),
    ] {
        assert_eq!(upload_status(&server, &token(changes)), 401, "{why}");
    }
    // Within the allowed skew, a slightly early clock is fine.
    assert_eq!(
        upload_status(&server, &token(json!({"iat": now + 10, "nbf": now + 10}))),
        200
    );
}

/// Owners are the issuer and the subject: after the deployment moves to
/// another authorization server, its `alice` is not the old one's, and cannot
/// resolve the old `alice`'s handles.
#[test]
fn the_same_subject_from_another_issuer_owns_nothing_of_the_first() {
    let keys = keys();
    let jwks = JwksServer::start(json!({"keys": [keys["rsa"]["jwk"]]}));
    let (server, dir) = start_with(&jwks, "1");
    let rsa_pem = keys["rsa"]["pem"].as_str().unwrap();
    let alice = sign(
        Algorithm::RS256,
        rsa_pem,
        "rsa-1",
        claims("alice", "files:read files:write", 300),
    );
    let ticket = server.upload(&alice, "a.txt", b"from the first issuer");
    let handle = ticket["handle"].as_str().unwrap();
    assert_eq!(server.resolve(&alice, handle).status, 200);
    server.stop();

    const OTHER: &str = "https://other-auth.example.com";
    let server = Server::start_in(
        dir.path(),
        &[
            ("SLUICE_AUTH_JWKS_URL", &jwks.url),
            ("SLUICE_AUTH_ISSUER", OTHER),
            ("SLUICE_AUTH_AUDIENCE", AUDIENCE),
        ],
    );
    let mut other = claims("alice", "files:read files:write", 300);
    other["iss"] = json!(OTHER);
    let other_alice = sign(Algorithm::RS256, rsa_pem, "rsa-1", other);
    let reply = server.resolve(&other_alice, handle);
    assert_eq!(reply.status, 403, "{}", reply.text());
    assert!(reply.text().contains("another user"), "{}", reply.text());
}
