//! Imports (`import_file`), one group: where the server may fetch from, how
//! much, how long, and how many at once. The guard itself is
//! [`crate::fetch::guard`].

use std::time::Duration;

use super::ConfigError;
use super::read::{Vars, invalid};
use super::refuse;
use super::settings::Default::{Unset, Value};
use super::settings::Group;
use super::settings::{Parse, Setting, s};
use crate::fetch::Timeouts;
use crate::fetch::guard::{Guard, Reach};

/// The `imports` group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imports {
    /// What the guard admits (`SLUICE_IMPORTS`, `SLUICE_IMPORT_HOSTS`,
    /// `SLUICE_IMPORT_ALLOW_LOOPBACK`, `SLUICE_IMPORT_PORTS`).
    pub guard: Guard,
    /// The largest file imported (`SLUICE_IMPORT_MAX_BYTES`; unset: the
    /// largest upload).
    pub max_bytes: Option<u64>,
    /// The whole fetch, from the request to the last byte stored
    /// (`SLUICE_IMPORT_TIMEOUT_SECS`).
    pub deadline: Duration,
    /// Connecting, and each read (`SLUICE_IMPORT_CONNECT_TIMEOUT_SECS`,
    /// `SLUICE_IMPORT_READ_TIMEOUT_SECS`).
    pub timeouts: Timeouts,
    /// The slowest a body may arrive, in bytes a second, over each window
    /// of the read timeout (`SLUICE_IMPORT_MIN_BYTES_PER_SEC`): a source
    /// slower than that is cut, so it cannot hold one of the fetches at
    /// once until the deadline.
    pub min_rate: u64,
    /// Fetches at once in one process (`SLUICE_IMPORTS_AT_ONCE`).
    pub at_once: usize,
    /// Imports under way for one user (`SLUICE_IMPORTS_PER_USER`).
    pub per_user: usize,
    /// How long `import_file` waits for a small file before answering
    /// `pending` (`SLUICE_IMPORT_WAIT_SECS`).
    pub wait: Duration,
    /// The importer function the MCP and issuer functions start each
    /// import in, on AWS (`SLUICE_IMPORTER_FUNCTION`); `None`: imports run
    /// in the server, or (in a function) are not offered.
    pub importer: Option<String>,
    /// Where an import not declared waits for its bytes when the store
    /// keeps no private directory of its own (S3): `spool/` in the data
    /// directory (`SLUICE_DATA_DIR`), never the shared temporary one.
    pub spool: std::path::PathBuf,
}

