//! Ready-to-run `curl` lines. They are run by a shell the model controls, so
//! every argument is POSIX single-quoted, and no line ever carries a credential:
//! the link itself is the (single-use, short-lived) authority.

use crate::sha::Sha256;

/// Quotes `s` for a POSIX shell: `'…'`, with each `'` written as `'\''`.
pub fn shell_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// A line template of `sh/lines/` filled in: its line of shell (the lines
/// that are not comments), each `@NAME@` replaced by its value in
/// `values`, in one pass (a value is never read for placeholders). Every
/// value is a shell word the caller made safe (quoted, digits, hex).
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let line: Vec<&str> = template.lines().filter(|l| !l.starts_with('#')).collect();
    let line = line.join("\n");
    let mut out = String::with_capacity(line.len() + 256);
    let mut rest = line.as_str();
    while let Some(at) = rest.find('@') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let named = after
            .find('@')
            .and_then(|end| values.iter().find(|(name, _)| *name == &after[..end]));
        match named {
            Some((name, value)) => {
                out.push_str(value);
                rest = &after[name.len() + 1..];
            }
            None => {
                out.push('@');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A path argument that curl cannot take for an option or for stdin (`-`).
fn path_arg(name: &str) -> String {
    if name.starts_with('-') {
        shell_quote(&format!("./{name}"))
    } else {
        shell_quote(name)
    }
}

/// The file an upload command reads: the label's last path component, so a
/// label such as `/etc/passwd` or `../../secret` names a file in the current
/// directory, never a path elsewhere.
pub fn local_file_name(label: &str) -> &str {
    label
        .rsplit(['/', '\\'])
        .find(|part| !part.is_empty() && *part != "." && *part != "..")
        .unwrap_or("file")
}

/// `curl` that PUTs the local file `local_file` to `url` with exactly `headers`,
/// and fails loudly on any non-2xx.
pub fn upload_command<'a>(
    url: &str,
    headers: impl IntoIterator<Item = (&'a str, &'a str)>,
    local_file: &str,
) -> String {
    put_to(&shell_quote(url), headers, local_file)
}

/// `curl` that first asks the short upload link `link` where the bytes go
/// (a presigned URL of the store, minted then: it never enters the model's
/// context) and then PUTs the local file there with exactly `headers`.
/// Two requests rather than one PUT that a redirect sends on: behind API
/// Gateway, a function sees a request only once the gateway has read its
/// whole body (10 MB at most), so only the bytes' own request may carry
/// them.
pub fn upload_via_command<'a>(
    link: &str,
    headers: impl IntoIterator<Item = (&'a str, &'a str)>,
    local_file: &str,
) -> String {
    fill(
        include_str!("sh/lines/via.sh"),
        &[
            ("LINK", &shell_quote(link)),
            ("PUT", &put_to("\"$u\"", headers, local_file)),
        ],
    )
}

/// The one line that uploads `local_file`, of `size` bytes, to the upload
/// link `link` where sluice receives the bytes, as one resumable (tus 1.0)
/// stream: it asks where the upload stands (`HEAD`, `Upload-Offset`, read
/// with curl's own `-w`: nothing but `sh`, `curl` and `tr`) and sends the
/// file from there in one `PATCH` (`curl -C`), so a rerun after any
/// interruption sends only what the server does not have, and a rerun
/// after the end sends nothing. It says how far the upload stands when it
/// ends; a refusal is said in the server's words (`--fail-with-body`). The
/// offset is taken as digits only and goes nowhere but curl's `-C` and the
/// header. Where it stops before sending, it says why in one sentence:
/// no offset came back (the host, named by the link's own origin and path
/// before `/u/`, could not be reached, a proxy refused the tunnel, or a
/// proxy drops the header), with `instead`; or the status the `HEAD` got. A longer
/// file is refused before a byte is read (its length goes past the
/// upload's); a shorter one ends short of the size, and the line says how
/// far. It tells an unreachable host itself: no [`or_unreachable`] around
/// it. Short: the line, the name twice and the answer around it fit in a
/// kilobyte.
pub fn stream_command(link: &str, local_file: &str, size: u64, instead: &str) -> String {
    fill(
        include_str!("sh/lines/stream.sh"),
        &[
            ("LINK", &shell_quote(link)),
            ("FILE", &path_arg(local_file)),
            ("SIZE", &size.to_string()),
            ("INSTEAD", instead),
        ],
    )
}

