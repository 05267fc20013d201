//! Actions in-process: the user told upstream, result files kept whatever the
//! caller's limits, an answer over the limit.

use super::*;

/// An upstream on loopback that answers each action call with what it was
/// sent: `{action, user, fields}`.
async fn echo_upstream() -> String {
    let app = axum::Router::new().route(
        "/{action}",
        axum::routing::post(
            |axum::Json(body): axum::Json<serde_json::Value>| async move { axum::Json(body) },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// Sluice (local backends) with two actions on an echo upstream, one per
/// delivery, and `vars`.
pub(super) async fn with_echo_actions(
    dir: &std::path::Path,
    vars: &[(&str, &str)],
) -> sluice::Sluice {
    let upstream = echo_upstream().await;
    let catalog = dir.join("actions.toml");
    let mut toml = String::new();
    for (name, delivery) in [("inline", "data-uri"), ("linked", "link")] {
        toml.push_str(&format!(
            "[[actions]]\nname = \"{name}\"\ndescription = \"d\"\nurl = \"{upstream}/{name}\"\n\
             file_delivery = \"{delivery}\"\n[[actions.fields]]\nname = \"doc\"\ntype = \"File\"\n"
        ));
    }
    toml.push_str(&format!(
        "[[actions]]\nname = \"pair\"\ndescription = \"d\"\nurl = \"{upstream}/pair\"\n\
         [[actions.fields]]\nname = \"one\"\ntype = \"File\"\n\
         [[actions.fields]]\nname = \"two\"\ntype = \"File\"\n"
    ));
    std::fs::write(&catalog, toml).unwrap();
    let mut all = vec![
        ("SLUICE_DATA_DIR".to_owned(), dir.display().to_string()),
        (
            "SLUICE_ACTIONS_FILE".to_owned(),
            catalog.display().to_string(),
        ),
    ];
    all.extend(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let config = sluice::Config::from_vars(all).unwrap();
    let backends = sluice_runtime::open_backends(&config).await.unwrap();
    backends.sluice(&config, "http://127.0.0.1:8787".parse().unwrap())
}

/// The upstream is told who the user is in one form whatever the delivery:
/// the token's `sub`, as its issuer wrote it (docs/actions.md).
#[tokio::test]
async fn an_upstream_is_told_the_user_as_the_tokens_sub_in_both_deliveries() {
    let dir = tempfile::tempdir().unwrap();
    let sluice = with_echo_actions(dir.path(), &[]).await;
    // A caller from an external issuer: its files are owned by `<iss> <sub>`.
    let caller = Caller {
        sub: "alice".into(),
        owner: "https://issuer.example alice".into(),
        scopes: [Scope::ActionsExecute].into_iter().collect(),
    };
    let stored = small(&sluice, &caller.owner, "a.txt", b"hi").await;
    for action in ["inline", "linked"] {
        let outcome = sluice
            .actions()
            .execute_action(&caller, action, serde_json::json!({"doc": stored.handle}))
            .await
            .unwrap();
        assert_eq!(
            outcome.result["user"], "alice",
            "{action}: {:?}",
            outcome.result
        );
    }
}

/// Files in an action's result are kept outside the caller's issuing rate
/// and caps (the action has run), and one that cannot be kept is named in
/// its place while the rest of the result still comes back.
#[tokio::test]
async fn an_actions_result_files_are_kept_whatever_the_callers_limits() {
    let dir = tempfile::tempdir().unwrap();
    let sluice = with_echo_actions(
        dir.path(),
        &[
            ("SLUICE_ISSUE_RATE_PER_MINUTE", "1"),
            ("SLUICE_ISSUE_BURST", "1"),
            ("SLUICE_MAX_PENDING_FILES", "1"),
            // Room for one result file of 20 KiB, not two.
            ("SLUICE_QUOTA_BYTES", "30000"),
        ],
    )
    .await;
    let alice = caller("alice", &[Scope::ActionsExecute]);
    // The caller's issuing burst is spent, and a file of theirs is pending.
    sluice
        .uploads()
        .issue_upload("alice", request(b"pending"))
        .await
        .unwrap();
    let big = |byte: u8| {
        let data = vec![byte; 20 * 1024];
        sluice::datauri::DataUri::encode("text/plain", Some("r.txt"), &data)
    };
    let outcome = sluice
        .actions()
        .execute_action(
            &alice,
            "pair",
            serde_json::json!({"one": big(b'a'), "two": big(b'b')}),
        )
        .await
        .expect("the action ran, and its answer comes back");
    let fields = &outcome.result["fields"];
    let (kept, lost) = if fields["one"]["handle"].is_string() {
        (&fields["one"], &fields["two"])
    } else {
        (&fields["two"], &fields["one"])
    };
    assert!(kept["download"]["url"].is_string(), "{fields}");
    assert!(
        lost["error"]
            .as_str()
            .unwrap()
            .contains("could not be kept"),
        "{fields}"
    );
    assert_eq!(outcome.files_linked, 1);
}

/// An upstream answer over what this server reads (`SLUICE_ACTION_MAX_BYTES`,
/// and on Lambda a sixth of the function's memory) is refused saying that the
/// action ran, so nobody runs it again blindly.
#[tokio::test]
async fn an_answer_over_the_limit_says_the_action_ran() {
    let dir = tempfile::tempdir().unwrap();
    let sluice = with_echo_actions(dir.path(), &[("SLUICE_ACTION_MAX_BYTES", "200")]).await;
    let alice = caller("alice", &[Scope::ActionsExecute]);
    let small = small(&sluice, "alice", "a.txt", b"a").await;
    let refused = sluice
        .actions()
        .execute_action(&alice, "linked", serde_json::json!({"doc": small.handle}))
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("the action ran"), "{refused}");
    assert!(refused.contains("over the 200 bytes"), "{refused}");
}
