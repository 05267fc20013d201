//! Every setting once: its variable, its group, its parser, its default,
//! and one line of doc. [`super::Config::from_env`] reads through this
//! table (a variable not in it cannot be read), and the configuration page's
//! configuration section is this table rendered ([`markdown`]; a test keeps
//! them equal).

/// Which part of sluice a setting concerns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// Where sluice runs and how it is reached.
    Core,
    /// Lifetimes, sizes, rates and timeouts.
    Limits,
    /// Bearer tokens and the authorization server.
    Auth,
    /// The aws backend.
    Aws,
    /// Actions and their upstreams.
    Actions,
    /// Files fetched from a URL (`import_file`).
    Imports,
    /// Malware scanning before a file is used.
    Scan,
    /// Events to the team's backend, and metrics.
    Operations,
}

impl Group {
    /// Every group, in the configuration page's order.
    pub const ALL: [Group; 8] = [
        Group::Core,
        Group::Limits,
        Group::Auth,
        Group::Aws,
        Group::Actions,
        Group::Imports,
        Group::Scan,
        Group::Operations,
    ];

    fn title(self) -> &'static str {
        match self {
            Group::Core => "Core",
            Group::Limits => "Limits",
            Group::Auth => "Auth",
            Group::Aws => "AWS",
            Group::Actions => "Actions",
            Group::Imports => "Imports",
            Group::Scan => "Malware scanning",
            Group::Operations => "Webhooks and metrics",
        }
    }
}

/// How a setting's value is read; a value that does not parse stops the
/// process with a message naming the variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parse {
    /// Any text.
    Text,
    /// A whole number above zero.
    Positive,
    /// A whole number of seconds above zero.
    Seconds,
    /// `true`/`false` (`1`/`0`, `on`/`off`).
    Flag,
    /// An IP address.
    Ip,
    /// A port, 0 to 65535.
    Port,
    /// An `http(s)://` URL with a host, no credentials, query or fragment.
    Url,
    /// Comma-separated [`Parse::Url`]s.
    Urls,
    /// Comma-separated names.
    List,
    /// A master secret of at least 32 bytes (never echoed).
    Secret,
    /// A key id.
    KeyId,
    /// A log filter: a level, or targets with levels.
    LogFilter,
    /// One of the listed words.
    OneOf(&'static [&'static str]),
}

/// What a setting is when its variable is unset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Default {
    /// This value, read as if it were set.
    Value(&'static str),
    /// Nothing, or something worked out at start; the words say what.
    Unset(&'static str),
}

/// One setting.
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    /// The environment variable.
    pub name: &'static str,
    /// Its group.
    pub group: Group,
    /// How its value is read.
    pub parse: Parse,
    /// Its default.
    pub default: Default,
    /// What it means, in one line.
    pub doc: &'static str,
}

const fn s(
    name: &'static str,
    group: Group,
    parse: Parse,
    default: Default,
    doc: &'static str,
) -> Setting {
    Setting {
        name,
        group,
        parse,
        default,
        doc,
    }
}

use self::Default::{Unset, Value};
use Group::{Actions, Auth, Aws, Core, Imports, Limits, Operations, Scan};

