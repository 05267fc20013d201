"""URL elicitation for a person's upload, through the official Python SDK
client on 2026-07-28 (the per-request envelope, which carries the client's
capabilities): a client that declares URL elicitation gets
request_browser_upload's page as an `input_required` URL elicitation, shows
it (here the person is played by the page's own requests), and calls again
with the state: first it is told what the call waits for, then, once the
file is there, it gets the handle, which downloads the file byte for byte
through get_download_url's line. A client that declares no URL elicitation
gets the page's URL as before. Prints a JSON summary of the checks.
"""

import json
import os

import httpx2
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client

from mcp_common import client_args, person_uploads, run_main, sh, structured, text


async def shown(context, params):
    """The client's elicitation callback: the person accepts the page."""
    return types.ElicitResult(action="accept")


async def opened(url, token, elicit):
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    streams = streamable_http_client(url, http_client=http)
    read, write = (await streams.__aenter__())[:2]
    session = ClientSession(read, write, elicitation_callback=shown if elicit else None)
    await session.__aenter__()
    await session.discover()
    return session, (session, streams, http)


async def close(handles):
    session, streams, http = handles
    await session.__aexit__(None, None, None)
    await streams.__aexit__(None, None, None)
    await http.aclose()


async def main():
    args = client_args()
    checks = []

    session, handles = await opened(args.url, args.token, elicit=True)
    try:
        asked = await session.call_tool("request_browser_upload", {"filename": "elicited.bin"}, allow_input_required=True)
        assert isinstance(asked, types.InputRequiredResult), f"input_required: {asked}"
        request = asked.input_requests["upload"]
        params = request.params
        assert params.mode == "url", params
        assert "/browser/" in params.url, params.url
        checks.append("URL elicitation: the page, shown by the client")
        answers = {"upload": types.ElicitResult(action="accept").model_dump(by_alias=True, exclude_none=True)}

        async def again():
            """The call again, with the person's answer and the state."""
            return await session.call_tool(
                "request_browser_upload",
                {"filename": "elicited.bin"},
                input_responses=answers,
                request_state=asked.request_state,
                allow_input_required=True,
            )

        waiting = await again()
        assert structured(waiting)["state"] == "pending", waiting
        assert "Waiting for the person" in text(waiting), text(waiting)
        checks.append("called again before the upload: says what it waits for")
        data = os.urandom(200_000)
        errors = []
        person_uploads(params.url, "elicited.bin", data, errors)
        assert not errors, errors
        ready = structured(await again())
        assert ready["state"] == "ready" and ready["handle"].startswith("$uploadedFile:"), ready
        link = structured(await session.call_tool("get_download_url", {"file": ready["handle"]}))
        sh(link["command"], args.workdir)
        with open(os.path.join(args.workdir, "elicited.bin"), "rb") as f:
            assert f.read() == data, "downloaded bytes differ"
        checks.append("called again after the upload: the handle, bytes identical")
    finally:
        await close(handles)

    session, handles = await opened(args.url, args.token, elicit=False)
    try:
        page = await session.call_tool("request_browser_upload", {"filename": "plain.bin"})
        assert structured(page)["page_url"] in text(page), page
        checks.append("without URL elicitation: the page's URL, as before")
    finally:
        await close(handles)
    print(json.dumps({"checks": checks}))


if __name__ == "__main__":
    run_main(main)
