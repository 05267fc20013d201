"""An OTLP/HTTP trace receiver on loopback: decodes each POST /v1/traces
(`ExportTraceServiceRequest`, protobuf) with the official
`opentelemetry-proto` package and prints each span as one JSON line
(trace and span ids in hex, its parent's, name, kind, attributes, the
service's name). Prints "listening on <port>" first.
"""

import http.server
import json
import sys

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2


def value(v):
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


class Receive(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        request = trace_service_pb2.ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource_spans in request.resource_spans:
            resource = {a.key: value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    print(json.dumps({
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex(),
                        "name": span.name,
                        "kind": span.kind,
                        "attributes": {a.key: value(a.value) for a in span.attributes},
                        "service": resource.get("service.name"),
                    }), flush=True)
        answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receive)
print(f"listening on {server.server_address[1]}", flush=True)
sys.stdout.flush()
server.serve_forever()
