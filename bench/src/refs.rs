//! Reference servers, measured beside sluice in the same run.
//!
//! `discard` only moves bytes over HTTP (the loopback ceiling; its `/sink`
//! is an action upstream that only takes the bytes, its `/` a blank page
//! from which a browser PUTs to `/object` without a CORS preflight); `work` does the
//! unavoidable work of a verifying store and nothing else: sha256 of every
//! byte plus writing it to a file and syncing it (upload), or reading it from
//! a file (download).

use std::io::{Read as _, Write as _};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::routing::put;
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt as _;

const CHUNK: usize = 256 * 1024;

#[derive(Clone)]
struct Refs {
    /// The file served by GETs and written by PUTs of the `work` server.
    file: Arc<PathBuf>,
    size: u64,
}

/// Starts both reference servers; returns (discard, work) addresses.
pub async fn start(file: PathBuf, size: u64) -> anyhow::Result<(SocketAddr, SocketAddr)> {
    let state = Refs {
        file: Arc::new(file),
        size,
    };
    let discard = Router::new()
        .route("/object", put(discard_put).get(discard_get))
        .route("/sink", axum::routing::post(discard_sink))
        .route(
            "/",
            axum::routing::get(|| async {
                axum::response::Html("<!doctype html><title>discard</title>")
            }),
        )
        .with_state(state.clone());
    let work = Router::new()
        .route("/object", put(work_put).get(work_get))
        .with_state(state);
    Ok((spawn(discard).await?, spawn(work).await?))
}

async fn spawn(app: Router) -> anyhow::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(addr)
}

async fn discard_put(body: Body) -> String {
    let mut stream = body.into_data_stream();
    let mut n = 0u64;
    while let Some(Ok(chunk)) = stream.next().await {
        n += chunk.len() as u64;
    }
    n.to_string()
}

/// An action upstream that only takes the bytes: reads the body, answers its length.
async fn discard_sink(body: Body) -> axum::Json<serde_json::Value> {
    axum::Json(serde_json::json!({ "received": discard_put(body).await }))
}

async fn discard_get(State(refs): State<Refs>) -> Body {
    let chunk = Bytes::from(vec![0x5a; CHUNK]);
    let full = refs.size / CHUNK as u64;
    let tail = (refs.size % CHUNK as u64) as usize;
    let chunks = (0..full)
        .map(move |_| chunk.clone())
        .chain((tail > 0).then(|| Bytes::from(vec![0x5a; tail])));
    Body::from_stream(futures_util::stream::iter(
        chunks.map(Ok::<_, std::io::Error>),
    ))
}

/// Hash + write + fsync, with the disk work on a blocking thread so that it
/// overlaps with receiving (the efficient way to do it on two cores). The file
/// is kept, as sluice keeps its objects: deleting large files between runs
/// changes how fast the next one is written, which would favour one side.
async fn work_put(State(refs): State<Refs>, body: Body) -> String {
    let dir = refs.file.parent().unwrap().to_path_buf();
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Bytes>(8);
    let writer = tokio::task::spawn_blocking(move || {
        let tmp = tempfile::NamedTempFile::new_in(&dir).unwrap();
        let mut file = std::io::BufWriter::with_capacity(CHUNK, tmp);
        let mut hasher = sluice::sha::Hasher::new();
        while let Some(chunk) = rx.blocking_recv() {
            hasher.update(&chunk);
            file.write_all(&chunk).unwrap();
        }
        let tmp = file.into_inner().unwrap();
        tmp.as_file().sync_all().unwrap();
        let _ = tmp.keep();
        hasher.finish().to_hex()
    });
    let mut stream = body.into_data_stream();
    while let Some(Ok(chunk)) = stream.next().await {
        tx.send(chunk).await.unwrap();
    }
    drop(tx);
    writer.await.unwrap()
}

/// Read + hash on a blocking thread, a few chunks ahead of the socket.
async fn work_get(State(refs): State<Refs>) -> Body {
    let (tx, rx) = tokio::sync::mpsc::channel::<std::io::Result<Bytes>>(8);
    tokio::task::spawn_blocking(move || {
        let mut file = std::fs::File::open(&*refs.file).unwrap();
        let mut hasher = sluice::sha::Hasher::new();
        loop {
            let mut buf = BytesMut::zeroed(CHUNK);
            let n = file.read(&mut buf).unwrap();
            if n == 0 {
                let _ = hasher.finish();
                return;
            }
            buf.truncate(n);
            hasher.update(&buf);
            if tx.blocking_send(Ok(buf.freeze())).is_err() {
                return;
            }
        }
    });
    let stream =
        futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|v| (v, rx)) });
    Body::from_stream(stream)
}