/// The one line that uploads `local_file` in parts through the upload link
/// `link`: it fetches the link's script (`GET <link>/sh`, [`PARTS_SCRIPT`])
/// and runs it with `sh` only if its SHA-256 is [`parts_script_sha256`]'s,
/// the script of this release: whoever answers at the link cannot make the
/// line run anything else. The script sends each part only to a URL under
/// `origin` (the store's, or the link's own). Running the same line again
/// after any interruption resumes: only parts not yet stored are sent.
pub fn parts_command(
    link: &str,
    local_file: &str,
    plan: &crate::multipart::Plan,
    origin: &str,
) -> String {
    const MIB: u64 = 1024 * 1024;
    pinned_script_line(
        link,
        &parts_script_sha256(),
        &format!(
            "{} \"$L\" {} {} {} {}",
            path_arg(local_file),
            plan.count,
            plan.size,
            plan.part_size / MIB,
            shell_quote(origin),
        ),
    )
}

/// The one line that uploads every file of a batch still missing through
/// the batch's link `link` (`GET <link>/sh`, [`BATCH_SCRIPT`], run only if
/// its SHA-256 is this release's): each file in one PUT under `origin` or
/// in parts by the pinned [`PARTS_SCRIPT`]. Run again, it sends only what
/// is not stored yet.
/// The list the link answers must be the batch's `manifest`
/// ([`manifest_digest`]): the script refuses any other before it reads a
/// file.
pub fn batch_command(link: &str, origin: &str, manifest: &Sha256) -> String {
    pinned_script_line(
        link,
        &script_sha256(BATCH_SCRIPT),
        &format!(
            "\"$L\" {} {} {}",
            shell_quote(origin),
            parts_script_sha256(),
            manifest.to_hex()
        ),
    )
}

/// The one line that saves every file of a download batch here, each
/// verified (`GET <link>/sh`, [`FETCH_SCRIPT`], run only if its SHA-256 is
/// this release's); the list must be the batch's `manifest`
/// ([`manifest_digest`]): the script refuses any other before it writes a
/// file.
pub fn fetch_command(link: &str, manifest: &Sha256) -> String {
    pinned_script_line(
        link,
        &script_sha256(FETCH_SCRIPT),
        &format!("\"$L\" {}", manifest.to_hex()),
    )
}

/// One line of a batch's manifest, as the batch lists begin each line:
/// the file's SHA-256, size and path (or name), tab-separated. The path
/// or name has no tab or line break (a checked path, a safe name).
pub fn manifest_line(sha256: &Sha256, size: u64, path: &str) -> String {
    format!("{}\t{size}\t{path}\n", sha256.to_hex())
}

/// The digest a batch's line pins: the SHA-256 of its manifest, every
/// file's [`manifest_line`] in order. The batch scripts compute it over
/// the first three fields of the list they are given (`cut -f1-3`).
pub fn manifest_digest<'a>(files: impl IntoIterator<Item = (&'a Sha256, u64, &'a str)>) -> Sha256 {
    let mut hasher = crate::sha::Hasher::new();
    for (sha256, size, path) in files {
        hasher.update(manifest_line(sha256, size, path).as_bytes());
    }
    hasher.finish()
}

/// The partial file a download line writes before it verifies and renames
/// it: a name of the line's own, never one the user may have (a browser's
/// `NAME.part`), short whatever the file's name, and the same for the same
/// bytes, so that a fresh link's line continues it.
pub fn partial_name(sha256: &Sha256) -> String {
    format!(".sluice-{}.part", &sha256.to_hex()[..16])
}

/// `L=<link>`, then the script `GET $L/sh` answers run with `args` only if
/// its SHA-256 is `sha256`: whoever answers at the link cannot make the
/// line run anything else.
fn pinned_script_line(link: &str, sha256: &str, args: &str) -> String {
    fill(
        include_str!("sh/lines/pinned.sh"),
        &[
            ("LINK", &shell_quote(link)),
            ("SHA256", sha256),
            ("ARGS", args),
        ],
    )
}

