//! Receipts on AWS: a KMS key (`SLUICE_RECEIPT_KMS_KEY`) signs them, and
//! never leaves KMS. Driven through the real aws-sdk-kms against moto's
//! KMS, with S3 and DynamoDB on their emulators: joserfc verifies each
//! receipt from the JWKS alone, before and after a rotation to a new key
//! (the old one kept in `SLUICE_RECEIPT_KMS_RETIRED`); with KMS out of
//! reach the file stays ready and its receipt is pending, said so, then
//! signed once KMS answers again.
//!
//! Where moto differs from KMS: it checks no key policy and no IAM grant
//! (the functions' `kms:Sign` and `kms:GetPublicKey` on the key alone are
//! held by `infra/check-template.py` and the template tests); it does not
//! implement `MessageType=DIGEST` (sluice sends `RAW`, the signing input
//! whole, which both hash alike); it never throttles.

use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::{joserfc, receipt_of, receipt_over_http, saved_jwks};
use crate::mcp_clients::root;
use crate::util::{
    Emulators, Server, aws_token, bytes, provision, start_moto, tool_error, tool_ok,
};

/// A relay on loopback that can be cut: while cut, the connections it
/// carried are closed and each new one is closed at once, as a KMS out of
/// reach answers nothing.
pub(crate) struct Relay {
    pub(crate) url: String,
    open: Arc<AtomicBool>,
    carried: Arc<Mutex<Vec<TcpStream>>>,
}

impl Relay {
    /// A relay to `target` (`host:port`).
    pub(crate) fn to(target: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let open = Arc::new(AtomicBool::new(true));
        let carried = Arc::new(Mutex::new(Vec::new()));
        let (is_open, live) = (open.clone(), carried.clone());
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                if !is_open.load(Ordering::SeqCst) {
                    continue;
                }
                let Ok(server) = TcpStream::connect(&target) else {
                    continue;
                };
                live.lock().unwrap().push(client.try_clone().unwrap());
                let pairs = [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ];
                for (mut from, mut to) in pairs {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(Shutdown::Both);
                    });
                }
            }
        });
        Self { url, open, carried }
    }

    pub(crate) fn cut(&self) {
        self.open.store(false, Ordering::SeqCst);
        for stream in self.carried.lock().unwrap().drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }

    pub(crate) fn mend(&self) {
        self.open.store(true, Ordering::SeqCst);
    }
}

/// `count` new KMS signing keys on the KMS at `endpoint`: their ARNs.
pub(crate) fn kms_keys(endpoint: &str, count: usize) -> Vec<String> {
    let keys = crate::util::stdout_of(
        Command::new(root().join(".venv/bin/python"))
            .arg(root().join("tests/clients/kms_keys.py"))
            .arg(endpoint)
            .arg(count.to_string()),
    );
    serde_json::from_slice(&keys).unwrap()
}

#[test]
fn on_aws_a_kms_key_signs_receipts_and_one_out_of_reach_leaves_them_pending() {
    let emulators = Emulators::start();
    provision(&emulators, "kmsreceipts");
    let (mut moto, port) = start_moto();
    let keys = kms_keys(&format!("http://127.0.0.1:{port}"), 2);
    let relay = Relay::to(format!("127.0.0.1:{port}"));
    let token = aws_token(&emulators, "alice", &[]);
    let (dir, work) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let start = |current: &str, retired: &str| {
        let mut env = emulators.env("kmsreceipts");
        env.extend([
            ("SLUICE_RECEIPT_KMS_KEY", current.to_owned()),
            ("SLUICE_RECEIPT_KMS_RETIRED", retired.to_owned()),
            ("AWS_ENDPOINT_URL_KMS", relay.url.clone()),
        ]);
        let vars: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        Server::start_in(dir.path(), &vars)
    };

    let data = bytes(7000, 67);
    let server = start(&keys[0], "");
    let handle = server.upload(&token, "report.pdf", &data)["handle"]
        .as_str()
        .unwrap()
        .to_owned();
    let answer = tool_ok(&receipt_of(&server, &token, handle.as_str()));
    let old = answer["receipt"].as_str().unwrap().to_owned();
    let jwks = saved_jwks(
        answer["jwks_url"].as_str().unwrap(),
        work.path(),
        "kms-1.json",
    );
    let read = joserfc(&jwks, &old).unwrap();
    assert_eq!(read["kid"], answer["kid"]);
    assert_eq!(
        read["claims"]["file"]["sha256"],
        sluice::Sha256::of(&data).to_hex()
    );
    assert_eq!(read["claims"]["file"]["size"], 7000);
    assert_eq!(read["claims"]["sub"], "alice");
    assert_eq!(read["claims"]["source"], json!({"from": "upload"}));

    // KMS out of reach: the file is still ready (its link resolves); its
    // receipt is pending, said so over MCP and HTTP, and nothing else signs.
    relay.cut();
    let pending = tool_error(&receipt_of(&server, &token, handle.as_str()));
    assert!(pending.contains("receipt is pending"), "{pending}");
    assert!(pending.contains("ask again"), "{pending}");
    let over_http = receipt_over_http(&server, &token, answer["file_id"].as_str().unwrap());
    assert_eq!(over_http.status, 503, "{}", over_http.text());
    assert!(
        over_http.message().contains("pending"),
        "{}",
        over_http.text()
    );
    assert_eq!(server.resolve(&token, &handle).status, 200);
    // KMS back: asking again signs it.
    relay.mend();
    let again = tool_ok(&receipt_of(&server, &token, handle.as_str()));
    assert_eq!(
        joserfc(&jwks, again["receipt"].as_str().unwrap()).unwrap()["kid"],
        answer["kid"]
    );
    server.stop();

    // A new key signs; the old one retired: the JWKS holds both, what the
    // old key signed still verifies, and the new receipts name the new key.
    let server = start(&keys[1], &keys[0]);
    let port_of = |url: &str| url.split('/').nth(2).unwrap().to_owned();
    let url = answer["jwks_url"].as_str().unwrap();
    let jwks = saved_jwks(
        &url.replace(&port_of(url), &port_of(&server.base)),
        work.path(),
        "kms-2.json",
    );
    let set: Value = serde_json::from_slice(&std::fs::read(&jwks).unwrap()).unwrap();
    assert_eq!(set["keys"].as_array().unwrap().len(), 2, "{set}");
    assert_eq!(joserfc(&jwks, &old).unwrap()["kid"], answer["kid"]);
    let new = tool_ok(&receipt_of(&server, &token, handle.as_str()));
    assert_ne!(new["kid"], answer["kid"]);
    assert_eq!(
        joserfc(&jwks, new["receipt"].as_str().unwrap()).unwrap()["kid"],
        new["kid"]
    );
    server.stop();
    let _ = moto.kill();
    let _ = moto.wait();
}
