//! Files uploaded in parts, where the store receives the bytes (S3, as
//! s3s-fs emulates it): the one line the model runs, resumed after an
//! interruption; the whole file proven before it is ready; and every bad
//! input of the part protocol. (Where sluice receives the bytes, a file is
//! one resumable stream instead: `tus.rs`.)

use std::path::Path;

use serde_json::Value;

use crate::util::{
    Emulators, Server, aws_server, aws_token, bytes, is_part_body, out_text, post_json, provision,
    request, run_noting_puts, sh,
};

const MIB: usize = 1024 * 1024;

/// Runs `line` in `dir` with [`sluice_testkit::counting_curl`].
fn run_counting(line: &str, dir: &Path, fail_from: Option<usize>) -> std::process::Output {
    std::process::Command::new("sh")
        .arg("-c")
        .arg(line)
        .current_dir(dir)
        .env(
            "PATH",
            sluice_testkit::counting_curl(dir, fail_from).unwrap(),
        )
        .output()
        .unwrap()
}

fn sent(dir: &Path) -> usize {
    sluice_testkit::parts_sent(dir)
}

/// Uploads 6 MiB whose declared SHA-256 is another file's, through the
/// line: every part is accepted, the completion refuses the whole, and the
/// file is not ready. Returns what the line printed.
fn upload_a_liar(server: &Server, token: &str) -> String {
    let data = bytes(6 * MIB, 3);
    let declared = sluice::Sha256::of(&bytes(6 * MIB, 4)).to_hex();
    let ticket = issue(server, token, "liar.bin", data.len(), &declared);
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("liar.bin"), &data).unwrap();
    let out = sh(ticket["command"].as_str().unwrap(), work.path());
    assert!(!out.status.success());
    let text = out_text(&out);
    assert!(
        text.contains("together they are not the file declared"),
        "{text}"
    );
    let handle = ticket["handle"].as_str().unwrap();
    assert_eq!(server.resolve(token, handle).status, 409, "never ready");
    text
}

