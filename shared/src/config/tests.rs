//! The settings table and the rules, tested.

use std::time::Duration;

use super::*;

fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
    Config::from_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())))
}

#[test]
fn defaults_need_no_variables() {
    let c = config(&[]).unwrap();
    assert_eq!(c.serve.port, 8787);
    assert_eq!(c.transfers.handle_ttl, Duration::from_secs(2700));
    assert_eq!(c.transfers.link_ttl, Duration::from_secs(300));
    assert!(c.keys.master_secret.is_none());
    assert_eq!(c.keys.key_id.as_str(), "k1");
}

#[test]
fn each_bad_value_is_refused_naming_its_variable() {
    let cases: &[(&str, &str)] = &[
        ("SLUICE_MASTER_SECRET", "too short"),
        ("SLUICE_PORT", "99999"),
        ("SLUICE_HOST", "localhost:80"),
        ("SLUICE_HANDLE_TTL_SECS", "0"),
        ("SLUICE_LINK_TTL_SECS", "-5"),
        ("SLUICE_MAX_UPLOAD_BYTES", "lots"),
        ("SLUICE_PART_BYTES", "1048576"),
        ("SLUICE_PART_BYTES", "6442450944"),
        ("SLUICE_SINGLE_PUT_MAX_BYTES", "6442450944"),
        ("SLUICE_QUOTA_BYTES", "0"),
        ("SLUICE_PUBLIC_URL", "ftp://example.com"),
        ("SLUICE_PUBLIC_URL", "not a url"),
        ("SLUICE_PUBLIC_URL", "https://user:pw@example.com"),
        ("SLUICE_PUBLIC_URL", "http://files.example.com"),
        ("SLUICE_ISSUER_URL", "http://192.0.2.7:8787"),
        ("SLUICE_RESOLVER_URL", "http://files.example.com/r"),
        ("SLUICE_MCP_URL", "http://files.example.com/mcp"),
        ("SLUICE_KEY_ID", "has space"),
        ("SLUICE_AUTH_SERVERS", "https://ok.example, nope"),
        ("SLUICE_MCP_MAX_BODY_BYTES", "0"),
        ("SLUICE_AUTH_JWKS_URL", "file:///etc/keys"),
        ("SLUICE_AUTH_JWKS_URL", "http://auth.example.com/jwks"),
        ("SLUICE_AUTH_JWKS_REFRESH_SECS", "soon"),
        ("SLUICE_BACKEND", "gcs"),
        ("SLUICE_DOWNLOAD_URL_TTL_SECS", "61"),
        ("SLUICE_LOG", "sluice=loud"),
        ("SLUICE_ACTIONS_S3_KEY", "config/actions.toml"),
        ("SLUICE_EXAMPLE_ACTIONS", "maybe"),
        ("SLUICE_MCP_URL", "https://files.example.com/api"),
        ("SLUICE_MCP_URL", "files.example.com/mcp"),
        ("SLUICE_AUTH_CLIENT_IDS", "abc"),
        ("SLUICE_AUTH_SCOPE_PREFIX", "sluice/"),
        ("SLUICE_DEV_TOKENS", "yes"),
        ("SLUICE_MAX_TRANSFERS", "0"),
        ("SLUICE_MAX_CONNECTIONS", "many"),
        ("SLUICE_HEADER_READ_TIMEOUT_SECS", "0"),
        ("SLUICE_BODY_IDLE_TIMEOUT_SECS", "-3"),
        ("SLUICE_ACTION_MAX_CONCURRENT_READS", "0"),
        ("SLUICE_ACTION_READ_TIMEOUT_SECS", "-1"),
        ("SLUICE_ACTION_MAX_BYTES", "lots"),
    ];
    for (var, value) in cases {
        let err = config(&[(var, value)]).unwrap_err();
        assert_eq!(err.var, *var, "{var}={value}");
        assert!(err.to_string().starts_with(var));
    }
}

