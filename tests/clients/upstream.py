"""An action upstream for the end-to-end tests, written independently of
sluice with Python's standard library only.

POST /<mode> receives {action, user, fields} as sluice sends it. Modes:
  echo    describe every field: files (data: URIs, or link objects, which it
          fetches twice: once for the bytes, once to see the link is spent)
          by name, content type, size and sha256; other values as they came
  stall   wait 60 s before answering (for the timeout test)
  fail    answer 500 with a JSON message
  export  answer one file of fields.size bytes named fields.name (a data: URI)
          and a 10 KiB one
GET /log lists what every POST received: path, declared and read lengths,
and whether the body arrived whole.

The first line printed is "listening on <port>".
"""

import base64
import hashlib
import json
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG = []
LOG_LOCK = threading.Lock()
KEY = sys.argv[1] if len(sys.argv) > 1 else None


def describe_data_uri(uri):
    header, _, data = uri.partition(",")
    params = header[len("data:"):].split(";")
    mime, name, is_b64 = params[0], None, False
    for p in params[1:]:
        if p == "base64":
            is_b64 = True
        elif p.startswith("name="):
            name = urllib.parse.unquote(p[len("name="):], errors="strict")
    raw = base64.b64decode(data, validate=True) if is_b64 else urllib.parse.unquote_to_bytes(data)
    return {"name": name, "content_type": mime, "size": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}


def fetch(url):
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, b""


def describe(value):
    if isinstance(value, str) and value.startswith("data:"):
        return {"file": describe_data_uri(value)}
    if isinstance(value, dict) and "url" in value and "sha256" in value:
        status, body = fetch(value["url"])
        again, _ = fetch(value["url"])
        return {
            "link": {
                "name": value["name"],
                "content_type": value["content_type"],
                "size": len(body),
                "sha256": hashlib.sha256(body).hexdigest(),
                "status": status,
                "second_status": again,
                "declared_sha256": value["sha256"],
            }
        }
    if isinstance(value, list):
        return [describe(v) for v in value]
    return {"value": value}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/log":
            with LOG_LOCK:
                self.reply(200, list(LOG))
        else:
            self.reply(404, {"message": "no such page"})

    def read_body(self):
        declared = int(self.headers.get("Content-Length", "0"))
        chunks, read = [], 0
        while read < declared:
            chunk = self.rfile.read(min(1 << 20, declared - read))
            if not chunk:
                break
            chunks.append(chunk)
            read += len(chunk)
        entry = {
            "path": self.path,
            "declared": declared,
            "read": read,
            "complete": read == declared,
            "auth": self.headers.get("Authorization"),
        }
        with LOG_LOCK:
            LOG.append(entry)
        return b"".join(chunks) if read == declared else None

    def do_POST(self):
        body = self.read_body()
        if body is None:
            self.close_connection = True
            return
        if KEY is not None and self.headers.get("Authorization") != f"Bearer {KEY}":
            return self.reply(401, {"message": "unknown caller"})
        request = json.loads(body)
        mode = self.path.strip("/").split("?")[0]
        if mode == "echo":
            fields = {k: describe(v) for k, v in request["fields"].items()}
            return self.reply(200, {"action": request["action"], "user": request["user"], "fields": fields})
        if mode == "stall":
            time.sleep(60)
            return self.reply(200, {})
        if mode == "fail":
            return self.reply(500, {"message": "the review database is down"})
        if mode == "export":
            size = int(request["fields"].get("size", 1 << 20))
            name = request["fields"].get("name", "rapport final;v2 (été).pdf")
            big = bytes((i * 7 + 3) % 251 for i in range(size))
            small = bytes(i % 251 for i in range(10 * 1024))
            return self.reply(
                200,
                {
                    "report": "data:application/pdf;name=" + urllib.parse.quote(name)
                    + ";base64," + base64.b64encode(big).decode(),
                    "report_sha256": hashlib.sha256(big).hexdigest(),
                    "thumbnail": {"file": "data:image/png;base64," + base64.b64encode(small).decode()},
                    "thumbnail_sha256": hashlib.sha256(small).hexdigest(),
                },
            )
        return self.reply(404, {"message": f"no mode {mode}"})


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"listening on {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
