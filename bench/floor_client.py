#!/usr/bin/env python3
"""The floor: the least an agent client must do per step, to measure troupe against.

It does only the exchange: one keep-alive HTTP connection to an OpenAI-style endpoint, its own
SSE parsing, and one persistent bash that runs each `shell` call. No retries, no permissions, no
session, no sandbox, no output limits: what troupe spends per step beyond this is its own cost.
Usage: floor_client.py BASE_URL PROMPT   (BASE_URL e.g. http://127.0.0.1:PORT/v1)
Exits 0 when a reply has no tool calls; non-zero with a message on stderr on an HTTP error
status, a broken stream or a dead bash.
"""
import http.client
import json
import os
import subprocess
import sys
import urllib.parse  # already loaded by http.client: costs nothing

TOOLS = [{"type": "function", "function": {
    "name": "shell", "description": "Run a bash command.",
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                   "required": ["command"]}}}]


def fail(msg):
    print(f"floor_client: {msg}", file=sys.stderr)
    sys.exit(1)


def stream_reply(conn, path, messages):
    """POSTs one streaming request; returns (content, tool_calls) with tool calls by index."""
    body = json.dumps({"model": "floor", "stream": True, "messages": messages, "tools": TOOLS})
    conn.request("POST", path, body=body.encode(),
                 headers={"content-type": "application/json", "authorization": "Bearer floor"})
    resp = conn.getresponse()
    if resp.status != 200:
        fail(f"HTTP {resp.status}: {resp.read()[:2000].decode(errors='replace')}")
    content, calls, buf, done = [], {}, b"", False
    while True:
        data = resp.read1(65536)
        if not data:
            break  # read to the end even after [DONE], so the connection can be reused
        # A \r\n may straddle two reads: normalise the whole buffer, never one read alone.
        buf = (buf + data).replace(b"\r\n", b"\n")
        *events, buf = buf.split(b"\n\n")
        for event in events:
            lines = [l[5:].lstrip(b" ") for l in event.split(b"\n") if l.startswith(b"data:")]
            if done or not lines:
                continue
            payload = b"\n".join(lines)
            if payload == b"[DONE]":
                done = True
                continue
            chunk = json.loads(payload)
            if "error" in chunk:
                fail(f"error in stream: {chunk['error']}")
            for choice in chunk.get("choices") or ():
                delta = choice.get("delta") or {}
                if delta.get("content"):
                    content.append(delta["content"])
                for tc in delta.get("tool_calls") or ():
                    call = calls.setdefault(tc.get("index", 0), {"id": "", "name": "", "args": []})
                    call["id"] = tc.get("id") or call["id"]
                    fn = tc.get("function") or {}
                    call["name"] += fn.get("name") or ""
                    call["args"].append(fn.get("arguments") or "")
    if not done:
        fail("stream ended without [DONE]")
    return "".join(content), [calls[i] for i in sorted(calls)]


def run_in_bash(bash, marker, command):
    """Runs one command in the persistent bash; returns its output and exit status."""
    # The command's stdin is /dev/null so it cannot eat the commands that follow on our pipe;
    # the sentinel line, printed after it, tells where its output ends.
    bash.stdin.write(f"{{ {command}\n}} </dev/null 2>&1\nprintf '\\n%s %d\\n' {marker} $?\n".encode())
    fd, buf, tag = bash.stdout.fileno(), b"", b"\n" + marker.encode() + b" "
    while True:
        at = buf.find(tag)
        end = buf.find(b"\n", at + len(tag)) if at >= 0 else -1
        if end >= 0:
            return buf[:at].decode(errors="replace"), int(buf[at + len(tag):end])
        data = os.read(fd, 65536)
        if not data:
            fail(f"bash exited (status {bash.wait()})")
        buf += data


def main():
    if len(sys.argv) != 3:
        fail("usage: floor_client.py BASE_URL PROMPT")
    url = urllib.parse.urlsplit(sys.argv[1])
    path = url.path.rstrip("/") + "/chat/completions"
    marker = "FLOOR_" + os.urandom(8).hex()
    # Started before the first request, as an agent has its shell ready when the model answers.
    bash = subprocess.Popen(["bash", "--noprofile", "--norc"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=0)
    conn = http.client.HTTPConnection(url.hostname, url.port or 80)
    messages = [{"role": "user", "content": sys.argv[2]}]
    try:
        while True:
            content, calls = stream_reply(conn, path, messages)
            if not calls:
                print(content)
                return
            messages.append({"role": "assistant", "content": content or None, "tool_calls": [
                {"id": c["id"], "type": "function",
                 "function": {"name": c["name"], "arguments": "".join(c["args"])}} for c in calls]})
            for c in calls:
                try:
                    command = json.loads("".join(c["args"]))["command"]
                    output, status = run_in_bash(bash, marker, command)
                    if status:
                        output += f"\n[exit status {status}]"
                except (ValueError, KeyError, TypeError) as e:
                    output = f"error: bad arguments for {c['name']}: {e}"
                messages.append({"role": "tool", "tool_call_id": c["id"], "content": output})
    except (OSError, ValueError, http.client.HTTPException) as e:
        fail(f"{type(e).__name__}: {e}")
    finally:
        conn.close()
        bash.stdin.close()
        bash.wait()


if __name__ == "__main__":
    main()
