//! Receipts of custody: `get_file_receipt` and `GET /files/{file}/receipt`
//! sign what sluice holds of a ready file (ES256); joserfc, a JOSE library
//! sluice does not use, verifies them from the JWKS alone, before and after
//! a key rotation; `sluice receipt verify` checks a receipt and a file on
//! disk; an altered receipt, an unknown key and another file fail, each
//! saying why.

pub(crate) mod on_kms;

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::mcp_clients::root;
use crate::util::{BIN, Server, bytes, call_tool, out_text, request, tool_error, tool_ok};

/// What joserfc makes of `receipt` with the JWKS at `jwks`: Ok(its kid and
/// claims), or Err(why not).
pub(crate) fn joserfc(jwks: &Path, receipt: &str) -> Result<Value, String> {
    let out = Command::new(root().join(".venv/bin/python"))
        .arg(root().join("tests/clients/verify_receipt.py"))
        .arg(jwks)
        .arg(receipt)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if out.status.success() {
        Ok(serde_json::from_str(&text).unwrap())
    } else {
        Err(text)
    }
}

/// `get_file_receipt` of `file` (a handle or an id) for `token`'s caller.
pub(crate) fn receipt_of(server: &Server, token: &str, file: impl Into<Value>) -> Value {
    call_tool(
        &server.base,
        token,
        "get_file_receipt",
        json!({ "file": file.into() }),
    )
}

/// `GET /files/{id}/receipt` with `token`.
pub(crate) fn receipt_over_http(server: &Server, token: &str, id: &str) -> crate::util::Reply {
    request(
        "GET",
        &format!("{}/files/{id}/receipt", server.base),
        &[("Authorization", &format!("Bearer {token}"))],
        None,
    )
}

/// `sluice receipt …` on `data_dir`.
fn cli(data_dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .env("SLUICE_DATA_DIR", data_dir)
        .arg("receipt")
        .args(args)
        .output()
        .unwrap()
}

/// The JWKS the server serves, saved in `dir`.
fn saved_jwks(url: &str, dir: &Path, name: &str) -> std::path::PathBuf {
    let reply = request("GET", url, &[], None);
    assert_eq!(reply.status, 200);
    let path = dir.join(name);
    std::fs::write(&path, &reply.body).unwrap();
    path
}

#[test]
fn a_receipt_verifies_offline_with_an_independent_library_after_a_rotation_too() {
    let dir = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let data = bytes(5000, 61);
    let (old, jwks_url) = {
        let server = Server::start_in(dir.path(), &[]);
        let token = server.token("alice", &[]);
        let handle = server.upload(&token, "report.pdf", &data)["handle"]
            .as_str()
            .unwrap()
            .to_owned();
        let result = receipt_of(&server, &token, handle.as_str());
        let answer = tool_ok(&result);
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(text.len() <= 1024, "{} bytes", text.len());
        let receipt = answer["receipt"].as_str().unwrap().to_owned();
        let jwks_url = answer["jwks_url"].as_str().unwrap().to_owned();

        // The same over HTTP, with the caller's bearer token.
        let id = answer["file_id"].as_str().unwrap();
        let over_http = receipt_over_http(&server, &token, id);
        assert_eq!(over_http.status, 200, "{}", over_http.text());
        assert_eq!(over_http.json()["kid"], answer["kid"]);

        // joserfc verifies it from the JWKS alone, and reads what sluice holds.
        let jwks = saved_jwks(&jwks_url, work.path(), "jwks-1.json");
        let read = joserfc(&jwks, &receipt).unwrap();
        assert_eq!(read["kid"], answer["kid"]);
        let claims = &read["claims"];
        assert_eq!(claims["sub"], "alice");
        assert_eq!(claims["event"], "ready");
        assert_eq!(claims["file"]["id"], answer["file_id"]);
        assert_eq!(claims["file"]["size"], 5000);
        assert_eq!(claims["file"]["sha256"], sluice::Sha256::of(&data).to_hex());
        assert_eq!(claims["file"]["declared_type"], "application/pdf");
        assert_eq!(claims["source"], json!({"from": "upload"}));

        // `sluice receipt verify`: the receipt, and the file on disk.
        let file = work.path().join("report.pdf");
        std::fs::write(&file, &data).unwrap();
        let jwks_arg = jwks.to_str().unwrap();
        let verify_file = || {
            cli(
                dir.path(),
                &[
                    "verify",
                    &receipt,
                    "--jwks",
                    jwks_arg,
                    "--file",
                    file.to_str().unwrap(),
                ],
            )
        };
        let ok = verify_file();
        assert!(ok.status.success(), "{}", out_text(&ok));
        assert!(String::from_utf8_lossy(&ok.stdout).contains("valid: file"));
        let mut other = data.clone();
        other[0] ^= 1;
        std::fs::write(&file, &other).unwrap();
        let wrong = verify_file();
        assert!(!wrong.status.success());
        assert!(
            out_text(&wrong).contains("not the receipt's"),
            "{}",
            out_text(&wrong)
        );

        // One character of the payload altered: both refuse it, saying why.
        let (head, rest) = receipt.split_once('.').unwrap();
        let (payload, signature) = rest.split_once('.').unwrap();
        let mut altered = payload.as_bytes().to_vec();
        altered[20] = if altered[20] == b'A' { b'B' } else { b'A' };
        let forged = format!("{head}.{}.{signature}", String::from_utf8(altered).unwrap());
        assert!(joserfc(&jwks, &forged).is_err());
        let refused = cli(dir.path(), &["verify", &forged, "--jwks", jwks_arg]);
        assert!(!refused.status.success());
        assert!(
            out_text(&refused).contains("does not verify"),
            "{}",
            out_text(&refused)
        );

        // The signing key is the data directory's alone.
        let key = dir.path().join("receipts/key.p8");
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&key).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
        (receipt, jwks_url)
    };

    // The key rotated, the server started again: new receipts carry the
    // new key; the old receipt still verifies against the JWKS, which keeps
    // the retired key; without it, the old key is unknown.
    let rotated = cli(dir.path(), &["rotate"]);
    assert!(rotated.status.success(), "{}", out_text(&rotated));
    let server = Server::start_in(dir.path(), &[]);
    let token = server.token("alice", &[]);
    let port_of = |url: &str| url.split('/').nth(2).unwrap().to_owned();
    let jwks_url = jwks_url.replace(&port_of(&jwks_url), &port_of(&server.base));
    let jwks = saved_jwks(&jwks_url, work.path(), "jwks-2.json");
    let set: Value = serde_json::from_slice(&std::fs::read(&jwks).unwrap()).unwrap();
    assert_eq!(set["keys"].as_array().unwrap().len(), 2, "{set}");
    let old_kid = joserfc(&jwks, &old).unwrap()["kid"].clone();
    let handle = server.upload(&token, "b.txt", b"b")["handle"]
        .as_str()
        .unwrap()
        .to_owned();
    let new = tool_ok(&receipt_of(&server, &token, handle.as_str()));
    assert_ne!(new["kid"], old_kid, "signed with the new key");
    assert_eq!(
        joserfc(&jwks, new["receipt"].as_str().unwrap()).unwrap()["kid"],
        new["kid"]
    );
    let only_new = work.path().join("jwks-new-only.json");
    let new_key: Vec<&Value> = set["keys"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["kid"] == new["kid"])
        .collect();
    std::fs::write(&only_new, json!({"keys": new_key}).to_string()).unwrap();
    assert!(joserfc(&only_new, &old).is_err());
    let unknown = cli(
        dir.path(),
        &["verify", &old, "--jwks", only_new.to_str().unwrap()],
    );
    assert!(!unknown.status.success());
    assert!(
        out_text(&unknown).contains("unknown key"),
        "{}",
        out_text(&unknown)
    );
}

