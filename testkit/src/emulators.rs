//! Real S3 and DynamoDB endpoints on loopback, started per test or bench:
//! s3s-fs (which verifies SigV4 presigned signatures, expiry, checksums and
//! `If-None-Match`) for S3, and dynalite for DynamoDB. `make test` installs
//! both.
//!
//! dynalite rather than moto: moto's conditional PutItem is not atomic under
//! concurrency (64 concurrent redemptions of one link over two replicas gave
//! two redirects in 1–3 of 40 trials under load; dynalite gave exactly one
//! in 80 of 80). Where dynalite differs from DynamoDB: it has no
//! UpdateTimeToLive (TTL is the template's concern, checked by
//! `make template`; items never expire on it) and keeps everything in
//! memory.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::root;

pub const ACCESS_KEY: &str = "AKIDSLUICETEST";
pub const SECRET_KEY: &str = "sluice-test-secret-key";
pub const REGION: &str = "us-east-1";

/// The two emulators; stopped on drop.
#[derive(Debug)]
pub struct Emulators {
    s3: Child,
    dynalite: Child,
    s3_port: u16,
    dir: tempfile::TempDir,
    /// The S3 endpoint.
    pub s3_url: String,
    /// The DynamoDB endpoint.
    pub dynamodb_url: String,
}

/// A port nothing listens on now, on loopback, and never handed out
/// before in this process: the kernel may give a port just let go to the
/// next caller, and two tests starting emulators at once would then start
/// two on one port, the second failing while the first answers for it
/// (a DynamoDB call answered by s3s-fs, seen once in a full run).
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<std::collections::BTreeSet<u16>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if GIVEN.lock().unwrap_or_else(|p| p.into_inner()).insert(port) {
            return port;
        }
    }
}

fn wait_for(port: u16, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "{what} did not start on port {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn s3s_fs() -> PathBuf {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cargo"));
    let bin = cargo_home.join("bin/s3s-fs");
    assert!(
        bin.exists(),
        "s3s-fs is not installed: run `make test` (it installs s3s-fs 0.14.1)"
    );
    bin
}

fn spawn_s3(port: u16, dir: &std::path::Path) -> Child {
    Command::new(s3s_fs())
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("s3s-fs starts")
}

impl Emulators {
    pub fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (s3_port, dynamo_port) = (free_port(), free_port());
        let s3 = spawn_s3(s3_port, dir.path());
        let cli = root().join("tests/clients/node_modules/dynalite/cli.js");
        assert!(cli.exists(), "dynalite is not installed: run `make test`");
        let dynalite = Command::new("node")
            .arg(cli)
            .args(["--host", "127.0.0.1", "--port", &dynamo_port.to_string()])
            // Tables are created and deleted at once, not after half a second.
            .args([
                "--createTableMs",
                "0",
                "--deleteTableMs",
                "0",
                "--updateTableMs",
                "0",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("node runs dynalite");
        wait_for(s3_port, "s3s-fs");
        wait_for(dynamo_port, "dynalite");
        Self {
            s3,
            dynalite,
            s3_port,
            dir,
            s3_url: format!("http://127.0.0.1:{s3_port}"),
            dynamodb_url: format!("http://127.0.0.1:{dynamo_port}"),
        }
    }

    /// The directory s3s-fs keeps its buckets in (a bucket's objects are
    /// files under `<dir>/<bucket>/`).
    pub fn s3_dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// Stops the DynamoDB emulator, as an outage would.
    pub fn stop_dynamodb(&mut self) {
        let _ = self.dynalite.kill();
        let _ = self.dynalite.wait();
    }

    /// Kills the S3 emulator, as an outage would, mid-request or not.
    pub fn kill_s3(&mut self) {
        let _ = self.s3.kill();
        let _ = self.s3.wait();
    }

    /// Starts the S3 emulator again on the same port and the same data.
    pub fn restart_s3(&mut self) {
        self.s3 = spawn_s3(self.s3_port, self.dir.path());
        wait_for(self.s3_port, "s3s-fs");
    }

    /// Bucket `name` of these emulators.
    pub fn bucket(&self, name: &str) -> sluice::config::S3Config {
        sluice::config::S3Config {
            bucket: name.to_owned(),
            endpoint: Some(self.s3_url.parse().unwrap()),
        }
    }

    /// Table `name` of these emulators.
    pub fn table(&self, name: &str) -> sluice::config::DynamoConfig {
        sluice::config::DynamoConfig {
            table: name.to_owned(),
            endpoint: Some(self.dynamodb_url.parse().unwrap()),
        }
    }

    /// Bucket and table `name`, as this process's SDK reaches them.
    pub fn backends(&self, name: &str) -> (sluice_aws::S3Store, sluice_aws::DynamoLedger) {
        sluice_aws::backends(&sdk_config(), &self.bucket(name), &self.table(name))
    }

    /// Creates bucket `name` and returns it: the bytes' half alone (a
    /// server whose records are in SQLite needs no table).
    pub async fn create_bucket(&self, name: &str) -> sluice_aws::S3Store {
        let store = sluice_aws::S3Store::new(&sdk_config(), &self.bucket(name));
        store
            .client()
            .create_bucket()
            .bucket(name)
            .send()
            .await
            .expect("bucket created");
        store
    }

    /// Creates bucket and table `name` (the table as `template.yaml`
    /// declares it, [`crate::table`]), and returns the backends.
    pub async fn provision(&self, name: &str) -> (sluice_aws::S3Store, sluice_aws::DynamoLedger) {
        let store = self.create_bucket(name).await;
        let (_, ledger) = self.backends(name);
        crate::table::create(ledger.client(), name)
            .await
            .expect("table created");
        (store, ledger)
    }

    /// Environment for a sluice process whose bytes are in bucket `name`
    /// and whose records are in SQLite in its data directory (one machine
    /// on an S3-compatible bucket): no DynamoDB, no shared secret.
    pub fn s3_env(&self, name: &str) -> Vec<(&'static str, String)> {
        vec![
            ("SLUICE_STORE", "s3".into()),
            ("SLUICE_S3_BUCKET", name.into()),
            ("SLUICE_AWS_REGION", REGION.into()),
            ("SLUICE_S3_ENDPOINT_URL", self.s3_url.clone()),
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY.into()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.into()),
            ("AWS_EC2_METADATA_DISABLED", "true".into()),
        ]
    }

