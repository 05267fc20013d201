"""Uploads a file to a sluice upload link with tuspy, the Python tus client
(PyPI `tuspy`), as a program that speaks tus would: the link is the upload's
URL (request_upload created the upload), so the client resumes it from the
offset the server's HEAD gives, in chunks of PATCH.

    python tus_upload.py LINK FILE CHUNK_BYTES [STOP_AT]

Stops once STOP_AT bytes are on the server (an upload cut short), else goes
to the end. Prints, as JSON, the offset it started from and where it ended.
"""

import json
import sys

from tusclient import client


def main() -> None:
    link, path, chunk = sys.argv[1], sys.argv[2], int(sys.argv[3])
    stop_at = int(sys.argv[4]) if len(sys.argv) > 4 else None
    tus = client.TusClient(link.rsplit("/u/", 1)[0])
    uploader = tus.uploader(path, url=link, chunk_size=chunk, retries=0)
    started = uploader.offset
    uploader.upload(stop_at=stop_at)
    print(json.dumps({"started": started, "offset": uploader.offset}))


if __name__ == "__main__":
    main()
