//! Rotating the master secret the AWS way: the functions read the secret's
//! `AWSCURRENT` and `AWSPREVIOUS` versions at cold start, so a
//! `put-secret-value` moves signing to the new secret while handles and
//! links signed under the previous one still work; one more rotation retires
//! them. Driven through the real AWS SDK against a Secrets Manager endpoint
//! on loopback that serves `GetSecretValue` by version stage (the one call
//! sluice makes), with S3 and DynamoDB on their emulators.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use jsonwebtoken::Algorithm;
use serde_json::{Value, json};

use crate::jwks::{AUDIENCE, ISSUER, JwksServer, claims, keys, sign};
use crate::util::Emulators;
use crate::util::Server;

/// (version id, value) of AWSCURRENT, and of AWSPREVIOUS if any.
pub(crate) type Versions = Arc<Mutex<((String, String), Option<(String, String)>)>>;

/// `GetSecretValue` by `VersionStage`, answered from `versions`.
pub(crate) fn secrets_manager(versions: Versions) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0;
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
                line.clear();
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let request: Value = serde_json::from_slice(&body).unwrap();
            let (current, previous) = versions.lock().unwrap().clone();
            let found = match request["VersionStage"].as_str() {
                Some("AWSPREVIOUS") => previous.map(|v| (v, "AWSPREVIOUS")),
                _ => Some((current, "AWSCURRENT")),
            };
            let (status, answer) = match found {
                Some(((id, value), stage)) => (
                    "200 OK",
                    json!({"ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:sluice-master",
                           "Name": request["SecretId"], "SecretString": value,
                           "VersionId": id, "VersionStages": [stage], "CreatedDate": 1.7e9}),
                ),
                None => (
                    "400 Bad Request",
                    json!({"__type": "ResourceNotFoundException",
                           "message": "Secrets Manager can't find the specified secret value for staging label: AWSPREVIOUS"}),
                ),
            };
            let text = answer.to_string();
            let mut stream = stream;
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Type: application/x-amz-json-1.1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    url
}

fn version(n: u32) -> (String, String) {
    (
        format!("{n:08}-aaaa-bbbb-cccc-dddddddddddd"),
        format!("master secret number {n}, at least thirty-two bytes long"),
    )
}

#[test]
fn handles_survive_one_rotation_of_the_secret_and_not_two() {
    let emulators = Emulators::start();
    crate::util::provision(&emulators, "rotation");
    let versions: Versions = Arc::new(Mutex::new((version(1), None)));
    let secrets = secrets_manager(versions.clone());
    let keys = keys();
    let jwks = JwksServer::start(json!({"keys": [keys["rsa"]["jwk"]]}));
    let token = sign(
        Algorithm::RS256,
        keys["rsa"]["pem"].as_str().unwrap(),
        "rsa-1",
        claims("alice", "files:read files:write", 600),
    );
    let dir = tempfile::tempdir().unwrap();
    let start = || {
        let mut env: Vec<(&str, String)> = emulators
            .env("rotation")
            .into_iter()
            .filter(|(k, _)| !matches!(*k, "SLUICE_MASTER_SECRET" | "SLUICE_DEV_TOKENS"))
            .collect();
        env.extend([
            ("SLUICE_MASTER_SECRET_ID", "sluice/master".to_owned()),
            ("AWS_ENDPOINT_URL_SECRETS_MANAGER", secrets.clone()),
            ("SLUICE_AUTH_JWKS_URL", jwks.url.clone()),
            ("SLUICE_AUTH_ISSUER", ISSUER.to_owned()),
            ("SLUICE_AUTH_AUDIENCE", AUDIENCE.to_owned()),
        ]);
        let vars: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        Server::start_in(dir.path(), &vars)
    };

    let server = start();
    let first = server.upload(&token, "one.txt", b"signed under version 1");
    let first = first["handle"].as_str().unwrap().to_owned();
    // A short handle names no key: its tag is checked under the current
    // key and the previous one.
    assert!(first.len() <= 100, "{first}");
    server.stop();

    // put-secret-value: version 2 is current, version 1 previous.
    *versions.lock().unwrap() = (version(2), Some(version(1)));
    let server = start();
    assert_eq!(
        server.resolve(&token, &first).status,
        200,
        "survives one rotation"
    );
    let second = server.upload(&token, "two.txt", b"signed under version 2");
    let second = second["handle"].as_str().unwrap().to_owned();
    assert_ne!(second, first);
    server.stop();

    // Once more: version 1 is gone.
    *versions.lock().unwrap() = (version(3), Some(version(2)));
    let server = start();
    assert_eq!(server.resolve(&token, &second).status, 200);
    let refused = server.resolve(&token, &first);
    assert_eq!(refused.status, 400, "{}", refused.text());
    assert!(
        refused.message().contains("not a valid handle"),
        "{}",
        refused.text()
    );
}