/// Issues an upload declaring `size` and `sha256` (not necessarily those of
/// the bytes that will be sent).
fn issue(server: &Server, token: &str, name: &str, size: usize, sha256: &str) -> Value {
    let reply = post_json(
        &format!("{}/uploads", server.base),
        Some(token),
        &serde_json::json!({ "filename": name, "size": size, "sha256": sha256 }),
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    reply.json()
}

/// The line copies each part once into a file of its own and sends that
/// copy (hashed where it was sent from); a client with no room for the
/// copies (here a limit on the size of the files it writes, below one
/// part) sends its parts through pipes instead, and the file arrives all
/// the same.
#[test]
fn parts_go_from_a_copy_and_through_pipes_where_there_is_no_room() {
    let emulators = Emulators::start();
    let (server, _dir, token) = on_the_bucket(&emulators, "copies", &[]);
    for (name, limit) in [("roomy.bin", None), ("cramped.bin", Some(2048))] {
        let data = bytes(12 * MIB + 3, 5);
        let ticket = server.request_upload(&token, name, &data);
        let work = tempfile::tempdir().unwrap();
        std::fs::write(work.path().join(name), &data).unwrap();
        let (out, bodies) =
            run_noting_puts(ticket["command"].as_str().unwrap(), work.path(), limit);
        assert!(out.status.success(), "{name}: {}", out_text(&out));
        assert_eq!(bodies.len(), 3, "{name}: one PUT a part: {bodies:?}");
        assert!(bodies.iter().all(|b| is_part_body(b)), "{bodies:?}");
        let piped = bodies.iter().filter(|b| *b == "-").count();
        if limit.is_some() {
            assert_eq!(piped, 3, "no room: every part piped: {bodies:?}");
        } else {
            assert_eq!(piped, 0, "every part from its copy: {bodies:?}");
        }
        let handle = ticket["handle"].as_str().unwrap();
        let download = server.download_ticket(&token, handle);
        std::fs::remove_file(work.path().join(name)).unwrap();
        let fetched = sh(download["command"].as_str().unwrap(), work.path());
        assert!(fetched.status.success(), "{}", out_text(&fetched));
        assert!(
            std::fs::read(work.path().join(name)).unwrap() == data,
            "{name}: the file sent"
        );
    }
}

/// The part protocol's refusals, each clear, each leaving nothing.
#[test]
fn bad_parts_are_refused_and_nothing_is_joined() {
    let emulators = Emulators::start();
    let (server, _dir, token) = on_the_bucket(&emulators, "refusals", &[]);
    let data = bytes(7 * MIB, 8);
    let ticket = issue(
        &server,
        &token,
        "p.bin",
        data.len(),
        &sluice::Sha256::of(&data).to_hex(),
    );
    let link = ticket["upload"]["url"].as_str().unwrap();
    let (one, two) = data.split_at(5 * MIB);
    // Where to send part `n` of digest `sha256`: the target's answer.
    let target = |n: u32, body: &[u8]| {
        let hex = sluice::Sha256::of(body).to_hex();
        request("POST", &format!("{link}/parts/{n}?sha256={hex}"), &[], None)
    };
    // Part `n` sent where its target says, with the headers it says.
    let put = |n: u32, body: &[u8]| {
        let asked = target(n, body);
        assert_eq!(asked.status, 200, "{}", asked.text());
        put_to_target(&asked.text(), body)
    };
    // Where to send a part beyond the plan: refused, naming the plan.
    let beyond = request(
        "POST",
        &format!("{link}/parts/3?sha256={}", "0".repeat(64)),
        &[],
        None,
    );
    assert_eq!(beyond.status, 400);
    assert!(beyond.text().contains("parts 1 to 2"), "{}", beyond.text());
    // A digest that is not one.
    let junk = request("POST", &format!("{link}/parts/1?sha256=xyz"), &[], None);
    assert_eq!(junk.status, 400, "{}", junk.text());
    // (A part of another size or digest than its URL signs is refused by
    // S3 itself, 400 BadDigest; s3s-fs 0.14.1 does not check it, so that
    // refusal is not tested here: the whole file's proof is, below and in
    // `on_s3`.)
    let listed = request("GET", &format!("{link}/parts"), &[], None);
    assert_eq!(listed.text(), "", "nothing was stored");
    // A good part; the same part asked for again is refused, so whoever
    // else holds the link cannot replace it.
    assert_eq!(put(1, one).status, 200);
    let again = target(1, one);
    assert_eq!(again.status, 400);
    assert!(again.text().contains("already stored"), "{}", again.text());
    // Completing with part 2 missing names it.
    let early = request("POST", &format!("{link}/complete"), &[], None);
    assert_eq!(early.status, 400);
    assert!(early.text().contains("part 2"), "{}", early.text());
    assert_eq!(
        request("GET", &format!("{link}/parts"), &[], None).text(),
        "1\n"
    );
    // Then the rest, and completion once.
    assert_eq!(put(2, two).status, 200);
    let done = request("POST", &format!("{link}/complete"), &[], None);
    assert_eq!(done.status, 200, "{}", done.text());
    let twice = request("POST", &format!("{link}/complete"), &[], None);
    assert_eq!(twice.status, 409, "{}", twice.text());
    let replay = target(2, two);
    assert_eq!(
        replay.status,
        409,
        "a part after completion: {}",
        replay.text()
    );
    // Where the store receives the bytes the link is no tus upload: HEAD
    // and PATCH find nothing (404), and write nothing.
    let tus = [("Tus-Resumable", "1.0.0")];
    assert_eq!(request("HEAD", link, &tus, None).status, 404);
    let patched = request(
        "PATCH",
        link,
        &[
            tus[0],
            ("Content-Type", "application/offset+octet-stream"),
            ("Upload-Offset", "0"),
        ],
        Some(b"x"),
    );
    assert_eq!(patched.status, 404, "{}", patched.text());
    // A file in one PUT has no parts.
    let small = server.request_upload(&token, "s.txt", b"small");
    let url = small["upload"]["url"].as_str().unwrap();
    let no = request("GET", &format!("{url}/parts"), &[], None);
    assert_eq!(no.status, 400, "{}", no.text());
}

/// PUTs `body` where a part's target (`POST …/parts/{n}`'s answer) says:
/// its URL, with the headers it lists.
fn put_to_target(target: &str, body: &[u8]) -> crate::util::Reply {
    let mut lines = target.lines();
    let url = lines.next().unwrap().to_owned();
    let headers: Vec<(&str, &str)> = lines.filter_map(|l| l.split_once(": ")).collect();
    request("PUT", &url, &headers, Some(body))
}

/// A server on the AWS backends (S3 as s3s-fs, DynamoDB as dynalite) that
/// sends files over 1 MiB in parts of 5 MiB (S3's smallest), with `env`;
/// and alice's token.
fn on_the_bucket(
    emulators: &Emulators,
    name: &str,
    env: &[(&str, &str)],
) -> (Server, tempfile::TempDir, String) {
    provision(emulators, name);
    let mut env = env.to_vec();
    env.extend([
        ("SLUICE_PART_BYTES", "5242880"),
        ("SLUICE_SINGLE_PUT_MAX_BYTES", "1048576"),
    ]);
    let (server, dir) = aws_server(emulators, name, &env);
    let token = aws_token(emulators, "alice", &[]);
    (server, dir, token)
}

// On S3 (s3s-fs): parts go straight to the bucket at presigned UploadPart
// URLs minted one at a time, and sluice proves the joined object itself.
// s3s-fs 0.14.1 does not check a part's signed checksum against its bytes
// (S3 does: a wrong part is 400 BadDigest there), so the tests check that
// each part URL signs its SHA-256, and the whole-file proof.

mod on_s3 {
    use super::*;

    /// Parts of 5 MiB, and a proof that reads one part's worth per
    /// completion (as a file too large to prove in one request would), so
    /// the line asks again while the completion answers 202.
    const PARTS: &[(&str, &str)] = &[
        ("SLUICE_PART_BYTES", "5242880"),
        ("SLUICE_SINGLE_PUT_MAX_BYTES", "1048576"),
        ("SLUICE_PROOF_MILLIS", "1"),
    ];

    #[test]
    fn a_large_file_goes_in_parts_straight_to_the_bucket_and_resumes() {
        let emulators = Emulators::start();
        provision(&emulators, "parts");
        let (server, _dir) = aws_server(&emulators, "parts", PARTS);
        let token = aws_token(&emulators, "alice", &[]);
        let data = bytes(11 * MIB + 5, 31);
        let ticket = server.request_upload(&token, "big.bin", &data);
        let line = ticket["command"].as_str().unwrap();
        // The store's origin only (where parts may go), never a
        // presigned URL: those are minted one part at a time.
        assert!(line.len() <= 1024 && !line.contains("X-Amz-"), "{line}");
        let link = ticket["upload"]["url"].as_str().unwrap();

        // Each part's URL is S3's, minted on demand, and signs the part's
        // size and SHA-256: S3 refuses any other bytes.
        let one = &data[..5 * MIB];
        let hex = sluice::Sha256::of(one).to_hex();
        let config = request("POST", &format!("{link}/parts/1?sha256={hex}"), &[], None);
        assert_eq!(config.status, 200, "{}", config.text());
        let config = config.text();
        let url = config.lines().next().unwrap();
        assert!(url.starts_with(&emulators.s3_url), "{url}");
        assert!(
            url.contains("partNumber=1") && url.contains("uploadId="),
            "{url}"
        );
        let signed = url::Url::parse(url)
            .unwrap()
            .query_pairs()
            .find(|(k, _)| k == "X-Amz-SignedHeaders")
            .map(|(_, v)| v.into_owned())
            .unwrap();
        assert!(signed.contains("x-amz-checksum-sha256"), "{signed}");
        assert!(signed.contains("content-length"), "{signed}");
        let b64 = sluice::Sha256::of(one).to_base64();
        assert!(
            config
                .lines()
                .any(|l| l.eq_ignore_ascii_case(&format!("x-amz-checksum-sha256: {b64}"))),
            "{config}"
        );

        // Interrupted at the second part, then the same line again.
        let work = tempfile::tempdir().unwrap();
        std::fs::write(work.path().join("big.bin"), &data).unwrap();
        let first = run_counting(line, work.path(), Some(2));
        assert!(!first.status.success(), "{}", out_text(&first));
        assert_eq!(sent(work.path()), 3);
        let handle = ticket["handle"].as_str().unwrap();
        assert_eq!(server.resolve(&token, handle).status, 409, "not ready yet");
        std::fs::remove_file(work.path().join("sent")).unwrap();
        let second = run_counting(line, work.path(), None);
        assert!(second.status.success(), "{}", out_text(&second));
        assert_eq!(
            sent(work.path()),
            2,
            "part 1 is listed by S3 and not sent again"
        );
        assert!(
            String::from_utf8_lossy(&second.stderr).contains("verifying the whole file's sha256"),
            "the proof went on over several completions: {}",
            out_text(&second)
        );

        // Proven, ready, and the download line brings back the same bytes.
        let download = server.download_ticket(&token, handle);
        let out = sh(download["command"].as_str().unwrap(), work.path());
        assert!(out.status.success(), "{}", out_text(&out));
        assert!(std::fs::read(work.path().join("big.bin")).unwrap() == data);
        // Completing again is refused: the file is written once.
        let again = request("POST", &format!("{link}/complete"), &[], None);
        assert_eq!(again.status, 409, "{}", again.text());
        // The proof's progress is kept in the file's record, not beside
        // the object: only the upload's id is (it was one note per slice,
        // then one `.proof` note and a `.completing` lease).
        let notes: Vec<String> = sluice_testkit::files_under(emulators.s3_dir())
            .iter()
            .filter_map(|p| p.file_name()?.to_str().map(str::to_owned))
            // s3s-fs keeps its own metadata beside each object.
            .filter(|n| n.starts_with('.') && !n.starts_with(".bucket-"))
            .collect();
        assert_eq!(notes, [".upload-id"], "{notes:?}");
    }

    /// A file whose parts are joined but whose proof goes on is listed
    /// `verifying`, is not served, and the same line finishes it.
    #[test]
    fn a_file_whose_proof_goes_on_is_verifying_until_the_line_finishes_it() {
        let emulators = Emulators::start();
        provision(&emulators, "verifying");
        let (server, _dir) = aws_server(&emulators, "verifying", PARTS);
        let token = aws_token(&emulators, "alice", &[]);
        let data = bytes(11 * MIB, 12);
        let ticket = server.request_upload(&token, "v.bin", &data);
        let work = tempfile::tempdir().unwrap();
        std::fs::write(work.path().join("v.bin"), &data).unwrap();
        // The line, its script asking to complete once only (as if
        // stopped there).
        let out = sh(
            &completing(ticket["command"].as_str().unwrap(), "once"),
            work.path(),
        );
        assert!(
            out_text(&out).contains("verifying the whole file"),
            "{}",
            out_text(&out)
        );
        let list =
            crate::util::call_tool(&server.base, &token, "list_files", serde_json::json!({}));
        assert_eq!(
            list["structuredContent"]["files"][0]["state"], "verifying",
            "{list}"
        );
        let handle = ticket["handle"].as_str().unwrap();
        let refused = server.resolve(&token, handle);
        assert_eq!(refused.status, 409);
        assert!(
            refused.text().contains("still being verified"),
            "{}",
            refused.text()
        );
        // The line again: no part is sent, the proof goes on to the end.
        let again = run_counting(ticket["command"].as_str().unwrap(), work.path(), None);
        assert!(again.status.success(), "{}", out_text(&again));
        assert_eq!(sent(work.path()), 0);
        let list =
            crate::util::call_tool(&server.base, &token, "list_files", serde_json::json!({}));
        assert_eq!(
            list["structuredContent"]["files"][0]["state"], "ready",
            "{list}"
        );
    }

    /// The upload `line` with its script's completion loop run over
    /// `words` (`""`: never asked; `"once"`: asked once), the script still
    /// checked against its pin first.
    fn completing(line: &str, words: &str) -> String {
        let altered = format!(
            "then s=$(printf '%s' \"$s\" | sed 's/^while :; do$/for _ in {words}; do/'); sh -c \"$s\""
        );
        let line = line.replacen("then sh -c \"$s\"", &altered, 1);
        assert!(line.contains("for _ in"), "{line}");
        line
    }

    /// Runs the upload `line` in `dir` up to the completion, which it does
    /// not ask for.
    fn send_parts_only(line: &str, dir: &Path) {
        let out = sh(&completing(line, ""), dir);
        assert!(out.status.success(), "{}", out_text(&out));
    }

    /// One completion at a time, on any replica (P3): while another holds
    /// the lease kept in the file's record (its proof, written by a
    /// conditional write), a completion is told at once that it is under
    /// way and reads nothing; a lease left by a completion that died (past
    /// its expiry) is taken over, and the file is proven. (Before: each
    /// completion ran the proof.)
    #[test]
    fn completions_on_s3_take_turns_through_a_lease() {
        let emulators = Emulators::start();
        let rt = tokio::runtime::Runtime::new().unwrap();
        let (_, ledger) = rt.block_on(emulators.provision("turns"));
        let records = sluice_aws::DynamoRecords::beside(&ledger);
        let (server, _dir) = aws_server(&emulators, "turns", PARTS);
        let token = aws_token(&emulators, "alice", &[]);
        let data = bytes(11 * MIB, 58);
        let ticket = server.request_upload(&token, "t.bin", &data);
        let link = ticket["upload"]["url"].as_str().unwrap().to_owned();
        let work = tempfile::tempdir().unwrap();
        std::fs::write(work.path().join("t.bin"), &data).unwrap();
        send_parts_only(ticket["command"].as_str().unwrap(), work.path());
        let id = sluice::FileId::parse(ticket["file_id"].as_str().unwrap()).unwrap();
        let mut kept: Option<String> = None;
        let mut hold = |until: i64| {
            use sluice::records::ProofLease as _;
            let proof = format!(r#"{{"lease":{until},"proven":false}}"#);
            let swapped = rt
                .block_on(records.swap_proof("alice", &id, kept.as_deref(), Some(&proof)))
                .unwrap();
            assert!(swapped, "the proof was {kept:?}");
            kept = Some(proof);
        };
        hold(sluice::time::now_unix() + 300);
        let busy = request("POST", &format!("{link}/complete"), &[], None);
        assert_eq!(busy.status, 409, "{}", busy.text());
        assert!(
            busy.text().contains("already being joined"),
            "{}",
            busy.text()
        );
        hold(sluice::time::now_unix() - 1);
        let again = run_counting(ticket["command"].as_str().unwrap(), work.path(), None);
        assert!(again.status.success(), "{}", out_text(&again));
        assert_eq!(sent(work.path()), 0, "every part was stored");
    }

    /// Someone else who holds the link cannot swap a part the owner sent:
    /// a target for a stored part is refused (a new presigned URL would
    /// replace it on S3); and a part of their own that spoils the whole
    /// costs the owner a rerun of the line, not the file: a fresh upload in
    /// parts begins under the same link. (Before: a stored part got a new
    /// URL, and a failed proof spent the upload for good.)
    #[test]
    fn a_link_holder_cannot_spoil_a_file_in_parts() {
        let emulators = Emulators::start();
        provision(&emulators, "spoil");
        let (server, _dir) = aws_server(&emulators, "spoil", PARTS);
        let token = aws_token(&emulators, "alice", &[]);
        let data = bytes(11 * MIB + 5, 59);
        let ticket = server.request_upload(&token, "s.bin", &data);
        let link = ticket["upload"]["url"].as_str().unwrap();
        // Part 2, of other bytes, sent first by someone else.
        let other = bytes(5 * MIB, 60);
        let hex = sluice::Sha256::of(&other).to_hex();
        let target =
            |hex: &str| request("POST", &format!("{link}/parts/2?sha256={hex}"), &[], None);
        assert_eq!(put_to_target(&target(&hex).text(), &other).status, 200);
        // Stored: no second target for it, whoever asks.
        let own = sluice::Sha256::of(&data[5 * MIB..10 * MIB]).to_hex();
        let refused = target(&own);
        assert_eq!(refused.status, 400, "{}", refused.text());
        assert!(
            refused.text().contains("already stored"),
            "{}",
            refused.text()
        );

        // The owner's line: part 2 is listed, the whole is not the file.
        let work = tempfile::tempdir().unwrap();
        std::fs::write(work.path().join("s.bin"), &data).unwrap();
        let line = ticket["command"].as_str().unwrap();
        let spoiled = sh(line, work.path());
        assert!(!spoiled.status.success());
        assert!(
            out_text(&spoiled).contains("run the same upload command again"),
            "{}",
            out_text(&spoiled)
        );
        // The same line again: every part sent afresh, proven, ready.
        let again = run_counting(line, work.path(), None);
        assert!(again.status.success(), "{}", out_text(&again));
        assert_eq!(sent(work.path()), 3);
        let download = server.download_ticket(&token, ticket["handle"].as_str().unwrap());
        let down = tempfile::tempdir().unwrap();
        let out = sh(download["command"].as_str().unwrap(), down.path());
        assert!(out.status.success(), "{}", out_text(&out));
        assert!(std::fs::read(down.path().join("s.bin")).unwrap() == data);
    }

    /// Readiness is the stored checksum, not the object's existence: s3s-fs
    /// keeps the bytes of a PUT it answered BadDigest to (S3 stores
    /// nothing), without a checksum, and such a file is never ready.
    #[test]
    fn a_body_s3_refused_is_never_ready() {
        let emulators = Emulators::start();
        provision(&emulators, "refused");
        let (server, _dir) = aws_server(&emulators, "refused", &[]);
        let token = aws_token(&emulators, "alice", &[]);
        let data = bytes(2 * MIB, 9);
        let ticket = server.request_upload(&token, "r.bin", &data);
        let work = tempfile::tempdir().unwrap();
        let mut wrong = data.clone();
        wrong[11] ^= 1;
        std::fs::write(work.path().join("r.bin"), &wrong).unwrap();
        let out = sh(ticket["command"].as_str().unwrap(), work.path());
        assert!(out_text(&out).contains("BadDigest"), "{}", out_text(&out));
        let handle = ticket["handle"].as_str().unwrap();
        assert_eq!(server.resolve(&token, handle).status, 409, "not ready");
        let list =
            crate::util::call_tool(&server.base, &token, "list_files", serde_json::json!({}));
        assert_eq!(
            list["structuredContent"]["files"][0]["state"], "pending",
            "{list}"
        );
    }

    #[test]
    fn parts_whose_whole_is_not_the_declared_file_never_turn_ready() {
        let emulators = Emulators::start();
        provision(&emulators, "liar");
        let (server, _dir) = aws_server(&emulators, "liar", PARTS);
        let token = aws_token(&emulators, "alice", &[]);
        upload_a_liar(&server, &token);
        let list =
            crate::util::call_tool(&server.base, &token, "list_files", serde_json::json!({}));
        let files = &list["structuredContent"]["files"];
        assert_eq!(files[0]["state"], "pending", "{list}");
        // `file.rejected`, for the table's stream: an item of its own,
        // which the events function's filter takes (an INSERT with `ev`).
        let events = tokio::runtime::Runtime::new().unwrap().block_on(async {
            let (_, ledger) = emulators.backends("liar");
            sluice_testkit::emulators::items_with_events(&ledger)
                .await
                .iter()
                .filter(|i| i["pk"].as_s().unwrap().starts_with("ev#"))
                .map(|i| {
                    let body = i[sluice_aws::EVENT].as_s().unwrap();
                    serde_json::from_str::<Value>(body).unwrap()
                })
                .collect::<Vec<_>>()
        });
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0]["type"], "file.rejected", "{events:?}");
        assert_eq!(
            events[0]["data"]["file_id"], files[0]["file_id"],
            "{events:?} {list}"
        );
    }
}