    /// Environment for a sluice process on bucket and table `name`.
    pub fn env(&self, name: &str) -> Vec<(&'static str, String)> {
        vec![
            ("SLUICE_BACKEND", "aws".into()),
            ("SLUICE_S3_BUCKET", name.into()),
            ("SLUICE_DYNAMODB_TABLE", name.into()),
            ("SLUICE_AWS_REGION", REGION.into()),
            ("SLUICE_S3_ENDPOINT_URL", self.s3_url.clone()),
            ("SLUICE_DYNAMODB_ENDPOINT_URL", self.dynamodb_url.clone()),
            (
                "SLUICE_MASTER_SECRET",
                "a-shared-master-secret-of-at-least-32-bytes".into(),
            ),
            // These tests mint tokens with `sluice token`: development
            // tokens, which aws mode accepts only when told to.
            ("SLUICE_DEV_TOKENS", "true".into()),
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY.into()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.into()),
            ("AWS_EC2_METADATA_DISABLED", "true".into()),
        ]
    }
}

/// SDK configuration for this test process: the emulators' static
/// credentials, a fixed region, and nothing that could reach real AWS.
pub fn sdk_config() -> aws_config::SdkConfig {
    use aws_sdk_s3::config::{Credentials, SharedCredentialsProvider};
    aws_config::SdkConfig::builder()
        .behavior_version(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new(REGION))
        .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
            ACCESS_KEY,
            SECRET_KEY,
            None,
            None,
            "sluice-tests",
        )))
        .build()
}

/// Every item of `ledger`'s table that carries an event for the table's
/// stream (a spent link's `file.downloaded`, an `ev#…` item's own), as a
/// scan reads them.
pub async fn items_with_events(ledger: &sluice_aws::DynamoLedger) -> Vec<sluice_aws::Item> {
    let all = ledger
        .client()
        .scan()
        .table_name(ledger.table())
        .send()
        .await
        .unwrap();
    all.items()
        .iter()
        .filter(|i| i.contains_key(sluice_aws::EVENT))
        .cloned()
        .collect()
}

impl Drop for Emulators {
    fn drop(&mut self) {
        let _ = self.s3.kill();
        let _ = self.dynalite.kill();
        let _ = self.s3.wait();
        let _ = self.dynalite.wait();
    }
}
