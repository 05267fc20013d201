"""FastMCP's client (PyPI `fastmcp`, pinned in tests/requirements.txt), as a
FastMCP user connects: `Client(url, auth=token)`. Lists the tools, then a
file goes up and comes back through the lines the tools return, run as
returned; the bytes must match. Prints a JSON summary of the checks.
"""

import asyncio
import hashlib
import json
import os

from fastmcp import Client

from mcp_common import client_args, run_main, sh


async def main():
    args = client_args()
    checks = []
    up, down = os.path.join(args.workdir, "up"), os.path.join(args.workdir, "down")
    os.makedirs(up)
    os.makedirs(down)
    data = os.urandom(120_000)
    with open(os.path.join(up, "fast.bin"), "wb") as f:
        f.write(data)
    async with Client(args.url, auth=args.token) as client:
        names = {t.name for t in await client.list_tools()}
        assert {"request_upload", "get_download_url"} <= names, names
        checks.append(f"connected ({client.protocol_version}), {len(names)} tools")
        ticket = await client.call_tool(
            "request_upload",
            {"filename": "fast.bin", "size": len(data), "sha256": hashlib.sha256(data).hexdigest()},
        )
        sh(ticket.structured_content["command"], up)
        link = await client.call_tool("get_download_url", {"file": ticket.structured_content["handle"]})
        sh(link.structured_content["command"], down)
    with open(os.path.join(down, "fast.bin"), "rb") as f:
        assert f.read() == data, "downloaded bytes differ"
    checks.append("upload and download through the returned lines, bytes identical")
    print(json.dumps({"checks": checks}))


if __name__ == "__main__":
    run_main(main)
