"""The log the tests' consumers of events keep (the webhook receiver, the
event bus's consumer), one JSON line per message, which
tests/tests/webhooks/ reads the same way whichever wrote it.
"""

import json
import threading
import time

LOCK = threading.Lock()


def appender(path):
    """A function that appends one entry to the log at `path`."""

    def log(entry):
        with LOCK, open(path, "a") as f:
            f.write(json.dumps(entry) + "\n")

    return log


def delivered(event_id, event, **extra):
    """The entry of `event` (a webhook's body) received under `event_id`,
    with `extra` beside."""
    return {
        "phase": "end",
        "at": time.time(),
        "id": event_id,
        "timestamp": event["timestamp"],
        "type": event["type"],
        "file_id": event["data"]["file_id"],
        "owner": event["data"]["owner"],
        "size": event["data"]["size"],
        "sha256": event["data"]["sha256"],
        # Why a file was rejected (a malware scan's verdict), when said.
        **({"reason": event["data"]["reason"]} if event["data"].get("reason") else {}),
        # The receipt of custody signed into it, when there is one.
        **({"receipt": event["data"]["receipt"]} if event["data"].get("receipt") else {}),
        **extra,
    }
