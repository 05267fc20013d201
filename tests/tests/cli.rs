//! The `sluice` command line: help whatever the environment holds, tokens,
//! and refusals that name the argument.

use std::process::Command;

use crate::util::{BIN, out_text};

fn sluice(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    Command::new(BIN)
        .env_clear()
        .envs(env.iter().copied())
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn help_is_printed_even_with_a_bad_environment() {
    for args in [&["--help"][..], &["token", "--help"], &["help", "token"]] {
        let out = sluice(args, &[("SLUICE_PORT", "not a port")]);
        assert!(out.status.success(), "{args:?}: {}", out_text(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("Usage: sluice"), "{args:?}: {text}");
    }
    let token_help = sluice(&["token", "--help"], &[]);
    assert!(String::from_utf8_lossy(&token_help.stdout).contains("--scope"));
}

#[test]
fn a_token_takes_scopes_either_way_and_refuses_an_unknown_one() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().display().to_string();
    let env = [("SLUICE_DATA_DIR", data.as_str())];
    for args in [
        &["token", "--scope", "files:read", "files:write"][..],
        &["token", "--scope", "files:read", "--scope", "files:write"],
    ] {
        let out = sluice(args, &env);
        assert!(out.status.success(), "{args:?}: {}", out_text(&out));
        let config = crate::util::config_for(dir.path());
        let keys = sluice_runtime::local_keyring(&config).unwrap();
        let verifier =
            sluice::auth::AccessVerifier::new(keys, "sluice-local".into(), "sluice".into());
        let token = String::from_utf8(out.stdout).unwrap();
        let caller = tokio::runtime::Runtime::new()
            .unwrap()
            .block_on(verifier.verify(token.trim()))
            .unwrap();
        assert!(caller.has(sluice::Scope::FilesRead) && caller.has(sluice::Scope::FilesWrite));
        assert!(!caller.has(sluice::Scope::ActionsExecute), "{args:?}");
    }
    let out = sluice(&["token", "--scope", "files:everything"], &env);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown scope \"files:everything\""));
    let out = sluice(&["frobnicate"], &env);
    assert_eq!(out.status.code(), Some(2));
}

/// Behind a public URL, the first line still names the address bound (what
/// a person on the machine, or a proxy, connects to) and the next the
/// public URL, each once.
#[test]
fn the_banner_names_the_address_bound_and_the_public_url_apart() {
    let dir = tempfile::tempdir().unwrap();
    let server = crate::util::Server::start_in(
        dir.path(),
        &[("SLUICE_PUBLIC_URL", "https://files.example.com")],
    );
    assert!(
        server.base.starts_with("http://127.0.0.1:"),
        "the first line names {}",
        server.base
    );
    let public = server.printed_starting("public URL");
    assert!(public.ends_with("https://files.example.com"), "{public}");
    let claude = server.printed_after("connect Claude Code:");
    assert!(claude.contains("https://files.example.com/mcp"), "{claude}");
}

/// A `SLUICE_*` variable that is no setting (the issue's own mistake:
/// `SLUICE_LISTEN` for `SLUICE_HOST` and `SLUICE_PORT`) is named at start
/// with the setting meant, and the server runs as it would without it;
/// `sluice serve --strict` and `SLUICE_STRICT=true` refuse to start
/// instead, naming it, before anything listens.
#[test]
fn a_variable_that_is_no_setting_is_named_at_start_and_refused_when_strict() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sluice.log");
    let typo = ("SLUICE_LISTEN", "127.0.0.1:18787");
    let server = crate::util::Server::start_logging(dir.path(), &[typo], &log);
    assert!(
        server.base.starts_with("http://127.0.0.1:"),
        "{}",
        server.base
    );
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(
        said.contains("SLUICE_LISTEN is not a setting: did you mean SLUICE_HOST and SLUICE_PORT?"),
        "{said}"
    );
    server.stop();

    let data = dir.path().join("strict").display().to_string();
    for (args, strict) in [
        (&["serve", "--strict"][..], None),
        (&[][..], Some(("SLUICE_STRICT", "true"))),
    ] {
        let mut env = vec![
            ("SLUICE_DATA_DIR", data.as_str()),
            ("SLUICE_PORT", "0"),
            typo,
        ];
        env.extend(strict);
        let out = sluice(args, &env);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", out_text(&out));
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(
            text.contains("SLUICE_STRICT: refused to start: SLUICE_LISTEN is not a setting: did you mean SLUICE_HOST and SLUICE_PORT?"),
            "{args:?}: {text}"
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).is_empty(),
            "nothing listened"
        );
    }
}