#[test]
fn the_log_filter_takes_levels_and_targets() {
    use tracing::Level;
    let c = config(&[("SLUICE_LOG", "sluice=debug,warn")]).unwrap();
    assert!(
        c.operations
            .log
            .would_enable("sluice::service", &Level::DEBUG)
    );
    assert!(!c.operations.log.would_enable("hyper", &Level::INFO));
    assert!(c.operations.log.would_enable("hyper", &Level::WARN));
    let c = config(&[]).unwrap();
    assert!(c.operations.log.would_enable("sluice", &Level::INFO));
    assert!(!c.operations.log.would_enable("sluice", &Level::DEBUG));
    // rmcp's per-request lines (naming a client it made up) are kept out,
    // unless the filter names rmcp.
    assert!(!c.operations.log.would_enable("rmcp::service", &Level::INFO));
    assert!(c.operations.log.would_enable("rmcp::service", &Level::WARN));
    let c = config(&[("SLUICE_LOG", "debug")]).unwrap();
    assert!(!c.operations.log.would_enable("rmcp::service", &Level::INFO));
    let c = config(&[("SLUICE_LOG", "info,rmcp=debug")]).unwrap();
    assert!(
        c.operations
            .log
            .would_enable("rmcp::service", &Level::DEBUG)
    );
}

#[test]
fn the_aws_backend_names_what_it_lacks() {
    let secret = "s".repeat(32);
    let base = [("SLUICE_BACKEND", "aws")];
    assert_eq!(config(&base).unwrap_err().var, "SLUICE_S3_BUCKET");
    let with_bucket = [("SLUICE_BACKEND", "aws"), ("SLUICE_S3_BUCKET", "b")];
    assert_eq!(
        config(&with_bucket).unwrap_err().var,
        "SLUICE_DYNAMODB_TABLE"
    );
    let no_secret = [
        ("SLUICE_BACKEND", "aws"),
        ("SLUICE_S3_BUCKET", "b"),
        ("SLUICE_DYNAMODB_TABLE", "t"),
        ("SLUICE_DEV_TOKENS", "true"),
    ];
    assert_eq!(config(&no_secret).unwrap_err().var, "SLUICE_MASTER_SECRET");
    let bad_endpoint = [
        ("SLUICE_BACKEND", "aws"),
        ("SLUICE_S3_BUCKET", "b"),
        ("SLUICE_DYNAMODB_TABLE", "t"),
        ("SLUICE_MASTER_SECRET", secret.as_str()),
        ("SLUICE_DEV_TOKENS", "true"),
        ("SLUICE_S3_ENDPOINT_URL", "localhost:9000"),
    ];
    assert_eq!(
        config(&bad_endpoint).unwrap_err().var,
        "SLUICE_S3_ENDPOINT_URL"
    );
    let ok = config(&bad_endpoint[..5]).unwrap();
    assert!(matches!(ok.store, Store::S3(ref s) if s.bucket == "b"));
    assert!(matches!(ok.records, Records::DynamoDb(ref d) if d.table == "t"));
}

