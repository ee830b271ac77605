#!/usr/bin/env python3
"""A tiny MCP server over Streamable HTTP (protocol 2025-06-18) for troupe's tests. Python 3
standard library only (http.server).

CLI: python3 mcp_http_server.py [--require-header NAME=VALUE] [--log FILE]
  Binds 127.0.0.1 on a free port, prints exactly one line "PORT <n>" to stdout, then logs only to
  stderr. Exits on SIGTERM/SIGINT, and when stdin reaches EOF (give it a pipe).
  --require-header NAME=VALUE  every request without that header (exact value) gets 401
  --log FILE  appends one JSON line per HTTP request: {"http_method", "path", "headers"
              (lowercased names), "rpc_method", "rpc_id", "status", "session"} (session: the
              Mcp-Session-Id the request carried, or the one an initialize answer issued)
Endpoint: /mcp
  POST, one JSON-RPC message per body:
    initialize                -> JSON, with a new Mcp-Session-Id header
    anything else             -> 400 without Mcp-Session-Id, 404 with an unknown one
    notifications, responses  -> 202, no body
    tools/list, ping          -> JSON (application/json)
    tools/call echo {text}    -> JSON: the text
    tools/call slow_echo {text} -> an SSE stream (text/event-stream, `event: message` and
                                 `data:` lines): notifications/progress (when the call has
                                 _meta.progressToken, else notifications/message), then 0.3 s
                                 later the result, then the stream ends
    tools/call whoami         -> JSON: the Authorization header the call came with
  GET -> 405 (no server-initiated stream); DELETE with the session -> 200 and the session ends.
Other paths -> 404.
"""

