//! The batch lines and the parts script against a server that lies: lists
//! with numbers that are code, paths that leave the directory, hidden
//! files, and lists that are not the manifest the line pinned. Each runs
//! the real line in a real shell, under dash and under bash as `sh` (what
//! `sh` is on macOS, Fedora and Arch, whose arithmetic runs the `$( )` of an
//! array subscript), with a stand-in `curl` first on the PATH that answers
//! the script and the list and logs every other request; nothing leaves the
//! machine.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::curl::{self, BATCH_SCRIPT, FETCH_SCRIPT, PARTS_SCRIPT};
use crate::sha::Sha256;

const LINK: &str = "http://127.0.0.1:9/b/TOKEN";
const LIST: &str = "http://127.0.0.1:9/g/TOKEN";
const ORIGIN: &str = "http://127.0.0.1:9";

/// The shells a line is run under: dash (Debian's `sh`), and bash under
/// the name `sh` (its POSIX mode), first on the PATH so that the line's
/// own `sh -c` is bash too.
pub(crate) fn shells(dir: &Path) -> Vec<(&'static str, PathBuf)> {
    let bash = dir.join("bash-as-sh");
    std::fs::create_dir_all(&bash).unwrap();
    let sh = bash.join("sh");
    if !sh.exists() {
        std::os::unix::fs::symlink("/bin/bash", &sh).unwrap();
    }
    let dash = dir.join("dash-as-sh");
    std::fs::create_dir_all(&dash).unwrap();
    let sh = dash.join("sh");
    if !sh.exists() {
        std::os::unix::fs::symlink("/bin/dash", &sh).unwrap();
    }
    vec![("dash", dash), ("bash as sh", bash)]
}

/// What a run left: whether it succeeded, what it said, what it sent.
pub(crate) struct Run {
    pub(crate) ok: bool,
    pub(crate) said: String,
    pub(crate) sent: String,
}

/// Runs `line` in `work` under the shell in `shell_dir`, with a stand-in
/// `curl` that answers `…/sh` with `script`, the list link (`LINK` or
/// `LIST`) with `list` (into its `-o` file), and logs anything else to
/// `sent`, failing it.
fn run(work: &Path, shell_dir: &Path, line: &str, script: &str, list: &str) -> Run {
    run_stub(work, shell_dir, line, script, list, None)
}

