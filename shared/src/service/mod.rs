//! [`Sluice`]: the service every function calls in-process, a façade over
//! one component per flow, each in its own folder and holding only what it
//! needs. A flow reads top to bottom in its folder; each file states the
//! order of its steps in its first lines.
//!
//! - [`uploads`] ([`uploads::Uploads`]): a file asked for, its link, and its
//!   bytes arriving in one PUT, as a resumable stream, in parts, or inline.
//! - [`downloads`] ([`downloads::Downloads`]): a download link issued for a
//!   stored file, and redeemed: verify → refuse if spent → find → check the
//!   pin → spend → deliver; and the inline read.
//! - [`files`] ([`files::Files`]): which file a caller means, what its record
//!   says, where its object stands, the caller's files a page at a time,
//!   and a delete.
//! - [`pages`] ([`pages::Pages`]): a page for the person (or the widget), its
//!   start, its status and who may wait on it.
//! - [`batches`] ([`batches::Batches`]): many files in one call and one
//!   line, each way.
//! - [`actions`] ([`actions::Actions`]): running an action whose File fields
//!   take handles.
//! - [`imports`] ([`imports::Imports`]): a file the server fetches from a
//!   URL, behind the import guard.
//!
//! Each holds only the backends it uses ([`backends::Backends`] is the
//! wiring's bundle, held by none). The shared parts they call by name:
//! [`intake`] (what a file's upload link speaks), `proof` (proving an
//! object the store cannot vouch for, a slice at a time, under a lease in
//! its record); [`custody`] (a file made ready, purged or refused, and the
//! changes reported beside the records); [`links::Links`] (every
//! link, handle, page, upload id and cursor minted and opened in one
//! place, one `NotFound` for every link that does not open); and
//! [`limits::Limits`] (the admission part: rates, caps, waits, the hourly
//! download allowance).
//!
//! The service speaks the domain: its errors are [`crate::Error`]s, which
//! the HTTP adapter ([`crate::http`]) and the MCP tools put on the wire.
//! Below it sit the codecs and the storage traits ([`crate::store`],
//! [`crate::records`], [`crate::ledger`]), which know nothing of it.

pub mod actions;
pub mod backends;
pub mod batches;
pub mod custody;
pub mod downloads;
pub mod files;
pub mod gate;
pub mod imports;
pub mod intake;
pub mod limits;
pub mod links;
pub mod pages;
mod proof;
pub mod receipts;
pub mod uploads;

use std::fmt;
use std::sync::Arc;

use url::Url;

use actions::Actions;
use backends::Backends;
use batches::Batches;
use downloads::Downloads;
use files::Files;
use imports::Imports;
use limits::Limits;
use pages::Pages;
use uploads::Uploads;

use crate::auth::AccessVerifier;
use crate::config::{Config, Endpoints, Transfers};
use crate::keys::Keyring;
use crate::ledger::Ledger;
use crate::records::RecordStore;
use crate::store::ObjectStore;

/// What a [`Sluice`] is built from beside its settings: the backends, the
/// keys, the actions, and what the deployment gives (the importer
/// function, GuardDuty's scanner, the key receipts are signed with).
#[derive(Debug)]
pub struct Parts {
    /// The signing keys.
    pub keys: Keyring,
    /// The bytes.
    pub store: Arc<dyn ObjectStore>,
    /// The ledger.
    pub ledger: Arc<dyn Ledger>,
    /// The records.
    pub records: Arc<dyn RecordStore>,
    /// The actions.
    pub catalog: crate::actions::Catalog,
    /// The importer function, where imports run in a function of their own.
    pub imports_dispatch: Option<Arc<dyn imports::Dispatch>>,
    /// The scanner reading GuardDuty's tags, with `SLUICE_SCAN=guardduty`
    /// (clamd's is made here from the settings).
    pub scanner: Option<Arc<dyn crate::scan::Scanner>>,
    /// The key receipts of custody are signed with, and those retired
    /// (none: no receipts here).
    pub receipt_signer: Option<Arc<dyn crate::receipts::Signer>>,
}