/// Bytes and records are chosen apart: S3 bytes with SQLite records needs
/// a bucket and nothing of DynamoDB (one machine keeps its own secret and
/// takes its development tokens, as local mode does); either half of
/// `SLUICE_BACKEND` can be overridden; the one pair that cannot work is
/// refused naming what to change.
#[test]
fn bytes_and_records_are_chosen_apart() {
    let local = config(&[]).unwrap();
    assert_eq!((local.store, local.records), (Store::Dir, Records::Sqlite));
    assert_eq!(
        config(&[("SLUICE_STORE", "s3")]).unwrap_err().var,
        "SLUICE_S3_BUCKET"
    );
    let s3 = config(&[
        ("SLUICE_STORE", "s3"),
        ("SLUICE_S3_BUCKET", "b"),
        ("SLUICE_S3_ENDPOINT_URL", "http://127.0.0.1:9000"),
    ])
    .unwrap();
    assert!(matches!(s3.store, Store::S3(ref s) if s.bucket == "b" && s.endpoint.is_some()));
    assert_eq!(s3.records, Records::Sqlite);
    assert!(s3.records_here() && !s3.bytes_here());
    assert!(
        s3.backends_said().contains("s3://b") && s3.backends_said().contains("SQLite"),
        "{}",
        s3.backends_said()
    );
    let secret = "s".repeat(32);
    let half = config(&[
        ("SLUICE_BACKEND", "aws"),
        ("SLUICE_RECORDS", "sqlite"),
        ("SLUICE_S3_BUCKET", "b"),
    ])
    .unwrap();
    assert_eq!(
        half.records,
        Records::Sqlite,
        "SLUICE_RECORDS overrides its half"
    );
    let shared_without_secret = [
        ("SLUICE_STORE", "s3"),
        ("SLUICE_RECORDS", "dynamodb"),
        ("SLUICE_S3_BUCKET", "b"),
        ("SLUICE_DYNAMODB_TABLE", "t"),
        ("SLUICE_DEV_TOKENS", "true"),
    ];
    assert_eq!(
        config(&shared_without_secret).unwrap_err().var,
        "SLUICE_MASTER_SECRET",
        "replicas on one table share one secret"
    );
    let mut shared = shared_without_secret.to_vec();
    shared.push(("SLUICE_MASTER_SECRET", secret.as_str()));
    assert!(config(&shared).is_ok());
    let dir_and_table = config(&[
        ("SLUICE_RECORDS", "dynamodb"),
        ("SLUICE_DYNAMODB_TABLE", "t"),
        ("SLUICE_MASTER_SECRET", secret.as_str()),
        ("SLUICE_DEV_TOKENS", "true"),
    ])
    .unwrap_err();
    assert_eq!(dir_and_table.var, "SLUICE_STORE");
    assert!(
        dir_and_table.reason.contains("SLUICE_RECORDS=sqlite"),
        "{dir_and_table}"
    );
    for (var, value) in [("SLUICE_STORE", "gcs"), ("SLUICE_RECORDS", "postgres")] {
        assert_eq!(config(&[(var, value)]).unwrap_err().var, var);
    }
    // A catalog in the bucket needs only the bucket.
    let catalog = config(&[
        ("SLUICE_STORE", "s3"),
        ("SLUICE_S3_BUCKET", "b"),
        ("SLUICE_ACTIONS_S3_KEY", "actions.toml"),
    ])
    .unwrap();
    assert_eq!(
        catalog.actions.source,
        Some(ActionsSource::S3Key("actions.toml".into()))
    );
}

#[test]
fn the_actions_catalog_comes_from_one_place() {
    assert_eq!(config(&[]).unwrap().actions.source, None);
    let c = config(&[("SLUICE_ACTIONS_FILE", "/etc/sluice/actions.toml")]).unwrap();
    assert_eq!(
        c.actions.source,
        Some(ActionsSource::File("/etc/sluice/actions.toml".into()))
    );
    let secret = "s".repeat(32);
    let aws = [
        ("SLUICE_BACKEND", "aws"),
        ("SLUICE_S3_BUCKET", "b"),
        ("SLUICE_DYNAMODB_TABLE", "t"),
        ("SLUICE_MASTER_SECRET", secret.as_str()),
        ("SLUICE_DEV_TOKENS", "true"),
    ];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut vars = aws.to_vec();
        vars.extend_from_slice(extra);
        config(&vars)
    };
    assert_eq!(
        with(&[("SLUICE_ACTIONS_S3_KEY", "config/actions.toml")])
            .unwrap()
            .actions
            .source,
        Some(ActionsSource::S3Key("config/actions.toml".into()))
    );
    for bad in [
        &[("SLUICE_ACTIONS_S3_KEY", "files/x.toml")][..],
        &[
            ("SLUICE_ACTIONS_S3_KEY", "a.toml"),
            ("SLUICE_ACTIONS_FILE", "a.toml"),
        ],
    ] {
        assert_eq!(with(bad).unwrap_err().var, "SLUICE_ACTIONS_S3_KEY");
    }
    let limits = config(&[
        ("SLUICE_ACTION_MAX_CONCURRENT_READS", "2"),
        ("SLUICE_ACTION_READ_TIMEOUT_SECS", "3"),
    ])
    .unwrap()
    .actions
    .limits;
    assert_eq!(limits.max_concurrent_reads, 2);
    assert_eq!(limits.read_timeout, Duration::from_secs(3));
    assert_eq!(limits.max_bytes, 64 << 20);
    assert_eq!(limits.max_answer, 64 << 20);
    // On Lambda an answer is bounded by the function's memory as well.
    let on_lambda = |memory: &'static str| {
        config(&[("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", memory)])
            .unwrap()
            .actions
            .limits
    };
    assert_eq!(on_lambda("256").max_answer, (256 << 20) / 6);
    assert_eq!(on_lambda("256").max_bytes, 64 << 20);
    assert_eq!(on_lambda("10240").max_answer, 64 << 20);
}

