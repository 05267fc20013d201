//! Each function is granted what its code calls, and nothing else.

use super::*;

/// Every IAM statement of `function`, as (actions, resource text, condition
/// text) with the YAML rendered flat, for assertions on what it may do.
fn statements(t: &Yaml, function: &str) -> Vec<(Vec<String>, String, String)> {
    let resources = key(t, "Resources");
    let props = key(&key(&resources, function), "Properties");
    let mut out = Vec::new();
    for policy in key(&props, "Policies").as_vec().unwrap() {
        for s in key(policy, "Statement").as_vec().unwrap() {
            let action = key(s, "Action");
            // A statement made under a condition (`!If`: the retired
            // receipt keys') is held by infra/check-template.py.
            if action.is_badvalue() {
                continue;
            }
            let actions = match action.as_vec() {
                Some(list) => list
                    .iter()
                    .map(|a| a.as_str().unwrap().to_owned())
                    .collect(),
                None => vec![action.as_str().unwrap().to_owned()],
            };
            out.push((
                actions,
                format!("{:?}", key(s, "Resource")),
                format!("{:?}", key(s, "Condition")),
            ));
        }
    }
    out
}

/// The grants follow what each function's code calls: the resolver reads
/// and spends ledger items; the mcp and issuer functions touch only record
/// items (`LeadingKeys`) and query the record indexes; only the resolver,
/// whose presigned GETs name a version, has GetObjectVersion; ListBucket has no s3:prefix
/// condition (HeadObject carries none, so S3 would answer 403 instead of 404
/// for a file not uploaded yet); and the table has the two record indexes.
#[test]
fn each_function_is_granted_what_its_code_calls() {
    let t = template();
    let has = |fun: &str, action: &str| {
        statements(&t, fun)
            .into_iter()
            .filter(|(actions, _, _)| actions.iter().any(|a| a == action))
            .collect::<Vec<_>>()
    };
    // The resolver writes the ledger's items only (`jti#…`), and reads
    // those and the records (`file#…`: a short link names its file by id).
    let spends = has("ResolverFunction", "dynamodb:PutItem");
    assert!(!spends.is_empty(), "resolver lacks PutItem");
    assert!(
        spends
            .iter()
            .all(|(_, _, c)| c.contains("dynamodb:LeadingKeys")
                && c.contains("jti#*")
                && !c.contains("file#")),
        "resolver: PutItem must be limited to the ledger's items: {spends:?}"
    );
    // The issuer marks a link's rejection reported (one file.rejected a
    // link), and may write no other item of the ledger's.
    let marks = has("IssuerFunction", "dynamodb:PutItem");
    assert!(
        marks.iter().any(|(_, _, c)| c.contains("jti#rejected#*")),
        "issuer marks rejections: {marks:?}"
    );
    assert!(
        marks
            .iter()
            .all(|(_, _, c)| c.contains("dynamodb:LeadingKeys") && !c.contains("\"jti#*\"")),
        "issuer: no PutItem on the ledger's links: {marks:?}"
    );
    let reads = has("ResolverFunction", "dynamodb:GetItem");
    for prefix in ["jti#*", "file#*", "batch#*"] {
        assert!(
            reads.iter().any(|(_, _, c)| c.contains(prefix)),
            "resolver reads {prefix}: {reads:?}"
        );
    }
    assert!(
        reads
            .iter()
            .all(|(_, _, c)| c.contains("dynamodb:LeadingKeys")),
        "{reads:?}"
    );
    // Allowances every replica shares (`allow#…`: a user's download bytes
    // this hour): charged by the functions that hand out download links,
    // with UpdateItem on those items only.
    for fun in ["McpFunction", "ResolverFunction"] {
        let charges = has(fun, "dynamodb:UpdateItem");
        assert!(
            charges.iter().any(|(_, _, c)| c.contains("allow#*")),
            "{fun} charges allowances: {charges:?}"
        );
    }
    assert!(
        has("ResolverFunction", "dynamodb:UpdateItem")
            .iter()
            .all(|(_, _, c)| c.contains("dynamodb:LeadingKeys")
                && c.contains("allow#*")
                && !c.contains("file#")),
        "resolver: UpdateItem only on allowances"
    );
    assert_eq!(sluice_aws::DynamoLedger::allowance_key("x"), "allow#x");
    assert_eq!(sluice_aws::DynamoLedger::event_key("x"), "ev#x");
    assert_eq!(sluice_aws::DynamoRecords::key_of("x"), "file#x");
    assert_eq!(sluice_aws::DynamoRecords::admission_key("x"), "admit#x");
    assert_eq!(sluice_aws::DynamoRecords::import_key_of("x"), "import#x");
    // The importer: every item it may touch is a record's, by prefix; it
    // reads a download batch (whose zip it builds), and writes none.
    for action in [
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
    ] {
        let grants = has("ImporterFunction", action);
        assert!(!grants.is_empty(), "the importer lacks {action}");
        assert!(
            grants
                .iter()
                .all(|(actions, _, c)| c.contains("dynamodb:LeadingKeys")
                    && !c.contains("\"jti#*\"")
                    && !c.contains("allow#")
                    && (!c.contains("batch#") || actions == &["dynamodb:GetItem"])),
            "the importer: {action} only on the records it writes: {grants:?}"
        );
    }
    assert_eq!(sluice_aws::DynamoRecords::batch_key_of("x"), "batch#x");
    assert!(
        has("ImporterFunction", "dynamodb:GetItem")
            .iter()
            .any(|(_, _, c)| c.contains("batch#*")),
        "the importer reads the batch whose zip it builds"
    );
    assert_eq!(
        sluice_aws::DynamoLedger::key_of("x"),
        "jti#x",
        "the condition names the ledger's own key prefix"
    );
    for fun in ["McpFunction", "IssuerFunction"] {
        for action in [
            "dynamodb:GetItem",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
        ] {
            let grants = has(fun, action);
            assert!(!grants.is_empty(), "{fun} lacks {action}");
            let allowance = |c: &str| {
                fun == "McpFunction" && action == "dynamodb:UpdateItem" && c.contains("allow#*")
            };
            // The issuer's completions write the event of parts refused,
            // and the mark that a link's rejection was reported; both
            // report a file its malware scan refused, the same way.
            let event = |c: &str| {
                action == "dynamodb:PutItem" && (c.contains("ev#*") || c.contains("jti#rejected#*"))
            };
            // The mcp function admits a user's batch under their lease.
            let admission = |c: &str| {
                fun == "McpFunction" && action == "dynamodb:PutItem" && c.contains("admit#*")
            };
            // Both start imports and read their records.
            let import = |c: &str| action != "dynamodb:UpdateItem" && c.contains("import#*");
            assert!(
                grants
                    .iter()
                    .all(|(_, _, c)| c.contains("dynamodb:LeadingKeys")
                        && (c.contains("file#*")
                            || c.contains("batch#*")
                            || allowance(c)
                            || event(c)
                            || admission(c)
                            || import(c))),
                "{fun}: {action} must be limited to record items: {grants:?}"
            );
        }
        // Events no record's change carries (`file.rejected`: parts
        // refused, a file its malware scan refused): put, never changed.
        let events: Vec<_> = statements(&t, fun)
            .into_iter()
            .filter(|(_, _, c)| c.contains("ev#*"))
            .collect();
        assert!(
            !events.is_empty()
                && events
                    .iter()
                    .all(|(a, _, c)| a == &["dynamodb:PutItem"] && !c.contains("file#")),
            "{fun} puts event items only: {events:?}"
        );
        // Batches: the mcp function writes them (request_uploads,
        // get_download_urls), the issuer only reads them (the batch's line).
        let batch_grants = |action: &str| {
            has(fun, action)
                .iter()
                .any(|(_, _, c)| c.contains("batch#*"))
        };
        assert!(batch_grants("dynamodb:GetItem"), "{fun} reads batches");
        assert_eq!(
            batch_grants("dynamodb:PutItem"),
            fun == "McpFunction",
            "{fun}: only the mcp function writes batches"
        );
        let query = has(fun, "dynamodb:Query");
        assert!(
            query.iter().any(|(_, r, _)| r.contains("/index/*")),
            "{fun} queries the indexes"
        );
    }
    // Deleting a file (delete_file, DELETE /files/{file}): the object, the
    // version a download link was pinned to, and an upload in parts.
    for fun in ["McpFunction", "IssuerFunction"] {
        for action in [
            "s3:DeleteObject",
            "s3:DeleteObjectVersion",
            "s3:AbortMultipartUpload",
        ] {
            let grants = has(fun, action);
            assert!(
                !grants.is_empty() && grants.iter().all(|(_, r, _)| r.contains("/files/*")),
                "{fun}: {action} on files/ only: {grants:?}"
            );
        }
    }
    assert!(has("ResolverFunction", "s3:DeleteObject").is_empty());
    assert!(!has("ResolverFunction", "s3:GetObjectVersion").is_empty());
    for fun in ["McpFunction", "IssuerFunction", "ResolverFunction"] {
        assert!(
            fun == "ResolverFunction" || has(fun, "s3:GetObjectVersion").is_empty(),
            "{fun} has GetObjectVersion"
        );
        let list = has(fun, "s3:ListBucket");
        assert!(!list.is_empty(), "{fun} lacks ListBucket");
        assert!(
            list.iter().all(|(_, _, c)| !c.contains("s3:prefix")),
            "{fun}: {list:?}"
        );
    }
    let table = key(&key(&key(&t, "Resources"), "SpentTokens"), "Properties");
    let indexes: Vec<String> = key(&table, "GlobalSecondaryIndexes")
        .as_vec()
        .unwrap()
        .iter()
        .map(|i| key(i, "IndexName").as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        indexes,
        [
            sluice_aws::BY_OWNER,
            sluice_aws::PENDING,
            sluice_aws::BY_DIGEST
        ]
    );
}
