//! The sluice library: everything the three functions (`mcp`, `issuer`,
//! `resolver`) and the local binary share.
//!
//! Sluice moves files between AI clients and object storage without the bytes
//! passing through the model: the model handles a short handle, a URL, a size
//! and a sha256, and the bytes travel over short-lived, single-use,
//! integrity-pinned links.
//!
//! # Layout
//!
//! The codecs turn untrusted strings into typed values at the edge and do no
//! I/O: [`sha`] (digests and the streaming verifier), [`keys`] (the master
//! secret and the per-purpose keys derived from it), [`token`] (handles and
//! link tokens, sealed), [`filename`], [`datauri`] and [`curl`]. [`config`]
//! reads the environment once, at start.
//!
//! [`actions`] runs backend operations whose File fields take handles:
//! the catalog, the fields' checks, the streamed upstream call.
//!
//! [`store`] and [`ledger`] are the two storage traits, each with a local
//! implementation (a directory, an SQLite file) behind the `local` feature:
//! the Lambda functions are built without it, and so without SQLite. [`auth`] validates bearer
//! tokens. [`service`] is the issuing and resolving logic every function calls
//! in-process, [`limits`] how fast one user may ask for files, [`links`] the
//! one place a download link is redeemed, and [`error`] is the one place where its errors become HTTP
//! responses.

pub mod actions;
pub mod auth;
pub mod browser;
pub mod catalog;
pub mod config;
pub mod curl;
pub mod datauri;
pub mod error;
pub mod file;
pub mod filename;
mod http_client;
pub mod keys;
pub mod ledger;
pub mod limits;
pub mod links;
pub mod records;
pub mod service;
pub mod sha;
#[cfg(feature = "local")]
mod sqlite;
pub mod store;
pub mod time;
pub mod token;

#[cfg(test)]
mod props;

pub use auth::{Caller, Scope};
pub use config::{AwsConfig, Backend, Config, ConfigError};
pub use error::ApiError;
pub use file::{FileId, FileMeta, ObjectKey};
pub use keys::{KeyId, Keyring, MasterSecret};
pub use ledger::{Ledger, LedgerError, Spend};
pub use service::Sluice;
pub use sha::Sha256;
pub use store::{ObjectStore, StoreError};
pub use token::{Handle, LinkToken, Method, TokenError};