/// [`run`], the download links (`…/l/…`) answering `body` (appended to
/// `-o`, as `-C -` does) when there is one.
fn run_stub(
    work: &Path,
    shell_dir: &Path,
    line: &str,
    script: &str,
    list: &str,
    body: Option<&[u8]>,
) -> Run {
    let stub = work.join(".stub");
    std::fs::create_dir_all(&stub).unwrap();
    std::fs::write(stub.join("script"), script).unwrap();
    std::fs::write(stub.join("list"), list).unwrap();
    let _ = std::fs::remove_file(stub.join("sent"));
    let _ = std::fs::remove_file(stub.join("body"));
    if let Some(body) = body {
        std::fs::write(stub.join("body"), body).unwrap();
    }
    std::fs::write(
        stub.join("curl"),
        format!(
            "#!/bin/sh\nout=\nprev=\nfor a in \"$@\"; do case \"$prev\" in -o) out=$a;; esac; prev=$a; done\n\
             case \"$a\" in\n*/sh) cat {d}/script;;\n{LINK}|{LIST}) cp {d}/list \"$out\";;\n\
             */l/*) [ -f {d}/body ] || {{ echo \"$@\" >> {d}/sent; exit 22; }}; cat {d}/body >> \"$out\";;\n\
             *) echo \"$@\" >> {d}/sent; exit 22;;\nesac\n",
            d = stub.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(stub.join("curl"), std::fs::Permissions::from_mode(0o755)).unwrap();
    run_line(work, shell_dir, &stub, line)
}

/// Runs `line` in `work` under the shell in `shell_dir`, the stand-in
/// `curl` in `stub` first on the PATH; what it left (its stderr, and the
/// requests the stand-in logged to `stub/sent`).
pub(crate) fn run_line(work: &Path, shell_dir: &Path, stub: &Path, line: &str) -> Run {
    let path = format!(
        "{}:{}:{}",
        shell_dir.display(),
        stub.display(),
        std::env::var("PATH").unwrap()
    );
    let out = Command::new(shell_dir.join("sh"))
        .arg("-c")
        .arg(line)
        .current_dir(work)
        .env("PATH", path)
        .output()
        .unwrap();
    Run {
        ok: out.status.success(),
        said: String::from_utf8_lossy(&out.stderr).into_owned(),
        sent: std::fs::read_to_string(stub.join("sent")).unwrap_or_default(),
    }
}

/// A list line: the manifest fields, then the rest.
fn entry(sha: &Sha256, size: &str, path: &str, rest: &str) -> String {
    format!("{}\t{size}\t{path}\t{rest}\n", sha.to_hex())
}

/// The digest of the first three fields of `list`'s lines, as the scripts
/// compute it: what a line issued for exactly this list pins.
fn digest_of(list: &str) -> Sha256 {
    let manifest: String = list
        .lines()
        .map(|l| l.splitn(4, '\t').take(3).collect::<Vec<_>>().join("\t") + "\n")
        .collect();
    Sha256::of(manifest.as_bytes())
}

/// Nothing in `work` but what the test put there.
fn written(work: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(work)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with(".stub") && !n.ends_with("-as-sh"))
        .collect();
    names.sort();
    names
}

/// Numbers that are code reach no `$(( ))`: the parts script refuses each
/// before it reads a byte, and so does the batch line for a list whose
/// manifest is right but whose part size is not digits.
#[test]
fn numbers_that_are_code_run_nothing_under_dash_or_bash_as_sh() {
    let work = tempfile::tempdir().unwrap();
    let data = vec![7u8; 6 * 1024 * 1024];
    std::fs::write(work.path().join("f.bin"), &data).unwrap();
    let size = data.len().to_string();
    let hostile = "N[$(touch pwned)]";
    for (name, shell) in shells(work.path()) {
        for (n, s, m) in [
            (hostile, size.as_str(), "5"),
            ("2", hostile, "5"),
            ("2", size.as_str(), hostile),
            ("2", size.as_str(), "05"),
            ("3", size.as_str(), "5"),
        ] {
            let line = format!(
                "sh -c \"$(cat .stub/script)\" sluice f.bin {LINK} {} {} {} {ORIGIN}",
                curl::shell_quote(n),
                curl::shell_quote(s),
                curl::shell_quote(m),
            );
            let r = run(work.path(), &shell, &line, PARTS_SCRIPT, "");
            assert!(!r.ok, "{name}: {n} {s} {m}: {}", r.said);
            assert!(
                r.said.contains("refused, nothing sent"),
                "{name}: {}",
                r.said
            );
            assert!(
                !work.path().join("pwned").exists(),
                "{name}: {n} {s} {m} ran code"
            );
            assert_eq!(r.sent, "", "{name}: nothing sent");
        }
        let sha = Sha256::of(&data);
        let list = entry(&sha, &size, "f.bin", &format!("{ORIGIN}/u/T1\t{hostile}"));
        let line = curl::batch_command(LINK, ORIGIN, &digest_of(&list));
        let r = run(work.path(), &shell, &line, BATCH_SCRIPT, &list);
        assert!(!r.ok, "{name}: {}", r.said);
        assert!(
            r.said.contains("part size that is not plain digits"),
            "{name}: {}",
            r.said
        );
        assert!(
            !work.path().join("pwned").exists(),
            "{name}: the batch line ran code"
        );
        assert_eq!(r.sent, "", "{name}: nothing sent");
    }
}

/// An upload list that names a file outside the directory, a hidden one,
/// or one not in the manifest the line pinned, is refused whole: nothing
/// is read or sent. The same list as the manifest is sent.
#[test]
fn an_upload_list_naming_other_files_sends_nothing() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("a.txt"), b"hello").unwrap();
    std::fs::write(work.path().join(".envrc"), b"secret").unwrap();
    let sha = Sha256::of(b"hello");
    let good = entry(&sha, "5", "a.txt", &format!("{ORIGIN}/u/T1\t0"));
    for (name, shell) in shells(work.path()) {
        // Lists whose manifest the line pinned, but whose paths are not plain.
        for (path, why) in [
            ("../x", "hidden or starts with -"),
            ("a/../../x", "hidden or starts with -"),
            ("/etc/x", "not plain"),
            (".envrc", "hidden or starts with -"),
            ("d/.git/config", "hidden or starts with -"),
            ("-x", "hidden or starts with -"),
            ("a\u{1b}b", "not plain"),
        ] {
            let list = entry(&sha, "5", path, &format!("{ORIGIN}/u/T1\t0"));
            let line = curl::batch_command(LINK, ORIGIN, &digest_of(&list));
            let r = run(work.path(), &shell, &line, BATCH_SCRIPT, &list);
            assert!(!r.ok, "{name}: {path:?}: {}", r.said);
            assert!(r.said.contains(why), "{name}: {path:?}: {}", r.said);
            assert_eq!(r.sent, "", "{name}: {path:?}: nothing sent");
        }
        // The manifest pinned is the good list's; the server answers another.
        let line = curl::batch_command(LINK, ORIGIN, &digest_of(&good));
        for tampered in [
            entry(&sha, "5", "b.txt", &format!("{ORIGIN}/u/T1\t0")),
            entry(&sha, "6", "a.txt", &format!("{ORIGIN}/u/T1\t0")),
            good.clone() + &entry(&sha, "5", "c.txt", &format!("{ORIGIN}/u/T2\t0")),
            String::new(),
        ] {
            let r = run(work.path(), &shell, &line, BATCH_SCRIPT, &tampered);
            assert!(!r.ok, "{name}: {tampered:?}: {}", r.said);
            assert!(
                r.said
                    .contains("not the manifest this line was issued with"),
                "{name}: {}",
                r.said
            );
            assert_eq!(r.sent, "", "{name}: nothing sent");
        }
        // The list the line pinned: its file is sent (here, asked where
        // to: the stand-in fails that, so the file is reported unsent).
        let r = run(work.path(), &shell, &line, BATCH_SCRIPT, &good);
        assert!(!r.ok);
        assert!(
            r.sent.contains(&format!("{ORIGIN}/u/T1/to")),
            "{name}: {}",
            r.sent
        );
        assert!(
            r.said.contains("1 of 1 files were not sent"),
            "{name}: {}",
            r.said
        );
    }
}

