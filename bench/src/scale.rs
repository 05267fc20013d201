//! `make bench`'s scale figure: one user with 10,000 files on the AWS
//! backends' emulators (s3s-fs, dynalite), `list_files` one page at a time
//! through the real service, beside the design it replaced (records as S3
//! objects: list the user's prefix, GET every record, HEAD every object),
//! measured in the same run. Requests are counted at the emulators, by a
//! proxy in front of each that counts the HTTP requests it forwards.

use crate::harness::median;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use sluice::records::{FileRecord, FileRecords as _};
use sluice::store::ObjectStore as _;
use sluice::{FileId, FileMeta, Sha256};
use sluice_testkit::emulators::Emulators;
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::{TcpListener, TcpStream};

const FILES: usize = 10_000;
/// Of them, this share is still pending (one in ten).
const PENDING_EVERY: usize = 10;

/// Forwards HTTP/1.1 to `upstream`, counting requests (each request head,
/// with its `Content-Length` body, is one).
async fn counting_proxy(upstream: String) -> anyhow::Result<(String, Arc<AtomicU64>)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let count = Arc::new(AtomicU64::new(0));
    let counted = count.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let (upstream, count) = (upstream.clone(), counted.clone());
            tokio::spawn(async move {
                let Ok(server) = TcpStream::connect(&upstream).await else {
                    return;
                };
                // Each request goes on in one write, at once: no Nagle delay
                // added to what is measured.
                let _ = (client.set_nodelay(true), server.set_nodelay(true));
                let (client_read, mut client_write) = client.into_split();
                let (mut server_read, mut server_write) = server.into_split();
                // Responses flow back untouched.
                tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
                });
                let mut reader = BufReader::new(client_read);
                loop {
                    let mut head = Vec::new();
                    let mut length = 0usize;
                    loop {
                        let mut line = Vec::new();
                        if reader.read_until(b'\n', &mut line).await.unwrap_or(0) == 0 {
                            return;
                        }
                        let text = String::from_utf8_lossy(&line).to_ascii_lowercase();
                        if let Some(v) = text.strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                        let end = line == b"\r\n";
                        head.extend_from_slice(&line);
                        if end {
                            break;
                        }
                    }
                    let mut body = vec![0u8; length];
                    if reader.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    count.fetch_add(1, Ordering::Relaxed);
                    head.extend_from_slice(&body);
                    if server_write.write_all(&head).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    Ok((url, count))
}

fn file(i: usize) -> FileMeta {
    let data = format!("file {i}");
    FileMeta {
        id: FileId::random(),
        owner: "scale".into(),
        filename: format!("f{i}.txt"),
        content_type: "text/plain".into(),
        size: data.len() as u64,
        sha256: Sha256::of(data.as_bytes()),
    }
}