/// The malware gate `scan` asks for: clamd's scanner made from its
/// address; GuardDuty's the one given (without one, files stay `scanning`
/// and nothing is delivered: failing closed).
fn scans(
    scan: crate::config::Scan,
    given: Option<Arc<dyn crate::scan::Scanner>>,
) -> Option<gate::Scans> {
    use crate::config::ScanMode;
    let scanner: Arc<dyn crate::scan::Scanner> = match &scan.mode {
        ScanMode::Off => return None,
        ScanMode::Clamd(address) => Arc::new(crate::scan::clamd::Clamd::new(
            address.clone(),
            scan.clamd_stream_max,
        )),
        ScanMode::GuardDuty => match given {
            Some(scanner) => scanner,
            None => {
                tracing::error!(
                    "SLUICE_SCAN=guardduty without the bucket's tags to read: files stay scanning"
                );
                Arc::new(crate::scan::NoScanner)
            }
        },
    };
    Some(gate::Scans::new(scan, scanner))
}

/// The shared state of every function: cheap to clone. A façade: each
/// flow is its component's, reached by name (`sluice.uploads()`, …).
#[derive(Clone)]
pub struct Sluice(Arc<Components>);

/// The components, wired once.
struct Components {
    backends: Backends,
    files: Files,
    limits: Limits,
    uploads: Uploads,
    downloads: Downloads,
    pages: Pages,
    batches: Batches,
    actions: Actions,
    imports: Imports,
    receipts: receipts::Receipts,
    access: AccessVerifier,
    endpoints: Arc<Endpoints>,
    mcp_max_body_bytes: usize,
    auth_servers: Vec<Url>,
}

impl fmt::Debug for Sluice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sluice")
            .field("public_url", &self.0.endpoints.public.as_str())
            .finish_non_exhaustive()
    }
}

impl Sluice {
    /// Wires the components: each is given the shared parts and the
    /// components its flows call.
    pub fn new(
        config: &Config,
        endpoints: Endpoints,
        access: AccessVerifier,
        parts: Parts,
    ) -> Self {
        let Parts {
            keys,
            store,
            ledger,
            records,
            catalog,
            imports_dispatch,
            scanner,
            receipt_signer: receipt_keys,
        } = parts;
        // Each group of settings, whole, to the component that uses it.
        let transfers = config.transfers.clone();
        let limits = crate::rate::Limits::new(config.limits.rates);
        let pending_caps = config.limits.pending_caps;
        let actions = crate::actions::Actions::new(catalog, config.actions.limits);
        let imports = config.imports.clone();
        // A function is frozen once it answers: a fetch in the background
        // would not run there.
        let imports_here = !config.lambda;
        let scan = config.scan.clone();
        let mcp_max_body_bytes =
            usize::try_from(config.serve.mcp_max_body_bytes).unwrap_or(usize::MAX);
        let auth_servers = config.auth.servers.clone();
        let endpoints = Arc::new(endpoints);
        let keys = Arc::new(keys);
        let links = links::Links::new(keys.clone(), endpoints.clone());
        let reporter = custody::Reporter::new(records.clone(), ledger.clone());
        let backends = Backends {
            store,
            records,
            ledger,
            transfers: Arc::new(transfers),
        };
        let proofs = proof::Proofs::new(
            backends.store.clone(),
            backends.records.clone(),
            backends.transfers.clone(),
        );
        let custody = custody::Custody::new(&backends, reporter.clone());
        let type_check = scan.type_check;
        let gate = gate::Gate::new(&backends, custody.clone(), scans(scan, scanner), type_check);
        let files = Files::new(&backends, proofs.clone(), links.clone(), gate, custody);
        let limits = Limits::new(&backends, files.clone(), limits, pending_caps);
        let uploads = Uploads::new(
            &backends,
            proofs.clone(),
            files.clone(),
            limits.clone(),
            endpoints.clone(),
            links.clone(),
            reporter.clone(),
        );
        let downloads = Downloads::new(
            &backends,
            files.clone(),
            limits.clone(),
            links.clone(),
            reporter,
        );
        let pages = Pages::new(
            &backends,
            uploads.clone(),
            files.clone(),
            limits.clone(),
            links.clone(),
        );
        let batches = Batches::new(
            &backends,
            uploads.clone(),
            downloads.clone(),
            files.clone(),
            limits.clone(),
            links.clone(),
            // A zip is streamed by a server that lives on, as imports run;
            // on AWS the importer function builds it into the bucket.
            // (A build without the zip writer, the `zips` feature, leaves
            // them to the importer function.)
            match (imports_here && cfg!(feature = "zips"), &imports_dispatch) {
                (true, _) => batches::zip::Zips::Here,
                (false, dispatch) => batches::zip::Zips::InStore(dispatch.clone()),
            },
        );
        let imports = Imports::new(
            (&backends, proofs),
            uploads.clone(),
            files.clone(),
            limits.clone(),
            imports,
            imports_here,
            imports_dispatch,
        );
        let actions = Actions::new(
            &backends,
            actions,
            actions::ActionCalls {
                uploads: uploads.clone(),
                downloads: downloads.clone(),
                batches: batches.clone(),
                imports: imports.clone(),
                files: files.clone(),
                limits: limits.clone(),
            },
        );
        let receipts = receipts::Receipts::new(
            receipt_keys,
            &backends,
            files.clone(),
            endpoints.public.as_str().trim_end_matches('/').to_owned(),
            format!(
                "{}/.well-known/jwks.json",
                endpoints.issuer_base().trim_end_matches('/')
            ),
        );
        Self(Arc::new(Components {
            backends,
            receipts,
            files,
            limits,
            uploads,
            downloads,
            pages,
            batches,
            actions,
            imports,
            access,
            endpoints,
            mcp_max_body_bytes,
            auth_servers,
        }))
    }