/// In aws mode, tokens come from an authorization server unless
/// development tokens are asked for by name: never a silent fallback.
#[test]
fn aws_mode_needs_an_authorization_server_or_an_explicit_dev_switch() {
    let secret = "s".repeat(32);
    let base = vec![
        ("SLUICE_BACKEND", "aws"),
        ("SLUICE_S3_BUCKET", "b"),
        ("SLUICE_DYNAMODB_TABLE", "t"),
        ("SLUICE_MASTER_SECRET", secret.as_str()),
    ];
    let err = config(&base).unwrap_err();
    assert_eq!(err.var, "SLUICE_AUTH_JWKS_URL");
    assert!(err.reason.contains("SLUICE_DEV_TOKENS=true"), "{err}");
    let mut dev = base.clone();
    dev.push(("SLUICE_DEV_TOKENS", "true"));
    assert!(config(&dev).unwrap().auth.dev_tokens);
    let mut jwks = base.clone();
    jwks.push(("SLUICE_AUTH_JWKS_URL", "https://auth.example.com/jwks"));
    let c = config(&jwks).unwrap();
    assert!(!c.auth.dev_tokens);
    assert_eq!(c.auth.audience, None, "the MCP URL, known at run time");
    jwks.push(("SLUICE_DEV_TOKENS", "true"));
    assert_eq!(config(&jwks).unwrap_err().var, "SLUICE_DEV_TOKENS");
}

#[test]
fn cognito_settings_are_read_with_a_jwks() {
    let c = config(&[
        ("SLUICE_AUTH_JWKS_URL", "https://cognito.example/jwks"),
        ("SLUICE_AUTH_CLIENT_IDS", "abc, def,"),
        ("SLUICE_AUTH_SCOPE_PREFIX", "sluice/"),
        (
            "SLUICE_MCP_URL",
            "https://x.example/lambda-url/sluice-mcp/mcp",
        ),
    ])
    .unwrap();
    assert_eq!(c.auth.client_ids, ["abc", "def"]);
    assert_eq!(c.auth.scope_prefix.as_deref(), Some("sluice/"));
    assert_eq!(
        c.urls.mcp.unwrap().as_str(),
        "https://x.example/lambda-url/sluice-mcp/mcp"
    );
}

#[test]
fn lambda_is_detected_from_the_runtime_api_variable() {
    assert!(
        config(&[("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001")])
            .unwrap()
            .lambda
    );
    assert!(!config(&[]).unwrap().lambda);
}

#[test]
fn a_previous_key_needs_both_halves_and_a_new_id() {
    let secret = "x".repeat(32);
    assert_eq!(
        config(&[("SLUICE_PREVIOUS_MASTER_SECRET", &secret)])
            .unwrap_err()
            .var,
        "SLUICE_PREVIOUS_KEY_ID"
    );
    assert_eq!(
        config(&[
            ("SLUICE_PREVIOUS_MASTER_SECRET", &secret),
            ("SLUICE_PREVIOUS_KEY_ID", "k1")
        ])
        .unwrap_err()
        .var,
        "SLUICE_PREVIOUS_KEY_ID"
    );
    let c = config(&[
        ("SLUICE_MASTER_SECRET", &"y".repeat(32)),
        ("SLUICE_KEY_ID", "k2"),
        ("SLUICE_PREVIOUS_MASTER_SECRET", &secret),
        ("SLUICE_PREVIOUS_KEY_ID", "k1"),
    ])
    .unwrap();
    assert_eq!(c.keys.previous.unwrap().0.as_str(), "k1");
}

#[test]
fn the_secret_never_appears_in_an_error() {
    let err = config(&[("SLUICE_MASTER_SECRET", "hunter2-hunter2")]).unwrap_err();
    assert!(!err.to_string().contains("hunter2"));
}

