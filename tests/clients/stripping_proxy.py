"""A forward proxy (plain HTTP, absolute-form requests) that passes each
HEAD on to its host and drops the answer's Upload-Offset, as a proxy that
keeps only the headers it knows does. Prints "listening on <port>" first;
logs "stripped HEAD <url>" for each answer it changed.
"""

import http.client
import http.server
import sys
import urllib.parse


class Strip(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_HEAD(self):
        url = urllib.parse.urlsplit(self.path)
        upstream = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("proxy-connection", "connection")}
        upstream.request("HEAD", url.path + (f"?{url.query}" if url.query else ""), headers=headers)
        answer = upstream.getresponse()
        self.send_response(answer.status, answer.reason)
        for name, value in answer.getheaders():
            if name.lower() not in ("upload-offset", "connection", "transfer-encoding"):
                self.send_header(name, value)
        self.send_header("Connection", "close")
        self.end_headers()
        upstream.close()
        print(f"stripped HEAD {self.path}", flush=True)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Strip)
print(f"listening on {server.server_address[1]}", flush=True)
sys.stdout.flush()
server.serve_forever()
