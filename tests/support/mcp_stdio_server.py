#!/usr/bin/env python3
"""A small MCP server over stdio for troupe's tests: newline-delimited JSON-RPC 2.0 on stdin and
stdout, Python 3 standard library only. Each mode misbehaves in one way a real server can.

CLI: python3 mcp_stdio_server.py [MODE] [--starts FILE] [--log FILE]
  MODE (at most one):
    (none)              a well-behaved server
    --never-initialize  reads every line, answers nothing (not even initialize); exits at EOF
    --malformed         after its initialize answer, writes a line that is not JSON before the
                        answer to each later request (and one straight after initialize); keeps
                        working
    --exit-mid-call     tool `crash` exits the process (status 3) while its call is in flight
    --list-changed      tool `add_tool` makes tool `extra` appear, then sends
                        notifications/tools/list_changed before answering
    --paginate          tools/list answers one tool per page, with nextCursor
    --deaf-relist       sends notifications/tools/list_changed before each call's answer, and
                        never answers a tools/list after the first
  --starts FILE  appends one line ("start PID") to FILE at each start: its line count is how many
                 times the server was started
  --log FILE     appends one JSON line per message received: {"method", "id", "params"}, and
                 {"event": "cancelled", "id"} when a call stops for notifications/cancelled
Tools in every mode: `echo {text}` (answers the text), `sleep {seconds}` (answers "slept" after
that long, "cancelled" never: a call notifications/cancelled names gets no answer, as the spec
says), `env {name}` (the value of an environment variable, or "<unset>"), plus the mode's own:
`crash`, `add_tool` and then `extra`, or `second` and `third` (pagination).
stderr gets one line at start ("mcp_stdio_server: started ..."), which a client must not show as
output.
"""

import json
import os
import sys
import threading
import time

SUPPORTED = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
MODES = ("--never-initialize", "--malformed", "--exit-mid-call", "--list-changed", "--paginate",
         "--deaf-relist")
NOT_JSON = "this line is not JSON-RPC {{{"


def parse_args(argv):
    mode, starts, log = None, None, None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in MODES:
            if mode is not None:
                sys.exit(f"mcp_stdio_server: two modes given: {mode} and {a}")
            mode = a
        elif a in ("--starts", "--log") and i + 1 < len(argv):
            if a == "--starts":
                starts = argv[i + 1]
            else:
                log = argv[i + 1]
            i += 1
        else:
            sys.exit(f"mcp_stdio_server: unknown argument {a!r}")
        i += 1
    return mode, starts, log


MODE, STARTS, LOG = parse_args(sys.argv[1:])
OUT_LOCK = threading.Lock()
STATE_LOCK = threading.Lock()
CANCELLED = set()   # ids of calls notifications/cancelled named
EXTRA_ADDED = False


def append(path, line):
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def write_line(text):
    with OUT_LOCK:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


def send(message):
    message = dict(message, jsonrpc="2.0")
    write_line(json.dumps(message, separators=(",", ":")))


def result(rid, value):
    send({"id": rid, "result": value})


def error(rid, code, text):
    send({"id": rid, "error": {"code": code, "message": text}})


def text_result(rid, text, is_error=False):
    value = {"content": [{"type": "text", "text": text}]}
    if is_error:
        value["isError"] = True
    result(rid, value)


def tool(name, description, properties=None, required=None):
    schema = {"type": "object", "properties": properties or {}}
    if required:
        schema["required"] = required
    return {"name": name, "description": description, "inputSchema": schema}


def tools():
    out = [tool("echo", "Answers the text it is given.", {"text": {"type": "string"}}, ["text"]),
           tool("sleep", "Answers after the given seconds.", {"seconds": {"type": "number"}},
                ["seconds"]),
           tool("env", "The value of an environment variable.", {"name": {"type": "string"}},
                ["name"])]
    if MODE == "--exit-mid-call":
        out.append(tool("crash", "Exits the server while the call is in flight."))
    elif MODE == "--list-changed":
        out.append(tool("add_tool", "Makes the tool `extra` appear."))
        with STATE_LOCK:
            if EXTRA_ADDED:
                out.append(tool("extra", "Exists once add_tool was called."))
    elif MODE == "--paginate":
        out.append(tool("second", "The second page's tool."))
        out.append(tool("third", "The third page's tool."))
    return out


