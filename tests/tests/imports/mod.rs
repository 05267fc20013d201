//! Files from the web (`import_file`, `POST /imports`): the server fetches a
//! URL into a file, behind the import guard. Every fetch here goes to a
//! server on 127.0.0.1: the end-to-end imports run with
//! `SLUICE_IMPORT_ALLOW_LOOPBACK=true`, and the refusals of loopback's
//! spellings run with it off, so a broken guard could only ever reach
//! loopback. Every other range is tested on the guard's decision itself
//! (`sluice::fetch::guard`'s tests, and `props.rs`), never by connecting.

mod lasting;

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::util::{
    Server, bytes, call_tool, out_text, post_json, request, sh, tool_error, tool_names, tool_ok,
};

const SCOPES: &[&str] = &["files:read", "files:write"];

/// What the origin answers on a path.
pub(crate) enum Answer {
    /// A status, headers and a body, then the connection closes.
    Whole(u16, Vec<(&'static str, String)>, Vec<u8>),
    /// The head, declaring `len` bytes, then one byte a second.
    Trickle(usize),
    /// Nothing, ever (the connection is held open).
    Never,
    /// A 200 and a body of no declared length (delimited by the close).
    Unsized(Vec<u8>),
}

/// A web server on 127.0.0.1 standing in for the host a file is on; it
/// counts the requests it was sent.
pub(crate) struct Origin {
    pub(crate) port: u16,
    hits: Arc<AtomicUsize>,
}

impl Origin {
    pub(crate) fn start(answer: fn(&str, &[u8]) -> Answer, data: Vec<u8>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let counted = hits.clone();
        let data = Arc::new(data);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (hits, data) = (counted.clone(), data.clone());
                std::thread::spawn(move || serve(stream, answer, &data, &hits));
            }
        });
        Self { port, hits }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub(crate) fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

fn serve(
    mut stream: TcpStream,
    answer: fn(&str, &[u8]) -> Answer,
    data: &[u8],
    hits: &AtomicUsize,
) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    hits.fetch_add(1, Ordering::SeqCst);
    let head = String::from_utf8_lossy(&head).into_owned();
    let path = head.split(' ').nth(1).unwrap_or("/").to_owned();
    // What the importer sends: no credential, a User-Agent naming sluice.
    let lower = head.to_ascii_lowercase();
    assert!(
        !lower.contains("authorization:") && !lower.contains("cookie:"),
        "{head}"
    );
    assert!(lower.contains("user-agent: sluice/"), "{head}");
    match answer(&path, data) {
        Answer::Whole(status, headers, body) => {
            let mut out = format!("HTTP/1.1 {status} X\r\nConnection: close\r\n");
            if !headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            {
                out.push_str(&format!("Content-Length: {}\r\n", body.len()));
            }
            for (k, v) in headers {
                out.push_str(&format!("{k}: {v}\r\n"));
            }
            out.push_str("\r\n");
            let _ = stream.write_all(out.as_bytes());
            let _ = stream.write_all(&body);
        }
        Answer::Trickle(len) => {
            let _ = stream.write_all(
                format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n")
                    .as_bytes(),
            );
            for _ in 0..len {
                if stream.write_all(b"x").is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        Answer::Never => std::thread::sleep(Duration::from_secs(120)),
        Answer::Unsized(body) => {
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n");
            let _ = stream.write_all(&body);
        }
    }
}

/// The routes of the origin the tests import from.
pub(crate) fn routes(path: &str, data: &[u8]) -> Answer {
    let ok = |body: Vec<u8>| Answer::Whole(200, vec![], body);
    let to = |place: &str| Answer::Whole(302, vec![("Location", place.to_owned())], vec![]);
    match path {
        "/data.bin" | "/datasets/v1/data.bin?X-Amz-Signature=secret" => ok(data.to_vec()),
        "/named" => Answer::Whole(
            200,
            vec![(
                "Content-Disposition",
                "attachment; filename=\"../../.evil name.sh\"".into(),
            )],
            data.to_vec(),
        ),
        "/hop1" => to("/hop2"),
        "/hop2" => to("/data.bin"),
        "/loop" => to("/loop"),
        // Refused targets that are this machine all the same, so that even
        // a broken guard would reach nothing else: the other ranges are
        // tested on the guard's decision (`sluice::fetch::guard`).
        "/this-network" => to("http://0.0.0.0/x"),
        "/unspecified" => to("http://[::]/latest/meta-data/"),
        "/missing" => Answer::Whole(404, vec![], b"no".to_vec()),
        "/broken" => Answer::Whole(503, vec![], b"down".to_vec()),
        "/longer" => {
            let mut more = data.to_vec();
            more.extend_from_slice(b"and more");
            ok(more)
        }
        "/shorter" => ok(data[..data.len() - 1].to_vec()),
        "/other" => {
            let mut other = data.to_vec();
            other[0] ^= 1;
            ok(other)
        }
        "/slow" => Answer::Trickle(100),
        "/never" => Answer::Never,
        _ => Answer::Whole(404, vec![], vec![]),
    }
}

/// A server that imports from `origin` (loopback admitted, its port too).
pub(crate) fn importing(origin: &Origin, extra: &[(&str, &str)]) -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let port = origin.port.to_string();
    let mut env = vec![
        ("SLUICE_IMPORT_ALLOW_LOOPBACK", "true"),
        ("SLUICE_IMPORT_PORTS", port.as_str()),
    ];
    env.extend_from_slice(extra);
    let server = Server::start_in(dir.path(), &env);
    (server, dir)
}

pub(crate) fn import(server: &Server, token: &str, args: Value) -> Value {
    call_tool(&server.base, token, "import_file", args)
}

/// Every answer of the import tools stays within a kilobyte in each view:
/// the structured content, and each text block.
pub(crate) fn small(result: &Value) -> &Value {
    let structured = result["structuredContent"].to_string();
    assert!(
        structured.len() <= 1024,
        "{} bytes: {structured}",
        structured.len()
    );
    for block in result["content"].as_array().unwrap() {
        let text = block["text"].as_str().unwrap_or_default();
        assert!(text.len() <= 1024, "{} bytes: {text}", text.len());
    }
    result
}

/// An import that ended rejected, with its reason.
pub(crate) fn rejected(result: &Value) -> String {
    let got = tool_ok(small(result));
    assert_eq!(got["state"], "rejected", "{got}");
    assert!(
        got.get("handle").is_none(),
        "no handle for bytes not in: {got}"
    );
    got["reason"].as_str().unwrap().to_owned()
}

/// The file's bytes, through the download line `get_download_url` returns,
/// and the name it was saved under.
pub(crate) fn downloaded(server: &Server, token: &str, handle: &str) -> (Vec<u8>, String) {
    let ticket = tool_ok(&call_tool(
        &server.base,
        token,
        "get_download_url",
        json!({"file": handle}),
    ));
    let work = tempfile::tempdir().unwrap();
    let out = sh(ticket["command"].as_str().unwrap(), work.path());
    assert!(out.status.success(), "{}", out_text(&out));
    let name = ticket["filename"].as_str().unwrap().to_owned();
    let entries: Vec<_> = std::fs::read_dir(work.path()).unwrap().flatten().collect();
    assert_eq!(entries.len(), 1, "one file saved");
    (std::fs::read(entries[0].path()).unwrap(), name)
}

/// A file on a web server comes in through `import_file`, declared or not,
/// redirected or not, and reaches a download and an action's File field
/// byte for byte; `POST /imports` does the same.
#[test]
fn a_file_on_a_web_server_is_imported_and_used_byte_for_byte() {
    let data = bytes(3 * 1024 * 1024 + 17, 58);
    let origin = Origin::start(routes, data.clone());
    let (server, _dir) = importing(&origin, &[]);
    let token = server.token("alice", SCOPES);
    assert!(
        tool_names(&server.base, &token)
            .iter()
            .any(|n| n == "import_file")
    );

    // Nothing declared: pinned to what arrived, the digest said.
    let got = tool_ok(small(&import(
        &server,
        &token,
        json!({"url": origin.url("/datasets/v1/data.bin?X-Amz-Signature=secret")}),
    )));
    assert_eq!(got["state"], "ready", "{got}");
    assert_eq!(got["size"], data.len());
    assert_eq!(got["sha256"], sluice::Sha256::of(&data).to_hex());
    assert_eq!(got["filename"], "data.bin");
    assert_eq!(got["source"], format!("http://127.0.0.1"));
    let (bytes_back, name) = downloaded(&server, &token, got["handle"].as_str().unwrap());
    assert_eq!(name, "data.bin");
    assert!(bytes_back == data, "the download is the bytes served");

    // Declared and followed through two redirects.
    let declared = tool_ok(small(&import(
        &server,
        &token,
        json!({
            "url": origin.url("/hop1"),
            "filename": "report.bin",
            "size": data.len(),
            "sha256": sluice::Sha256::of(&data).to_hex(),
        }),
    )));
    assert_eq!(declared["state"], "ready", "{declared}");
    assert_eq!(declared["filename"], "report.bin");

    // It reaches an action's File field (the example upstream checks the
    // digest of what it receives).
    let attached = tool_ok(&call_tool(
        &server.base,
        &server.token("alice", &["files:read", "files:write", "actions:execute"]),
        "action_attach_document",
        json!({"review_id": 1, "document": declared["handle"]}),
    ));
    assert_eq!(
        attached["files"][0]["sha256"],
        sluice::Sha256::of(&data).to_hex()
    );
    assert_eq!(attached["files"][0]["size"], data.len());

    // A File field a host fills with the file the person attached: the
    // action's tool names it in `_meta["openai/fileParams"]`, and the
    // file is imported on its way to the action.
    let action_tool = listed_tool(&server, &token, "action_attach_document");
    assert_eq!(
        action_tool["_meta"]["openai/fileParams"],
        json!(["document"]),
        "{action_tool}"
    );
    let runs = server.token("alice", &["files:read", "files:write", "actions:execute"]);
    let handed = tool_ok(&call_tool(
        &server.base,
        &runs,
        "action_attach_document",
        json!({"review_id": 2, "document": {
            "download_url": origin.url("/data.bin"),
            "file_id": "file_00000000000000000000000000000001",
            "file_name": "scan.pdf",
            "mime_type": "application/pdf",
        }}),
    ));
    assert_eq!(handed["files"][0]["name"], "scan.pdf", "{handed}");
    assert_eq!(handed["files"][0]["content_type"], "application/pdf");
    assert_eq!(
        handed["files"][0]["sha256"],
        sluice::Sha256::of(&data).to_hex()
    );
    let refused = call_tool(
        &server.base,
        &runs,
        "action_attach_document",
        json!({"review_id": 3, "document": {"download_url": origin.url("/missing"), "file_id": "f"}}),
    );
    assert!(tool_error(&refused).contains("HTTP 404"), "{refused}");

    // Listed among the caller's files.
    let listed = tool_ok(&call_tool(&server.base, &token, "list_files", json!({})));
    let names: Vec<&str> = listed["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["filename"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"report.bin") && names.contains(&"data.bin"),
        "{names:?}"
    );

    // A file a host hands over, in the shape ChatGPT's Apps SDK documents
    // (the tool's `_meta["openai/fileParams"]` names the field; the host
    // fills `{download_url, file_id, file_name?, mime_type?}`).
    let tool = listed_tool(&server, &token, "import_file");
    assert_eq!(
        tool["_meta"]["openai/fileParams"],
        json!(["file"]),
        "{tool}"
    );
    let file_schema = &tool["inputSchema"]["properties"]["file"];
    assert!(
        file_schema.to_string().contains("download_url"),
        "{file_schema}"
    );
    let handed = tool_ok(small(&import(
        &server,
        &token,
        json!({"file": {
            "download_url": origin.url("/data.bin"),
            "file_id": "file_00000000000000000000000000000000",
            "file_name": "photo from chat.png",
            "mime_type": "image/png",
        }}),
    )));
    assert_eq!(handed["state"], "ready", "{handed}");
    assert_eq!(handed["filename"], "photo from chat.png");
    let ticket = tool_ok(&call_tool(
        &server.base,
        &token,
        "get_download_url",
        json!({"file": handed["handle"]}),
    ));
    assert_eq!(ticket["content_type"], "image/png", "{ticket}");
    let neither = import(&server, &token, json!({"filename": "x"}));
    assert!(tool_error(&neither).contains("url"), "{neither}");

    // A name from Content-Disposition is made a plain file name.
    let named = tool_ok(&import(
        &server,
        &token,
        json!({"url": origin.url("/named")}),
    ));
    assert_eq!(named["filename"], "evil name.sh", "{named}");

    // The REST route, and the status of an import by its file id.
    let rest = post_json(
        &format!("{}/imports", server.base),
        Some(&token),
        &json!({"url": origin.url("/data.bin")}),
    );
    assert_eq!(rest.status, 200, "{}", rest.text());
    let id = rest.json()["file_id"].as_str().unwrap().to_owned();
    assert_eq!(rest.json()["state"], "ready");
    let status = request(
        "GET",
        &format!("{}/imports/{id}", server.base),
        &[("Authorization", &format!("Bearer {token}"))],
        None,
    );
    assert_eq!(status.status, 200, "{}", status.text());
    assert_eq!(status.json()["state"], "ready");
    let by_tool = tool_ok(&call_tool(
        &server.base,
        &token,
        "get_import_status",
        json!({"file_id": id}),
    ));
    assert_eq!(by_tool["state"], "ready");
    // Another user's import is not theirs to ask about.
    let bob = server.token("bob", SCOPES);
    let theirs = call_tool(
        &server.base,
        &bob,
        "get_import_status",
        json!({"file_id": id}),
    );
    assert!(tool_error(&theirs).contains("no file"), "{theirs}");
}

/// Bodies that are not the file declared, statuses, redirects past the
/// limit or to a refused address: each rejected with its reason, nothing
/// kept, no file listed.
#[test]
fn bad_answers_are_rejected_with_their_reason_and_nothing_is_kept() {
    let data = bytes(64 * 1024, 59);
    let origin = Origin::start(routes, data.clone());
    let (server, dir) = importing(&origin, &[]);
    let token = server.token("alice", SCOPES);
    let pinned = |path: &str| {
        json!({
            "url": origin.url(path),
            "size": data.len(),
            "sha256": sluice::Sha256::of(&data).to_hex(),
        })
    };
    let why = rejected(&import(&server, &token, pinned("/longer")));
    assert!(
        why.contains("not the") && why.contains("nothing was kept"),
        "{why}"
    );
    let why = rejected(&import(&server, &token, pinned("/shorter")));
    assert!(why.contains("not the") && why.contains("declared"), "{why}");
    let why = rejected(&import(&server, &token, pinned("/other")));
    assert!(why.contains("not the file declared"), "{why}");
    let why = rejected(&import(
        &server,
        &token,
        json!({"url": origin.url("/missing")}),
    ));
    assert!(why.contains("HTTP 404"), "{why}");
    let why = rejected(&import(
        &server,
        &token,
        json!({"url": origin.url("/broken")}),
    ));
    assert!(why.contains("HTTP 503"), "{why}");
    let why = rejected(&import(
        &server,
        &token,
        json!({"url": origin.url("/loop")}),
    ));
    assert!(why.contains("redirected more than 5 times"), "{why}");
    let why = rejected(&import(
        &server,
        &token,
        json!({"url": origin.url("/this-network")}),
    ));
    assert!(
        why.contains("this network") && why.contains("0.0.0.0"),
        "{why}"
    );
    let why = rejected(&import(&server, &token, pinned("/unspecified")));
    assert!(why.contains("the unspecified address"), "{why}");
    assert!(!why.contains("meta-data"), "no path in a reason: {why}");
    // A size over the limit is refused before anything is fetched.
    let hits = origin.hits();
    let over = import(
        &server,
        &token,
        json!({"url": origin.url("/data.bin"), "size": 1u64 << 50, "sha256": sluice::Sha256::of(b"").to_hex()}),
    );
    assert!(
        tool_error(&over).contains("over the import limit"),
        "{over}"
    );
    assert_eq!(origin.hits(), hits, "nothing fetched");

    let listed = tool_ok(&call_tool(&server.base, &token, "list_files", json!({})));
    assert_eq!(listed["files"].as_array().unwrap().len(), 0, "{listed}");
    assert!(
        crate::util::stored_objects(dir.path()).is_empty(),
        "no bytes kept"
    );
}

/// A server that sends a byte a second is cut at the import's deadline,
/// one that never answers at the read timeout, while another user's
/// import goes through meanwhile.
#[test]
fn a_slow_server_is_cut_at_its_deadline_while_others_are_served() {
    let data = bytes(256 * 1024, 60);
    let origin = Origin::start(routes, data.clone());
    let (server, _dir) = importing(
        &origin,
        &[
            ("SLUICE_IMPORT_TIMEOUT_SECS", "4"),
            ("SLUICE_IMPORT_READ_TIMEOUT_SECS", "2"),
            ("SLUICE_IMPORTS_PER_USER", "1"),
            // A byte a second passes this floor: the deadline cuts it.
            ("SLUICE_IMPORT_MIN_BYTES_PER_SEC", "1"),
        ],
    );
    let (slow_base, slow_url) = (server.base.clone(), origin.url("/slow"));
    let alice = server.token("alice", SCOPES);
    let slow = std::thread::spawn(move || {
        call_tool(&slow_base, &alice, "import_file", json!({"url": slow_url}))
    });
    let (never_base, never_url) = (server.base.clone(), origin.url("/never"));
    let carol = server.token("carol", SCOPES);
    let never = std::thread::spawn(move || {
        call_tool(
            &never_base,
            &carol,
            "import_file",
            json!({"url": never_url}),
        )
    });
    // Both fetches have reached the origin.
    let waited = std::time::Instant::now();
    while origin.hits() < 2 && waited.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        origin.hits(),
        2,
        "the slow and the silent fetch are under way"
    );
    // One import under way is alice's all (SLUICE_IMPORTS_PER_USER=1).
    let second = import(
        &server,
        &server.token("alice", SCOPES),
        json!({"url": origin.url("/data.bin")}),
    );
    assert!(
        tool_error(&second).contains("imports under way"),
        "{second}"
    );
    let bob = server.token("bob", SCOPES);
    let served = tool_ok(&import(
        &server,
        &bob,
        json!({"url": origin.url("/data.bin")}),
    ));
    assert_eq!(served["state"], "ready", "{served}");
    let why = rejected(&slow.join().unwrap());
    assert!(why.contains("did not finish within 4 s"), "{why}");
    let why = rejected(&never.join().unwrap());
    assert!(why.contains("did not answer in time"), "{why}");
}