import argparse
import json
import os
import signal
import stat
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SUPPORTED = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
TOOLS = [
    {"name": "echo", "description": "Answers the text (plain JSON).",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                     "required": ["text"]}},
    {"name": "slow_echo", "description": "Answers the text over SSE, after a progress event.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                     "required": ["text"]}},
    {"name": "whoami", "description": "The Authorization header the call came with.",
     "inputSchema": {"type": "object", "properties": {}}},
]


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, required, log_path):
        super().__init__(address, Handler)
        self.required = required          # (name, value) or None
        self.log_path = log_path
        self.sessions = set()
        self.lock = threading.Lock()

    def record(self, entry):
        if not self.log_path:
            return
        with self.lock, open(self.log_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "troupe-test-mcp-http"

    def log_message(self, fmt, *args):
        sys.stderr.write("[mcp_http_server] " + (fmt % args) + "\n")

    # ---- helpers

    def entry(self, rpc=None, status=0, session=None):
        rpc = rpc if isinstance(rpc, dict) else {}
        return {"http_method": self.command, "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "rpc_method": rpc.get("method"), "rpc_id": rpc.get("id"), "status": status,
                "session": session if session is not None else self.headers.get("Mcp-Session-Id"),
                "at": time.time()}

    def answer(self, status, body=None, headers=(), rpc=None, session=None):
        data = b"" if body is None else json.dumps(body).encode("utf-8")
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        if data:
            self.wfile.write(data)
        self.server.record(self.entry(rpc, status, session))

    def error_body(self, rid, code, text):
        return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": text}}

    def authorised(self):
        required = self.server.required
        return required is None or self.headers.get(required[0]) == required[1]

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    # ---- methods

    def do_GET(self):
        if self.path.split("?")[0] != "/mcp":
            self.answer(404, {"error": "not found"})
        else:
            self.answer(405, None, [("Allow", "POST, DELETE")])

    def do_DELETE(self):
        session = self.headers.get("Mcp-Session-Id")
        if self.path.split("?")[0] != "/mcp":
            self.answer(404, {"error": "not found"})
            return
        with self.server.lock:
            known = session in self.server.sessions
            self.server.sessions.discard(session)
        self.answer(200 if known else 404)

    def do_POST(self):
        body = self.read_body()
        if self.path.split("?")[0] != "/mcp":
            self.answer(404, {"error": "not found"})
            return
        try:
            rpc = json.loads(body)
        except ValueError:
            self.answer(400, self.error_body(None, -32700, "Parse error"))
            return
        if not isinstance(rpc, dict):
            self.answer(400, self.error_body(None, -32600, "one JSON-RPC message per request"),
                        rpc=None)
            return
        if not self.authorised():
            self.answer(401, self.error_body(rpc.get("id"), -32001, "Unauthorized"),
                        [("WWW-Authenticate", "Bearer")], rpc)
            return
        method, rid = rpc.get("method"), rpc.get("id")
        params = rpc.get("params") or {}
        if method == "initialize":
            session = uuid.uuid4().hex
            with self.server.lock:
                self.server.sessions.add(session)
            asked = params.get("protocolVersion")
            self.answer(200, {"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": asked if asked in SUPPORTED else SUPPORTED[1],
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "troupe-test-http", "version": "1.0.0"}}},
                [("Mcp-Session-Id", session)], rpc, session)
            return
        session = self.headers.get("Mcp-Session-Id")
        if not session:
            self.answer(400, self.error_body(rid, -32000, "Bad Request: no Mcp-Session-Id"),
                        rpc=rpc)
            return
        with self.server.lock:
            known = session in self.server.sessions
        if not known:
            self.answer(404, self.error_body(rid, -32001, "Session not found"), rpc=rpc)
            return
        if method is None or rid is None:
            self.answer(202, None, rpc=rpc)  # a notification or a response
            return
        if method == "ping":
            self.answer(200, {"jsonrpc": "2.0", "id": rid, "result": {}}, rpc=rpc)
        elif method == "tools/list":
            self.answer(200, {"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}}, rpc=rpc)
        elif method == "tools/call":
            self.call(rpc, rid, params)
        else:
            self.answer(200, self.error_body(rid, -32601, f"Method not found: {method}"), rpc=rpc)

    def call(self, rpc, rid, params):
        name = params.get("name")
        args = params.get("arguments") or {}

        def text(t):
            return {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": t}]}}

        if name == "echo":
            self.answer(200, text(str(args.get("text", ""))), rpc=rpc)
        elif name == "whoami":
            self.answer(200, text(self.headers.get("Authorization") or "<none>"), rpc=rpc)
        elif name == "slow_echo":
            token = (params.get("_meta") or {}).get("progressToken")
            if token is not None:
                note = {"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": token, "progress": 1, "total": 2,
                                   "message": "halfway"}}
            else:
                note = {"jsonrpc": "2.0", "method": "notifications/message",
                        "params": {"level": "info", "data": "slow_echo is working"}}
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            self.wfile.write(b"event: message\ndata: " + json.dumps(note).encode() + b"\n\n")
            self.wfile.flush()
            time.sleep(0.3)
            self.wfile.write(b"event: message\ndata: " +
                             json.dumps(text(str(args.get("text", "")))).encode() + b"\n\n")
            self.wfile.flush()
            self.server.record(self.entry(rpc, 200))
        else:
            self.answer(200, self.error_body(rid, -32602, f"Unknown tool: {name}"), rpc=rpc)


def watch_stdin(server):
    try:
        mode = os.fstat(0).st_mode
    except OSError:
        return
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(0)):
        return

    def reader():
        try:
            while os.read(0, 4096):
                pass
        except OSError:
            pass
        threading.Thread(target=server.shutdown, daemon=True).start()

    threading.Thread(target=reader, daemon=True).start()


def main():
    ap = argparse.ArgumentParser(description="A Streamable HTTP MCP server for tests.")
    ap.add_argument("--require-header", help="NAME=VALUE every request must carry (else 401)")
    ap.add_argument("--log", help="append one JSON line per HTTP request to this file")
    args = ap.parse_args()
    required = None
    if args.require_header:
        name, sep, value = args.require_header.partition("=")
        if not sep or not name:
            ap.error("--require-header takes NAME=VALUE")
        required = (name, value)
    server = Server(("127.0.0.1", 0), required, args.log)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: threading.Thread(target=server.shutdown, daemon=True).start())
    sys.stdout.write(f"PORT {server.server_address[1]}\n")
    sys.stdout.flush()
    watch_stdin(server)
    server.serve_forever(poll_interval=0.1)
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