/// An upload in parts whose link has expired: the line says to ask again,
/// in words, and nothing is joined.
#[test]
fn an_expired_upload_in_parts_says_to_ask_again() {
    let emulators = Emulators::start();
    let (server, _dir, token) = on_the_bucket(
        &emulators,
        "expired",
        &[
            // Expiry is a whole second: a link of two lives one at least.
            ("SLUICE_HANDLE_TTL_SECS", "3"),
            ("SLUICE_UPLOAD_TTL_SECS", "2"),
        ],
    );
    let data = bytes(6 * MIB, 2);
    let ticket = server.request_upload(&token, "late.bin", &data);
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("late.bin"), &data).unwrap();
    let link = ticket["upload"]["url"].as_str().unwrap();
    let script = request("GET", &format!("{link}/sh"), &[], None).text();
    std::thread::sleep(std::time::Duration::from_secs(4));
    // A script fetched in time, run by the line after the link expired,
    // says what to do.
    std::fs::write(work.path().join("fetched.sh"), &script).unwrap();
    let line = ticket["command"].as_str().unwrap();
    let out = sh(
        &line.replacen("s=$(curl -fsS \"$L/sh\")", "s=$(cat fetched.sh)", 1),
        work.path(),
    );
    assert!(!out.status.success(), "{}", out_text(&out));
    assert!(
        out_text(&out).contains("expired or is unknown: call request_upload again"),
        "{}",
        out_text(&out)
    );
    // The line itself fails loudly (its script is refused: one uniform 404).
    let line = sh(ticket["command"].as_str().unwrap(), work.path());
    assert!(!line.status.success(), "{}", out_text(&line));
    assert_eq!(
        request("GET", &format!("{link}/parts"), &[], None).status,
        404
    );
    assert!(
        sluice_testkit::files_under(emulators.s3_dir())
            .iter()
            .all(|p| !p.to_string_lossy().contains("late.bin")),
        "nothing joined"
    );
}