/// A receipt attests a ready file: one not uploaded yet answers its state.
#[test]
fn a_receipt_of_a_file_not_ready_says_what_state_it_is_in() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &[]);
    let ticket = server.request_upload(&token, "later.bin", b"not yet");
    let error = tool_error(&receipt_of(&server, &token, ticket["handle"].clone()));
    assert!(error.contains("not been uploaded yet"), "{error}");
}

/// A receipt says where the bytes came from: a URL's origin for a file
/// sluice fetched (never its path), a copy for a batch's file its owner
/// had stored already; and an independent library reads it so.
#[test]
fn a_receipt_says_where_the_bytes_came_from() {
    let data = bytes(4000, 62);
    let origin = crate::imports::Origin::start(crate::imports::routes, data.clone());
    let dir = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let port = origin.port.to_string();
    let server = Server::start_in(
        dir.path(),
        &[
            ("SLUICE_IMPORT_ALLOW_LOOPBACK", "true"),
            ("SLUICE_IMPORT_PORTS", port.as_str()),
        ],
    );
    let token = server.token("alice", &[]);
    let source_of = |file: &Value| {
        let answer = tool_ok(&receipt_of(&server, &token, file.clone()));
        let jwks = saved_jwks(
            answer["jwks_url"].as_str().unwrap(),
            work.path(),
            "jwks.json",
        );
        joserfc(&jwks, answer["receipt"].as_str().unwrap()).unwrap()["claims"]["source"].clone()
    };

    let imported = tool_ok(&call_tool(
        &server.base,
        &token,
        "import_file",
        json!({"url": origin.url("/data.bin")}),
    ));
    assert_eq!(imported["state"], "ready", "{imported}");
    assert_eq!(
        source_of(&imported["handle"]),
        json!({"from": "url", "origin": "http://127.0.0.1"}),
        "the scheme and host the import's record keeps, never more"
    );

    // The same bytes again in a batch: stored already, so a copy.
    let copied = tool_ok(&call_tool(
        &server.base,
        &token,
        "request_uploads",
        json!({"files": [{"path": "again.bin", "size": data.len(), "sha256": sluice::Sha256::of(&data)}]}),
    ));
    assert_eq!(copied["files"][0]["state"], "stored", "{copied}");
    assert_eq!(
        source_of(&copied["files"][0]["file_id"]),
        json!({"from": "copy"})
    );
}