/// The script a batch's line runs (`sh/batch.sh`, after `sh/target.sh`:
/// the part protocol's target, checked by the one text every script that
/// PUTs to a target is sent with).
pub const BATCH_SCRIPT: &str = concat!(include_str!("sh/target.sh"), include_str!("sh/batch.sh"));

/// The script a download batch's line runs (`sh/fetch.sh`).
pub const FETCH_SCRIPT: &str = include_str!("sh/fetch.sh");

/// The SHA-256 of `script` as the line's shell holds it (command
/// substitution drops its trailing newlines).
pub fn script_sha256(script: &str) -> String {
    crate::sha::Sha256::of(script.trim_end_matches('\n').as_bytes()).to_hex()
}

/// The POSIX `sh` script an upload in parts runs (`sh/parts.sh`, after
/// `sh/target.sh`: its arguments, what it checks and what it sends are
/// said there). It is the same for every upload, so the line can pin it.
pub const PARTS_SCRIPT: &str = concat!(include_str!("sh/target.sh"), include_str!("sh/parts.sh"));

/// `line`, saying what to do when it fails because a host it needs cannot
/// be reached from where it runs: no name, no route, or a proxy refusing to
/// open a tunnel to it (a hosted sandbox's egress proxy answers 403 "Host
/// not in allowlist" to its CONNECT). `origins` are shell words (one, or
/// two), each giving, once the line failed, an origin it may have been
/// reaching (a
/// quoted literal, [`ORIGIN_OF_LINK`] or [`ORIGIN_REACHED`]): the link's
/// and, for a script that PUTs to a store of another origin, the store's.
/// Each is tried once more, and one that cannot connect either is named
/// with `instead`. The line fails either way. This is the only probe:
/// the scripts a line runs probe nothing of their own. A plain-HTTP
/// proxy's 403 is not told apart from the store's own (a link expired,
/// say): it comes as the answer itself, not as a tunnel's. Short: it is in
/// every line, within the kilobyte a tool's answer takes.
pub fn or_unreachable<S: AsRef<str>>(line: &str, origins: &[S], instead: &str) -> String {
    match origins {
        [origin] => fill(
            include_str!("sh/lines/unreachable.sh"),
            &[
                ("LINE", line),
                ("ORIGIN", origin.as_ref()),
                ("INSTEAD", instead),
            ],
        ),
        _ => {
            let origins: Vec<&str> = origins.iter().map(AsRef::as_ref).collect();
            fill(
                include_str!("sh/lines/unreachable-each.sh"),
                &[
                    ("LINE", line),
                    ("ORIGINS", &origins.join(" ")),
                    ("INSTEAD", instead),
                ],
            )
        }
    }
}

/// The origin of `url` (`scheme://host[:port]`), what a proxy tunnels to;
/// `url` itself when it has none.
pub fn origin_of(url: &str) -> String {
    url::Url::parse(url).map_or_else(|_| url.to_owned(), |u| u.origin().ascii_serialization())
}

/// The origin of the link a line holds in `L`.
pub const ORIGIN_OF_LINK: &str = "$(printf %s \"$L\" | cut -d/ -f1-3)";

/// The origin a line that holds its link in `L`, and the store URL the link
/// gave in `u`, was reaching when it failed: the store's once the link
/// answered, the link's when it did not.
pub const ORIGIN_REACHED: &str = "$(printf %s \"${u:-$L}\" | cut -d/ -f1-3)";

/// What to do instead of an upload line whose host is unreachable.
/// (Never to read the file into the conversation instead: request_upload's
/// description says that, within the kilobyte the answer takes.)
pub const UPLOAD_INSTEAD: &str = "call request_browser_upload";

/// The SHA-256 of [`PARTS_SCRIPT`] as the line's shell holds it (command
/// substitution drops its trailing newlines): what the line checks before
/// it runs what `GET <link>/sh` answered.
pub fn parts_script_sha256() -> String {
    script_sha256(PARTS_SCRIPT)
}

