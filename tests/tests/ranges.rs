//! Links a preview cannot burn, resumable by `Range`: a download link is
//! spent when its last byte has been delivered once. `HEAD`, the person's
//! page (what a browser or a chat's unfurler asking for HTML gets) and
//! ranges short of the end spend nothing; every byte sent is charged to a
//! budget of twice the file; curl resumes a cut download on the same link.
//! Locally (sluice sends the bytes) and on S3 (the resolver redirects to a
//! presigned GET that honours `Range` itself).

use crate::util::{
    Emulators, Server, aws_server, aws_token, bytes, out_text, provision, request, sh,
};

/// What a chat's link preview sends: Slack's unfurler asking for HTML.
const UNFURLER: [(&str, &str); 2] = [
    (
        "User-Agent",
        "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
    ),
    ("Accept", "text/html,application/xhtml+xml,*/*;q=0.8"),
];

/// Uploads `data` as alice and returns a fresh download ticket's link and line.
fn link_for(server: &Server, token: &str, name: &str, data: &[u8]) -> (String, String) {
    let handle = server.upload(token, name, data)["handle"]
        .as_str()
        .unwrap()
        .to_owned();
    let ticket = server.download_ticket(token, &handle);
    (
        ticket["download"]["url"].as_str().unwrap().to_owned(),
        ticket["command"].as_str().unwrap().to_owned(),
    )
}

/// A preview's `HEAD`, its page and a first kilobyte, then the line on
/// the same link: the file arrives whole, and only then is the link spent.
/// Streamed (over 1 MiB) and read whole (under) alike.
#[test]
fn a_preview_then_the_line_on_the_same_link_delivers_the_file_whole() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &[]);
    for size in [3 * 1024 * 1024 + 11, 5000] {
        let data = bytes(size, 7);
        let sha = sluice::Sha256::of(&data).to_hex();
        let (url, line) = link_for(&server, &token, "report <v2>.pdf", &data);

        let head = request("HEAD", &url, &UNFURLER, None);
        assert_eq!(head.status, 200);
        assert_eq!(head.header("content-length"), Some(&*size.to_string()));
        assert_eq!(head.header("accept-ranges"), Some("bytes"));

        let page = request("GET", &url, &UNFURLER, None);
        assert_eq!(page.status, 200);
        assert!(
            page.header("content-type")
                .unwrap()
                .starts_with("text/html")
        );
        let html = page.text();
        assert!(html.contains("report &lt;v2&gt;.pdf"), "{html}");
        assert!(!html.contains("<v2>"), "the name is escaped");
        assert!(html.contains(&sha) && html.contains(&size.to_string()));
        assert!(html.contains("href=\"?save\""), "one button that saves");
        assert_eq!(page.header("referrer-policy"), Some("no-referrer"));
        // A preview that asks for no HTML, known by its agent alone.
        let bot = request("GET", &url, &[UNFURLER[0], ("Accept", "*/*")], None);
        assert!(bot.header("content-type").unwrap().starts_with("text/html"));

        let first = request("GET", &url, &[("Range", "bytes=0-1023")], None);
        assert_eq!(first.status, 206);
        assert_eq!(first.body, &data[..1024]);
        assert_eq!(
            first.header("content-range"),
            Some(&*format!("bytes 0-1023/{size}"))
        );

        let work = tempfile::tempdir().unwrap();
        let out = sh(&line, work.path());
        assert!(out.status.success(), "{}", out_text(&out));
        assert_eq!(
            std::fs::read(work.path().join("report _v2_.pdf")).unwrap(),
            data
        );
        for spent in [
            request("GET", &url, &[], None),
            request("HEAD", &url, &[], None),
            request("GET", &url, &UNFURLER, None),
        ] {
            assert_eq!(spent.status, 404, "spent once its last byte went");
        }
    }
}

/// A download cut after its first mebibyte goes on with `curl -C -` on the
/// same link: the rest arrives as a `206`, the whole verifies, and the
/// link is then spent.
#[test]
fn curl_resumes_a_cut_download_on_the_same_link() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &[]);
    let data = bytes(4 * 1024 * 1024 + 3, 8);
    let (url, _) = link_for(&server, &token, "data.bin", &data);
    let work = tempfile::tempdir().unwrap();
    let quoted = sluice::curl::shell_quote(&url);
    // The first MiB, as a browser that dropped the download would hold it.
    let cut = sh(
        &format!("curl -sSf -r 0-1048575 -o data.bin {quoted}"),
        work.path(),
    );
    assert!(cut.status.success(), "{}", out_text(&cut));
    assert_eq!(
        std::fs::metadata(work.path().join("data.bin"))
            .unwrap()
            .len(),
        1 << 20
    );
    let resumed = sh(
        &format!("curl -sSf -C - -o data.bin -w '%{{http_code}}' {quoted}"),
        work.path(),
    );
    assert!(resumed.status.success(), "{}", out_text(&resumed));
    assert_eq!(String::from_utf8_lossy(&resumed.stdout), "206");
    assert_eq!(std::fs::read(work.path().join("data.bin")).unwrap(), data);
    assert_eq!(request("GET", &url, &[], None).status, 404, "spent");
}

