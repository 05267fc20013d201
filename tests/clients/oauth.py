"""The official MCP Python SDK's own OAuth client against sluice and a real
authorization server (authz.mjs, on oidc-provider), from an unauthenticated
start: 401 -> protected-resource metadata -> authorization-server metadata ->
dynamic registration -> authorize (PKCE) -> token -> tools/call, then a real
upload and download with the returned curl lines. Then: a genuine token for
another resource is refused (401); a grant without files:write gets 403
insufficient_scope and the SDK's step-up re-authorizes and retries.

The "browser" is a cookie-keeping HTTP client that follows the authorization
server's redirects until it is sent back to the redirect URI; the interaction
there completes itself (authz.mjs). Prints a JSON summary of the checks.
"""

import argparse
import base64
import hashlib
import json
import os
import sys
from urllib.parse import parse_qs, urljoin, urlparse

import httpx2
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from mcp_common import is_error, run_main, sh, structured, text

REDIRECT = "http://127.0.0.1:9/callback"


class Memory:
    """Token storage in memory."""

    def __init__(self):
        self.tokens = None
        self.client = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Browser:
    """Plays the person at the browser: opens the authorization URL and
    follows the server's redirects back to the client's redirect URI."""

    def __init__(self, deny_first=None):
        self.deny_first = deny_first
        self.visits = []
        self.result = None

    async def redirect(self, url):
        if self.deny_first and not self.visits:
            url += "&test_deny_scope=" + self.deny_first
        self.visits.append(url)
        async with httpx2.AsyncClient(follow_redirects=False, timeout=30) as browser:
            for _ in range(12):
                response = await browser.get(url)
                location = response.headers.get("location")
                assert response.status_code in (302, 303) and location, (
                    f"the authorization server answered {response.status_code}: {response.text[:300]}"
                )
                if location.startswith(REDIRECT):
                    query = parse_qs(urlparse(location).query)
                    assert "code" in query, f"no code in the redirect: {location}"
                    self.result = AuthorizationCodeResult(
                        code=query["code"][0],
                        state=query.get("state", [None])[0],
                        iss=query.get("iss", [None])[0],
                    )
                    return
                url = urljoin(url, location)
        raise AssertionError("the authorization server never redirected back")

    async def callback(self):
        return self.result


def oauth(url, browser):
    metadata = OAuthClientMetadata(
        client_name="sluice oauth test",
        redirect_uris=[REDIRECT],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    return OAuthClientProvider(url, metadata, Memory(), browser.redirect, browser.callback)


def claims(jwt):
    head, body, _ = jwt.split(".")
    pad = lambda s: s + "=" * (-len(s) % 4)  # noqa: E731
    return json.loads(base64.urlsafe_b64decode(pad(head))), json.loads(base64.urlsafe_b64decode(pad(body)))


async def run(url, auth, statuses, work):
    async def hook(response):
        statuses.append(response.status_code)
        if response.status_code >= 400:
            # What the SDK reports only as "Server returned an error response"
            # (401 and 403 included: its step-up may end on one).
            body = (await response.aread())[:300].decode("utf-8", "replace")
            print(f"{response.request.method} {response.request.url}: {response.status_code} {dict(response.headers)} {body}", file=sys.stderr)

    async with httpx2.AsyncClient(auth=auth, timeout=60, event_hooks={"response": [hook]}) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                return await work(session)


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--issuer", required=True)
    p.add_argument("--alg", required=True)
    p.add_argument("--workdir", required=True)
    args = p.parse_args()
    checks = []

    up = os.path.join(args.workdir, "up")
    down = os.path.join(args.workdir, "down")
    os.makedirs(up)
    os.makedirs(down)
    data = os.urandom(700_000)
    name = "rapport final;v2 (été).pdf"
    with open(os.path.join(up, name), "wb") as f:
        f.write(data)

    browser = Browser()
    auth = oauth(args.url, browser)
    statuses = []

    async def flow(session):
        result = await session.call_tool(
            "request_upload", {"filename": name, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        )
        assert not is_error(result), text(result)
        ticket = structured(result)
        sh(ticket["command"], up)
        result = await session.call_tool("get_download_url", {"file": ticket["handle"]})
        assert not is_error(result), text(result)
        sh(structured(result)["command"], down)
        with open(os.path.join(down, os.listdir(down)[0]), "rb") as f:
            assert f.read() == data, "downloaded bytes differ"

    await run(args.url, auth, statuses, flow)
    assert statuses[0] == 401, f"the flow starts from a 401: {statuses}"
    assert len(browser.visits) == 1, browser.visits
    token = auth.context.current_tokens.access_token
    header, body = claims(token)
    assert header["alg"] == args.alg, header
    assert body["aud"] == args.url, f"aud is the MCP URL (RFC 8707): {body['aud']}"
    assert body["iss"] == args.issuer, body
    assert auth.context.client_info.client_id, "registered dynamically"
    checks.append(f"SDK OAuth: 401, discovery, registration, PKCE authorization, {args.alg} token for the MCP URL")
    checks.append("upload and download with the returned curl lines")

    # A genuine token of the same server, meant for another resource.
    async with httpx2.AsyncClient(timeout=30) as http:
        other = (await http.get(f"{args.issuer}/test/mint", params={"aud": "https://other.example/mcp"})).text
        response = await http.post(
            args.url,
            headers={
                "Authorization": f"Bearer {other}",
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
            },
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        )
        assert response.status_code == 401, response.status_code
        assert 'error="invalid_token"' in response.headers.get("www-authenticate", ""), response.headers
    checks.append("a token for another resource: 401 invalid_token")

    # A user who did not grant files:write: 403, then the SDK steps up.
    step_browser = Browser(deny_first="files:write")
    step_auth = oauth(args.url, step_browser)
    step_statuses = []

    async def step_up(session):
        result = await session.call_tool("list_files", {})
        assert not is_error(result), text(result)
        result = await session.call_tool("request_upload", {"filename": "a.txt", "size": 1, "sha256": "0" * 64})
        assert not is_error(result), text(result)

    await run(args.url, step_auth, step_statuses, step_up)
    assert 403 in step_statuses, f"a 403 insufficient_scope was seen: {step_statuses}"
    assert len(step_browser.visits) == 2, f"the SDK re-authorized once: {len(step_browser.visits)}"
    granted = claims(step_auth.context.current_tokens.access_token)[1]["scope"].split()
    assert "files:write" in granted, granted
    checks.append("403 insufficient_scope, then the SDK's step-up re-authorizes and the call succeeds")
    print(json.dumps({"checks": checks}))


if __name__ == "__main__":
    run_main(main)