/// Runs the scale figure and returns its section of BENCHMARKS.md.
pub async fn run() -> anyhow::Result<String> {
    let emulators = Emulators::start();
    emulators.provision("scale").await;
    let strip = |u: &str| u.trim_start_matches("http://").to_owned();
    let (s3_proxy, s3_count) = counting_proxy(strip(&emulators.s3_url)).await?;
    let (ddb_proxy, ddb_count) = counting_proxy(strip(&emulators.dynamodb_url)).await?;
    let mut bucket = emulators.bucket("scale");
    bucket.endpoint = Some(s3_proxy.parse()?);
    let mut table = emulators.table("scale");
    table.endpoint = Some(ddb_proxy.parse()?);
    let (store, ledger) =
        sluice_aws::backends(&sluice_testkit::emulators::sdk_config(), &bucket, &table);
    let records = sluice_aws::DynamoRecords::beside(&ledger);

    eprintln!("scale: writing {FILES} files' records (both designs) and objects…");
    let now = sluice::time::now_unix();
    let created = sluice::time::now_millis() - FILES as i64;
    let mut files = Vec::with_capacity(FILES);
    for i in 0..FILES {
        let f = file(i);
        let ready = i % PENDING_EVERY != 0;
        let record = FileRecord {
            file: f.clone(),
            created_ms: created + i as i64,
            expires_at: now + 3600,
            ready,
            proof: None,
            scan: None,
            trace: None,
            copy: false,
        };
        records.put(&record).await?;
        // The replaced design: the record as an S3 object beside the bytes.
        store
            .client()
            .put_object()
            .bucket(&bucket.bucket)
            .key(format!(
                "records/{}/{}.json",
                sluice::file::owner_hash(&f.owner),
                f.id
            ))
            .body(record.to_json().into_bytes().into())
            .send()
            .await?;
        if ready {
            let body = format!("file {i}");
            store
                .put(
                    &f.object_key(),
                    f.size,
                    f.sha256,
                    Box::pin(futures_util::stream::once(async move {
                        Ok(bytes::Bytes::from(body))
                    })),
                )
                .await?;
        }
        files.push(f);
    }

    // The service over these backends, as the mcp function builds it.
    let config = sluice::Config::from_vars(
        emulators
            .env("scale")
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .chain([(
                "SLUICE_PUBLIC_URL".into(),
                "https://files.example.com".into(),
            )]),
    )?;
    let keys = sluice::Keyring::new(
        (
            sluice::KeyId::new("k1")?,
            sluice::MasterSecret::new(vec![7u8; 32])?,
        ),
        None,
    );
    let sluice = sluice_runtime::assemble(
        &config,
        "https://files.example.com".parse()?,
        keys,
        Arc::new(store.clone()),
        Arc::new(ledger.clone()),
        Arc::new(records.clone()),
        sluice::actions::Catalog::default(),
    );

    // New design: the first 20 pages of 50, following the cursor.
    let pages = 20;
    let mut latencies = Vec::new();
    let (s3_before, ddb_before) = (
        s3_count.load(Ordering::Relaxed),
        ddb_count.load(Ordering::Relaxed),
    );
    let mut cursor: Option<String> = None;
    for _ in 0..pages {
        let start = Instant::now();
        let page = sluice
            .files()
            .list_files("scale", Some(50), cursor.as_deref())
            .await?;
        latencies.push(start.elapsed());
        anyhow::ensure!(page.files.len() == 50, "a full page");
        cursor = Some(page.next_cursor.context("more pages")?);
    }
    let new_s3 = (s3_count.load(Ordering::Relaxed) - s3_before) as f64 / pages as f64;
    let new_ddb = (ddb_count.load(Ordering::Relaxed) - ddb_before) as f64 / pages as f64;
    let new_latency = median(latencies);

    // The replaced design, once: list the prefix, GET every record, HEAD
    // every object (sequentially, as it did).
    let (s3_before, ddb_before) = (
        s3_count.load(Ordering::Relaxed),
        ddb_count.load(Ordering::Relaxed),
    );
    let start = Instant::now();
    let prefix = format!("records/{}/", sluice::file::owner_hash("scale"));
    let client = store.client();
    let mut keys_listed = Vec::new();
    let mut pages_listed = client
        .list_objects_v2()
        .bucket("scale")
        .prefix(&prefix)
        .into_paginator()
        .send();
    while let Some(page) = pages_listed.next().await {
        keys_listed.extend(
            page?
                .contents()
                .iter()
                .filter_map(|o| o.key().map(str::to_owned)),
        );
    }
    let mut listed = 0;
    for key in &keys_listed {
        let record = store.read_whole(key).await?;
        let record = record.context("a record")?;
        let record =
            FileRecord::from_json(std::str::from_utf8(&record)?, false, None).context("json")?;
        std::hint::black_box(store.head(&record.file.object_key()).await?);
        listed += 1;
    }
    let old_latency = start.elapsed();
    let old_s3 = s3_count.load(Ordering::Relaxed) - s3_before;
    let old_ddb = ddb_count.load(Ordering::Relaxed) - ddb_before;
    anyhow::ensure!(listed == FILES, "the old design lists every file: {listed}");
    drop(files);

    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let mut out = String::from("\n## Scale: one user with 10,000 files (AWS backends)\n\n");
    out.push_str(&format!(
        "`target/fast/sluice-bench --only scale`: {FILES} files of one user on the emulators \
         (s3s-fs, dynalite), one in {PENDING_EVERY} still pending. Requests are counted by a proxy \
         in front of each emulator; latencies are over loopback to emulators, not AWS, so \
         compare them only with each other. The replaced design kept records as S3 objects and \
         answered `list_files` with everything at once.\n\n"
    ));
    out.push_str("| design | S3 requests | DynamoDB requests | latency | files returned |\n|---|---|---|---|---|\n");
    out.push_str(&format!(
        "| now: one page of 50 (`Query` on `files-by-owner`, HEAD of the page's pending entries; mean of {pages} pages) | {new_s3:.1} | {new_ddb:.1} | {:.1} ms (median) | 50 |\n",
        ms(new_latency)
    ));
    out.push_str(&format!(
        "| replaced: the whole list (ListObjectsV2 pages, GET each record, HEAD each object) | {old_s3} | {old_ddb} | {:.0} ms | {FILES} |\n\n",
        ms(old_latency)
    ));
    out.push_str(&format!(
        "A page costs {:.0}× fewer backend requests than the whole list did, and its cost does not \
         grow with the number of files: one `Query`, plus a HEAD for each entry still marked pending \
         (one found uploaded is marked ready and not HEADed again).\n",
        (old_s3 + old_ddb) as f64 / (new_s3 + new_ddb)
    ));
    Ok(out)
}