    /// Files asked for and their bytes taken in.
    pub fn uploads(&self) -> &Uploads {
        &self.0.uploads
    }

    /// Download links, issued and redeemed.
    pub fn downloads(&self) -> &Downloads {
        &self.0.downloads
    }

    /// The caller's files: found, listed, deleted.
    pub fn files(&self) -> &Files {
        &self.0.files
    }

    /// The person's pages and the widget.
    pub fn pages(&self) -> &Pages {
        &self.0.pages
    }

    /// Many files in one call.
    pub fn batches(&self) -> &Batches {
        &self.0.batches
    }

    /// The configured actions, and running them.
    pub fn actions(&self) -> &Actions {
        &self.0.actions
    }

    /// Files fetched from a URL.
    pub fn imports(&self) -> &Imports {
        &self.0.imports
    }

    /// Receipts of custody, and the keys that verify them.
    pub fn receipts(&self) -> &receipts::Receipts {
        &self.0.receipts
    }

    /// The per-user limits.
    pub fn limits(&self) -> &Limits {
        &self.0.limits
    }

    /// How files move: lifetimes, sizes and time limits.
    pub fn transfers(&self) -> &Transfers {
        &self.0.backends.transfers
    }

    /// The object store.
    pub fn store(&self) -> &dyn ObjectStore {
        &*self.0.backends.store
    }

    /// The file records.
    pub fn records(&self) -> &dyn RecordStore {
        &*self.0.backends.records
    }

    /// The spent-token ledger.
    pub fn ledger(&self) -> &dyn Ledger {
        &*self.0.backends.ledger
    }

    /// The largest MCP request body.
    pub fn mcp_max_body_bytes(&self) -> usize {
        self.0.mcp_max_body_bytes
    }

    /// The authorization servers the protected-resource metadata names.
    pub fn auth_servers(&self) -> &[Url] {
        &self.0.auth_servers
    }

    /// Bearer token validation.
    pub fn access(&self) -> &AccessVerifier {
        &self.0.access
    }

    /// Where clients reach sluice.
    pub fn endpoints(&self) -> &Endpoints {
        &self.0.endpoints
    }

    /// The public base URL, without a trailing slash.
    pub fn base_url(&self) -> &str {
        self.0.endpoints.public.as_str().trim_end_matches('/')
    }

    /// The base of the issuer's routes (`/uploads`, `/u/…`, `/browser/…`),
    /// without a trailing slash: each link follows the function that serves it.
    pub fn issuer_base(&self) -> &str {
        self.0.endpoints.issuer_base()
    }

    /// Where the issuer's routes are.
    pub fn issuer_url(&self) -> &Url {
        &self.0.endpoints.issuer
    }

    /// The base of the resolver's routes (`/l/…`, `/resolve`), without a trailing slash.
    pub fn resolver_base(&self) -> &str {
        self.0.endpoints.resolver_base()
    }

    /// The MCP endpoint's URL, e.g. `https://files.example.com/mcp`.
    pub fn mcp_url(&self) -> &str {
        self.0.endpoints.mcp.as_str()
    }

    /// The origins the in-chat upload widget runs on.
    pub fn widget_origins(&self) -> &[String] {
        &self.0.endpoints.widget_origins
    }

    /// Where the `mcp` function's routes are mounted: the MCP URL without
    /// its final `/mcp`.
    pub fn mcp_base_url(&self) -> &str {
        self.mcp_url()
            .strip_suffix("/mcp")
            .unwrap_or(self.mcp_url())
    }
}