/// Every setting, by group.
pub const SETTINGS: &[Setting] = &[
    s(
        "SLUICE_BACKEND",
        Core,
        Parse::OneOf(&["local", "aws"]),
        Value("local"),
        "the usual pair of backends: `local` (bytes in a directory, records in SQLite) or `aws` (bytes in S3, records in DynamoDB); `SLUICE_STORE` and `SLUICE_RECORDS` choose each half apart",
    ),
    s(
        "SLUICE_STORE",
        Core,
        Parse::OneOf(&["dir", "s3"]),
        Unset("`SLUICE_BACKEND`'s: `dir` for `local`, `s3` for `aws`"),
        "where the bytes live: `dir` (`SLUICE_DATA_DIR`/objects; sluice receives them) or `s3` (`SLUICE_S3_BUCKET` on AWS or any S3-compatible endpoint, `SLUICE_S3_ENDPOINT_URL`; the bytes go straight to it)",
    ),
    s(
        "SLUICE_RECORDS",
        Core,
        Parse::OneOf(&["sqlite", "dynamodb"]),
        Unset("`SLUICE_BACKEND`'s: `sqlite` for `local`, `dynamodb` for `aws`"),
        "where file records, batches, usage, spent links and events live: `sqlite` (in `SLUICE_DATA_DIR`, one machine) or `dynamodb` (`SLUICE_DYNAMODB_TABLE`, shared by replicas); `dir` bytes need `sqlite`",
    ),
    s(
        "SLUICE_HOST",
        Core,
        Parse::Ip,
        Value("127.0.0.1"),
        "address to listen on",
    ),
    s(
        "SLUICE_PORT",
        Core,
        Parse::Port,
        Value("8787"),
        "port (`0` picks a free one)",
    ),
    s(
        "SLUICE_PUBLIC_URL",
        Core,
        Parse::Url,
        Unset("the listening address"),
        "the origin (and path prefix) clients reach sluice at; https:// (http:// only on a loopback address)",
    ),
    s(
        "SLUICE_MCP_URL",
        Core,
        Parse::Url,
        Unset("`SLUICE_PUBLIC_URL` + `/mcp`"),
        "the MCP endpoint's URL, ending in `/mcp`, when it has its own prefix (cargo lambda watch)",
    ),
    s(
        "SLUICE_ISSUER_URL",
        Core,
        Parse::Url,
        Unset("`SLUICE_PUBLIC_URL`"),
        "the issuer's base (upload links, browser pages) when it has its own prefix (cargo lambda watch)",
    ),
    s(
        "SLUICE_RESOLVER_URL",
        Core,
        Parse::Url,
        Unset("`SLUICE_PUBLIC_URL`"),
        "the resolver's base (download links) when it has its own prefix (cargo lambda watch)",
    ),
    s(
        "SLUICE_WIDGET_ORIGINS",
        Core,
        Parse::Urls,
        Unset(
            "claude.ai's for this connector: `https://` + the first 32 hex of SHA-256(MCP URL) + `.claudemcpcontent.com`",
        ),
        "origins the in-chat upload widget runs on (the MCP Apps host's sandbox), which the issuer's upload routes answer CORS for; list every host's you use",
    ),
    s(
        "SLUICE_DATA_DIR",
        Core,
        Parse::Text,
        Value(".sluice"),
        "local objects, ledger, file records, generated secret",
    ),
    s(
        "SLUICE_MASTER_SECRET",
        Core,
        Parse::Secret,
        Unset("generated into `<data dir>/master.key`"),
        "the master secret, at least 32 bytes",
    ),
    s(
        "SLUICE_KEY_ID",
        Core,
        Parse::KeyId,
        Value("k1"),
        "the secret's id (`kid` of every token)",
    ),
    s(
        "SLUICE_PREVIOUS_MASTER_SECRET",
        Core,
        Parse::Secret,
        Unset("—"),
        "a rotated-out secret, still accepted for verification (with `SLUICE_PREVIOUS_KEY_ID`)",
    ),
    s(
        "SLUICE_PREVIOUS_KEY_ID",
        Core,
        Parse::KeyId,
        Unset("—"),
        "the rotated-out secret's id (with `SLUICE_PREVIOUS_MASTER_SECRET`)",
    ),
    s(
        "SLUICE_LOG",
        Core,
        Parse::LogFilter,
        Value("info"),
        "what to log: a level (`debug`), or targets with levels (`sluice=debug,warn`); rmcp's own lines only at `warn` unless it names `rmcp`",
    ),
    s(
        "SLUICE_HANDLE_TTL_SECS",
        Limits,
        Parse::Seconds,
        Value("2700"),
        "handle lifetime (45 min)",
    ),
    s(
        "SLUICE_LINK_TTL_SECS",
        Limits,
        Parse::Seconds,
        Value("300"),
        "download link lifetime",
    ),
    s(
        "SLUICE_UPLOAD_TTL_SECS",
        Limits,
        Parse::Seconds,
        Value("900"),
        "upload link lifetime (checked when the upload starts); at most the handle lifetime",
    ),
    s(
        "SLUICE_MAX_UPLOAD_BYTES",
        Limits,
        Parse::Positive,
        Unset(
            "with the local store, SLUICE_QUOTA_BYTES; with S3, its largest object (10,000 parts of 5 GiB, 48.8 TiB)",
        ),
        "largest file",
    ),
    s(
        "SLUICE_PART_BYTES",
        Limits,
        Parse::Positive,
        Value("67108864"),
        "size of each part of a file uploaded in parts on S3, and of each request of the page's and the widget's resumable upload where sluice receives the bytes (64 MiB; rounded up to whole MiB, at least 5 MiB, at most 5 GiB; larger where 10,000 parts would not hold the file)",
    ),
    s(
        "SLUICE_PROOF_MILLIS",
        Limits,
        Parse::Positive,
        Value("20000"),
        "milliseconds one completion of an upload in parts on S3 reads to prove the file before answering 202 (`verifying`); the upload line asks again until it is proven (API Gateway ends a request at 30 s)",
    ),
    s(
        "SLUICE_SINGLE_PUT_MAX_BYTES",
        Limits,
        Parse::Positive,
        Value("67108864"),
        "on S3, files up to this size are uploaded in one PUT, larger ones in parts that a rerun of the same command resumes (where sluice receives the bytes a file of any size is one resumable stream, whose upload link lives as long as its record above this size) (64 MiB)",
    ),
    s(
        "SLUICE_QUOTA_BYTES",
        Limits,
        Parse::Positive,
        Value("21474836480"),
        "bytes the local store may hold (20 GiB)",
    ),
    s(
        "SLUICE_MCP_MAX_BODY_BYTES",
        Limits,
        Parse::Positive,
        Value("262144"),
        "largest MCP request body",
    ),
    s(
        "SLUICE_MAX_TRANSFERS",
        Limits,
        Parse::Positive,
        Value("256"),
        "local: uploads and downloads through sluice at once; more get 503 with `Retry-After`",
    ),
    s(
        "SLUICE_MAX_TRANSFERS_PER_USER",
        Limits,
        Parse::Positive,
        Value("16"),
        "local: uploads and downloads one user may have in progress at once, so a few users cannot take every slot; more get 503 with `Retry-After`",
    ),
    s(
        "SLUICE_MAX_CONNECTIONS",
        Limits,
        Parse::Positive,
        Value("1024"),
        "open connections at once; more wait to be accepted",
    ),
    s(
        "SLUICE_HEADER_READ_TIMEOUT_SECS",
        Limits,
        Parse::Seconds,
        Value("10"),
        "a connection that has not sent a request's headers by then is closed",
    ),
    s(
        "SLUICE_WRITE_TIMEOUT_SECS",
        Limits,
        Parse::Seconds,
        Value("30"),
        "a client that reads nothing of an answer for this long (a download opened and never read) is cut off, freeing its transfer slot",
    ),
    s(
        "SLUICE_BODY_READ_TIMEOUT_SECS",
        Limits,
        Parse::Seconds,
        Value("30"),
        "a request body other than an upload's must arrive whole within this (a body trickled a byte at a time is cut off)",
    ),
    s(
        "SLUICE_BODY_IDLE_TIMEOUT_SECS",
        Limits,
        Parse::Seconds,
        Value("30"),
        "an upload whose body sends nothing for this long is ended (408)",
    ),
    s(
        "SLUICE_ISSUE_RATE_PER_MINUTE",
        Limits,
        Parse::Positive,
        Value("120"),
        "files one user may have issued per minute; more get 429 with `Retry-After` (per process: on Lambda, per warm instance)",
    ),
    s(
        "SLUICE_ISSUE_BURST",
        Limits,
        Parse::Positive,
        Value("1000"),
        "files one user may have issued at once after a quiet spell (a batch of `request_uploads` takes one for each of its files, so as many as one batch holds)",
    ),
    s(
        "SLUICE_LINK_RATE_PER_MINUTE",
        Limits,
        Parse::Positive,
        Value("300"),
        "download links one user may have issued per minute (get_download_url, an action's links); more get 429 with `Retry-After`",
    ),
    s(
        "SLUICE_LINK_BURST",
        Limits,
        Parse::Positive,
        Value("100"),
        "download links one user may have issued at once after a quiet spell",
    ),
    s(
        "SLUICE_RESOLVE_RATE_PER_MINUTE",
        Limits,
        Parse::Positive,
        Value("300"),
        "handles one caller may resolve per minute (`POST /resolve`)",
    ),
    s(
        "SLUICE_RESOLVE_BURST",
        Limits,
        Parse::Positive,
        Value("100"),
        "handles one caller may resolve at once after a quiet spell",
    ),
    s(
        "SLUICE_ACTION_RATE_PER_MINUTE",
        Limits,
        Parse::Positive,
        Value("60"),
        "actions one user may run per minute",
    ),
    s(
        "SLUICE_ACTION_BURST",
        Limits,
        Parse::Positive,
        Value("30"),
        "actions one user may run at once after a quiet spell",
    ),
    s(
        "SLUICE_PAGE_START_RATE_PER_MINUTE",
        Limits,
        Parse::Positive,
        Value("10"),
        "starts of one browser page per minute (whoever holds its URL); its owner's other limits are untouched",
    ),
    s(
        "SLUICE_PAGE_START_BURST",
        Limits,
        Parse::Positive,
        Value("5"),
        "starts of one browser page at once after a quiet spell",
    ),
    s(
        "SLUICE_MAX_PENDING_FILES",
        Limits,
        Parse::Positive,
        Value("1000"),
        "files one user may have waiting for their bytes (as many as one request_uploads takes); more get 429 until some are uploaded or expire",
    ),
    s(
        "SLUICE_MAX_PENDING_BYTES",
        Limits,
        Parse::Positive,
        Value("53687091200"),
        "bytes one user's waiting files may declare (50 GiB)",
    ),
    s(
        "SLUICE_MAX_STORED_BYTES_PER_USER",
        Limits,
        Parse::Positive,
        Unset(
            "half of SLUICE_QUOTA_BYTES with the local store; none with S3, which has no disk to share",
        ),
        "bytes all of one user's files may declare, pending or uploaded, until they expire; more get 429",
    ),
    s(
        "SLUICE_DOWNLOAD_BYTES_PER_HOUR",
        Limits,
        Parse::Positive,
        Value("107374182400"),
        "bytes of download links one user may be given in a clock hour, each counted at its file's size, shared by every replica (kept in the ledger) (100 GiB)",
    ),
    s(
        "SLUICE_AUTH_ISSUER",
        Auth,
        Parse::Text,
        Value("sluice-local"),
        "required `iss` of bearer tokens",
    ),
    s(
        "SLUICE_AUTH_AUDIENCE",
        Auth,
        Parse::Text,
        Unset("the MCP URL (with a JWKS); `sluice` (local tokens)"),
        "required `aud` of bearer tokens",
    ),
    s(
        "SLUICE_AUTH_JWKS_URL",
        Auth,
        Parse::Url,
        Unset("—"),
        "the authorization server's JWKS (https, or http on loopback); when set, only its RS256/ES256 tokens are accepted",
    ),
    s(
        "SLUICE_AUTH_JWKS_REFRESH_SECS",
        Auth,
        Parse::Seconds,
        Value("30"),
        "least time between two JWKS fetches for unknown key ids",
    ),
    s(
        "SLUICE_AUTH_SERVERS",
        Auth,
        Parse::Urls,
        Unset("the issuer, if a URL"),
        "authorization servers listed in the protected-resource metadata (comma-separated)",
    ),
    s(
        "SLUICE_AUTH_CLIENT_IDS",
        Auth,
        Parse::List,
        Unset("—"),
        "with a JWKS: accept access tokens that name one of these clients (`client_id`, `token_use: access`) instead of an audience: Cognito",
    ),
    s(
        "SLUICE_AUTH_SCOPE_PREFIX",
        Auth,
        Parse::Text,
        Unset("—"),
        "with a JWKS: the prefix the server puts on sluice's scopes (`sluice/` for `sluice/files:read`)",
    ),
    s(
        "SLUICE_DEV_TOKENS",
        Auth,
        Parse::Flag,
        Value("false"),
        "aws mode: accept tokens from `sluice token` without an authorization server (development only)",
    ),
    s(
        "SLUICE_DEV_TOKEN_TTL_SECS",
        Auth,
        Parse::Seconds,
        Value("2592000"),
        "lifetime of tokens from `sluice token` (30 days)",
    ),
    s(
        "SLUICE_S3_BUCKET",
        Aws,
        Parse::Text,
        Unset("— (required with `s3`)"),
        "the bucket for objects",
    ),
    s(
        "SLUICE_DYNAMODB_TABLE",
        Aws,
        Parse::Text,
        Unset("— (required with `dynamodb`)"),
        "the table of spent tokens and file records",
    ),
    s(
        "SLUICE_AWS_REGION",
        Aws,
        Parse::Text,
        Unset("the SDK's chain (`AWS_REGION`)"),
        "the region",
    ),
    s(
        "SLUICE_S3_ENDPOINT_URL",
        Aws,
        Parse::Url,
        Unset("AWS"),
        "an S3-compatible endpoint (an emulator, MinIO, R2, B2), path-style",
    ),
    s(
        "SLUICE_DYNAMODB_ENDPOINT_URL",
        Aws,
        Parse::Url,
        Unset("AWS"),
        "a DynamoDB emulator's endpoint",
    ),
    s(
        "SLUICE_EVENTBRIDGE_ENDPOINT_URL",
        Aws,
        Parse::Url,
        Unset("AWS"),
        "an EventBridge emulator's endpoint (the events function's bus)",
    ),
    s(
        "SLUICE_LAMBDA_ENDPOINT_URL",
        Aws,
        Parse::Url,
        Unset("AWS"),
        "the Lambda API of an emulator where the importer function is invoked (`cargo lambda watch`'s invoke address)",
    ),
    s(
        "SLUICE_MASTER_SECRET_ID",
        Aws,
        Parse::Text,
        Unset("—"),
        "a Secrets Manager secret holding the master secret, read at cold start (instead of `SLUICE_MASTER_SECRET`)",
    ),
    s(
        "SLUICE_DOWNLOAD_URL_TTL_SECS",
        Aws,
        Parse::Seconds,
        Value("10"),
        "lifetime of the presigned GET a link redirects to (at most 60): the client follows the redirect at once, and until it expires whoever holds the URL can fetch the file again",
    ),
    s(
        "SLUICE_IMPORTS",
        Imports,
        Parse::OneOf(&["public", "off"]),
        Value("public"),
        "whether `import_file` fetches URLs: `public` (a host all of whose addresses are public; never private, link-local or metadata ones) or `off`",
    ),
    s(
        "SLUICE_IMPORT_HOSTS",
        Imports,
        Parse::List,
        Unset("any public host"),
        "the only hosts imports fetch from (`files.example.com`, `*.example.com` for its subdomains), still at public addresses only",
    ),
    s(
        "SLUICE_IMPORT_ALLOW_LOOPBACK",
        Imports,
        Parse::Flag,
        Value("false"),
        "admit loopback addresses (127.0.0.0/8, ::1) to imports, for development and tests; with DynamoDB records, only beside a local DynamoDB emulator. No setting admits private or link-local ranges",
    ),
    s(
        "SLUICE_IMPORT_PORTS",
        Imports,
        Parse::List,
        Unset("the scheme's own: 80 for http, 443 for https"),
        "ports imports may use besides the scheme's own",
    ),
    s(
        "SLUICE_IMPORT_MAX_BYTES",
        Imports,
        Parse::Positive,
        Unset("`SLUICE_MAX_UPLOAD_BYTES`"),
        "largest file imported (a declared size over it is refused at once; a body past it is cut and nothing kept)",
    ),
    s(
        "SLUICE_IMPORT_TIMEOUT_SECS",
        Imports,
        Parse::Seconds,
        Value("900"),
        "the whole of one import, from the request to its last byte stored (Lambda's own limit is 15 minutes)",
    ),
    s(
        "SLUICE_IMPORT_CONNECT_TIMEOUT_SECS",
        Imports,
        Parse::Seconds,
        Value("10"),
        "connecting to the host of an import",
    ),
    s(
        "SLUICE_IMPORT_READ_TIMEOUT_SECS",
        Imports,
        Parse::Seconds,
        Value("30"),
        "waiting for an import's answer, and for each read of its body",
    ),
    s(
        "SLUICE_IMPORT_MIN_BYTES_PER_SEC",
        Imports,
        Parse::Positive,
        Value("32768"),
        "the slowest an import's body may arrive, over each window of `SLUICE_IMPORT_READ_TIMEOUT_SECS`: a slower source is cut (nothing kept), so it cannot hold one of the imports at once until the deadline",
    ),
    s(
        "SLUICE_IMPORTS_AT_ONCE",
        Imports,
        Parse::Positive,
        Value("8"),
        "imports fetched at once by one server (more wait their turn)",
    ),
    s(
        "SLUICE_IMPORTS_PER_USER",
        Imports,
        Parse::Positive,
        Value("4"),
        "imports one user may have under way",
    ),
    s(
        "SLUICE_IMPORTER_FUNCTION",
        Imports,
        Parse::Text,
        Unset("none: imports run in the server; a function then does not offer them"),
        "the importer function (name or ARN) the MCP and issuer functions start each import in, asynchronously, on AWS (the template sets it)",
    ),
    s(
        "SLUICE_IMPORT_WAIT_SECS",
        Imports,
        Parse::Seconds,
        Value("20"),
        "how long `import_file` waits for its file before answering `pending`",
    ),
    s(
        "SLUICE_SCAN",
        Scan,
        Parse::OneOf(&["off", "clamd", "guardduty"]),
        Value("off"),
        "whether a file is scanned for malware before it is used: `off`; `clamd` (this server streams each file's bytes to clamd, `SLUICE_CLAMD`); `guardduty` (GuardDuty Malware Protection for S3 scans each object and tags it; the template's `MalwareScan`). Until its verdict a file is `scanning`, and nothing hands out its bytes ([operations](operations.md))",
    ),
    s(
        "SLUICE_CLAMD",
        Scan,
        Parse::Text,
        Unset("—"),
        "where clamd listens, with `SLUICE_SCAN=clamd`: `unix:/run/clamav/clamd.ctl` or `tcp:127.0.0.1:3310`",
    ),
    s(
        "SLUICE_CLAMD_STREAM_MAX_BYTES",
        Scan,
        Parse::Positive,
        Value("104857600"),
        "clamd's `StreamMaxLength` (set it as clamd.conf does; clamd's own default is 100M): a file over it that clamd cuts off is one it cannot scan (`SLUICE_SCAN_UNSCANNED`); any other break of the stream is tried again",
    ),
    s(
        "SLUICE_SCANS_AT_ONCE",
        Scan,
        Parse::Positive,
        Value("2"),
        "files streamed to clamd at once by one server, the turns shared among the files' owners in rotation (one user's many files never hold back another's)",
    ),
    s(
        "SLUICE_SCAN_TIMEOUT_SECS",
        Scan,
        Parse::Seconds,
        Value("600"),
        "one attempt at a file's scan; one that fails (clamd down, or too slow) is tried again, with growing waits, until the deadline",
    ),
    s(
        "SLUICE_SCAN_DEADLINE_SECS",
        Scan,
        Parse::Seconds,
        Value("3600"),
        "how long a file may stay `scanning`, from its scan's first attempt (time waiting for a turn does not count): past it, it is rejected (`unscanned`) and its bytes deleted",
    ),
    s(
        "SLUICE_SCAN_UNSCANNED",
        Scan,
        Parse::OneOf(&["refuse", "allow"]),
        Value("refuse"),
        "a file the scanner says it cannot scan (over clamd's `StreamMaxLength` or GuardDuty's size limit, or GuardDuty's `UNSUPPORTED`, `ACCESS_DENIED` or `FAILED`): `refuse` rejects it (`unscanned`), `allow` lets it through, its verdict saying it was not scanned",
    ),
    s(
        "SLUICE_WEBHOOK_URL",
        Operations,
        Parse::Url,
        Unset("—"),
        "where every event (`file.ready`, `file.downloaded`, `file.deleted`, `file.expired`, `file.rejected`) is POSTed, signed as Standard Webhooks says ([operations](operations.md)); `https`, or `http` to a loopback receiver only; needs `SLUICE_WEBHOOK_SECRET` or `SLUICE_WEBHOOK_SECRET_ID`. Locally the server delivers them; on AWS the events function, from the table's stream (the template's `WebhookUrl`)",
    ),
    s(
        "SLUICE_WEBHOOK_SECRET",
        Operations,
        Parse::Text,
        Unset("—"),
        "its secret, `whsec_` and the base64 of 24 to 64 random bytes; while one rotates, the new and the old, space-separated (each signs)",
    ),
    s(
        "SLUICE_WEBHOOK_SECRET_ID",
        Operations,
        Parse::Text,
        Unset("—"),
        "aws mode: a Secrets Manager secret holding `SLUICE_WEBHOOK_SECRET`'s value, read at start instead of it (the template's way: the secret is no plaintext variable of the function)",
    ),
    s(
        "SLUICE_EVENT_BUS",
        Operations,
        Parse::Text,
        Unset("—"),
        "aws mode: the EventBridge bus the events function puts every event on (source `sluice`, detail-type the event's type, detail the webhook's body with its `id`), beside or instead of webhooks (the template's `EventBusName`; [operations](operations.md))",
    ),
    s(
        "SLUICE_WEBHOOKS_FILE",
        Operations,
        Parse::Text,
        Unset("—"),
        "several endpoints, each with its own secret and events (TOML `[[endpoint]]`: `url`, `secret` or `secrets`, `name`, `events`), read at start; instead of `SLUICE_WEBHOOK_URL`",
    ),
    s(
        "SLUICE_WEBHOOK_RETRY_SECS",
        Operations,
        Parse::Text,
        Value("5,300,1800,7200,18000,36000,36000"),
        "the waits before each retry of a delivery that failed (comma-separated seconds); past the last, the event is given up, logged",
    ),
    s(
        "SLUICE_METRICS",
        Operations,
        Parse::Flag,
        Value("true"),
        "`true`/`false`: count metrics (locally `GET /metrics`; on Lambda EMF lines in the log)",
    ),
    s(
        "SLUICE_METRICS_TOKEN",
        Operations,
        Parse::Secret,
        Unset("—"),
        "local: the bearer token `GET /metrics` asks for (at least 32 bytes); unset, it answers loopback peers only ([operations](operations.md))",
    ),
    s(
        "SLUICE_METRICS_NAMESPACE",
        Operations,
        Parse::Text,
        Value("sluice"),
        "aws: the CloudWatch namespace of the functions' metrics (Embedded Metric Format lines in their logs; the template's alarms read them)",
    ),
    s(
        "SLUICE_ACTIONS_FILE",
        Actions,
        Parse::Text,
        Unset("—"),
        "the actions catalog (TOML), read at start",
    ),
    s(
        "SLUICE_ACTIONS_S3_KEY",
        Actions,
        Parse::Text,
        Unset("—"),
        "aws: the catalog as an object in the bucket (e.g. `config/actions.toml`), read at start; not under `files/`",
    ),
    s(
        "SLUICE_EXAMPLE_ACTIONS",
        Actions,
        Parse::Flag,
        Unset("on in local mode without a catalog"),
        "`true`/`false`: the example upstream and its two actions",
    ),
    s(
        "SLUICE_ACTION_MAX_CONCURRENT_READS",
        Actions,
        Parse::Positive,
        Value("4"),
        "stored files checked or read at once for actions, process-wide",
    ),
    s(
        "SLUICE_ACTION_READ_TIMEOUT_SECS",
        Actions,
        Parse::Seconds,
        Value("15"),
        "how long one such read may wait (for its object, or its next chunk)",
    ),
    s(
        "SLUICE_ACTION_MAX_BYTES",
        Actions,
        Parse::Positive,
        Value("67108864"),
        "the most bytes of files one `data-uri` action sends, and of an upstream answer read",
    ),
];

/// The setting of variable `name`.
pub fn setting(name: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.name == name)
}

/// The configuration page's tables (`docs/configuration.md`): one per group.
pub fn markdown() -> String {
    let mut out = String::new();
    for group in Group::ALL {
        out.push_str(&format!(
            "## {}\n\n| variable | default | meaning |\n|---|---|---|\n",
            group.title()
        ));
        for s in SETTINGS.iter().filter(|s| s.group == group) {
            let default = match s.default {
                Value(v) => format!("`{v}`"),
                Unset(words) => words.to_owned(),
            };
            out.push_str(&format!("| `{}` | {default} | {} |\n", s.name, s.doc));
        }
        out.push('\n');
    }
    out
}