impl Imports {
    pub(super) fn read(vars: &Vars, data: &super::DataDir) -> Result<Self, ConfigError> {
        let hosts = vars.list("SLUICE_IMPORT_HOSTS");
        let reach = match vars.value("SLUICE_IMPORTS") {
            Some("off") => Reach::Off,
            _ if !hosts.is_empty() => Reach::Hosts(hosts),
            _ => Reach::Public,
        };
        let ports = vars
            .list("SLUICE_IMPORT_PORTS")
            .iter()
            .map(|p| {
                p.parse::<u16>()
                    .ok()
                    .filter(|p| *p > 0)
                    .ok_or_else(|| invalid("SLUICE_IMPORT_PORTS", format!("{p} is not a port")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            guard: Guard {
                reach,
                allow_loopback: vars.flag("SLUICE_IMPORT_ALLOW_LOOPBACK")?.unwrap_or(false),
                ports,
            },
            max_bytes: vars.optional_positive("SLUICE_IMPORT_MAX_BYTES")?,
            deadline: vars.secs("SLUICE_IMPORT_TIMEOUT_SECS")?,
            timeouts: Timeouts {
                connect: vars.secs("SLUICE_IMPORT_CONNECT_TIMEOUT_SECS")?,
                read: vars.secs("SLUICE_IMPORT_READ_TIMEOUT_SECS")?,
            },
            min_rate: vars.positive("SLUICE_IMPORT_MIN_BYTES_PER_SEC")?,
            at_once: vars.count("SLUICE_IMPORTS_AT_ONCE")?,
            per_user: vars.count("SLUICE_IMPORTS_PER_USER")?,
            wait: vars.secs("SLUICE_IMPORT_WAIT_SECS")?,
            importer: vars
                .text("SLUICE_IMPORTER_FUNCTION")
                .filter(|f| !f.is_empty()),
            spool: data.path.join("spool"),
        })
    }
}

/// Loopback is admitted for development and tests alone: where the records
/// are shared (the aws backend), only when every AWS endpoint configured is
/// a local emulator (as under `cargo lambda watch`).
pub(super) fn rules(vars: &Vars, shared: bool) -> Result<(), ConfigError> {
    if vars.flag("SLUICE_IMPORT_ALLOW_LOOPBACK")? != Some(true) || !shared {
        return Ok(());
    }
    let local = |name: &'static str| {
        vars.raw(name).is_some_and(|u| {
            url::Url::parse(u)
                .is_ok_and(|u| matches!(u.host_str(), Some("127.0.0.1" | "localhost" | "[::1]")))
        })
    };
    if !local("SLUICE_DYNAMODB_ENDPOINT_URL") {
        return refuse(
            "SLUICE_IMPORT_ALLOW_LOOPBACK",
            "loopback imports are for development: with the records in DynamoDB it needs \
             SLUICE_DYNAMODB_ENDPOINT_URL on this machine (an emulator); unset it in a deployment",
        );
    }
    Ok(())
}

/// This group's settings (its variables, parsers, defaults and one line of
/// doc each), beside the code that reads them: the configuration page and
/// the start's checks take them from [`super::table`].
pub(super) const ROWS: &[Setting] = &[
    s(
        "SLUICE_IMPORTS",
        Group::Imports,
        Parse::OneOf(&["public", "off"]),
        Value("public"),
        "whether `import_file` fetches URLs: `public` (a host all of whose addresses are public; never private, link-local or metadata ones) or `off`",
    ),
    s(
        "SLUICE_IMPORT_HOSTS",
        Group::Imports,
        Parse::List,
        Unset("any public host"),
        "the only hosts imports fetch from (`files.example.com`, `*.example.com` for its subdomains), still at public addresses only",
    ),
    s(
        "SLUICE_IMPORT_ALLOW_LOOPBACK",
        Group::Imports,
        Parse::Flag,
        Value("false"),
        "admit loopback addresses (127.0.0.0/8, ::1) to imports, for development and tests; with DynamoDB records, only beside a local DynamoDB emulator. No setting admits private or link-local ranges",
    ),
    s(
        "SLUICE_IMPORT_PORTS",
        Group::Imports,
        Parse::List,
        Unset("the scheme's own: 80 for http, 443 for https"),
        "ports imports may use besides the scheme's own",
    ),
    s(
        "SLUICE_IMPORT_MAX_BYTES",
        Group::Imports,
        Parse::Positive,
        Unset("`SLUICE_MAX_UPLOAD_BYTES`"),
        "largest file imported (a declared size over it is refused at once; a body past it is cut and nothing kept)",
    ),
    s(
        "SLUICE_IMPORT_TIMEOUT_SECS",
        Group::Imports,
        Parse::Seconds,
        Value("900"),
        "the whole of one import, from the request to its last byte stored (Lambda's own limit is 15 minutes)",
    ),
    s(
        "SLUICE_IMPORT_CONNECT_TIMEOUT_SECS",
        Group::Imports,
        Parse::Seconds,
        Value("10"),
        "connecting to the host of an import",
    ),
    s(
        "SLUICE_IMPORT_READ_TIMEOUT_SECS",
        Group::Imports,
        Parse::Seconds,
        Value("30"),
        "waiting for an import's answer, and for each read of its body",
    ),
    s(
        "SLUICE_IMPORT_MIN_BYTES_PER_SEC",
        Group::Imports,
        Parse::Positive,
        Value("32768"),
        "the slowest an import's body may arrive, over each window of `SLUICE_IMPORT_READ_TIMEOUT_SECS`: a slower source is cut (nothing kept), so it cannot hold one of the imports at once until the deadline",
    ),
    s(
        "SLUICE_IMPORTS_AT_ONCE",
        Group::Imports,
        Parse::Positive,
        Value("8"),
        "imports fetched at once by one server (more wait their turn)",
    ),
    s(
        "SLUICE_IMPORTS_PER_USER",
        Group::Imports,
        Parse::Positive,
        Value("4"),
        "imports one user may have under way",
    ),
    s(
        "SLUICE_IMPORTER_FUNCTION",
        Group::Imports,
        Parse::Text,
        Unset("none: imports run in the server; a function then does not offer them"),
        "the importer function (name or ARN) the MCP and issuer functions start each import in, asynchronously, on AWS (the template sets it)",
    ),
    s(
        "SLUICE_IMPORT_WAIT_SECS",
        Group::Imports,
        Parse::Seconds,
        Value("20"),
        "how long `import_file` waits for its file before answering `pending`",
    ),
];