/// Where to send a part, as the part protocol answers it (`text/plain`):
/// the URL on the first line, then one header a line, `Name: value`. Data
/// for the script and the page to check and use, never another tool's
/// configuration.
pub fn part_target<'a>(url: &str, headers: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut out = format!("{url}\n");
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\n"));
    }
    out
}

/// `curl` that PUTs `local_file` to the shell word `url` (already quoted).
fn put_to<'a>(
    url: &str,
    headers: impl IntoIterator<Item = (&'a str, &'a str)>,
    local_file: &str,
) -> String {
    let headers: String = headers
        .into_iter()
        .map(|(name, value)| format!(" -H {}", shell_quote(&format!("{name}: {value}"))))
        .collect();
    fill(
        include_str!("sh/lines/put.sh"),
        &[
            ("HEADERS", &headers),
            ("FILE", &path_arg(local_file)),
            ("URL", url),
        ],
    )
}

/// `curl` that downloads `url` (following a redirect) into `out_name` in the
/// current directory, resumably and verified:
///
/// - the bytes go to a partial file of the line's own ([`partial_name`]:
///   never a file the user already has, short whatever `out_name`'s
///   length), and `-C -` continues one left by an interrupted run
///   (`Range`; a fresh link's line picks up where the last stopped);
/// - `-f` writes no error body there (a spent or expired link leaves the
///   partial file as it was, for the next link to continue), and a partial
///   file already of the whole size is not asked for again;
/// - the whole file's SHA-256 must be `sha256` before it is renamed to
///   `out_name`; a partial file that does not verify is removed, so the next
///   run starts afresh rather than extending it.
///
/// `out_name` is a safe name ([`crate::filename::safe_name`]): no quote, no
/// backslash, no control character.
pub fn download_command(url: &str, out_name: &str, size: u64, sha256: &Sha256) -> String {
    // The name once, in a variable: a long name costs the model its length
    // once. A partial file already whole (the last run stopped after curl)
    // asks for nothing: a range past the end is a 416, which `-f` fails on.
    fill(
        include_str!("sh/lines/download.sh"),
        &[
            ("FILE", &path_arg(out_name)),
            ("PART", &partial_name(sha256)),
            ("SIZE", &size.to_string()),
            ("URL", &shell_quote(url)),
            ("SHA256", &sha256.to_hex()),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upload_reads_a_file_in_the_current_directory() {
        assert_eq!(local_file_name("report.pdf"), "report.pdf");
        assert_eq!(local_file_name("/etc/passwd"), "passwd");
        assert_eq!(local_file_name("../../secret.txt"), "secret.txt");
        assert_eq!(local_file_name("C:\\Users\\me\\a b.txt"), "a b.txt");
        assert_eq!(local_file_name("dir/.."), "dir");
        assert_eq!(local_file_name("/"), "file");
        assert_eq!(local_file_name(".."), "file");
    }
    use std::process::Command;

    fn sh_echo(arg: &str) -> String {
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("printf '%s' {}", shell_quote(arg)))
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    }

    #[test]
    fn quoting_survives_a_real_shell() {
        for s in [
            "rapport final;v2 (été).pdf",
            "it's.txt",
            "$(touch pwned) `x` \"q\" \\ *",
            "",
            "'''",
        ] {
            assert_eq!(sh_echo(s), s);
        }
    }

    #[test]
    fn upload_line_sends_the_headers_and_the_file() {
        let line = upload_command(
            "http://h/uploads/t",
            [("Content-Type", "text/plain")],
            "it's.txt",
        );
        assert_eq!(
            line,
            "curl --fail-with-body -sS -X PUT -H 'Content-Type: text/plain' \
             --upload-file 'it'\\''s.txt' 'http://h/uploads/t'"
        );
    }

    /// Runs `line` in a real `sh` in `dir`, with a stand-in `curl` first on
    /// the PATH that appends `body` to its `-o` file (as `-C -` does) or
    /// exits with `exit` writing nothing (as `-f` does on an error).
    fn run_download(dir: &std::path::Path, line: &str, body: &str, exit: i32) -> bool {
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let fake = bin.join("curl");
        std::fs::write(
            &fake,
            "#!/bin/sh\nout=\nwhile [ $# -gt 0 ]; do case \"$1\" in -o) out=$2; shift;; esac; shift; done\n\
             [ \"$FAKE_EXIT\" = 0 ] || exit \"$FAKE_EXIT\"\nprintf '%s' \"$FAKE_BODY\" >> \"$out\"\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
        Command::new("sh")
            .arg("-c")
            .arg(line)
            .current_dir(dir)
            .env("PATH", path)
            .env("FAKE_BODY", body)
            .env("FAKE_EXIT", exit.to_string())
            .status()
            .unwrap()
            .success()
    }

    #[test]
    fn a_download_is_verified_resumed_and_never_clobbers_with_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let sha = crate::sha::Sha256::of(b"hello world");
        let (name, part) = (
            dir.path().join("r.txt"),
            dir.path().join(partial_name(&sha)),
        );
        let line = download_command("http://h/l/x", "r.txt", 11, &sha);
        // A failed transfer leaves the file already there as it was.
        std::fs::write(&name, "keep").unwrap();
        assert!(!run_download(dir.path(), &line, "", 22));
        assert_eq!(std::fs::read_to_string(&name).unwrap(), "keep");
        // Interrupted half-way: the next run continues the partial file.
        std::fs::write(&part, "hello ").unwrap();
        assert!(run_download(dir.path(), &line, "world", 0));
        assert_eq!(std::fs::read_to_string(&name).unwrap(), "hello world");
        assert!(!part.exists());
        // Already whole: curl is not run (it would fail here).
        std::fs::write(&part, "hello world").unwrap();
        assert!(run_download(dir.path(), &line, "", 22));
        assert!(!part.exists());
        // Bytes that do not verify are removed, and the file is not replaced.
        assert!(!run_download(dir.path(), &line, "hello there", 0));
        assert!(!part.exists());
        assert_eq!(std::fs::read_to_string(&name).unwrap(), "hello world");
    }

    #[test]
    fn a_name_too_long_for_its_part_suffix_still_downloads() {
        let dir = tempfile::tempdir().unwrap();
        let name = format!("{}.pdf", "n".repeat(251));
        let sha = crate::sha::Sha256::of(b"x");
        let line = download_command("http://h/l/x", &name, 1, &sha);
        assert!(run_download(dir.path(), &line, "x", 0), "{line}");
        assert_eq!(std::fs::read(dir.path().join(&name)).unwrap(), b"x");
    }

    /// Runs `line` in `dir` with a stand-in `curl` that answers `GET …/sh`
    /// with `script`, the parts stored with nothing, a part's target with
    /// `target`, and fails anything else; returns the exit and what was said.
    fn run_parts_line(
        dir: &std::path::Path,
        line: &str,
        script: &str,
        target: &str,
    ) -> (bool, String) {
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(dir.join("script"), script).unwrap();
        std::fs::write(dir.join("target"), target).unwrap();
        let fake = bin.join("curl");
        std::fs::write(
            &fake,
            format!(
                "#!/bin/sh\nout=\nfor a in \"$@\"; do case \"$prev\" in -o) out=$a;; esac; prev=$a; done\n\
                 case \"$a\" in\n*/sh) cat {d}/script;;\n*/parts) : > \"$out\"; printf 200;;\n*/parts/*) cat {d}/target > \"$out\";;\n\
                 *) echo \"$@\" >> {d}/sent; exit 22;;\nesac\n",
                d = dir.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
        let out = Command::new("sh")
            .arg("-c")
            .arg(line)
            .current_dir(dir)
            .env("PATH", path)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn parts_line() -> String {
        let plan = crate::multipart::Plan::new(6 * 1024 * 1024, 5 * 1024 * 1024);
        parts_command(
            "https://up.example/u/T",
            "f.bin",
            &plan,
            "https://store.example",
        )
    }

    /// The line runs the script of this release only: any other text at
    /// `…/sh` is not run (here it would have touched a file), and says so.
    #[test]
    fn the_parts_line_runs_only_the_pinned_script() {
        let line = parts_line();
        assert!(line.len() <= 1024, "{line}");
        let dir = tempfile::tempdir().unwrap();
        let altered = format!("touch pwned\n{PARTS_SCRIPT}");
        let (ok, said) = run_parts_line(dir.path(), &line, &altered, "");
        assert!(!ok);
        assert!(
            said.contains("is not the script this line was issued with"),
            "{said}"
        );
        assert!(!dir.path().join("pwned").exists());
        // The real one runs (and stops at once: there is no file here).
        let (ok, said) = run_parts_line(dir.path(), &line, PARTS_SCRIPT, "");
        assert!(!ok);
        assert!(said.contains("there is no file f.bin here"), "{said}");
    }

    /// What the link answers for a part is data the script checks: a
    /// target outside the store's origin, a header it does not expect, or
    /// a value that is not base64 is refused, and nothing is sent.
    #[test]
    fn the_script_sends_a_part_only_where_and_how_it_expects() {
        let line = parts_line();
        for (target, why) in [
            (
                "https://elsewhere.example/x\n",
                "is not under https://store.example",
            ),
            (
                "https://store.example.evil/x\n",
                "is not under https://store.example",
            ),
            (
                "https://store.example/x\n-o: /etc/passwd\n",
                "asks for the header -o",
            ),
            (
                "https://store.example/x\nproxy: http://evil\n",
                "asks for the header proxy",
            ),
            (
                "https://store.example/x\nx-amz-checksum-sha256: a b\n",
                "unexpected value",
            ),
        ] {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join("f.bin"), vec![7u8; 6 * 1024 * 1024]).unwrap();
            let (ok, said) = run_parts_line(dir.path(), &line, PARTS_SCRIPT, target);
            assert!(!ok, "{target}");
            assert!(said.contains(why), "{target}: {said}");
            assert!(!dir.path().join("sent").exists(), "{target}: nothing sent");
        }
    }

    /// Every line is its template with every placeholder filled in: none
    /// is left for the shell to read as a word, and a value that looks like
    /// one is not filled again.
    #[test]
    fn every_line_fills_its_template_whole() {
        let sha = Sha256::of(b"x");
        let plan = crate::multipart::Plan::new(6 * 1024 * 1024, 5 * 1024 * 1024);
        let lines = [
            stream_command("http://h/u/t", "@LINK@.bin", 3, UPLOAD_INSTEAD),
            upload_via_command("http://h/u/t", [("Content-Type", "a/b")], "f"),
            upload_command("http://h/u/t", [], "f"),
            parts_command("http://h/u/t", "f", &plan, "https://s"),
            batch_command("http://h/b/t", "https://s", &sha),
            fetch_command("http://h/g/t", &sha),
            download_command("http://h/l/t", "f", 1, &sha),
            or_unreachable("true", &["'o'"], UPLOAD_INSTEAD),
            or_unreachable("true", &["'o'", "'p'"], UPLOAD_INSTEAD),
        ];
        let placeholder = |l: &str| {
            l.split('@').skip(1).step_by(2).any(|w| {
                !w.is_empty()
                    && w.chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
            })
        };
        for line in &lines[1..] {
            assert!(!placeholder(line), "{line}");
            assert!(!line.contains('\n'), "one line: {line}");
        }
        assert!(lines[0].contains("f='@LINK@.bin'"), "{}", lines[0]);
        assert!(
            !lines[0].contains("@SIZE@") && lines[0].contains("S=3;"),
            "{}",
            lines[0]
        );
    }

    /// The stream line the HTTP API's page shows is the line this release
    /// returns.
    #[test]
    fn the_documented_stream_line_is_todays() {
        let doc =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/http-api.md"))
                .unwrap();
        let line = stream_command(
            "http://127.0.0.1:8787/u/BYtF…",
            "dataset.tar",
            2_684_354_560,
            UPLOAD_INSTEAD,
        );
        assert!(
            doc.contains(&format!("\n{line}\n")),
            "docs/http-api.md shows another line than\n{line}"
        );
    }

    #[test]
    fn names_that_look_like_options_are_made_paths() {
        let line = download_command("http://h/l", "-", 2, &crate::sha::Sha256::of(b"ab"));
        assert!(line.starts_with("f='./-'; "), "{line}");
        assert!(upload_command("u", [], "-rf").contains("--upload-file './-rf'"));
    }

    /// A fake `curl` for [`or_unreachable`]: the line's own call exits
    /// `exit`; the probe (`-so /dev/null`) is logged and exits `probe`.
    /// Gives the line's status, what it printed on stderr and the probes.
    fn run_guarded(line: &str, exit: i32, probe: i32) -> (i32, String, String) {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(
            bin.join("curl"),
            "#!/bin/sh\ncase \"$*\" in '-so /dev/null '*) echo \"$*\" >> \"$PROBED\"; exit \"$FAKE_PROBE_EXIT\";; esac\n\
             exit \"$FAKE_EXIT\"\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(bin.join("curl"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let probed = dir.path().join("probed");
        let out = Command::new("sh")
            .arg("-c")
            .arg(line)
            .env(
                "PATH",
                format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
            )
            .env("FAKE_EXIT", exit.to_string())
            .env("FAKE_PROBE_EXIT", probe.to_string())
            .env("PROBED", &probed)
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            std::fs::read_to_string(&probed).unwrap_or_default(),
        )
    }

    /// A line that PUTs through a script to a store of another origin
    /// tries both again: the one it cannot reach is named, once, and the
    /// one it can is not.
    #[test]
    fn of_two_origins_the_unreachable_one_is_named() {
        let line = or_unreachable(
            "false",
            &["'https://up.example'", "'https://store.example'"],
            UPLOAD_INSTEAD,
        );
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(
            bin.join("curl"),
            "#!/bin/sh\necho \"$3\" >> \"$PROBED\"\ncase \"$3\" in https://store.example/) exit 7;; esac\nexit 0\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(bin.join("curl"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let probed = dir.path().join("probed");
        let out = Command::new("sh")
            .arg("-c")
            .arg(&line)
            .env(
                "PATH",
                format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
            )
            .env("PROBED", &probed)
            .output()
            .unwrap();
        assert!(!out.status.success());
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            std::fs::read_to_string(&probed).unwrap(),
            "https://up.example/\nhttps://store.example/\n"
        );
        assert_eq!(said.matches("is unreachable").count(), 1, "{said}");
        assert!(said.contains("store.example is unreachable"), "{said}");
    }

    /// A host the line cannot reach (no name, no route, a proxy refusing
    /// its tunnel) is named with what to do instead, and the line fails
    /// with curl's status; any other failure is curl's alone, and success
    /// is untouched.
    #[test]
    fn an_unreachable_host_is_named_with_the_next_step() {
        let url = "https://up.example:8443/u/t";
        let line = or_unreachable(
            &upload_command(url, [], "f.bin"),
            &[&shell_quote(&origin_of(url))],
            UPLOAD_INSTEAD,
        );
        // (the line's exit, the probe's exit, named)
        for (exit, probe, named) in [
            (6, 6, true),   // no name
            (7, 7, true),   // no route
            (22, 56, true), // a proxy refused the tunnel (CONNECT 403)
            (22, 0, false), // tunnelled fine: the store's own refusal
            (56, 0, false), // the connection broke, but the host answers
        ] {
            let (code, said, probed) = run_guarded(&line, exit, probe);
            assert_ne!(code, 0, "{exit}: {said}");
            assert_eq!(
                probed, "-so /dev/null https://up.example:8443/\n",
                "the origin alone is tried"
            );
            assert_eq!(
                said.contains("up.example:8443 is unreachable"),
                named,
                "{exit}/{probe}: {said}"
            );
            if named {
                assert!(said.contains("request_browser_upload"), "{said}");
                assert_eq!(
                    said.lines().filter(|l| l.starts_with("sluice:")).count(),
                    1,
                    "{said}"
                );
            }
        }
        let (code, said, probed) = run_guarded(&line, 0, 0);
        assert_eq!((code, said.as_str(), probed.as_str()), (0, "", ""));
        // Through a short link: the host that failed is tried, the store's
        // once the link answered, the link's when it did not.
        let line = or_unreachable(
            &upload_via_command("https://up.example/u/t", [], "f.bin"),
            &[ORIGIN_REACHED],
            UPLOAD_INSTEAD,
        );
        let (code, said, probed) = run_guarded(&line, 7, 7);
        assert_ne!(code, 0);
        assert_eq!(probed, "-so /dev/null https://up.example/\n");
        assert!(said.contains("up.example is unreachable"), "{said}");
    }
}
