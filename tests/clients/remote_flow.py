"""mcp-remote (npm, pinned in tests/clients/package.json), the stdio bridge
clients without remote-server support run (Claude Desktop's configuration
file, for one): the official Python SDK's stdio client starts
`mcp-remote <url> --header Authorization:${AUTH}` as such a client's
configuration does, with the token in the environment. Lists the tools,
then a file goes up and comes back through the lines the tools return; the
bytes must match. Prints a JSON summary of the checks.
"""

import json
import os

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from mcp_common import client_args, files_round_trip, run_main, structured


async def main():
    args = client_args("--bridge")
    checks = []
    params = StdioServerParameters(
        command=args.bridge,
        args=[args.url, "--header", "Authorization:${AUTH}"],
        env={**os.environ, "AUTH": f"Bearer {args.token}"},
    )
    async with stdio_client(params) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            names = {t.name for t in (await session.list_tools()).tools}
            assert {"request_upload", "get_download_url"} <= names, names
            checks.append(f"bridged, {len(names)} tools")

            async def call(tool, arguments):
                return structured(await session.call_tool(tool, arguments))

            await files_round_trip(call, args.workdir, "bridged.bin", 110_000)
    checks.append("upload and download through the returned lines, bytes identical")
    print(json.dumps({"checks": checks}))


if __name__ == "__main__":
    run_main(main)
