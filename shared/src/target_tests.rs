//! The part protocol's one grammar (docs/ARCHITECTURE.md, "The part
//! target"), held against its three readers: the same answers go through
//! the parts script (a part's target), the batch script (a whole file's
//! target) and the page (`upload.js`'s `partTarget`, run in Node), and
//! each must reach the same verdict: refused, or the same URL with the
//! same headers. The scripts run whole, under dash and under bash as `sh`,
//! with a stand-in `curl` first on the PATH that answers the target and
//! records what would be PUT; nothing leaves the machine.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Command;

use crate::curl::{BATCH_SCRIPT, PARTS_SCRIPT, parts_script_sha256};
use crate::scripts_tests::{Run, run_line, shells};
use crate::sha::Sha256;

const ORIGIN: &str = "https://store.example";
const LINK: &str = "https://up.example/u/T";

/// What a reader made of a target: the URL and headers it would PUT with,
/// or nothing (refused).
type Verdict = Option<(String, Vec<String>)>;

/// The answers, each with whether the grammar takes it.
fn cases() -> Vec<(&'static str, String, bool)> {
    let ok_url = format!("{ORIGIN}/files/o/f?partNumber=1&X-Amz-Signature=ab12");
    let with = |rest: &str| format!("{ok_url}\n{rest}");
    vec![
        (
            "well-formed",
            with("x-amz-checksum-sha256: q83vEjRWeJA=\n"),
            true,
        ),
        ("no header, no last line feed", ok_url.clone(), true),
        (
            "every header, any case, blank lines",
            with(
                "Content-Type: text/plain; charset=utf-8\n\nIf-None-Match: *\nX-Amz-Checksum-Sha256: AAAA+/==\nx-amz-sdk-checksum-algorithm: SHA256\n",
            ),
            true,
        ),
        (
            "a value that is code is data",
            with("Content-Type: $(touch pwned)`touch pwned`;touch pwned\n"),
            true,
        ),
        ("an extra header", with("Authorization: Bearer x\n"), false),
        ("an option for a header", with("-o: /etc/passwd\n"), false),
        (
            "a header twice",
            with("content-type: a\nContent-Type: b\n"),
            false,
        ),
        (
            "another origin",
            "https://elsewhere.example/x\n".into(),
            false,
        ),
        (
            "the origin as a prefix",
            format!("{ORIGIN}.evil/x\n"),
            false,
        ),
        ("the bare origin", format!("{ORIGIN}\n"), false),
        ("a space in the URL", format!("{ORIGIN}/a b\n"), false),
        (
            "CRLF",
            with("x-amz-checksum-sha256: AAAA\r\n").replace('\n', "\r\n"),
            false,
        ),
        ("a CR in a value", with("Content-Type: a\rb\n"), false),
        ("a tab in a value", with("Content-Type: a\tb\n"), false),
        ("beyond ASCII", with("Content-Type: caf\u{e9}\n"), false),
        ("a control byte", with("Content-Type: a\u{1b}[2J\n"), false),
        ("not base64", with("x-amz-checksum-sha256: a b\n"), false),
        (
            "If-None-Match other than *",
            with("If-None-Match: abc\n"),
            false,
        ),
        ("an empty value", with("Content-Type: \n"), false),
        (
            "a line that is not a header",
            with("x-amz-checksum-sha256 AAAA\n"),
            false,
        ),
        ("an empty answer", String::new(), false),
        ("the URL not first", format!("\n{ok_url}\n"), false),
        (
            "oversize",
            format!("{ok_url}&pad={}\n", "a".repeat(4096)),
            false,
        ),
    ]
}