/// A download list that names a path, a hidden file (`.envrc`,
/// `.bash_profile`, `.git`), an option, or is not the manifest the line
/// pinned, is refused whole: nothing is fetched or written.
#[test]
fn a_download_list_naming_other_files_writes_nothing() {
    let work = tempfile::tempdir().unwrap();
    let sha = Sha256::of(b"hello");
    let link = format!("{ORIGIN}/l/T1");
    for (name, shell) in shells(work.path()) {
        for file in [
            "../x",
            "/etc/x",
            "d/x",
            ".envrc",
            ".bash_profile",
            ".git",
            "-o",
            "a\u{7}b",
        ] {
            let list = entry(&sha, "5", file, &link);
            let line = curl::fetch_command(LIST, &digest_of(&list));
            let r = run(work.path(), &shell, &line, FETCH_SCRIPT, &list);
            assert!(!r.ok, "{name}: {file:?}: {}", r.said);
            assert!(
                r.said.contains("not a plain name"),
                "{name}: {file:?}: {}",
                r.said
            );
            assert_eq!(r.sent, "", "{name}: {file:?}: nothing fetched");
            assert_eq!(
                written(work.path()),
                Vec::<String>::new(),
                "{name}: {file:?}"
            );
        }
        let good = entry(&sha, "5", "a.txt", &link);
        let line = curl::fetch_command(LIST, &digest_of(&good));
        for tampered in [
            entry(&sha, "5", "Makefile", &link),
            entry(&Sha256::of(b"other"), "5", "a.txt", &link),
            good.clone() + &entry(&sha, "5", "b.txt", &link),
        ] {
            let r = run(work.path(), &shell, &line, FETCH_SCRIPT, &tampered);
            assert!(!r.ok, "{name}: {tampered:?}");
            assert!(
                r.said
                    .contains("not the manifest this line was issued with"),
                "{name}: {}",
                r.said
            );
            assert_eq!(r.sent, "", "{name}: nothing fetched");
            assert_eq!(written(work.path()), Vec::<String>::new());
        }
        // A hostile size with the right manifest digest is still refused.
        let list = entry(&sha, "N[$(touch pwned)]", "a.txt", &link);
        let line = curl::fetch_command(LIST, &digest_of(&list));
        let r = run(work.path(), &shell, &line, FETCH_SCRIPT, &list);
        assert!(
            !r.ok && r.said.contains("size that is not plain digits"),
            "{}",
            r.said
        );
        assert!(!work.path().join("pwned").exists());
        // The pinned list is fetched (the stand-in fails the file's link).
        let r = run(work.path(), &shell, &line_for(&good), FETCH_SCRIPT, &good);
        assert!(r.sent.contains(&link), "{name}: {}", r.sent);
    }
}

fn line_for(list: &str) -> String {
    curl::fetch_command(LIST, &digest_of(list))
}

