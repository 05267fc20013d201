//! The cost of the backends' own work, beside each other in one run:
//! issuing an upload (aws: presign + handle, no network; local: link token +
//! handle, and the whole `issue_upload` with its record), and spending a
//! token (SQLite vs DynamoDB on dynalite over loopback).

use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice::ledger::{Ledger, SqliteLedger};
use sluice::service::uploads::issue::UploadRequest;
use sluice::store::Presigner;
use sluice::token::Short;
use sluice::{FileId, FileMeta, KeyId, Keyring, MasterSecret, Sha256};

const N: usize = 2000;

fn per_op(elapsed: Duration, n: usize) -> f64 {
    elapsed.as_secs_f64() * 1e6 / n as f64
}

fn file() -> FileMeta {
    file_of("bench")
}

fn file_of(owner: &str) -> FileMeta {
    FileMeta {
        id: FileId::random(),
        owner: owner.into(),
        filename: "report.pdf".into(),
        content_type: "application/pdf".into(),
        size: 5_000_000,
        sha256: Sha256::of(b"report"),
    }
}

pub async fn run() -> anyhow::Result<String> {
    let keys = Keyring::new(
        (
            KeyId::new("k1").unwrap(),
            MasterSecret::new(vec![7u8; 32]).unwrap(),
        ),
        None,
    );
    let ttl = Duration::from_secs(900);
    let exp = sluice::time::now_unix() + 900;

    // Local: link token + handle (the compute of issuing).
    let start = Instant::now();
    for _ in 0..N {
        let f = file();
        std::hint::black_box(Short::upload(f.id.clone(), exp).encode(&keys));
        std::hint::black_box(Short::handle(f.id).encode(&keys));
    }
    let local_sign = per_op(start.elapsed(), N);

    // AWS: presigned PUT + handle; presigning is local computation.
    let emulators = sluice_testkit::emulators::Emulators::start();
    let (s3, dynamo) = emulators.provision("bench").await;
    let start = Instant::now();
    for _ in 0..N {
        let f = file();
        std::hint::black_box(
            s3.presign_put(&f.object_key(), f.size, f.sha256, &f.content_type, ttl)
                .await?,
        );
        std::hint::black_box(Short::handle(f.id).encode(&keys));
    }
    let aws_sign = per_op(start.elapsed(), N);

    // Local: the whole request_upload path (validation, record, tokens, curl line).
    let dir = tempfile::tempdir()?;
    // One user issuing as fast as it can: no rate limit, no pending cap.
    let config = sluice::Config::from_vars(
        [
            ("SLUICE_DATA_DIR", dir.path().to_string_lossy().into_owned()),
            ("SLUICE_ISSUE_RATE_PER_MINUTE", "1000000000".to_owned()),
            ("SLUICE_ISSUE_BURST", "1000000".to_owned()),
            ("SLUICE_MAX_PENDING_FILES", "1000000000".to_owned()),
        ]
        .map(|(k, v)| (k.to_owned(), v)),
    )?;
    let (local, _) = sluice_runtime::local_sluice(&config, "http://127.0.0.1:8787".parse()?)?;
    let start = Instant::now();
    for _ in 0..N {
        let req = UploadRequest {
            filename: "report.pdf".into(),
            size: 5_000_000,
            sha256: Sha256::of(b"report"),
            content_type: None,
        };
        std::hint::black_box(local.uploads().issue_upload("bench", req).await?);
    }
    let local_issue = per_op(start.elapsed(), N);

    let (ready_owner, issue_none, issue_many) = issue_beside_ready_files(dir.path()).await?;

    // Ledger spends: SQLite (fsync per spend) vs DynamoDB on dynalite.
    let sqlite = Arc::new(SqliteLedger::open(&dir.path().join("ledger.sqlite3"))?);
    let spends = 500;
    let start = Instant::now();
    for _ in 0..spends {
        sqlite.spend(&FileId::random().to_string(), exp).await?;
    }
    let local_spend = per_op(start.elapsed(), spends);
    let start = Instant::now();
    for _ in 0..spends {
        dynamo.spend(&FileId::random().to_string(), exp).await?;
    }
    let aws_spend = per_op(start.elapsed(), spends);
    drop(emulators);

    use std::fmt::Write as _;
    let mut out = String::new();
    writeln!(
        out,
        "\n## Backends: issuing an upload and spending a token\n"
    )?;
    writeln!(
        out,
        "`target/fast/sluice-bench --only backends`: in-process, sequential, mean of {N} operations \
         ({spends} for spends). The aws presign is computed locally (no network); the DynamoDB spend is \
         a conditional PutItem to dynalite over loopback, so it measures the SDK and a local HTTP \
         round trip, not AWS.\n"
    )?;
    writeln!(out, "| operation | local | aws | aws / local |")?;
    writeln!(out, "|---|---|---|---|")?;
    writeln!(
        out,
        "| sign an upload (local: link token + handle; aws: presigned PUT + handle) | {local_sign:.1} µs | {aws_sign:.1} µs | {:.2} |",
        aws_sign / local_sign
    )?;
    writeln!(
        out,
        "| spend a token (local: SQLite insert, synchronous=FULL; aws: DynamoDB PutItem on dynalite) | {local_spend:.1} µs | {aws_spend:.1} µs | {:.2} |",
        aws_spend / local_spend
    )?;
    writeln!(
        out,
        "\nThe whole local `issue_upload` (validation, rate limit, the pending-caps count and the \
         file record in one transaction, both tokens, curl line): {local_issue:.1} µs. Issued one \
         after another, as here, each commits alone; under concurrent requests one commit of the \
         records' writer thread serves many (see MCP)."
    )?;
    writeln!(
        out,
        "\nThe records' part of it (count the caller's pending files under the default caps, then \
         record the new file), mean of {CAP_ISSUES} for each owner, interleaved: {issue_none:.1} µs \
         for an owner with no other files, {issue_many:.1} µs for one with {ready_owner} ready files \
         ({:.2}×). The count reads a covering index of pending files only; before, it walked every \
         record of the owner.",
        issue_many / issue_none
    )?;
    Ok(out)
}

