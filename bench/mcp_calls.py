#!/usr/bin/env python3
"""What an MCP server costs a troupe run, against the reference servers (tests/mcp, `make
mcp-deps`), all on this machine:

1. per call: one reply with N calls of server-everything's `echo` (stdio) against the same
   run with no call, per call, minus the server's own time for `echo` as a client that speaks to
   it directly sees it (JSON-RPC lines over its stdin and stdout);
2. start-up: the time from `troupe run` starting to its first model reply (the scripted model
   answers at once) with two servers configured (everything and filesystem) and with none.

Usage: bench/mcp_calls.py TROUPE [CALLS] [ROUNDS]
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODULES = os.path.join(HERE, "..", "tests", "mcp", "node_modules", "@modelcontextprotocol")
EVERYTHING = os.path.join(MODULES, "server-everything", "dist", "index.js")
FILESYSTEM = os.path.join(MODULES, "server-filesystem", "dist", "index.js")


def servers(workspace, both):
    config = {"ev": {"command": "node", "args": [EVERYTHING, "stdio"]}}
    if both:
        config["fs"] = {"command": "node", "args": [FILESYSTEM, workspace]}
    return json.dumps({"mcpServers": config})


def write_script(path, calls):
    """One reply with `calls` calls (they run one after another: MCP tools are not read-only),
    so that the step's own cost is paid once."""
    with open(path, "w") as out:
        if calls:
            out.write(json.dumps({"text": "", "tool_calls": [
                {"name": "mcp__ev__echo", "input": {"message": "ping %d" % i}}
                for i in range(calls)]}) + "\n")
        out.write(json.dumps({"text": "done"}) + "\n")


def run(troupe, workspace, home, script, config):
    """Seconds to the first assistant line and to the end of the run."""
    args = [troupe, "run", "--model", "scripted:" + script, "--output-format", "stream-json",
            "--allowedTools", "mcp__ev", "--sandbox", "off", "go"]
    if config:
        args[2:2] = ["--mcp-config", config]
    env = dict(os.environ, TROUPE_HOME=home)
    start = time.monotonic()
    proc = subprocess.Popen(args, cwd=workspace, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    first = None
    for line in proc.stdout:
        if first is None and '"type":"assistant"' in line:
            first = time.monotonic() - start
    proc.wait()
    total = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit("troupe failed (%d): %s" % (proc.returncode, proc.stderr.read()[-2000:]))
    return first, total


def direct_echo(calls):
    """The server's own time per echo, as a client speaking to it directly sees it."""
    proc = subprocess.Popen(["node", EVERYTHING, "stdio"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def ask(message):
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        while True:
            answer = json.loads(proc.stdout.readline())
            if answer.get("id") == message["id"]:
                return answer

    ask({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}})
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    # As troupe does before its first call: the tool list (the server warms up on it too).
    ask({"jsonrpc": "2.0", "id": -1, "method": "tools/list"})
    start = time.monotonic()
    for i in range(calls):
        ask({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
             "params": {"name": "echo", "arguments": {"message": "ping %d" % i}}})
    elapsed = time.monotonic() - start
    proc.kill()
    proc.wait()
    return elapsed / calls


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    troupe = os.path.abspath(sys.argv[1])
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    if not os.path.exists(EVERYTHING):
        sys.exit("the reference MCP servers are not installed: make mcp-deps")
    with tempfile.TemporaryDirectory() as tmp:
        workspace = os.path.join(tmp, "ws")
        home = os.path.join(tmp, "home")
        os.makedirs(workspace)
        many = os.path.join(tmp, "many.jsonl")
        none = os.path.join(tmp, "none.jsonl")
        write_script(many, calls)
        write_script(none, 0)
        with_calls, without, own = [], [], []
        first_two, first_none = [], []
        for _ in range(rounds):
            with_calls.append(run(troupe, workspace, home, many, servers(workspace, False))[1])
            without.append(run(troupe, workspace, home, none, servers(workspace, False))[1])
            own.append(direct_echo(calls))
            first_two.append(run(troupe, workspace, home, none, servers(workspace, True))[0])
            first_none.append(run(troupe, workspace, home, none, None)[0])
        per_call = (statistics.median(with_calls) - statistics.median(without)) / calls
        server = statistics.median(own)
        print("mcp echo (stdio), %d calls, %d rounds (medians):" % (calls, rounds))
        print("  per call through troupe %.3f ms; the server's own %.3f ms; "
              "troupe's part %.3f ms" % (per_call * 1e3, server * 1e3, (per_call - server) * 1e3))
        print("  time to the first model reply: %.0f ms with two servers, %.0f ms with none "
              "(+%.0f ms)" % (statistics.median(first_two) * 1e3,
                              statistics.median(first_none) * 1e3,
                              (statistics.median(first_two) - statistics.median(first_none)) * 1e3))


if __name__ == "__main__":
    main()
