#!/usr/bin/env python3
"""An OTLP/HTTP trace receiver for the tracing tests: what a collector
(Jaeger, Tempo, the OpenTelemetry Collector) is to the server.

usage: otlp_receiver.py PORT SPANS_FILE

Accepts POST /v1/traces (protobuf, optionally gzip-compressed), decodes the
ExportTraceServiceRequest with the OpenTelemetry protocol's own definitions
(PyPI opentelemetry-proto) and appends one JSON line per span to SPANS_FILE:
service, name, kind, trace and span ids, parent span id, status code and
attributes. Prints "ready" once listening.
"""
import gzip, json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, ExportTraceServiceResponse


def value(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        if self.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        if self.path != "/v1/traces" or "protobuf" not in self.headers.get("content-type", ""):
            self.send_response(404 if self.path != "/v1/traces" else 415)
            self.end_headers()
            return
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        lines = []
        for resource_spans in request.resource_spans:
            resource = {a.key: value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    lines.append(json.dumps({
                        "service": resource.get("service.name"), "name": span.name, "kind": span.kind,
                        "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(), "parent_span_id": span.parent_span_id.hex(),
                        "status": span.status.code, "attributes": {a.key: value(a.value) for a in span.attributes},
                    }))
        with open(sys.argv[2], "a") as spans:
            spans.write("".join(line + "\n" for line in lines))
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *arguments):
        pass


server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Receiver)
print("ready", flush=True)
server.serve_forever()
