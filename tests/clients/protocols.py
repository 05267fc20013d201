"""The three protocol revisions sluice speaks, through the official Python
SDK client: 2026-07-28 opened with `server/discover` (the per-request
envelope Claude's hosts now use), 2025-11-25 and 2025-06-18 opened with
`initialize`. Each revision runs the same file flow: request_upload, the
curl line, get_download_url, the curl line, bytes compared. Prints a JSON
summary of the checks.
"""

import json
import os

import httpx2
import mcp.client.session as client_session
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from mcp_common import client_args, files_round_trip, is_error, run_main, structured, text


async def flow(session, workdir, tag):
    async def call(tool, arguments):
        result = await session.call_tool(tool, arguments)
        assert not is_error(result), text(result)
        return structured(result)

    await files_round_trip(call, os.path.join(workdir, tag), "f.bin", 50_000)


async def run(url, token, workdir, version):
    headers = {"Authorization": f"Bearer {token}"}
    sent = []

    async def hook(request):
        sent.append(request.headers.get("mcp-protocol-version"))

    async with httpx2.AsyncClient(headers=headers, timeout=30, event_hooks={"request": [hook]}) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                if version == "2026-07-28":
                    result = await session.discover()
                    assert "2026-07-28" in result.supported_versions, result
                else:
                    client_session.LATEST_HANDSHAKE_VERSION = version
                    result = await session.initialize()
                    assert result.protocol_version == version, result.protocol_version
                await flow(session, workdir, version)
    # After the opening, every request names the revision in its header.
    assert sent[-1] == version, f"{version}: the last request said {sent[-1]}"


async def main():
    args = client_args()
    checks = []
    for version in ("2026-07-28", "2025-11-25", "2025-06-18"):
        await run(args.url, args.token, args.workdir, version)
        checks.append(f"{version}: opened, upload and download through the curl lines")
    print(json.dumps({"checks": checks}))


if __name__ == "__main__":
    run_main(main)
