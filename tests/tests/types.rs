//! The bytes' real type (`SLUICE_TYPE_CHECK`): real files of each kind (a
//! PDF, a PNG, an ELF, a ZIP) declared truly and falsely. `note` records
//! the type the bytes show (listed, signed in the receipt); `refuse` also
//! rejects an executable or an archive declared a document, with the
//! reason, keeping nothing. Through the returned line and a plain PUT.

use serde_json::{Value, json};

use crate::util::{Server, call_tool, out_text, request, sh, stored_objects, tool_error, tool_ok};

/// Real files: a PDF and a PNG written as their formats say, an ELF
/// executable from this machine, a ZIP written by Python's `zipfile`.
fn real_files() -> [(&'static str, Vec<u8>); 4] {
    let pdf = b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n\
        2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj\n\
        trailer << /Root 1 0 R >>\n%%EOF\n"
        .to_vec();
    let made = |script: &str| {
        let out = std::process::Command::new("python3")
            .args(["-c", script])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", out_text(&out));
        out.stdout
    };
    let png = made(
        "import struct,sys,zlib\n\
         def chunk(t,d): return struct.pack('>I',len(d))+t+d+struct.pack('>I',zlib.crc32(t+d))\n\
         sys.stdout.buffer.write(b'\\x89PNG\\r\\n\\x1a\\n'+chunk(b'IHDR',struct.pack('>IIBBBBB',1,1,8,2,0,0,0))\
         +chunk(b'IDAT',zlib.compress(b'\\x00\\xff\\x00\\x00'))+chunk(b'IEND',b''))",
    );
    let zip = made(
        "import io,sys,zipfile\nb=io.BytesIO()\n\
         with zipfile.ZipFile(b,'w') as z: z.writestr('a.txt','hello')\n\
         sys.stdout.buffer.write(b.getvalue())",
    );
    let elf = std::fs::read("/bin/true").unwrap();
    assert_eq!(&elf[..4], b"\x7fELF");
    [("pdf", pdf), ("png", png), ("elf", elf), ("zip", zip)]
}

fn bytes_of(kind: &str) -> Vec<u8> {
    real_files()
        .into_iter()
        .find(|(k, _)| *k == kind)
        .unwrap()
        .1
}

/// Each of alice's files as `list_files` shows it, by name.
fn listed(server: &Server, token: &str) -> Vec<Value> {
    let page = tool_ok(&call_tool(&server.base, token, "list_files", json!({})));
    page["files"].as_array().unwrap().clone()
}

fn entry<'a>(files: &'a [Value], name: &str) -> &'a Value {
    files.iter().find(|f| f["filename"] == name).unwrap()
}

#[test]
fn refuse_rejects_an_executable_or_archive_declared_a_document_and_keeps_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(dir.path(), &[("SLUICE_TYPE_CHECK", "refuse")]);
    let token = server.token("alice", &[]);

    // Declared what they are: ready, the type their bytes show recorded.
    for (name, kind, shown) in [
        ("report.pdf", "pdf", "application/pdf"),
        ("pixel.png", "png", "image/png"),
        ("tool.bin", "elf", "application/x-executable"),
        ("bundle.zip", "zip", "application/zip"),
    ] {
        server.upload(&token, name, &bytes_of(kind));
        let files = listed(&server, &token);
        let file = entry(&files, name);
        assert_eq!(file["state"], "ready", "{name}: {file}");
        assert_eq!(file["detected_type"], shown, "{name}: {file}");
    }
    let kept = stored_objects(&server.data_dir).len();

    // Declared documents falsely: the upload line fails, saying why; the
    // file is rejected with the reason, and nothing of it is kept.
    for (name, kind, what) in [
        ("invoice.pdf", "elf", "an executable"),
        ("photo.png", "zip", "an archive"),
    ] {
        let data = bytes_of(kind);
        let ticket = server.request_upload(&token, name, &data);
        let work = tempfile::tempdir().unwrap();
        std::fs::write(work.path().join(name), &data).unwrap();
        let out = sh(ticket["command"].as_str().unwrap(), work.path());
        assert!(!out.status.success(), "{name} was refused");
        let said = out_text(&out);
        assert!(
            said.contains("type check") && said.contains(what),
            "{name}: {said}"
        );
        let files = listed(&server, &token);
        let file = entry(&files, name);
        assert_eq!(file["state"], "rejected", "{file}");
        assert!(
            file["reason"]
                .as_str()
                .unwrap()
                .starts_with("type: its bytes are"),
            "{file}"
        );
        let refused = call_tool(
            &server.base,
            &token,
            "get_download_url",
            json!({"file": ticket["handle"]}),
        );
        assert!(
            tool_error(&refused).contains("rejected by its type check"),
            "{refused}"
        );
    }
    assert_eq!(
        stored_objects(&server.data_dir).len(),
        kept,
        "nothing of them kept"
    );

    // A plain PUT of a false one: 409 with the reason, nothing kept.
    let data = bytes_of("elf");
    let ticket = server.request_upload(&token, "notes.txt", &data);
    let put = request(
        "PUT",
        ticket["upload"]["url"].as_str().unwrap(),
        &[],
        Some(&data),
    );
    assert_eq!(put.status, 409, "{}", put.text());
    assert!(
        put.message().contains("type: its bytes are an executable"),
        "{}",
        put.text()
    );
    assert_eq!(stored_objects(&server.data_dir).len(), kept);
}

/// By default (`note`) nothing is refused: the type the bytes show is
/// listed and signed in the receipt beside the one declared.
#[test]
fn note_records_the_type_the_bytes_show_and_the_receipt_signs_it() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &[]);
    let handle = server.upload(&token, "invoice.pdf", &bytes_of("elf"))["handle"]
        .as_str()
        .unwrap()
        .to_owned();
    let files = listed(&server, &token);
    let file = entry(&files, "invoice.pdf");
    assert_eq!(file["state"], "ready");
    assert_eq!(file["content_type"], "application/pdf");
    assert_eq!(file["detected_type"], "application/x-executable");
    let receipt = tool_ok(&call_tool(
        &server.base,
        &token,
        "get_file_receipt",
        json!({"file": handle}),
    ));
    let payload = receipt["receipt"]
        .as_str()
        .unwrap()
        .split('.')
        .nth(1)
        .unwrap();
    use base64::Engine as _;
    let claims: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(claims["file"]["declared_type"], "application/pdf");
    assert_eq!(claims["file"]["detected_type"], "application/x-executable");
}
