//! Process wiring shared by every binary: logging, the local backends, the
//! master secret of a local data directory, and serving a router until a
//! shutdown signal. One file a concern: `error` (why a start fails),
//! `logging`, `secrets`, `assembly` (sluice from the config), `serve`.

mod assembly;
mod error;
mod logging;
mod receipt_keys;
mod secrets;
mod serve;
#[cfg(feature = "otlp")]
mod traces;

pub use assembly::*;
pub use error::*;
pub use logging::*;
pub use receipt_keys::*;
pub use secrets::*;
pub use serve::*;