/// Ready files of the owner whose issuing is compared with a new owner's.
const READY_FILES: usize = 10_000;
/// Issues measured for each owner: the default cap of pending files.
const CAP_ISSUES: usize = 100;

/// The mean time of the records' write on issuing (`put_within` under
/// the default caps) for an owner with no files and for one with
/// [`READY_FILES`] ready ones, in µs, issued in turn.
async fn issue_beside_ready_files(dir: &std::path::Path) -> anyhow::Result<(usize, f64, f64)> {
    use sluice::records::{FileRecord, FileRecords as _, SqliteRecords, Usage as _};
    let records = SqliteRecords::open(&dir.join("records-bench.sqlite3"))?;
    let caps = sluice::Config::from_vars([(
        "SLUICE_DATA_DIR".to_owned(),
        dir.to_string_lossy().into_owned(),
    )])?
    .limits
    .pending_caps;
    let now = sluice::time::now_unix();
    let record = |owner: &str, ready: bool| FileRecord {
        file: file_of(owner),
        created_ms: now * 1000,
        expires_at: now + 3600,
        ready,
        proof: None,
        scan: None,
        trace: None,
        copy: false,
    };
    let puts = (0..READY_FILES).map(|_| {
        let (records, r) = (records.clone(), record("many", true));
        async move { records.put(&r).await }
    });
    for put in futures_util::future::join_all(puts).await {
        put?;
    }
    let (mut none, mut many) = (Duration::ZERO, Duration::ZERO);
    let n = CAP_ISSUES.min(usize::try_from(caps.files).unwrap_or(usize::MAX));
    for _ in 0..n {
        for (owner, total) in [("none", &mut none), ("many", &mut many)] {
            let r = record(owner, false);
            let start = Instant::now();
            let refused = records.put_within(&r, caps, now).await?;
            *total += start.elapsed();
            anyhow::ensure!(refused.is_none(), "{owner} refused under the cap");
        }
    }
    Ok((
        READY_FILES,
        per_op(none, CAP_ISSUES),
        per_op(many, CAP_ISSUES),
    ))
}