/// With loopback not admitted (the default), every spelling of it is
/// refused before a connection, and the origin on loopback is never
/// reached; a port that is not the scheme's, a scheme that is not http(s)
/// and credentials in the URL are refused too. With imports off the tools
/// are not listed.
#[test]
fn loopback_in_any_spelling_is_refused_and_never_reached() {
    let origin = Origin::start(routes, bytes(1024, 61));
    let dir = tempfile::tempdir().unwrap();
    let port = origin.port.to_string();
    let server = Server::start_in(dir.path(), &[("SLUICE_IMPORT_PORTS", port.as_str())]);
    let token = server.token("alice", SCOPES);
    for host in [
        "127.0.0.1",
        "127.1",
        "2130706433",
        "0x7f.1",
        "0177.0.0.1",
        "[::1]",
        "[::ffff:127.0.0.1]",
        "localhost",
    ] {
        let url = format!("http://{host}:{port}/data.bin");
        let result = import(&server, &token, json!({"url": url}));
        let said = match tool_ok_or_err(&result) {
            Ok(v) => v["reason"].as_str().unwrap_or_default().to_owned(),
            Err(e) => e,
        };
        assert!(said.contains("loopback"), "{host}: {said}");
    }
    for (url, why) in [
        ("http://example.com:8080/x".to_owned(), "port 8080"),
        ("ftp://example.com/x".to_owned(), "only http and https"),
        ("file:///etc/passwd".to_owned(), "only http and https"),
        (
            "http://user:pw@example.com/x".to_owned(),
            "user name or password",
        ),
    ] {
        let said = tool_error(&import(&server, &token, json!({"url": url})));
        assert!(said.contains(why), "{url}: {said}");
    }
    assert_eq!(origin.hits(), 0, "loopback was never reached");

    let off_dir = tempfile::tempdir().unwrap();
    let off = Server::start_in(off_dir.path(), &[("SLUICE_IMPORTS", "off")]);
    let names = tool_names(&off.base, &off.token("alice", SCOPES));
    assert!(!names.iter().any(|n| n.contains("import")), "{names:?}");
}

/// The tool `name` as tools/list shows it.
fn listed_tool(server: &Server, token: &str, name: &str) -> Value {
    let listed = crate::util::mcp_call(&server.base, token, "tools/list", json!({}));
    listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} is listed"))
        .clone()
}

/// The answer's structured content, or its error text.
fn tool_ok_or_err(result: &Value) -> Result<Value, String> {
    if result["isError"] == true {
        Err(tool_error(result))
    } else {
        Ok(tool_ok(result))
    }
}