def list_tools(rid, params):
    everything = tools()
    if MODE != "--paginate":
        result(rid, {"tools": everything})
        return
    cursor = (params or {}).get("cursor")
    try:
        start = int(cursor) if cursor is not None else 0
    except (TypeError, ValueError):
        error(rid, -32602, f"invalid cursor {cursor!r}")
        return
    page = {"tools": everything[start:start + 1]}
    if start + 1 < len(everything):
        page["nextCursor"] = str(start + 1)
    result(rid, page)


def call_tool(rid, params):
    global EXTRA_ADDED
    name = params.get("name")
    args = params.get("arguments") or {}
    known = {t["name"] for t in tools()}
    if name not in known:
        error(rid, -32602, f"Unknown tool: {name}")
        return
    if name == "echo":
        text_result(rid, str(args.get("text", "")))
    elif name == "env":
        text_result(rid, os.environ.get(str(args.get("name", "")), "<unset>"))
    elif name == "sleep":
        # On a thread of its own, so the reader still sees notifications/cancelled.
        def run():
            end = time.monotonic() + float(args.get("seconds", 1))
            while time.monotonic() < end:
                with STATE_LOCK:
                    if rid in CANCELLED:
                        append(LOG, json.dumps({"event": "cancelled", "id": rid}))
                        return
                time.sleep(0.02)
            text_result(rid, "slept")
        threading.Thread(target=run, daemon=True).start()
    elif name == "crash":
        time.sleep(0.2)  # the call is in flight: the client has sent it and waits
        sys.stderr.write("mcp_stdio_server: crashing mid-call\n")
        sys.stderr.flush()
        os._exit(3)
    elif name == "add_tool":
        with STATE_LOCK:
            EXTRA_ADDED = True
        send({"method": "notifications/tools/list_changed"})
        text_result(rid, "added the tool extra")
    elif name == "extra":
        text_result(rid, "extra ran")
    else:  # second, third
        text_result(rid, f"{name} ran")


LISTED = False


def handle(message):
    method = message.get("method")
    rid = message.get("id")
    params = message.get("params") or {}
    append(LOG, json.dumps({"method": method, "id": rid, "params": params}))
    if MODE == "--never-initialize":
        return
    if method is None:
        return  # a response to something we never asked
    if method == "notifications/cancelled":
        with STATE_LOCK:
            CANCELLED.add(params.get("requestId"))
        return
    if rid is None:
        return  # notifications/initialized and other notifications
    if MODE == "--malformed" and method != "initialize":
        write_line(NOT_JSON)
        write_line("\r")  # a blank line (CRLF) is no message either
    if method == "initialize":
        asked = params.get("protocolVersion")
        result(rid, {"protocolVersion": asked if asked in SUPPORTED else SUPPORTED[1],
                     "capabilities": {"tools": {"listChanged": True}},
                     "serverInfo": {"name": "troupe-test-stdio", "version": "1.0.0"}})
        if MODE == "--malformed":
            write_line(NOT_JSON)
    elif method == "ping":
        result(rid, {})
    elif method == "tools/list":
        global LISTED
        if MODE == "--deaf-relist" and LISTED:
            return
        LISTED = True
        list_tools(rid, params)
    elif method == "tools/call":
        if MODE == "--deaf-relist":
            send({"method": "notifications/tools/list_changed"})
        call_tool(rid, params)
    else:
        error(rid, -32601, f"Method not found: {method}")


def main():
    append(STARTS, f"start {os.getpid()}")
    sys.stderr.write(f"mcp_stdio_server: started (mode {MODE or 'plain'}, pid {os.getpid()})\n")
    sys.stderr.flush()
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            message = json.loads(line)
        except ValueError:
            sys.stderr.write(f"mcp_stdio_server: not JSON: {line[:80]}\n")
            continue
        if isinstance(message, dict):
            handle(message)
    # stdin's end: the client is gone.


if __name__ == "__main__":
    main()
