"""FastMCP's client (PyPI `fastmcp`, pinned in tests/requirements.txt), as a
FastMCP user connects: `Client(url, auth=token)`. Lists the tools, then a
file goes up and comes back through the lines the tools return, run as
returned; the bytes must match. Prints a JSON summary of the checks.
"""

import json

from fastmcp import Client

from mcp_common import client_args, files_round_trip, run_main


async def main():
    args = client_args()
    checks = []
    async with Client(args.url, auth=args.token) as client:
        names = {t.name for t in await client.list_tools()}
        assert {"request_upload", "get_download_url"} <= names, names
        checks.append(f"connected ({client.protocol_version}), {len(names)} tools")

        async def call(tool, arguments):
            return (await client.call_tool(tool, arguments)).structured_content

        await files_round_trip(call, args.workdir, "fast.bin", 120_000)
    checks.append("upload and download through the returned lines, bytes identical")
    print(json.dumps({"checks": checks}))


if __name__ == "__main__":
    run_main(main)
