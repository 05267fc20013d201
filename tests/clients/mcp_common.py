"""Helpers shared by the MCP client scripts (official Python SDK)."""

import argparse
import asyncio
import hashlib
import http.client
import json
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


def structured(result):
    for name in ("structured_content", "structuredContent"):
        value = getattr(result, name, None)
        if value is not None:
            return value
    raise AssertionError(f"no structuredContent in {result!r}")


def is_error(result):
    return bool(getattr(result, "is_error", None) or getattr(result, "isError", None))


def text(result):
    return " ".join(getattr(c, "text", "") for c in result.content)


def sh(line, cwd):
    done = subprocess.run(line, shell=True, cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, f"command failed ({done.returncode}): {line}\n{done.stdout}\n{done.stderr}"


def client_args(*extra):
    """A client script's arguments: --url, --token, --workdir, and `extra`
    (names of further required options)."""
    p = argparse.ArgumentParser()
    for name in ("--url", "--token", "--workdir", *extra):
        p.add_argument(name, required=True)
    return p.parse_args()


async def files_round_trip(call, workdir, name, size):
    """A file of `size` random bytes up and back, as a model does it:
    request_upload, its line run where the file is (`workdir`/up),
    get_download_url, its line run in `workdir`/down; the bytes must match.
    `call(tool, arguments)` gives a tool's structured answer."""
    up, down = os.path.join(workdir, "up"), os.path.join(workdir, "down")
    os.makedirs(up)
    os.makedirs(down)
    data = os.urandom(size)
    with open(os.path.join(up, name), "wb") as f:
        f.write(data)
    ticket = await call("request_upload", {"filename": name, "size": size, "sha256": hashlib.sha256(data).hexdigest()})
    sh(ticket["command"], up)
    link = await call("get_download_url", {"file": ticket["handle"]})
    sh(link["command"], down)
    with open(os.path.join(down, name), "rb") as f:
        assert f.read() == data, f"{workdir}: downloaded bytes differ"


CHUNK = 64 * 1024


def person_uploads(page_url, name, data, errors, gap=0.0):
    """The person, by the page's own requests: its start (the file's size
    and digest), then the PUT to the target it gets, a CHUNK at a time,
    `gap` seconds apart. A failure is appended to `errors` (for a thread)."""
    try:
        body = json.dumps({"filename": name, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()})
        start = urllib.request.Request(
            page_url + "/start", data=body.encode(), headers={"Content-Type": "application/json"}, method="POST"
        )
        with urllib.request.urlopen(start) as r:
            target = json.load(r)["upload"]
        url = urllib.parse.urlsplit(target["url"])
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
        conn.putrequest(target.get("method", "PUT"), url.path + ("?" + url.query if url.query else ""))
        for header, value in (target.get("headers") or {}).items():
            conn.putheader(header, value)
        conn.putheader("Content-Length", str(len(data)))
        conn.endheaders()
        for i in range(0, len(data), CHUNK):
            conn.send(data[i : i + CHUNK])
            time.sleep(gap)
        answer = conn.getresponse()
        assert answer.status in (200, 201, 204), f"the PUT was refused: {answer.status} {answer.read()!r}"
    except Exception as e:  # reported by the caller
        errors.append(repr(e))


def errors_of(exc):
    """Every message in an exception and the groups and causes behind it."""
    out = [repr(exc)]
    for inner in getattr(exc, "exceptions", []) or []:
        out.extend(errors_of(inner))
    if exc.__cause__ is not None:
        out.extend(errors_of(exc.__cause__))
    return out


class Recorder:
    """Records every POST body sent to /mcp and every response body."""

    def __init__(self):
        self.bodies = []
        self.statuses = []
        self.active = True

    async def on_request(self, request):
        if request.method == "POST" and self.active:
            self.bodies.append(("request", len(request.content), request.content[:200].decode("utf-8", "replace")))

    async def on_response(self, response):
        self.statuses.append(response.status_code)
        if response.request.method == "POST" and self.active:
            body = await response.aread()
            self.bodies.append(("response", len(body), body[:200].decode("utf-8", "replace")))


async def session_for(url, token, recorder=None, run=None):
    hooks = {"request": [recorder.on_request], "response": [recorder.on_response]} if recorder else {}
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, event_hooks=hooks, timeout=30) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await run(session)


def _leaves(error):
    """The exceptions an exception group holds, however deep; or the one."""
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            yield from _leaves(inner)
    else:
        yield error


def run_main(main):
    """Runs an async `main`; a failed check exits 1 naming it. Any other
    failure is raised as it was, after the code, message and data of each
    error response it holds (the SDK's own text leaves them out)."""
    try:
        asyncio.run(main())
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
    except BaseException as e:
        for leaf in _leaves(e):
            code, message = getattr(leaf, "code", None), getattr(leaf, "message", None)
            if code is not None or message is not None:
                data = getattr(leaf, "data", None)
                print(f"error response: code={code} message={message!r} data={data!r}", file=sys.stderr)
        raise
