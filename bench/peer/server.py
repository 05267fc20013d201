"""The peer `make bench` measures sluice's upload against: mcp-upload 1.1.2, on
uvicorn with httptools and uvloop (its best install), writing each upload to a
directory through its filesystem sink, every upload declared in advance (size
and SHA-256, checked by the gateway, as sluice checks them).

The bytes take mcp-upload's documented path: a ticket from the gateway, then
`curl -F file=@FILE <url>` (multipart POST), streamed through the gateway to
the sink, synced and renamed. Tickets come from `POST /issue` here rather
than from an MCP tool call: the call is not what is measured, the transfer is.

    python server.py PORT DIRECTORY
"""

import sys

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mcp_upload import Destination, MemoryStore, Registry, UploadGateway
from mcp_upload.sinks import filesystem

PORT = int(sys.argv[1])
DIRECTORY = sys.argv[2]

gateway = UploadGateway(
    base_url=f"http://127.0.0.1:{PORT}",
    registry=Registry(
        Destination(name="files", sink=filesystem(DIRECTORY), max_size=1 << 40)
    ),
    store=MemoryStore(),
    upload_timeout=None,
)


async def issue(request: Request) -> JSONResponse:
    body = await request.json()
    issued = await gateway.issue(
        "files", expected_size=body["size"], expected_digest=body["digest"]
    )
    return JSONResponse(gateway.describe(issued))


app = Starlette(routes=[Route("/issue", issue, methods=["POST"]), *gateway.routes()])

if __name__ == "__main__":
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=PORT,
        log_level="warning",
        loop="uvloop",
        http="httptools",
    )
