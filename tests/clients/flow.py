"""The whole sluice flow driven by the official MCP Python SDK client.

Run by the Rust end-to-end tests (tests/tests/mcp_clients.rs) against a real
sluice process. Exits non-zero, naming the failed check, on any failure.
"""

import argparse
import base64
import hashlib
import json
import os
import sys

from mcp_common import Recorder, errors_of, is_error, run_main, session_for, sh, structured, text

TOOLS = {
    "request_upload",
    "get_download_url",
    "list_files",
    "upload_small_file",
    "read_small_file",
    "request_browser_upload",
    "get_upload_status",
}


async def expect_refused(url, token, status):
    async def run(session):
        return await session.call_tool("request_upload", {"filename": "a", "size": 1, "sha256": "0" * 64})

    recorder = Recorder()
    try:
        result = await session_for(url, token, recorder, run=run)
    except BaseException as exc:  # noqa: BLE001 - the client raises a group
        assert status in recorder.statuses, f"expected HTTP {status}, saw {recorder.statuses}: {errors_of(exc)[0][:300]}"
        return
    raise AssertionError(f"expected HTTP {status}, got a result: {result!r}")


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--readonly-token", required=True)
    p.add_argument("--other-token", required=True)
    p.add_argument("--workdir", required=True)
    p.add_argument("--size", type=int, default=1 << 20)
    # The largest MCP message of the flow allowed: presigned S3 URLs make
    # aws mode's answers longer than local mode's.
    p.add_argument("--max-message", type=int, default=4096)
    args = p.parse_args()
    checks = []

    up_dir = os.path.join(args.workdir, "up")
    down_dir = os.path.join(args.workdir, "down")
    os.makedirs(up_dir)
    os.makedirs(down_dir)
    data = os.urandom(args.size)
    name = "rapport final;v2 (été).bin"
    with open(os.path.join(up_dir, name), "wb") as f:
        f.write(data)
    digest = hashlib.sha256(data).hexdigest()
    recorder = Recorder()

    async def flow(session):
        tools = await session.list_tools()
        names = {t.name for t in tools.tools}
        assert TOOLS <= names, f"tools listed: {names}"
        for t in tools.tools:
            schema = getattr(t, "output_schema", None) or getattr(t, "outputSchema", None)
            assert schema, f"{t.name} has no outputSchema"
        checks.append("list tools")
        recorder.bodies.clear()  # the flow of the file starts here

        result = await session.call_tool("request_upload", {"filename": name, "size": len(data), "sha256": digest})
        assert not is_error(result), text(result)
        ticket = structured(result)
        assert ticket["handle"].startswith("$uploadedFile:")
        sh(ticket["command"], up_dir)
        checks.append("request_upload + curl")

        result = await session.call_tool("get_download_url", {"file": ticket["handle"]})
        assert not is_error(result), text(result)
        download = structured(result)
        assert download["sha256"] == digest and download["size"] == len(data)
        sh(download["command"], down_dir)
        saved = [f for f in os.listdir(down_dir)]
        assert len(saved) == 1, saved
        with open(os.path.join(down_dir, saved[0]), "rb") as f:
            assert f.read() == data, "downloaded bytes differ"
        checks.append("get_download_url + curl, bytes identical")

        # The flow of the file ends here; the base64 fallback below carries
        # bytes through the model by design.
        recorder.active = False
        print(json.dumps(recorder.bodies and [(k, n) for k, n, _ in recorder.bodies]), file=sys.stderr)

        result = await session.call_tool("list_files", {})
        files = structured(result)["files"]
        mine = [f for f in files if f["file_id"] == ticket["file_id"]]
        assert mine and mine[0]["state"] == "ready", files
        checks.append("list_files")

        # Pages: seven more files, read back three at a time through the
        # cursor, newest first, each once; a made-up cursor is refused.
        issued = []
        for i in range(7):
            result = await session.call_tool(
                "request_upload", {"filename": f"page{i}.txt", "size": 1, "sha256": hashlib.sha256(b"p").hexdigest()}
            )
            assert not is_error(result), text(result)
            issued.append(structured(result)["file_id"])
        seen, cursor, pages = [], None, 0
        while True:
            args = {"limit": 3} | ({"cursor": cursor} if cursor else {})
            page = structured(await session.call_tool("list_files", args))
            assert len(page["files"]) <= 3, page
            seen += [f["file_id"] for f in page["files"]]
            pages += 1
            cursor = page.get("next_cursor")
            if not cursor:
                break
        assert len(seen) == len(set(seen)) == 8 and pages == 3, (seen, pages)
        assert seen[:7] == list(reversed(issued)), (seen, issued)
        bad = await session.call_tool("list_files", {"cursor": "bm90LWEtY3Vyc29y"})
        assert is_error(bad) and "cursor" in text(bad), text(bad)
        checks.append("list_files pages")

        # A file id works as well as a handle.
        result = await session.call_tool("get_download_url", {"file": ticket["file_id"]})
        assert not is_error(result), text(result)

        for size in (0, 1, 16 * 1024):
            small = os.urandom(size)
            result = await session.call_tool(
                "upload_small_file",
                {
                    "filename": f"small-{size}.bin",
                    "data_base64": base64.b64encode(small).decode(),
                    "sha256": hashlib.sha256(small).hexdigest(),
                },
            )
            assert not is_error(result), text(result)
            stored = structured(result)
            result = await session.call_tool("read_small_file", {"file": stored["handle"]})
            assert not is_error(result), text(result)
            assert base64.b64decode(structured(result)["data_base64"]) == small
        checks.append("small files 0 B, 1 B, 16 KiB")

        big = os.urandom(16 * 1024 + 1)
        result = await session.call_tool(
            "upload_small_file",
            {"filename": "big.bin", "data_base64": base64.b64encode(big).decode(), "sha256": hashlib.sha256(big).hexdigest()},
        )
        assert is_error(result) and "request_upload" in text(result), text(result)
        result = await session.call_tool(
            "upload_small_file",
            {"filename": "bad.bin", "data_base64": base64.b64encode(b"abc").decode(), "sha256": "0" * 64},
        )
        assert is_error(result) and "sha256" in text(result), text(result)
        checks.append("small file refusals")
        return ticket

    ticket = await session_for(args.url, args.token, recorder, flow)

    async def other_user(session):
        result = await session.call_tool("get_download_url", {"file": ticket["handle"]})
        assert is_error(result) and "another user" in text(result), text(result)
        result = await session.call_tool("get_download_url", {"file": ticket["file_id"]})
        assert is_error(result), text(result)
        result = await session.call_tool("list_files", {})
        assert structured(result)["files"] == [], "another user's files are listed"

    await session_for(args.url, args.other_token, run=other_user)
    checks.append("other user refused")

    await expect_refused(args.url, "not-a-token", 401)
    await expect_refused(args.url, None, 401)
    await expect_refused(args.url, args.readonly_token, 403)
    checks.append("401 and 403")

    largest = max(recorder.bodies, key=lambda b: b[1])
    assert largest[1] <= args.max_message, f"an MCP message of the file flow is {largest[1]} bytes: {largest}"
    checks.append(f"{len(recorder.bodies)} MCP messages of the 1 MiB flow, largest {largest[1]} bytes")
    print(json.dumps({"checks": checks, "messages": len(recorder.bodies), "largest": largest[1]}))


if __name__ == "__main__":
    run_main(main)
