"""The model's side after an upload in the widget, by the official MCP Python
SDK client: get_upload_status for the upload_id the widget reported, then
get_download_url for its handle, and the download `command` run exactly as
returned, in --dir. Prints one JSON line with the handle and the file's name.

Run by tests/tests/widget.rs; exits non-zero naming the failed check.
"""

import argparse
import json

from mcp_common import run_main, session_for, sh, structured


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--upload-id", required=True)
    parser.add_argument("--dir", required=True)
    args = parser.parse_args()

    async def run(session):
        status = structured(await session.call_tool("get_upload_status", {"upload_id": args.upload_id}))
        assert status["state"] == "ready", f"the upload is ready: {status}"
        ticket = structured(await session.call_tool("get_download_url", {"file": status["handle"]}))
        return status, ticket

    status, ticket = await session_for(args.url, args.token, run=run)
    sh(ticket["command"], args.dir)
    print(json.dumps({"handle": status["handle"], "filename": ticket["filename"], "sha256": ticket["sha256"]}))


if __name__ == "__main__":
    run_main(main)
