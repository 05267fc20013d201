//! Reference servers, measured beside sluice in the same run.
//!
//! `discard` only moves bytes over HTTP (the loopback ceiling); `work` does the
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
use sha2::Digest as _;

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

async fn discard_get(State(refs): State<Refs>) -> Body {
    let chunk = Bytes::from(vec![0x5a; CHUNK]);
    let full = refs.size / CHUNK as u64;
    let tail = (refs.size % CHUNK as u64) as usize;
    let chunks = (0..full)
        .map(move |_| chunk.clone())
        .chain((tail > 0).then(|| Bytes::from(vec![0x5a; tail])));
    Body::from_stream(futures_util::stream::iter(chunks.map(Ok::<_, std::io::Error>)))
}

async fn work_put(State(refs): State<Refs>, body: Body) -> String {
    let path = refs.file.with_extension("put");
    let mut file = std::io::BufWriter::with_capacity(CHUNK, std::fs::File::create(&path).unwrap());
    let mut hasher = sha2::Sha256::new();
    let mut stream = body.into_data_stream();
    while let Some(Ok(chunk)) = stream.next().await {
        hasher.update(&chunk);
        file.write_all(&chunk).unwrap();
    }
    let file = file.into_inner().unwrap();
    file.sync_all().unwrap();
    let _ = std::fs::remove_file(&path);
    sluice::Sha256::from_bytes(hasher.finalize().into()).to_hex()
}

async fn work_get(State(refs): State<Refs>) -> Body {
    let mut file = std::fs::File::open(&*refs.file).unwrap();
    let mut hasher = sha2::Sha256::new();
    let stream = futures_util::stream::poll_fn(move |_| {
        let mut buf = BytesMut::zeroed(CHUNK);
        match file.read(&mut buf) {
            Ok(0) => {
                let _ = hasher.clone().finalize();
                std::task::Poll::Ready(None)
            }
            Ok(n) => {
                buf.truncate(n);
                hasher.update(&buf);
                std::task::Poll::Ready(Some(Ok::<_, std::io::Error>(buf.freeze())))
            }
            Err(e) => std::task::Poll::Ready(Some(Err(e))),
        }
    });
    Body::from_stream(stream)
}
