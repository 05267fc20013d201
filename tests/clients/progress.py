"""Progress while a person uploads, through the official Python SDK client:
the model asks for a page (request_browser_upload), the person (played by
the page's own two requests, its start and a PUT trickled over seconds)
uploads, and meanwhile the model's one get_upload_status call with
`wait_seconds` and a progress token receives notifications/progress as the
bytes arrive, and returns `ready` with the handle once they have. A second
call with no wait and no token answers at once, as before. Prints a JSON
summary of the checks.
"""

import argparse
import json
import os
import threading

from mcp_common import CHUNK, is_error, person_uploads, run_main, session_for, structured

CHUNKS = 12
GAP = 0.4


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--token", required=True)
    args = p.parse_args()
    data = os.urandom(CHUNK * CHUNKS)
    checks = []

    async def run(session):
        page = structured(await session.call_tool("request_browser_upload", {"filename": "slow.bin"}))
        at_once = await session.call_tool("get_upload_status", {"upload_id": page["upload_id"]})
        assert structured(at_once)["state"] == "pending", at_once
        checks.append("no wait, no token: pending at once")
        errors = []
        worker = threading.Thread(target=person_uploads, args=(page["page_url"], "slow.bin", data, errors, GAP))
        worker.start()
        notes = []

        async def on_progress(progress, total, message):
            notes.append((progress, total, message))

        result = await session.call_tool(
            "get_upload_status",
            {"upload_id": page["upload_id"], "wait_seconds": 40},
            progress_callback=on_progress,
        )
        worker.join()
        assert not errors, errors
        assert not is_error(result), result
        status = structured(result)
        assert status["state"] == "ready", f"ready once the bytes are in: {status}"
        assert status["size"] == len(data), status
        assert len(notes) >= 2, f"notifications while the bytes arrived: {notes}"
        seen = [n[0] for n in notes]
        assert seen == sorted(seen) and len(set(seen)) == len(seen), f"progress only grows: {seen}"
        assert all(n[1] == len(data) for n in notes), f"the total is the file's size: {notes}"
        assert any(0 < s < len(data) for s in seen), f"some were partway: {seen}"
        checks.append(f"waited: {len(notes)} progress notifications, then ready with the handle")
        return status

    await session_for(args.url, args.token, run=run)
    print(json.dumps({"checks": checks}))


if __name__ == "__main__":
    run_main(main)