/// A partial download of the user's own (a browser's `NAME.part`) is never
/// appended to or removed, and a name of 251-255 bytes (whose `NAME.part`
/// no file system takes) saves: the line's partial file is its own.
#[test]
fn a_download_keeps_to_a_partial_file_of_its_own() {
    let work = tempfile::tempdir().unwrap();
    let sha = Sha256::of(b"hello");
    let long = format!("{}.txt", "n".repeat(251));
    std::fs::write(work.path().join("a.txt.part"), b"mine").unwrap();
    let list = entry(&sha, "5", "a.txt", &format!("{ORIGIN}/l/T1"))
        + &entry(&sha, "5", &long, &format!("{ORIGIN}/l/T2"));
    for (name, shell) in shells(work.path()) {
        let r = run_stub(
            work.path(),
            &shell,
            &line_for(&list),
            FETCH_SCRIPT,
            &list,
            Some(b"hello"),
        );
        assert!(r.ok, "{name}: {}", r.said);
        assert_eq!(std::fs::read(work.path().join("a.txt")).unwrap(), b"hello");
        assert_eq!(std::fs::read(work.path().join(&long)).unwrap(), b"hello");
        assert_eq!(
            std::fs::read(work.path().join("a.txt.part")).unwrap(),
            b"mine"
        );
        std::fs::remove_file(work.path().join("a.txt")).unwrap();
        std::fs::remove_file(work.path().join(&long)).unwrap();
    }
}

/// Runs `line` in `work` under the shell in `shell_dir`, with a stand-in
/// `curl` whose `HEAD` (`-I`) answers `offset` as the upload's
/// `Upload-Offset` and which logs every other request (a `PATCH`) to
/// `sent`, succeeding.
fn run_stream(work: &Path, shell_dir: &Path, line: &str, list: &str, offset: &str) -> Run {
    let stub = work.join(".stream-stub");
    std::fs::create_dir_all(&stub).unwrap();
    std::fs::write(stub.join("list"), list).unwrap();
    std::fs::write(stub.join("offset"), offset).unwrap();
    let _ = std::fs::remove_file(stub.join("sent"));
    // A `HEAD` (`-I`) prints what its `-w` asks for: the status (200) and
    // the offset, as curl would.
    std::fs::write(
        stub.join("curl"),
        format!(
            "#!/bin/sh\nout=\nprev=\nhead=\nw=\nfor a in \"$@\"; do case \"$prev\" in -o) out=$a;; -w) w=$a;; esac; \
             case \"$a\" in -w?*) w=${{a#-w}};; -*I*) head=1;; esac; prev=$a; done\n\
             off=$(cat {d}/offset)\n\
             case \"$a\" in\n*/sh) cat {script};;\n{LINK}) cp {d}/list \"$out\";;\n\
             *) if [ -n \"$head\" ]; then printf %s \"$w\" | sed \"s/%{{http_code}}/200/; s/%header{{upload-offset}}/$off/\"; \
             else echo \"$@\" >> {d}/sent; fi;;\nesac\n",
            d = stub.display(),
            script = work.join(".stream-stub/script").display(),
        ),
    )
    .unwrap();
    std::fs::write(stub.join("script"), BATCH_SCRIPT).unwrap();
    std::fs::set_permissions(stub.join("curl"), std::fs::Permissions::from_mode(0o755)).unwrap();
    run_line(work, shell_dir, &stub, line)
}

/// The offset a resumable upload's `HEAD` answers is data: the stream
/// line and the batch line keep its digits only, and they go nowhere but
/// curl's `-C` and the `Upload-Offset` header; code in it runs under
/// neither dash nor bash as `sh`.
#[test]
fn an_offset_that_is_code_runs_nothing_under_dash_or_bash_as_sh() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("a.txt"), b"hello").unwrap();
    let sha = Sha256::of(b"hello");
    for (name, shell) in shells(work.path()) {
        for evil in [
            "$(touch pwned)2",
            "`touch pwned`2",
            "2;touch pwned",
            "x[$(touch pwned)]2",
        ] {
            let line = curl::stream_command(&format!("{ORIGIN}/u/T1"), "a.txt", 5, "x");
            let r = run_stream(work.path(), &shell, &line, "", evil);
            assert!(
                !work.path().join("pwned").exists(),
                "{name}: {evil}: {}",
                r.said
            );
            assert!(
                r.sent.contains("Upload-Offset:2") && r.sent.contains("-C 2"),
                "{name}: {evil}: {}",
                r.sent
            );

            let list = entry(&sha, "5", "a.txt", &format!("{ORIGIN}/u/T1\ts"));
            let line = curl::batch_command(LINK, ORIGIN, &digest_of(&list));
            let r = run_stream(work.path(), &shell, &line, &list, evil);
            assert!(
                !work.path().join("pwned").exists(),
                "{name}: {evil}: {}",
                r.said
            );
            assert!(
                r.sent.contains("Upload-Offset: 2") && r.sent.contains("-X PATCH"),
                "{name}: {evil}: {} {}",
                r.sent,
                r.said
            );
        }
    }
}