/// A stand-in `curl` in `dir`: the target for `…/parts/N` and `…/to`, an
/// empty list of stored parts, a completion, the batch's list; a PUT's
/// arguments, one a line, to `dir/sent`.
fn stub(dir: &Path, target: &str, list: &str) {
    std::fs::write(dir.join("target"), target).unwrap();
    std::fs::write(dir.join("list"), list).unwrap();
    let _ = std::fs::remove_file(dir.join("sent"));
    let script = format!(
        "#!/bin/sh\nout= prev= put=\nfor a in \"$@\"; do case \"$prev\" in -o) out=$a;; esac; [ \"$a\" = PUT ] && put=1; prev=$a; done\n\
         if [ -n \"$put\" ]; then printf '%s\\n' \"$@\" > {d}/sent; exit 0; fi\n\
         case \"$a\" in\n*/parts) : > \"$out\"; printf 200;;\n*/parts/*|*/to) cp {d}/target \"$out\";;\n\
         */complete) echo '{{}}' > \"$out\"; printf 200;;\n*/b/*) cp {d}/list \"$out\";;\n*) exit 22;;\nesac\n",
        d = dir.display()
    );
    std::fs::write(dir.join("curl"), script).unwrap();
    std::fs::set_permissions(dir.join("curl"), std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// What the stand-in recorded of the PUT (`sent`): its URL (the last
/// argument) and every header after `-H`; nothing if no PUT was made.
fn put_made(sent: &str) -> Verdict {
    let args: Vec<&str> = sent.lines().collect();
    let headers = args
        .windows(2)
        .filter(|w| w[0] == "-H")
        .map(|w| w[1].to_owned())
        .collect();
    Some((args.last()?.to_string(), headers))
}

/// Runs `script` with `args` as a line runs it (`sh -c "$s" sluice …`),
/// in `work` under the shell in `shell_dir`, the stand-in in `stub` first
/// on the PATH.
fn run(work: &Path, shell_dir: &Path, stub: &Path, script: &str, args: &[&str]) -> Run {
    std::fs::write(stub.join("script"), script).unwrap();
    let args: Vec<String> = args.iter().map(|a| crate::curl::shell_quote(a)).collect();
    let line = format!("sh -c \"$(cat .stub/script)\" sluice {}", args.join(" "));
    run_line(work, shell_dir, stub, &line)
}

/// The page's verdicts on `targets`: `upload.js`'s `partTarget`, run in
/// Node as the page defines it.
fn page_verdicts(targets: &[String]) -> Vec<Verdict> {
    let js = include_str!("web/upload.js");
    let from = js
        .find("const TARGET_VALUES")
        .expect("upload.js defines TARGET_VALUES");
    let to = js
        .find("class Refused extends Error {}")
        .expect("upload.js defines Refused");
    let program = format!(
        "const partTarget = new Function({source} + '\\nclass Refused extends Error {{}}\\nreturn partTarget;')();\n\
         const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));\n\
         console.log(JSON.stringify(cases.map((c) => {{\n\
           try {{ const t = partTarget(c, {origin}); return [t.url, Object.entries(t.headers).map(([n, v]) => `${{n}}: ${{v}}`)]; }}\n\
           catch (e) {{ if (e.constructor.name !== 'Refused') throw e; return null; }}\n\
         }})));",
        source = serde_json::to_string(&js[from..to]).unwrap(),
        origin = serde_json::to_string(ORIGIN).unwrap(),
    );
    let mut child = Command::new("node")
        .arg("-e")
        .arg(program)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("node runs (Node 20 is on every machine the tests run on)");
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(serde_json::to_string(targets).unwrap().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_parts_script_the_batch_script_and_the_page_read_a_target_alike() {
    let cases = cases();
    let targets: Vec<String> = cases.iter().map(|(_, t, _)| t.clone()).collect();
    let page = page_verdicts(&targets);
    let work = tempfile::tempdir().unwrap();
    let stub_dir = work.path().join(".stub");
    std::fs::create_dir_all(&stub_dir).unwrap();
    let data = b"hello";
    std::fs::write(work.path().join("f.bin"), data).unwrap();
    let sha = Sha256::of(data);
    let list = format!(
        "{}\t5\tf.bin\t{}/u/T1\t0\n",
        sha.to_hex(),
        "https://up.example"
    );
    let manifest = Sha256::of(format!("{}\t5\tf.bin\n", sha.to_hex()).as_bytes()).to_hex();
    for (name, shell) in shells(work.path()) {
        for ((case, target, takes), page) in cases.iter().zip(&page) {
            stub(&stub_dir, target, &list);
            let parts_run = run(
                work.path(),
                &shell,
                &stub_dir,
                PARTS_SCRIPT,
                &["f.bin", LINK, "1", "5", "5", ORIGIN],
            );
            let (parts_ok, parts_said) = (parts_run.ok, parts_run.said);
            let parts = put_made(&parts_run.sent);
            stub(&stub_dir, target, &list);
            let batch_run = run(
                work.path(),
                &shell,
                &stub_dir,
                BATCH_SCRIPT,
                &[
                    "https://up.example/b/B",
                    ORIGIN,
                    &parts_script_sha256(),
                    &manifest,
                ],
            );
            let (batch_ok, batch_said) = (batch_run.ok, batch_run.said);
            let batch = put_made(&batch_run.sent);
            let said = format!("{name}, {case}:\nparts: {parts_said}\nbatch: {batch_said}");
            assert_eq!(parts.is_some(), *takes, "{said}");
            assert_eq!(parts_ok, *takes, "{said}");
            assert_eq!(batch_ok, *takes, "{said}");
            assert_eq!(parts, batch, "{said}");
            assert_eq!(&parts, page, "the page reads it as the scripts do: {said}");
            if !takes {
                assert!(parts_said.contains("its target"), "{said}");
                assert!(batch_said.contains("its target"), "{said}");
            }
            assert!(!work.path().join("pwned").exists(), "{said}: ran code");
        }
    }
}
