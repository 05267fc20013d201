"""An egress proxy that allows nothing, as a hosted sandbox's proxy refuses a
host not on its allowlist: every request, a CONNECT tunnel included, gets
403 "Host not in allowlist". Prints "listening on <port>" first; logs each
host it refused to stdout.
"""

import http.server
import sys


class Refuse(http.server.BaseHTTPRequestHandler):
    def refuse(self):
        body = b"Host not in allowlist"
        self.send_response(403, "Forbidden")
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        print(f"refused {self.command} {self.path}", flush=True)

    do_CONNECT = do_GET = do_PUT = do_POST = do_HEAD = refuse

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
print(f"listening on {server.server_address[1]}", flush=True)
sys.stdout.flush()
server.serve_forever()