#[test]
fn an_upload_ttl_longer_than_the_handle_ttl_is_refused() {
    let err = config(&[("SLUICE_UPLOAD_TTL_SECS", "3000")]).unwrap_err();
    assert_eq!(err.var, "SLUICE_UPLOAD_TTL_SECS");
    assert!(err.reason.contains("SLUICE_HANDLE_TTL_SECS"), "{err}");
    let ok = config(&[
        ("SLUICE_UPLOAD_TTL_SECS", "3000"),
        ("SLUICE_HANDLE_TTL_SECS", "3600"),
    ])
    .unwrap();
    assert_eq!(ok.transfers.upload_ttl, Duration::from_secs(3000));
}

#[test]
fn every_default_passes_its_own_parser_and_each_name_is_listed_once() {
    let mut names = std::collections::BTreeSet::new();
    for s in table() {
        assert!(names.insert(s.name), "{} is listed twice", s.name);
        assert!(s.name.starts_with("SLUICE_"), "{}", s.name);
        if let settings::Default::Value(v) = s.default {
            let set = config(&[(s.name, v)]);
            assert!(set.is_ok(), "{}={v}: {:?}", s.name, set.err());
        }
    }
}

/// The configuration page (`docs/configuration.md`) is the settings table
/// rendered: `SLUICE_WRITE_DOCS=1 cargo test -p sluice config::` rewrites it.
#[test]
fn the_readme_lists_exactly_the_settings_with_their_defaults() {
    const BEGIN: &str =
        "<!-- settings: begin (generated from the ROWS of each shared/src/config/<group>.rs) -->\n";
    const END: &str = "<!-- settings: end -->";
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/configuration.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let (start, end) = (
        readme.find(BEGIN).unwrap() + BEGIN.len(),
        readme.find(END).unwrap(),
    );
    let expected = format!("\n{}", settings::markdown(table()));
    if readme[start..end] != expected && std::env::var_os("SLUICE_WRITE_DOCS").is_some() {
        let written = format!("{}{expected}{}", &readme[..start], &readme[end..]);
        std::fs::write(&path, written).unwrap();
        return;
    }
    assert!(
        readme[start..end] == expected,
        "docs/configuration.md differs from the settings table; \
         run `SLUICE_WRITE_DOCS=1 cargo test -p sluice config::` to rewrite it"
    );
    for s in table() {
        let row = format!("| `{}` |", s.name);
        let rows = readme.lines().filter(|l| l.starts_with(&row)).count();
        assert_eq!(rows, 1, "{}", s.name);
    }
}

