"""Actions with File and FileList fields, driven by the official MCP Python
SDK client against a real sluice and the independent upstream in
upstream.py. Run by tests/tests/actions.rs; exits non-zero, naming the
failed check, on any failure, and prints a JSON summary of the checks.

The catalog the server runs (written by the Rust test) has the actions
  echo       data-uri: note String, count Number, document File, extras FileList
  echo_link  link delivery: document File
  limited    document File, accept image/*, max_size 10
  stall      upstream never answers within the action's 2 s timeout
  fail       upstream answers 500
  export     upstream answers a file of fields.size bytes and a 10 KiB one
"""

import argparse
import base64
import hashlib
import json
import os
import subprocess
import urllib.request

from mcp_common import Recorder, is_error, run_main, session_for, sh, structured, text

FILE_NAME = "rapport final;v2 (été).pdf"


def upstream_log(url):
    with urllib.request.urlopen(url + "/log", timeout=10) as r:
        return json.load(r)


class Flow:
    def __init__(self, args):
        self.args = args
        self.checks = []
        self.workdir = args.workdir

    def file(self, name, data):
        path = os.path.join(self.workdir, name)
        with open(path, "wb") as f:
            f.write(data)
        return {"name": name, "data": data, "sha256": hashlib.sha256(data).hexdigest()}

    async def upload(self, session, f):
        result = await session.call_tool(
            "request_upload", {"filename": f["name"], "size": len(f["data"]), "sha256": f["sha256"]}
        )
        assert not is_error(result), text(result)
        ticket = structured(result)
        sh(ticket["command"], self.workdir)
        return ticket["handle"]

    async def call(self, session, tool, args, ok=True):
        result = await session.call_tool(tool, args)
        if ok:
            assert not is_error(result), f"{tool}: {text(result)}"
            return structured(result)
        assert is_error(result), f"{tool} should have failed: {text(result)}"
        return text(result)

    def refused(self, message, field, *needles):
        assert f'Field "{field}"' in message, f"the error names {field}: {message}"
        for n in needles:
            assert n in message, f"{n!r} not in {message!r}"


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--other-token", required=True)
    p.add_argument("--files-only-token", required=True)
    p.add_argument("--upstream", required=True)
    p.add_argument("--workdir", required=True)
    args = p.parse_args()
    flow = Flow(args)
    checks = flow.checks
    recorder = Recorder()

    doc = flow.file(FILE_NAME, os.urandom(300_000))
    extra1 = flow.file("extra one.txt", b"first extra\n")
    extra2 = flow.file("extra-two.bin", os.urandom(70_000))

    async def main_flow(session):
        tools = {t.name: t for t in (await session.list_tools()).tools}
        for name in ("list_actions", "execute_action", "action_echo", "action_echo_link", "action_export"):
            assert name in tools, f"{name} not listed: {sorted(tools)}"
        schema = tools["action_echo"].inputSchema if hasattr(tools["action_echo"], "inputSchema") else tools["action_echo"].input_schema
        assert "x-mcp-file" in schema["properties"]["document"], schema
        assert schema["properties"]["extras"]["type"] == "array", schema
        assert "request_upload" in tools["action_echo"].description
        listed = await flow.call(session, "list_actions", {})
        assert {a["name"] for a in listed["actions"]} >= {"echo", "echo_link", "export"}, listed
        checks.append("action tools listed with x-mcp-file schemas")

        recorder.bodies.clear()
        handle = await flow.upload(session, doc)
        h1 = await flow.upload(session, extra1)
        h2 = await flow.upload(session, extra2)
        result = await flow.call(
            session,
            "action_echo",
            {"note": handle, "count": 3, "document": handle, "extras": [h1, h2]},
        )
        got = result["fields"]
        assert got["document"]["file"] == {
            "name": FILE_NAME,
            "content_type": "application/pdf",
            "size": len(doc["data"]),
            "sha256": doc["sha256"],
        }, got["document"]
        assert [e["file"]["sha256"] for e in got["extras"]] == [extra1["sha256"], extra2["sha256"]], got["extras"]
        assert [e["file"]["name"] for e in got["extras"]] == ["extra one.txt", "extra-two.bin"], got["extras"]
        assert got["count"] == {"value": 3}, got["count"]
        checks.append("happy path: the name arrives intact, bytes verified")
        checks.append("FileList of two")
        assert got["note"] == {"value": handle}, f"a handle in a String field is text: {got['note']}"
        checks.append("handle in a String field delivered as plain text")
        assert result["user"] == "alice" and result["action"] == "echo", result
        recorder.active = False
        largest = max(n for _, n, _ in recorder.bodies)
        assert largest <= 8192, f"an MCP message of the action flow is {largest} bytes"
        checks.append(f"largest MCP message of a 370 KB action flow: {largest} bytes")

        again = await flow.call(session, "execute_action", {"action": "echo", "fields": {"document": handle}})
        assert again["fields"]["document"]["file"]["sha256"] == doc["sha256"]
        checks.append("handle replayed within its TTL, through execute_action")

        uri = "data:text/plain;name=" + "inline%20note.txt" + ";base64," + base64.b64encode(b"inline bytes").decode()
        result = await flow.call(session, "action_echo", {"document": uri})
        assert result["fields"]["document"]["file"]["name"] == "inline note.txt", result
        assert result["fields"]["document"]["file"]["sha256"] == hashlib.sha256(b"inline bytes").hexdigest()
        checks.append("data URI on a File field delivered")

        message = await flow.call(session, "action_echo", {"document": FILE_NAME}, ok=False)
        flow.refused(message, "document", "request_upload")
        message = await flow.call(session, "action_echo", {"document": "data:text/plain;base64,@@@"}, ok=False)
        flow.refused(message, "document", "base64")
        message = await flow.call(session, "action_echo", {"document": handle, "extras": h1}, ok=False)
        flow.refused(message, "extras", "array")
        message = await flow.call(session, "action_echo", {"document": handle, "colour": "red"}, ok=False)
        flow.refused(message, "colour", "no such field")
        message = await flow.call(session, "action_echo", {"note": "x"}, ok=False)
        flow.refused(message, "document", "required")
        checks.append("bare string, malformed data URI, non-array, unknown and missing fields refused by name")

        mid = len(handle) - 10
        forged = handle[:mid] + ("A" if handle[mid] != "A" else "B") + handle[mid + 1:]
        message = await flow.call(session, "action_echo", {"document": forged}, ok=False)
        flow.refused(message, "document", "not a valid handle")
        checks.append("forged handle refused")

        message = await flow.call(session, "action_limited", {"document": handle}, ok=False)
        flow.refused(message, "document", "accepts only image/*")
        tiny_png = flow.file("tiny.png", b"\x89PNG" + os.urandom(60))
        png = await flow.upload(session, tiny_png)
        message = await flow.call(session, "action_limited", {"document": png}, ok=False)
        flow.refused(message, "document", "64 bytes", "limit of 10 bytes")
        checks.append("max_size and accept refused before any read")

        many = [flow.file(f"part-{i:02}.bin", os.urandom(1000 + i)) for i in range(25)]
        handles = [await flow.upload(session, f) for f in many]
        result = await flow.call(session, "action_echo", {"document": handles[0], "extras": handles})
        assert [e["file"]["sha256"] for e in result["fields"]["extras"]] == [f["sha256"] for f in many]
        checks.append("25 references with 2 concurrent reads")

        message = await flow.call(session, "action_stall", {}, ok=False)
        assert "did not answer within 2 s" in message, message
        checks.append("stalled upstream: timeout error")
        message = await flow.call(session, "action_fail", {}, ok=False)
        assert "500" in message and "the review database is down" in message, message
        checks.append("upstream 500: readable error quoting it")

        result = await flow.call(session, "action_echo_link", {"document": handle})
        link = result["fields"]["document"]["link"]
        assert link["status"] == 200 and link["sha256"] == doc["sha256"] and link["size"] == len(doc["data"]), link
        assert link["second_status"] == 404, f"a link works once: {link}"
        assert link["name"] == FILE_NAME, link
        checks.append("link delivery: fetched once, then 404")

        result = await flow.call(session, "action_export", {"size": 1 << 20})
        report = result["report"]
        assert isinstance(report, dict) and report["size"] == 1 << 20, str(result)[:500]
        assert report["handle"].startswith("$uploadedFile:"), report
        down = os.path.join(flow.workdir, "down")
        os.makedirs(down)
        sh(report["command"], down)
        saved = os.listdir(down)
        assert len(saved) == 1, saved
        with open(os.path.join(down, saved[0]), "rb") as f:
            assert hashlib.sha256(f.read()).hexdigest() == result["report_sha256"], "the exported file differs"
        thumb = result["thumbnail"]["file"]
        assert isinstance(thumb, str) and thumb.startswith("data:image/png;base64,"), "a 10 KiB file stays inline"
        checks.append("export_report returns a link whose download is byte-identical; 10 KiB stays inline")

        # The exported file is the caller's, and goes on to another action.
        passed_on = await flow.call(session, "action_echo", {"document": report["handle"]})
        assert passed_on["fields"]["document"]["file"]["sha256"] == report["sha256"] == result["report_sha256"]
        checks.append("a file from a result passes on to another action")

        changed = flow.file("changed.txt", b"the version the model hashed")
        result = await session.call_tool(
            "request_upload", {"filename": changed["name"], "size": len(changed["data"]), "sha256": changed["sha256"]}
        )
        ticket = structured(result)
        with open(os.path.join(flow.workdir, "changed.txt"), "wb") as f:
            f.write(b"the version edited meanwhile!")
        done = subprocess.run(ticket["command"], shell=True, cwd=flow.workdir, capture_output=True)
        assert done.returncode != 0, "the store refused the changed content"
        before = len(upstream_log(args.upstream))
        message = await flow.call(session, "action_echo", {"document": ticket["handle"]}, ok=False)
        flow.refused(message, "document", "not been uploaded yet")
        assert len(upstream_log(args.upstream)) == before, "the upstream was not called"
        checks.append("content changed after the URL was issued: refused, upstream never called")
        return handle

    handle = await session_for(args.url, args.token, recorder, main_flow)

    async def other_user(session):
        message = await flow.call(session, "action_echo", {"document": handle}, ok=False)
        flow.refused(message, "document", "another user")

    await session_for(args.url, args.other_token, run=other_user)
    checks.append("another user's handle refused")

    async def no_scope(session):
        names = {t.name for t in (await session.list_tools()).tools}
        assert "action_echo" in names
        try:
            await session.call_tool("action_echo", {"document": handle})
        except BaseException:  # noqa: BLE001 - a 403 surfaces as an exception
            return
        raise AssertionError("a token without actions:execute ran an action")

    recorder = Recorder()
    try:
        await session_for(args.url, args.files_only_token, recorder, no_scope)
    except BaseException:  # noqa: BLE001
        pass
    assert 403 in recorder.statuses, recorder.statuses
    checks.append("without actions:execute: 403")

    print(json.dumps({"checks": checks}))


if __name__ == "__main__":
    run_main(main)