/// The bad-input rows: a range past the end is `416` naming the size and
/// spends nothing; several ranges get the whole file (`200`); a link that
/// has sent twice the file without its last byte is `410`, saying what to
/// do.
#[test]
fn bad_ranges_and_a_link_past_its_budget_are_refused_as_documented() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &[]);
    let data = bytes(1000, 9);
    let (url, _) = link_for(&server, &token, "a.bin", &data);

    let past = request("GET", &url, &[("Range", "bytes=1000-")], None);
    assert_eq!(past.status, 416);
    assert_eq!(past.header("content-range"), Some("bytes */1000"));

    // 999 bytes twice is within the budget of 2000; a third time is not.
    for _ in 0..2 {
        let most = request("GET", &url, &[("Range", "bytes=0-998")], None);
        assert_eq!(most.status, 206);
        assert_eq!(most.body, &data[..999]);
    }
    let over = request("GET", &url, &[("Range", "bytes=0-998")], None);
    assert_eq!(over.status, 410, "{}", over.text());
    assert!(
        over.message().contains("ask for a new link"),
        "{}",
        over.text()
    );
    // The budget is the link's: a fresh link delivers.
    let (fresh, _) = link_for(&server, &token, "b.bin", &data);
    let several = request("GET", &fresh, &[("Range", "bytes=0-9,20-29")], None);
    assert_eq!(several.status, 200, "several ranges: the whole file");
    assert_eq!(several.body, data);
    assert_eq!(request("GET", &fresh, &[], None).status, 404, "spent");
}

/// On S3 the resolver answers `HEAD` and the page itself, spending
/// nothing; a range short of the end is a redirect to a presigned GET that
/// honours it (`206` from the store), and the link lives on; the redirect
/// that hands out the last byte spends it (the resolver cannot see S3's
/// bytes arrive, so it counts them as they are handed out). A server that
/// lives on zips files from S3 as it does from its directory.
#[test]
fn on_s3_a_preview_does_not_burn_the_link_and_the_store_honours_range() {
    let emulators = Emulators::start();
    provision(&emulators, "ranges");
    let (server, _server_dir) = aws_server(&emulators, "ranges", &[]);
    let token = aws_token(&emulators, "alice", &[]);
    let data = bytes(300_000, 10);
    let (url, line) = link_for(&server, &token, "r.bin", &data);

    let head = request("HEAD", &url, &[], None);
    assert_eq!(head.status, 200, "answered by the resolver, not redirected");
    assert_eq!(head.header("content-length"), Some("300000"));
    let page = request("GET", &url, &UNFURLER, None);
    assert_eq!(page.status, 200);
    assert!(page.text().contains("r.bin"));

    let ranged = request("GET", &url, &[("Range", "bytes=100-199")], None);
    assert_eq!(ranged.status, 307);
    let location = ranged.header("location").unwrap().to_owned();
    let got = request("GET", &location, &[("Range", "bytes=100-199")], None);
    assert_eq!(got.status, 206, "the presigned GET honours Range");
    assert_eq!(got.body, &data[100..200]);

    let work = tempfile::tempdir().unwrap();
    let out = sh(&line, work.path());
    assert!(out.status.success(), "{}", out_text(&out));
    assert_eq!(std::fs::read(work.path().join("r.bin")).unwrap(), data);
    assert_eq!(request("GET", &url, &[], None).status, 404, "spent");

    // A server that lives on zips files it reads from S3 too.
    let handle = server.upload(&token, "z.bin", b"z")["handle"]
        .as_str()
        .unwrap()
        .to_owned();
    let zip = crate::util::tool_ok(&crate::util::call_tool(
        &server.base,
        &token,
        "get_download_urls",
        serde_json::json!({"files": [handle], "zip": true}),
    ));
    let out = sh(zip["zip"]["command"].as_str().unwrap(), work.path());
    assert!(out.status.success(), "{}", out_text(&out));
    let name = zip["zip"]["file_name"].as_str().unwrap();
    let test = sh(&format!("unzip -t '{name}'"), work.path());
    assert!(test.status.success(), "{}", out_text(&test));
}