#[test]
fn webhooks_come_from_one_endpoint_or_a_file() {
    let c = config(&[]).unwrap();
    assert!(c.operations.webhooks.is_none());
    assert_eq!(c.operations.webhook_retry.len(), 7);
    assert_eq!(c.operations.webhook_retry[1], Duration::from_secs(300));
    let c = config(&[
        ("SLUICE_WEBHOOK_URL", "http://127.0.0.1:9000/hooks"),
        ("SLUICE_WEBHOOK_SECRET", "whsec_new whsec_old"),
        ("SLUICE_WEBHOOK_RETRY_SECS", "1, 2"),
    ])
    .unwrap();
    match c.operations.webhooks {
        Some(crate::config::WebhookSource::One { url, secrets }) => {
            assert_eq!(url.as_str(), "http://127.0.0.1:9000/hooks");
            assert_eq!(secrets, ["whsec_new", "whsec_old"]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        c.operations.webhook_retry,
        [Duration::from_secs(1), Duration::from_secs(2)]
    );
    // The secret never shows in the config's debug form.
    let debug = format!(
        "{:?}",
        config(&[
            ("SLUICE_WEBHOOK_URL", "http://127.0.0.1:9000/"),
            ("SLUICE_WEBHOOK_SECRET", "whsec_TOPSECRET"),
        ])
        .unwrap()
    );
    assert!(!debug.contains("TOPSECRET"), "{debug}");
    for (bad, var) in [
        (
            &[("SLUICE_WEBHOOK_URL", "http://h/")][..],
            "SLUICE_WEBHOOK_SECRET",
        ),
        (
            &[("SLUICE_WEBHOOK_SECRET", "whsec_x")],
            "SLUICE_WEBHOOK_SECRET",
        ),
        (
            &[
                ("SLUICE_WEBHOOK_URL", "http://h/"),
                ("SLUICE_WEBHOOK_SECRET", "whsec_x"),
                ("SLUICE_WEBHOOKS_FILE", "w.toml"),
            ],
            "SLUICE_WEBHOOKS_FILE",
        ),
        (
            &[("SLUICE_WEBHOOK_RETRY_SECS", "5,soon")],
            "SLUICE_WEBHOOK_RETRY_SECS",
        ),
    ] {
        assert_eq!(config(bad).unwrap_err().var, var, "{bad:?}");
    }
}

/// On AWS the endpoint's secret may be a Secrets Manager secret, named
/// instead of said; never both, never without a URL, never locally (where
/// nothing reads it).
#[test]
fn a_webhook_secret_may_be_named_with_the_records_in_dynamodb_only() {
    let secret = "s".repeat(32);
    let aws = vec![
        ("SLUICE_BACKEND", "aws"),
        ("SLUICE_S3_BUCKET", "b"),
        ("SLUICE_DYNAMODB_TABLE", "t"),
        ("SLUICE_MASTER_SECRET", secret.as_str()),
        ("SLUICE_DEV_TOKENS", "true"),
        ("SLUICE_WEBHOOK_URL", "https://backend.example/hooks"),
    ];
    let mut named = aws.clone();
    named.push(("SLUICE_WEBHOOK_SECRET_ID", "stack/webhooks"));
    match config(&named).unwrap().operations.webhooks {
        Some(crate::config::WebhookSource::Stored { url, secret_id }) => {
            assert_eq!(url.as_str(), "https://backend.example/hooks");
            assert_eq!(secret_id, "stack/webhooks");
        }
        other => panic!("{other:?}"),
    }
    let mut both = named.clone();
    both.push(("SLUICE_WEBHOOK_SECRET", "whsec_x"));
    assert_eq!(config(&both).unwrap_err().var, "SLUICE_WEBHOOK_SECRET_ID");
    let no_url: Vec<_> = named
        .iter()
        .copied()
        .filter(|(k, _)| *k != "SLUICE_WEBHOOK_URL")
        .collect();
    assert_eq!(config(&no_url).unwrap_err().var, "SLUICE_WEBHOOK_SECRET_ID");
    let local = config(&[
        ("SLUICE_WEBHOOK_URL", "https://backend.example/hooks"),
        ("SLUICE_WEBHOOK_SECRET_ID", "stack/webhooks"),
    ])
    .unwrap_err();
    assert_eq!(local.var, "SLUICE_WEBHOOK_SECRET_ID");
    assert!(local.reason.contains("records in DynamoDB only"), "{local}");
}

/// The imports group: public by default, a list narrows it, `off` turns it
/// off, ports are checked; loopback is admitted beside DynamoDB records
/// only when DynamoDB is a local emulator.
#[test]
fn imports_are_public_by_default_and_loopback_is_for_development() {
    use crate::fetch::guard::Reach;
    let c = config(&[]).unwrap();
    assert_eq!(c.imports.guard.reach, Reach::Public);
    assert!(!c.imports.guard.allow_loopback && c.imports.guard.ports.is_empty());
    assert_eq!(c.imports.deadline, Duration::from_secs(900));
    let listed = config(&[("SLUICE_IMPORT_HOSTS", "files.example.com, *.cdn.example")]).unwrap();
    assert_eq!(
        listed.imports.guard.reach,
        Reach::Hosts(vec!["files.example.com".into(), "*.cdn.example".into()])
    );
    let off = config(&[
        ("SLUICE_IMPORTS", "off"),
        ("SLUICE_IMPORT_HOSTS", "a.example"),
    ])
    .unwrap();
    assert_eq!(off.imports.guard.reach, Reach::Off);
    assert_eq!(
        config(&[("SLUICE_IMPORT_PORTS", "8080,x")])
            .unwrap_err()
            .var,
        "SLUICE_IMPORT_PORTS"
    );
    assert_eq!(
        config(&[("SLUICE_IMPORTS", "private")]).unwrap_err().var,
        "SLUICE_IMPORTS"
    );
    let secret = "s".repeat(32);
    let aws = |endpoint: &'static str| {
        let mut vars = vec![
            ("SLUICE_BACKEND", "aws"),
            ("SLUICE_S3_BUCKET", "b"),
            ("SLUICE_DYNAMODB_TABLE", "t"),
            ("SLUICE_MASTER_SECRET", secret.as_str()),
            ("SLUICE_DEV_TOKENS", "true"),
            ("SLUICE_IMPORT_ALLOW_LOOPBACK", "true"),
        ];
        if !endpoint.is_empty() {
            vars.push(("SLUICE_DYNAMODB_ENDPOINT_URL", endpoint));
        }
        config(&vars)
    };
    assert_eq!(aws("").unwrap_err().var, "SLUICE_IMPORT_ALLOW_LOOPBACK");
    assert_eq!(
        aws("https://dynamodb.example.com").unwrap_err().var,
        "SLUICE_IMPORT_ALLOW_LOOPBACK"
    );
    assert!(
        aws("http://127.0.0.1:4567")
            .unwrap()
            .imports
            .guard
            .allow_loopback
    );
}

#[test]
fn scanning_is_off_by_default_and_each_scanner_needs_what_it_reads() {
    use super::{ClamdAddress, ScanMode};
    let c = config(&[]).unwrap();
    assert_eq!(c.scan.mode, ScanMode::Off);
    assert!(!c.scan.on() && !c.scan.allow_unscanned);
    assert_eq!(c.scan.deadline, Duration::from_secs(3600));
    let clamd = config(&[
        ("SLUICE_SCAN", "clamd"),
        ("SLUICE_CLAMD", "tcp:127.0.0.1:3310"),
        ("SLUICE_SCAN_UNSCANNED", "allow"),
    ])
    .unwrap();
    assert_eq!(
        clamd.scan.mode,
        ScanMode::Clamd(ClamdAddress::Tcp("127.0.0.1:3310".into()))
    );
    assert!(clamd.scan.allow_unscanned);
    // clamd needs its address, in one of its two forms.
    for bad in [
        vec![("SLUICE_SCAN", "clamd")],
        vec![("SLUICE_SCAN", "clamd"), ("SLUICE_CLAMD", "127.0.0.1:3310")],
    ] {
        assert_eq!(config(&bad).unwrap_err().var, "SLUICE_CLAMD", "{bad:?}");
    }
    assert_eq!(
        config(&[("SLUICE_SCAN", "sophos")]).unwrap_err().var,
        "SLUICE_SCAN"
    );
    // GuardDuty scans objects in S3; clamd's scans run in a server's
    // background, which a Lambda function does not keep.
    assert_eq!(
        config(&[("SLUICE_SCAN", "guardduty")]).unwrap_err().var,
        "SLUICE_SCAN"
    );
    assert_eq!(
        config(&[
            ("SLUICE_SCAN", "clamd"),
            ("SLUICE_CLAMD", "unix:/run/clamav/clamd.ctl"),
            ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001"),
        ])
        .unwrap_err()
        .var,
        "SLUICE_SCAN"
    );
}

/// An import not declared waits in the data directory (never the shared
/// temporary one), which in a Lambda function is its own `/tmp/sluice`.
#[test]
fn an_imports_spool_is_in_the_data_directory() {
    let c = config(&[("SLUICE_DATA_DIR", "/srv/sluice")]).unwrap();
    assert_eq!(c.imports.spool, std::path::Path::new("/srv/sluice/spool"));
    let local = Vars::new(Vec::<(String, String)>::new(), table());
    assert_eq!(
        DataDir::read(&local).unwrap().path,
        std::path::Path::new(".sluice")
    );
    let lambda = Vars::new(
        [(
            "AWS_LAMBDA_RUNTIME_API".to_owned(),
            "127.0.0.1:9001".to_owned(),
        )],
        table(),
    );
    assert_eq!(
        DataDir::read(&lambda).unwrap().path,
        std::path::Path::new("/tmp/sluice")
    );
}
