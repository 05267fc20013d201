//! The sluice library: everything the three functions (`mcp`, `issuer`,
//! `resolver`) and the local binary share.
//!
//! Sluice moves files between AI clients and object storage without the bytes
//! passing through the model: the model handles a short handle, a URL, a size
//! and a sha256, and the bytes travel over short-lived, single-use,
//! integrity-pinned links. `docs/ARCHITECTURE.md` is the map.
//!
//! # Layout
//!
//! From the bottom up; each layer uses only those below it.
//!
//! - **Codecs**, no I/O: they turn untrusted strings into typed values at
//!   the edge. [`sha`] (digests and the streaming verifier), [`keys`] (the
//!   master secret and the per-purpose keys derived from it), [`token`]
//!   (handles, links and page tokens, sealed), [`file`](mod@file), [`filename`],
//!   [`datauri`], [`curl`] and [`time`].
//! - **Storage traits**, each with a local implementation behind the
//!   `local` feature (the Lambda functions are built without it, and so
//!   without SQLite) and an aws one in `sluice-aws`: [`store`] (bytes),
//!   [`records`] (what is known of each file), [`ledger`] (spent tokens).
//! - **Policies**: [`auth`] (bearer tokens and who is calling), [`rate`]
//!   (per-user token buckets), [`actions`] (the catalog, forms, the
//!   streamed upstream call), [`fetch`] (a URL fetched on a caller's word,
//!   behind the import guard), and [`config`], which reads the environment
//!   once, at start, from one table of settings.
//! - **The service**, [`service`]: [`Sluice`], every operation the
//!   functions offer, returning [`Error`]s in the domain's words.
//! - **The HTTP adapter**, [`http`]: how an [`Error`] becomes a response,
//!   and bearer authentication with its challenge, for every route. (The
//!   MCP adapter is the `mcp` function's.)

pub mod actions;
pub mod auth;
pub mod caps;
pub mod config;
pub mod curl;
pub mod datauri;
pub mod error;
pub mod events;
pub mod fetch;
pub mod file;
pub mod filename;
pub mod http;
mod http_client;
pub use http_client::https_connector;
pub mod keys;
pub mod ledger;
pub mod multipart;
pub mod rate;
pub mod receipts;
pub mod records;
pub mod scan;
pub mod service;
pub mod sha;
#[cfg(feature = "local")]
mod sqlite;
pub mod store;
pub mod telemetry;
pub mod time;
pub mod token;
pub mod traces;
pub mod types;
pub mod web;
pub mod webhooks;

#[cfg(test)]
mod layers;
#[cfg(test)]
mod props;
#[cfg(test)]
mod scripts_tests;
#[cfg(test)]
mod target_tests;

pub use auth::{Caller, Scope};
pub use config::{AwsConfig, Config, ConfigError};
pub use error::{Error, FieldError};
pub use file::{FileId, FileMeta, ObjectKey};
pub use keys::{KeyId, Keyring, MasterSecret};
pub use ledger::{Ledger, LedgerError, Spend};
pub use service::Sluice;
pub use sha::Sha256;
pub use store::{ObjectStore, StoreError};
pub use token::{Method, TokenError};
