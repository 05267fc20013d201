"""A team's webhook receiver on loopback, verifying every message with the
Standard Webhooks reference library (PyPI `standardwebhooks`).

Each request is logged to --log as one JSON line: `{"phase": "start"}` when it
arrives, then `{"phase": "end", "id", "type", "file_id", "status"}` once it is
answered, or `{"phase": "bad", "error"}` for a message that does not verify.
--status sets the answer (204 by default), --delay holds each answer that
many seconds (a slow receiver), --port reuses a port (a receiver restarted),
--raw keeps the first message verified (its body and headers) in a file.
"""

import argparse
import json
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from event_log import LOCK, appender, delivered


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--secret", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--status", type=int, default=204)
    parser.add_argument("--delay", type=float, default=0)
    parser.add_argument("--raw", help="keep the first message verified here, as received")
    args = parser.parse_args()
    webhook = Webhook(args.secret)

    log = appender(args.log)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            log({"phase": "start", "at": time.time()})
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            try:
                event = webhook.verify(body, dict(self.headers.items()))
            except WebhookVerificationError as e:
                log({"phase": "bad", "error": str(e)})
                self.send_response(400)
                self.end_headers()
                return
            if args.raw:
                with LOCK:
                    try:
                        with open(args.raw, "x") as f:
                            json.dump({
                                "body": body.decode(),
                                "headers": dict(self.headers.items()),
                            }, f)
                    except FileExistsError:
                        pass
            time.sleep(args.delay)
            self.send_response(args.status)
            self.end_headers()
            log(delivered(self.headers["webhook-id"], event, status=args.status))

    ThreadingHTTPServer.allow_reuse_address = True
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"listening on {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
