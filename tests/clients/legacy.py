"""The 2025-03-26 revision through the official Python SDK of that era
(1.9.x, in its own venv: `.venv-legacy`), as many installed clients still
speak it: no `structuredContent`, no output schemas, no
`MCP-Protocol-Version` header. sluice must agree to 2025-03-26, list its
tools without output schemas (with their annotations, which that revision
has), and answer every call so that the text alone carries it: upload and
download through the lines the text gives. Prints a JSON summary.
"""

import argparse
import asyncio
import hashlib
import json
import os
import subprocess
import sys

import httpx
from mcp import ClientSession, types
from mcp.client.streamable_http import streamablehttp_client


def sh(line, cwd):
    done = subprocess.run(line, shell=True, cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, f"command failed ({done.returncode}): {line}\n{done.stdout}\n{done.stderr}"


def answer(result):
    """The JSON object a result's text carries (its last text block)."""
    assert not result.isError, result
    assert getattr(result, "structuredContent", None) is None, f"structuredContent sent: {result}"
    blocks = [c.text for c in result.content if c.type == "text"]
    return json.loads(blocks[-1])


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--workdir", required=True)
    args = p.parse_args()
    assert types.LATEST_PROTOCOL_VERSION == "2025-03-26", types.LATEST_PROTOCOL_VERSION
    sent = []

    async def hook(request):
        sent.append(request.headers.get("mcp-protocol-version"))

    def factory(headers=None, timeout=None, auth=None):
        return httpx.AsyncClient(
            headers=headers, timeout=timeout, auth=auth, follow_redirects=True, event_hooks={"request": [hook]}
        )

    checks = []
    headers = {"Authorization": f"Bearer {args.token}"}
    async with streamablehttp_client(args.url, headers=headers, httpx_client_factory=factory) as (read, write, _):
        async with ClientSession(read, write) as session:
            opened = await session.initialize()
            assert opened.protocolVersion == "2025-03-26", opened.protocolVersion
            checks.append("initialize: 2025-03-26 agreed")
            listed = await session.list_tools()
            for tool in listed.tools:
                raw = tool.model_dump(exclude_none=True)
                assert "outputSchema" not in raw, f"{tool.name} lists an output schema"
                hints = raw.get("annotations") or {}
                for hint in ("title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"):
                    assert hint in hints, f"{tool.name}: no {hint} in {hints}"
            checks.append(f"tools/list: {len(listed.tools)} tools, annotated, no output schema")

            up = os.path.join(args.workdir, "up")
            down = os.path.join(args.workdir, "down")
            os.makedirs(up)
            os.makedirs(down)
            data = os.urandom(70_000)
            with open(os.path.join(up, "old.bin"), "wb") as f:
                f.write(data)
            ticket = answer(await session.call_tool(
                "request_upload",
                {"filename": "old.bin", "size": len(data), "sha256": hashlib.sha256(data).hexdigest()},
            ))
            sh(ticket["command"], up)
            link = answer(await session.call_tool("get_download_url", {"file": ticket["handle"]}))
            sh(link["command"], down)
            with open(os.path.join(down, "old.bin"), "rb") as f:
                assert f.read() == data, "downloaded bytes differ"
            page = answer(await session.call_tool("list_files", {}))
            assert any(f["file_id"] == ticket["file_id"] for f in page["files"]), page
            checks.append("upload, download and list through the text alone")
    assert all(v is None for v in sent), f"a 2025-03-26 client sent a protocol header: {sent}"
    print(json.dumps({"checks": checks}))


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
