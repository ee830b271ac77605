#!/usr/bin/env python3
"""troupe's MCP client, driven as a user would: headless runs with MCP servers configured as in
Claude Code (--mcp-config, .mcp.json), whose model calls the servers' tools.

Usage: mcp_test.py TROUPE_BINARY CASE. Each CASE is one ctest entry (tests/CMakeLists.txt).
The servers are real: @modelcontextprotocol/server-filesystem and server-everything (npm, pinned
in tests/mcp/package-lock.json; `make mcp-deps` installs them), and the test's own
tests/support/mcp_stdio_server.py (stdio, one misbehaviour per mode) and
tests/support/mcp_http_server.py (Streamable HTTP on 127.0.0.1). The model is the fake Anthropic
server of tests/support/fake_model_server.py: it replays the calls and records each request, so
the tools troupe offers are seen as the model sees them. A case that needs node exits 77 (ctest's
skip) when node or the pinned servers are missing.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

TROUPE = os.path.abspath(sys.argv[1])
CASE = sys.argv[2]
HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
SUPPORT = os.path.join(TESTS, "support")
FAKE_MODEL = os.path.join(SUPPORT, "fake_model_server.py")
STDIO_SERVER = os.path.join(SUPPORT, "mcp_stdio_server.py")
HTTP_SERVER = os.path.join(SUPPORT, "mcp_http_server.py")
NODE_MODULES = os.path.join(TESTS, "mcp", "node_modules", "@modelcontextprotocol")
FS_ENTRY = os.path.join(NODE_MODULES, "server-filesystem", "dist", "index.js")
EVERYTHING_ENTRY = os.path.join(NODE_MODULES, "server-everything", "dist", "index.js")
MODEL = "anthropic/claude-sonnet-4-5"
SKIP = 77


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def read(path):
    with open(path) as f:
        return f.read()


def node():
    """The node program and the pinned servers, or exit 77 (skipped)."""
    program = os.environ.get("TROUPE_TEST_NODE") or shutil.which("node")
    if not program:
        print(f"skipped: {CASE}: node is not installed")
        sys.exit(SKIP)
    for entry in (FS_ENTRY, EVERYTHING_ENTRY):
        if not os.path.exists(entry):
            print(f"skipped: {CASE}: {entry} is missing (make mcp-deps)")
            sys.exit(SKIP)
    return program


def text_of(content):
    """A tool result's content as one string (a string already, or blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") if isinstance(b, dict) and b.get("type") == "text"
                         else json.dumps(b) for b in content)
    return json.dumps(content)


def start_server(argv, env=None):
    """Starts a server that prints "PORT <n>" first; returns (process, port). Its stdin is a pipe:
    closing it stops the server."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=env)
    line = proc.stdout.readline()
    m = re.match(r"PORT (\d+)", line)
    if not m:
        proc.kill()
        raise AssertionError(f"{argv[1]} did not start: {line!r}")
    return proc, int(m.group(1))


def stop_server(proc):
    try:
        proc.stdin.close()
        proc.wait(timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        proc.kill()
        proc.wait()


def tagged_processes(tag):
    """Pids of the processes whose environment holds TROUPE_MCP_TEST_TAG=tag."""
    needle = f"TROUPE_MCP_TEST_TAG={tag}".encode() + b"\0"
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read() + b"\0"
        except OSError:
            continue
        if needle in environ:
            found.append(int(pid))
    return found


class Run:
    """One finished (or interrupted) run: its process, its stream-json events, the tool results
    in order and the model requests the fake server recorded (the namer's left out)."""

    def __init__(self, returncode, stdout, stderr, record, started):
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.started = started
        self.events = []
        for line in stdout.splitlines():
            try:
                self.events.append(json.loads(line))
            except ValueError:
                raise AssertionError(f"a stdout line that is not JSON (a server's output "
                                     f"leaked?): {line!r}\nstderr: {stderr}")
        self.results = []  # (content text, is_error, refused)
        for event in self.events:
            if event.get("type") == "user" and isinstance(event["message"]["content"], list):
                for block in event["message"]["content"]:
                    if block.get("type") == "tool_result":
                        self.results.append((text_of(block.get("content")),
                                             bool(block.get("is_error")), event.get("refused")))
        self.requests = []
        if os.path.exists(record):
            with open(record) as f:
                self.requests = [r for r in map(json.loads, f) if not r.get("naming")]

    def describe(self):
        return (f"exit {self.returncode}\nstderr: {self.stderr[-3000:]}\n"
                f"stdout: {self.stdout[-4000:]}")

    def init(self):
        inits = [e for e in self.events if e.get("type") == "system" and e.get("subtype") == "init"]
        check(inits, f"a system/init line: {self.describe()}")
        return inits[0]

    def server_status(self, name):
        """The status init gives server `name` (Claude Code's mcp_servers), None if unlisted."""
        servers = self.init().get("mcp_servers")
        check(isinstance(servers, list), f"init has mcp_servers: {self.init()}")
        for s in servers:
            if s.get("name") == name:
                return s.get("status")
        return None

    def offered(self, n=0):
        """The tool names the model's n-th request offered."""
        check(len(self.requests) > n, f"a model request #{n}: {self.describe()}")
        body = self.requests[n]["body"] or {}
        return [t.get("name") for t in body.get("tools") or []]

    def tool_schema(self, name, n=0):
        for t in (self.requests[n]["body"] or {}).get("tools") or []:
            if t.get("name") == name:
                return t.get("input_schema")
        return None

    def result(self):
        ends = [e for e in self.events if e.get("type") == "result"]
        check(ends, f"a result line: {self.describe()}")
        return ends[-1]


class World:
    def __init__(self, root):
        self.root = root
        self.home = os.path.join(root, "home")
        self.work = os.path.realpath(os.path.join(root, "work"))
        os.makedirs(self.work)
        os.makedirs(os.path.join(root, "user"))
        self.runs = 0

    def path(self, name):
        return os.path.join(self.root, name)

    def env(self, extra=None):
        env = dict(os.environ)
        # No key and loopback base URLs: nothing here may reach a real provider, even a
        # command troupe would take for a prompt.
        env.update({"TROUPE_HOME": self.home, "XDG_CONFIG_HOME": self.path("config"),
                    "HOME": self.path("user"), "TROUPE_MODEL": "", "OPENAI_API_KEY": "",
                    "ANTHROPIC_API_KEY": "", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
                    "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "TROUPE_MAX_STEPS": "",
                    "TROUPE_MCP_TEST_TAG": self.root})
        for name in ("MCP_TIMEOUT", "MCP_TOOL_TIMEOUT", "TROUPE_BWRAP"):
            env.pop(name, None)
        env.update(extra or {})
        return env

    def config(self, servers, name=None):
        """An --mcp-config file holding these servers."""
        self.runs += 1
        path = self.path(name or f"mcp{self.runs}.json")
        with open(path, "w") as f:
            json.dump({"mcpServers": self.tagged(servers)}, f)
        return path

    def tagged(self, servers):
        """The servers, each stdio one with TROUPE_MCP_TEST_TAG in its env, so that what is left
        of them can be found (whatever else of troupe's environment a server gets)."""
        out = {}
        for name, server in servers.items():
            server = dict(server)
            if "command" in server:
                server["env"] = dict(server.get("env") or {}, TROUPE_MCP_TEST_TAG=self.root)
            out[name] = server
        return out

    def replies(self, calls):
        """One reply per call (a tool call each), then a final text reply."""
        out = [{"tool_calls": [{"name": name, "input": tool_input}]} for name, tool_input in calls]
        return out + [{"text": "done"}]

    def start(self, calls, args, extra_env=None, replies=None):
        """Starts troupe run on the fake model; returns (troupe, model server, record path).
        `replies`, when given, are the model's replies as they are, instead of one per call."""
        self.runs += 1
        script = self.path(f"script{self.runs}.json")
        record = self.path(f"requests{self.runs}.jsonl")
        with open(script, "w") as f:
            json.dump(replies if replies is not None else self.replies(calls), f)
        model, port = start_server([sys.executable, FAKE_MODEL, "--script", script,
                                    "--record", record])
        env = self.env(dict({"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
                             "ANTHROPIC_API_KEY": "test-key"}, **(extra_env or {})))
        argv = [TROUPE, "run", "--cwd", self.work, "--model", MODEL,
                "--output-format", "stream-json"] + args + ["--", "go"]
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, text=True)
        return proc, model, record

    def run(self, calls, args, extra_env=None, timeout=120, replies=None):
        started = time.time()
        proc, model, record = self.start(calls, args, extra_env, replies)
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
            stop_server(model)
        return Run(proc.returncode, stdout, stderr, record, started)

    def troupe(self, args, extra_env=None, timeout=120):
        return subprocess.run([TROUPE] + args, env=self.env(extra_env), capture_output=True,
                              text=True, timeout=timeout, cwd=self.work)

    def stdio_server(self, *args):
        """A server entry for tests/support/mcp_stdio_server.py."""
        return {"command": sys.executable, "args": [STDIO_SERVER] + list(args)}

    def no_leftovers(self):
        """No server process the runs started is still alive (troupe stops them at its end)."""
        deadline = time.time() + 5
        while tagged_processes(self.root) and time.time() < deadline:
            time.sleep(0.1)
        left = tagged_processes(self.root)
        check(not left, f"server processes left behind: {left}")


def lines_of(path):
    return read(path).splitlines() if os.path.exists(path) else []


# =============================================================================================
# The real servers
# =============================================================================================

def fs_servers(w, program):
    return {"fs": {"command": program, "args": [FS_ENTRY, w.work]}}


def case_filesystem(w):
    program = node()
    config = w.config(fs_servers(w, program))
    note = os.path.join(w.work, "note.txt")
    with open(note, "w") as f:
        f.write("hello from the workspace\n")

    # Reading and listing, allowed by name; a path outside the allowed directory is the
    # server's error, marked as one.
    run = w.run([("mcp__fs__read_text_file", {"path": note}),
                 ("mcp__fs__list_directory", {"path": w.work}),
                 ("mcp__fs__read_text_file", {"path": "/etc/hostname"})],
                ["--mcp-config", config,
                 "--allowedTools=mcp__fs__read_text_file,mcp__fs__list_directory"])
    check(run.returncode == 0, f"the run completes: {run.describe()}")
    check(run.server_status("fs") == "connected", f"fs connected: {run.init()}")
    check("mcp__fs__read_text_file" in run.init().get("tools", []),
          f"init's tools name the server's tools: {run.init().get('tools')}")
    offered = run.offered()
    for name in ("mcp__fs__read_text_file", "mcp__fs__list_directory", "mcp__fs__write_file"):
        check(name in offered, f"{name} is offered to the model: {offered}")
    check(all(n.startswith("mcp__fs__") or not n.startswith("mcp__") for n in offered), offered)
    schema = run.tool_schema("mcp__fs__read_text_file")
    check(schema and schema.get("required") == ["path"] and "path" in schema.get("properties", {}),
          f"the server's inputSchema is the tool's: {schema}")
    check(len(run.results) == 3, f"three results: {run.results}")
    check(run.results[0][0].startswith("hello from the workspace\n") and not run.results[0][1],
          f"read_text_file: {run.results[0]}")
    check("[FILE] note.txt" in run.results[1][0], f"list_directory: {run.results[1]}")
    check(run.results[2][1] and "Access denied" in run.results[2][0],
          f"the server's isError is an error result: {run.results[2]}")

    # write_file: asked for in the default mode, so refused headless.
    target = os.path.join(w.work, "written.txt")
    write = ("mcp__fs__write_file", {"path": target, "content": "written by fs"})
    run = w.run([write], ["--mcp-config", config])
    check(not os.path.exists(target), f"default mode, headless: not written: {run.results}")
    check(len(run.results) == 1 and run.results[0][2] == "permission",
          f"refused by the permission check: {run.results} {run.describe()}")
    check(run.returncode == 4, f"the run ends permission_blocked: {run.describe()}")
    denials = run.result().get("permission_denials") or []
    check(any(d.get("tool_name") == "mcp__fs__write_file" for d in denials), f"listed: {denials}")
    # Allowing another of its tools does not allow it.
    run = w.run([write], ["--mcp-config", config, "--allowedTools=mcp__fs__read_text_file"])
    check(not os.path.exists(target) and run.results[0][2] == "permission",
          f"a rule for read_text_file does not allow write_file: {run.results}")

    # Allowed by its name, by mcp__fs__* and by mcp__fs (every tool of the server).
    for i, rule in enumerate(("mcp__fs__write_file", "mcp__fs__*", "mcp__fs")):
        path = os.path.join(w.work, f"allowed{i}.txt")
        run = w.run([("mcp__fs__write_file", {"path": path, "content": f"rule {rule}"})],
                    ["--mcp-config", config, f"--allowedTools={rule}"])
        check(run.returncode == 0, f"--allowedTools {rule}: {run.describe()}")
        check(os.path.exists(path) and read(path) == f"rule {rule}",
              f"--allowedTools {rule} lets write_file run: {run.results}")
        check("Successfully wrote" in run.results[0][0], run.results)

    # A deny rule naming the server holds even in bypass mode: its tools are not offered and a
    # call to one does not run.
    run = w.run([write], ["--mcp-config", config, "--permission-mode", "bypass",
                          "--disallowedTools=mcp__fs"])
    check(not os.path.exists(target), f"--disallowedTools mcp__fs refuses in bypass: {run.results}")
    check(not any(n.startswith("mcp__fs__") for n in run.offered()),
          f"and the server's tools are not offered: {run.offered()}")
    check(run.results and (run.results[0][1] or run.results[0][2]),
          f"the call is an error or a refusal: {run.results}")
    w.no_leftovers()


def everything_servers(program):
    return {"everything": {"command": program, "args": [EVERYTHING_ENTRY, "stdio"]}}


def case_everything(w):
    program = node()
    config = w.config(everything_servers(program))
    run = w.run([("mcp__everything__echo", {"message": "hi there"}),
                 ("mcp__everything__get-sum", {"a": 2, "b": 40}),
                 ("mcp__everything__get-structured-content", {"location": "Chicago"}),
                 ("mcp__everything__get-tiny-image", {}),
                 ("mcp__everything__trigger-long-running-operation", {"duration": 1.5, "steps": 3})],
                ["--mcp-config", config, "--allowedTools=mcp__everything"])
    check(run.returncode == 0, f"the run completes: {run.describe()}")
    check(run.server_status("everything") == "connected", f"connected: {run.init()}")
    offered = run.offered()
    for name in ("echo", "get-sum", "get-structured-content", "get-tiny-image",
                 "trigger-long-running-operation"):
        check(f"mcp__everything__{name}" in offered, f"{name} offered: {offered}")
    check(len(run.results) == 5, f"five results: {run.results}")
    echo, total, structured, image, long_running = run.results
    check("Echo: hi there" in echo[0] and not echo[1], f"echo: {echo}")
    check("42" in total[0], f"get-sum: {total}")
    check(all(k in structured[0] for k in ("temperature", "conditions", "humidity")),
          f"get-structured-content: the structured content is in the result: {structured}")
    # The image is saved to a file the result names, with its type and size.
    check("image/png" in image[0] or "png" in image[0].lower(), f"the image's type: {image}")
    paths = re.findall(r"(/[^\s'\"`()\[\]]+\.png)", image[0])
    check(paths, f"the result names where the image was saved: {image}")
    saved = paths[0]
    check(os.path.isfile(saved), f"the saved image exists: {saved}")
    with open(saved, "rb") as f:
        data = f.read()
    check(data.startswith(b"\x89PNG\r\n\x1a\n"), f"it is the PNG the server sent: {data[:16]!r}")
    size_words = (str(len(data)), f"{len(data) / 1024:.1f}", "20x20", "20×20", "20 x 20")
    check(any(s in image[0] for s in size_words), f"the result names its size: {image}")
    check("Long running operation completed" in long_running[0], f"long-running: {long_running}")
    progress = [e for e in run.events if e.get("type") == "system" and
                "progress" in str(e.get("subtype", ""))]
    check(progress, f"a progress notice in the stream-json output: "
                    f"{[e for e in run.events if e.get('type') == 'system']}")
    check("progress" in json.dumps(progress[0]), progress)
    check(run.stdout.count("Starting default (STDIO) server") == 0, "the server's stderr is not output")
    w.no_leftovers()


def interrupt_during(w, calls, args, wait_for, extra_env=None, settle=1.0):
    """Starts a run, waits until `wait_for(event)` is true of a stream-json line (None: for
    nothing), then `settle` seconds more, sends SIGINT; returns (Run, seconds from the signal to
    troupe's exit)."""
    started = time.time()
    proc, model, record = w.start(calls, args, extra_env)
    out = []
    try:
        deadline = time.time() + 60
        for line in (proc.stdout if wait_for else []):
            out.append(line)
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if wait_for(event):
                break
            check(time.time() < deadline, f"nothing to interrupt: {''.join(out)}")
        else:
            if wait_for:
                raise AssertionError(f"the run ended before the interrupt: {''.join(out)} "
                                     f"{proc.stderr.read()}")
        time.sleep(settle)  # the call (or the start-up) is under way
        signalled = time.time()
        proc.send_signal(signal.SIGINT)
        rest, stderr = proc.communicate(timeout=30)
        took = time.time() - signalled
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        stop_server(model)
    return Run(proc.returncode, "".join(out) + rest, stderr, record, started), took


def is_call_of(name):
    def match(event):
        if event.get("type") != "assistant":
            return False
        return any(b.get("type") == "tool_use" and b.get("name") == name
                   for b in event["message"].get("content", []))
    return match


def case_everything_interrupt(w):
    program = node()
    config = w.config(everything_servers(program))
    name = "mcp__everything__trigger-long-running-operation"
    run, took = interrupt_during(w, [(name, {"duration": 30, "steps": 30})],
                                 ["--mcp-config", config, "--allowedTools=mcp__everything"],
                                 is_call_of(name))
    check(run.returncode == 130, f"troupe run exits 130 after SIGINT: {run.describe()}")
    check(took < 5, f"and quickly: {took:.1f} s")
    check(len(run.results) == 1 and "interrupt" in run.results[0][0].lower(),
          f"the call ends as interrupted: {run.results}")
    check(run.result().get("terminal_reason") == "interrupted", run.result())
    w.no_leftovers()


def case_interrupt_cancels(w):
    """An interrupted call is cancelled at the server (notifications/cancelled with its id)."""
    log = w.path("server.log")
    config = w.config({"x": w.stdio_server("--log", log)})
    run, took = interrupt_during(w, [("mcp__x__sleep", {"seconds": 30})],
                                 ["--mcp-config", config, "--allowedTools=mcp__x"],
                                 is_call_of("mcp__x__sleep"))
    check(run.returncode == 130 and took < 5, f"exit 130 in {took:.1f} s: {run.describe()}")
    check(len(run.results) == 1 and "interrupt" in run.results[0][0].lower(), run.results)
    received = [json.loads(line) for line in lines_of(log)]
    calls = [m for m in received if m.get("method") == "tools/call"]
    cancels = [m for m in received if m.get("method") == "notifications/cancelled"]
    check(len(calls) == 1, f"one call: {received}")
    check(cancels and cancels[0]["params"].get("requestId") == calls[0]["id"],
          f"notifications/cancelled names the call's id: {received}")
    w.no_leftovers()


# =============================================================================================
# Misbehaving servers
# =============================================================================================

def case_exit_mid_call(w):
    starts = w.path("starts")
    config = w.config({"x": w.stdio_server("--exit-mid-call", "--starts", starts)})
    run = w.run([("mcp__x__echo", {"text": "before"}),
                 ("mcp__x__crash", {}),
                 ("mcp__x__echo", {"text": "after the restart"})],
                ["--mcp-config", config, "--allowedTools=mcp__x"])
    check(run.returncode == 0, f"the run goes on: {run.describe()}")
    check(len(run.results) == 3, f"three results: {run.results}")
    check(run.results[0][0] == "before" and not run.results[0][1], run.results[0])
    check(run.results[1][1], f"the call the server died in is an error result: {run.results[1]}")
    check(run.results[2][0] == "after the restart" and not run.results[2][1],
          f"the next call restarts the server and works: {run.results[2]}")
    check(len(lines_of(starts)) == 2, f"started twice: {lines_of(starts)}")
    w.no_leftovers()


def case_unknown_tool(w):
    """A call to a tool not offered is told what there is: with no built-in tools (--tools ""),
    the servers whose tools there are, never "no tools"; the server's tool still works."""
    config = w.config({"x": w.stdio_server()})
    run = w.run([("Bash", {"command": "ls"}), ("mcp__x__nope", {}),
                 ("mcp__x__echo", {"text": "still here"})],
                ["--mcp-config", config, "--tools", "", "--allowedTools=mcp__x"])
    check(run.returncode == 0, f"the run goes on and completes: {run.describe()}")
    check(run.results[0][1] and run.results[0][0] ==
          "unknown tool 'Bash'; configured MCP servers (their tools are mcp__SERVER__TOOL): x",
          run.results[0])
    # A server's tool it does not list: an error result too, not a refusal (no exit 4).
    check(run.results[1][1] and not run.results[1][2] and run.results[1][0] ==
          "unknown tool 'mcp__x__nope': it is not among the tools offered to you; call one that is",
          run.results[1])
    check(run.results[2][0] == "still here" and not run.results[2][1], run.results[2])
    # One a deny rule removed stays a refusal, by that rule.
    run = w.run([("mcp__x__env", {})],
                ["--mcp-config", config, "--allowedTools=mcp__x", "--disallowedTools=mcp__x__env"])
    check(run.results[0][2] == "permission" and
          "mcp__x__env is denied by a rule" in run.results[0][0], run.results)
    w.no_leftovers()


def case_never_initialize(w):
    config = w.config({"x": w.stdio_server("--never-initialize"),
                       "y": w.stdio_server()})
    run = w.run([("mcp__y__echo", {"text": "y works"})], ["--mcp-config", config],
                extra_env={"MCP_TIMEOUT": "1000"}, timeout=60)
    check(run.returncode == 0 or run.returncode == 4, f"the run completes: {run.describe()}")
    check(run.requests, f"the model was asked: {run.describe()}")
    first = run.requests[0]["received_at"] - run.started
    check(first < 3.5, f"the first model request came {first:.2f} s after the start (MCP_TIMEOUT "
                       f"is 1 s)")
    check(run.server_status("x") == "failed", f"x is failed in init: {run.init()}")
    check(run.server_status("y") == "connected", f"y is connected: {run.init()}")
    offered = run.offered()
    check("mcp__y__echo" in offered and not any(n.startswith("mcp__x__") for n in offered),
          f"y's tools are offered, x's not: {offered}")
    # The echo call needs permission (default mode): allowed, it runs.
    run = w.run([("mcp__y__echo", {"text": "y works"})],
                ["--mcp-config", config, "--allowedTools=mcp__y"],
                extra_env={"MCP_TIMEOUT": "1000"}, timeout=60)
    check(run.returncode == 0 and run.results and run.results[0][0] == "y works",
          f"y's call works beside a failed server: {run.describe()}")
    w.no_leftovers()


def case_interrupt_at_startup(w):
    """Ctrl+C while troupe waits for a server to start ends the wait at once, and the run ends
    interrupted without asking the model anything."""
    config = w.config({"x": w.stdio_server("--never-initialize")})
    run, took = interrupt_during(w, [("mcp__x__echo", {"text": "never"})],
                                 ["--mcp-config", config], None,
                                 extra_env={"MCP_TIMEOUT": "20000"}, settle=1.5)
    check(run.returncode == 130, f"exit 130: {run.describe()}")
    check(took < 3, f"the wait ended at the signal, not at MCP_TIMEOUT: {took:.1f} s")
    check(not run.requests, f"no model request: {run.requests}")
    w.no_leftovers()


def case_deaf_relist(w):
    """A server that says its tools changed and then never answers tools/list: the answers held
    for the new list go out once the listing is given up (MCP_TIMEOUT), not at the calls'
    timeout, and they are the server's own answers."""
    config = w.config({"x": w.stdio_server("--deaf-relist")})
    run = w.run([("mcp__x__echo", {"text": "first"}), ("mcp__x__echo", {"text": "second"})],
                ["--mcp-config", config, "--allowedTools=mcp__x"],
                extra_env={"MCP_TIMEOUT": "1500", "MCP_TOOL_TIMEOUT": "20000"}, timeout=60)
    check(run.returncode == 0, f"the run completes: {run.describe()}")
    check([text for text, _, _ in run.results] == ["first", "second"],
          f"both calls have the server's answers: {run.results}")
    check(time.time() - run.started < 10, "within the listing's bound, not the calls' timeout")
    w.no_leftovers()


def case_mcp_list_interrupt(w):
    """Ctrl+C during `troupe mcp list` ends its wait: what is known is printed, exit 130, and
    no server process is left."""
    config = w.config({"x": w.stdio_server("--never-initialize")})
    proc = subprocess.Popen([TROUPE, "mcp", "list", "--mcp-config", config], cwd=w.work,
                            env=w.env({"MCP_TIMEOUT": "20000"}), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    signalled = time.time()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    took = time.time() - signalled
    check(proc.returncode == 130, f"exit 130: {proc.returncode} {out} {err}")
    check(took < 3, f"at the signal, not at MCP_TIMEOUT: {took:.1f} s")
    check("x: " in out and "pending" in out, f"the server is listed as it stands: {out}")
    w.no_leftovers()


def case_malformed(w):
    log_file = w.path("troupe.log")
    config = w.config({"x": w.stdio_server("--malformed")})
    run = w.run([("mcp__x__echo", {"text": "still works"}), ("mcp__x__echo", {"text": "again"})],
                ["--mcp-config", config, "--allowedTools=mcp__x", "--log-level", "info",
                 "--log-file", log_file])
    check(run.returncode == 0, f"the run completes: {run.describe()}")
    check(run.server_status("x") == "connected", f"x connected despite the bad line: {run.init()}")
    check([r[0] for r in run.results] == ["still works", "again"], f"the calls work: {run.results}")
    logged = read(log_file) if os.path.exists(log_file) else ""
    check(re.search(r"not json|malformed|invalid|parse", logged, re.I) and "x" in logged,
          f"the bad line is logged: {logged[-2000:]!r}")
    w.no_leftovers()


def case_list_changed(w):
    config = w.config({"x": w.stdio_server("--list-changed")})
    run = w.run([("mcp__x__add_tool", {}), ("mcp__x__extra", {})],
                ["--mcp-config", config, "--allowedTools=mcp__x"])
    check(run.returncode == 0, f"the run completes: {run.describe()}")
    check(len(run.requests) >= 3, f"three model requests: {len(run.requests)}")
    check("mcp__x__add_tool" in run.offered(0) and "mcp__x__extra" not in run.offered(0),
          f"at first no extra: {run.offered(0)}")
    check("mcp__x__extra" in run.offered(1),
          f"after notifications/tools/list_changed the next request offers it: {run.offered(1)}")
    check(run.results[1][0] == "extra ran" and not run.results[1][1], f"and it runs: {run.results}")


def case_paginate(w):
    config = w.config({"x": w.stdio_server("--paginate")})
    run = w.run([("mcp__x__third", {})], ["--mcp-config", config, "--allowedTools=mcp__x"])
    check(run.returncode == 0, f"the run completes: {run.describe()}")
    names = [n for n in run.offered() if n.startswith("mcp__x__")]
    check(names == ["mcp__x__echo", "mcp__x__sleep", "mcp__x__env", "mcp__x__second",
                    "mcp__x__third"], f"every page's tool, in order: {names}")
    check(run.results[0][0] == "third ran", run.results)


# =============================================================================================
# Streamable HTTP
# =============================================================================================

def case_http(w):
    log = w.path("http.jsonl")
    server, port = start_server([sys.executable, HTTP_SERVER, "--require-header",
                                 "Authorization=Bearer sekrit", "--log", log])
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        config = w.config({
            "h": {"type": "http", "url": url, "headers": {"Authorization": "Bearer ${TOKEN}"}},
            "noauth": {"type": "http", "url": url},
            "wrongpath": {"type": "http", "url": f"http://127.0.0.1:{port}/nope",
                          "headers": {"Authorization": "Bearer ${TOKEN}"}},
            "closed": {"type": "http", "url": "http://127.0.0.1:1/mcp"},
        })
        run = w.run([("mcp__h__echo", {"text": "over json"}),
                     ("mcp__h__slow_echo", {"text": "over sse"}),
                     ("mcp__h__whoami", {})],
                    ["--mcp-config", config, "--allowedTools=mcp__h"],
                    extra_env={"TOKEN": "sekrit", "MCP_TIMEOUT": "5000"})
    finally:
        stop_server(server)
    check(run.returncode == 0, f"the run completes: {run.describe()}")
    check(run.server_status("h") == "connected", f"h connected: {run.init()}")
    check(run.server_status("noauth") in ("failed", "needs-auth"),
          f"without the header: 401, not connected: {run.init()}")
    check(run.server_status("wrongpath") == "failed", f"a wrong URL is failed: {run.init()}")
    check(run.server_status("closed") == "failed", f"a closed port is failed: {run.init()}")
    check([r[0] for r in run.results] == ["over json", "over sse", "Bearer sekrit"],
          f"JSON, SSE and the configured header: {run.results}")
    requests = [json.loads(line) for line in lines_of(log)]
    mine = [r for r in requests if r["path"] == "/mcp" and
            r["headers"].get("authorization") == "Bearer sekrit"]
    # The log is written as each exchange ends, and exchanges overlap: h's initialize is the one
    # request of h's without a session id (every later one carries the id it was given).
    first = [r for r in mine if not r["headers"].get("mcp-session-id")]
    check(len(first) == 1 and first[0]["rpc_method"] == "initialize" and
          first[0]["status"] == 200, f"h's first request is initialize: {requests}")
    session = first[0]["session"]
    check(session, "an Mcp-Session-Id was issued")
    later = [r for r in requests if r["session"] == session and r is not first[0]]
    check(later and all(r["headers"].get("mcp-session-id") == session for r in later),
          f"every later request carries the session: {later}")
    check(all(r["status"] in (200, 202) for r in later), f"none refused: {later}")
    methods = [r["rpc_method"] for r in later if r["http_method"] == "POST"]
    for m in ("notifications/initialized", "tools/list", "tools/call"):
        check(m in methods, f"{m} was sent: {methods}")
    for r in mine:
        if r["http_method"] == "POST":
            accept = r["headers"].get("accept", "")
            check("application/json" in accept and "text/event-stream" in accept,
                  f"POSTs accept JSON and SSE: {accept!r}")
    for r in later:
        if r["http_method"] == "POST":
            check(r["headers"].get("mcp-protocol-version"),
                  f"requests after initialize carry MCP-Protocol-Version: {r['headers']}")
    check(any(r["headers"].get("authorization") is None and r["status"] == 401 for r in requests),
          f"noauth's request was refused 401: {requests}")


# =============================================================================================
# Configuration
# =============================================================================================

def write_json(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(value, f)


def case_config(w):
    proj_starts, other_starts = w.path("proj.starts"), w.path("other.starts")
    write_json(os.path.join(w.work, ".mcp.json"), {"mcpServers": w.tagged({
        "proj": w.stdio_server("--starts", proj_starts),
        "other": w.stdio_server("--starts", other_starts)})})
    calls = [("mcp__cli__env", {"name": "GREETING"}), ("mcp__cli__env", {"name": "FALLBACK"})]

    # Not approved: .mcp.json's servers are not started.
    run = w.run([], [])
    check(run.returncode == 0, run.describe())
    check(not os.path.exists(proj_starts) and not os.path.exists(other_starts),
          "an unapproved .mcp.json starts nothing")
    check(not any(n.startswith("mcp__") for n in run.offered()), run.offered())
    check(run.server_status("proj") != "connected", f"an unapproved server is not connected: "
                                                     f"{run.init()}")

    # enableAllProjectMcpServers in .claude/settings.json: both.
    settings = os.path.join(w.work, ".claude", "settings.json")
    write_json(settings, {"enableAllProjectMcpServers": True})
    run = w.run([], [])
    check(run.returncode == 0, run.describe())
    check("mcp__proj__echo" in run.offered() and "mcp__other__echo" in run.offered(),
          f"approved, both are offered: {run.offered()}")
    check(run.server_status("proj") == "connected", run.init())
    os.remove(settings)
    os.remove(proj_starts)
    os.remove(other_starts)

    # enabledMcpjsonServers in .claude/settings.local.json: only the one named.
    local = os.path.join(w.work, ".claude", "settings.local.json")
    write_json(local, {"enabledMcpjsonServers": ["proj"]})
    run = w.run([], [])
    check("mcp__proj__echo" in run.offered() and "mcp__other__echo" not in run.offered(),
          f"only proj: {run.offered()}")
    check(os.path.exists(proj_starts) and not os.path.exists(other_starts), "only proj started")
    os.remove(proj_starts)

    # --strict-mcp-config: --mcp-config's servers only, even with .mcp.json approved; ${VAR}
    # and ${VAR:-default} in a server's env are expanded from troupe's environment.
    write_json(local, {"enableAllProjectMcpServers": True})
    cli = w.stdio_server()
    cli["env"] = {"GREETING": "${MCP_GREETING}", "FALLBACK": "${MCP_UNSET_VARIABLE:-fallback}"}
    config = w.config({"cli": cli})  # (config() adds the tag beside them)
    run = w.run(calls, ["--mcp-config", config, "--strict-mcp-config", "--allowedTools=mcp__cli"],
                extra_env={"MCP_GREETING": "hello from the environment"})
    check(run.returncode == 0, run.describe())
    check(not os.path.exists(proj_starts) and not os.path.exists(other_starts),
          "--strict-mcp-config: .mcp.json is not read")
    check(not any(n.startswith(("mcp__proj__", "mcp__other__")) for n in run.offered()),
          run.offered())
    check([r[0] for r in run.results] == ["hello from the environment", "fallback"],
          f"env expanded: {run.results}")
    # Without --strict-mcp-config both sources count.
    run = w.run([], ["--mcp-config", config], extra_env={"MCP_GREETING": "hi"})
    check({"mcp__cli__echo", "mcp__proj__echo"} <= set(run.offered()), run.offered())

    # A malformed --mcp-config is a usage error: exit 2, one line, nothing run.
    bad_file = w.path("bad.json")
    with open(bad_file, "w") as f:
        f.write('{"mcpServers": {"x": ')
    for bad in ('{"mcpServers": ', bad_file, w.path("missing.json"),
                '{"mcpServers": {"x": {"args": []}}}',
                '{"mcpServers": {"x": {"type": "http"}}}',
                '{"mcpServers": {"x": {"command": 5}}}',
                '{"mcpServers": {"x": {"command": "${MCP_UNSET_VARIABLE}"}}}'):
        sessions = os.path.join(w.home, "sessions")
        before = set(os.listdir(sessions)) if os.path.isdir(sessions) else set()
        run = w.run([], ["--mcp-config", bad])
        check(run.returncode == 2, f"{bad}: exit 2: {run.describe()}")
        check(run.stderr.startswith("troupe:") and "mcp" in run.stderr.lower(),
              f"{bad}: a clear error: {run.stderr!r}")
        check(not run.requests and not run.stdout, f"{bad}: nothing was run: {run.describe()}")
        after = set(os.listdir(sessions)) if os.path.isdir(sessions) else set()
        check(after == before, f"{bad}: no session made")
    w.no_leftovers()


def case_mcp_list(w):
    write_json(os.path.join(w.work, ".mcp.json"), {"mcpServers": w.tagged({
        "good": w.stdio_server(),
        "dead": {"command": os.path.join(w.root, "no-such-program")}})})
    write_json(os.path.join(w.work, ".claude", "settings.json"), {"enableAllProjectMcpServers": True})
    listed = w.troupe(["mcp", "list"], extra_env={"MCP_TIMEOUT": "5000"})
    check(listed.returncode == 0, f"mcp list: {listed.returncode} {listed.stdout} {listed.stderr}")
    out = listed.stdout

    def line_of(name):
        found = [line for line in out.splitlines() if re.search(rf"\b{name}\b", line)]
        check(found, f"{name} is listed: {out!r}")
        return found[0].lower()

    check("connected" in line_of("good"), f"good is connected: {out!r}")
    check("failed" in line_of("dead"), f"dead is failed: {out!r}")
    check("echo" in out and "sleep" in out, f"good's tools are listed: {out!r}")
    got = w.troupe(["mcp", "get", "good"])
    check(got.returncode == 0 and "connected" in got.stdout.lower() and "echo" in got.stdout and
          "sleep" in got.stdout, f"mcp get good: {got.stdout} {got.stderr}")
    got = w.troupe(["mcp", "get", "dead"])
    check("failed" in got.stdout.lower(), f"mcp get dead: {got.returncode} {got.stdout} {got.stderr}")
    got = w.troupe(["mcp", "get", "nope"])
    check(got.returncode != 0 and "nope" in got.stderr, f"an unknown name: {got.returncode} "
                                                         f"{got.stdout} {got.stderr}")
    w.no_leftovers()


def case_subagents(w):
    """A subagent uses its parent's servers: one process for both by default; with "scope":
    "agent" one each, and the subagent's first request already offers its own server's tools."""
    for scope, processes in (("process", 1), ("agent", 2)):
        starts = w.path(f"starts-{scope}")
        server = w.stdio_server("--starts", starts)
        if scope == "agent":
            server["scope"] = "agent"
        config = w.config({"x": server})
        replies = [
            {"tool_calls": [{"name": "task", "input": {"prompt": "echo from the child",
                                                       "description": "child echo"}}]},
            {"tool_calls": [{"name": "mcp__x__echo", "input": {"text": "from the child"}}]},
            {"text": "child done"},
            {"tool_calls": [{"name": "mcp__x__echo", "input": {"text": "from the parent"}}]},
            {"text": "done"},
        ]
        run = w.run([], ["--mcp-config", config, "--allowedTools=mcp__x"], replies=replies)
        check(run.returncode == 0, f"scope {scope}: the run completes: {run.describe()}")
        check(len(run.requests) == 5, f"scope {scope}: five model requests: {run.describe()}")
        check("mcp__x__echo" in run.offered(1),
              f"scope {scope}: the subagent's first request offers the server's tool: "
              f"{run.offered(1)}")
        child_saw = json.dumps(run.requests[2]["body"].get("messages"))
        check("from the child" in child_saw and "is_error\": true" not in child_saw,
              f"scope {scope}: the subagent's call ran: {child_saw[-1500:]}")
        check(any(text == "from the parent" for text, _, _ in run.results),
              f"scope {scope}: the parent's call ran: {run.results}")
        check(len(lines_of(starts)) == processes,
              f"scope {scope}: {processes} server process(es) started: {lines_of(starts)}")
        w.no_leftovers()


def case_chat_command(w):
    """/mcp in a chat lists the running servers, their states and their tools. The chat does not
    wait for them to start (its screen is there at once); /mcp answers once they have."""
    config = w.config({"x": w.stdio_server(), "dead": w.stdio_server("--never-initialize")})
    script = w.path("chat.jsonl")
    with open(script, "w") as f:
        f.write(json.dumps({"text": "unused"}) + "\n")
    chat = subprocess.Popen([TROUPE, "chat", "--cwd", w.work, "--model", "scripted:" + script,
                             "--mcp-config", config], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=w.env({"MCP_TIMEOUT": "800"}))
    chat.stdin.write("/mcp\n")
    chat.stdin.flush()
    time.sleep(2)  # its answer comes once the dead server has failed (MCP_TIMEOUT)
    out, err = chat.communicate("/exit\n", timeout=60)
    check(chat.returncode == 0, f"the chat ends cleanly: {chat.returncode} {err}")
    check("MCP servers:" in out and "x - connected, " in out and "mcp__x__echo" in out,
          f"/mcp lists x, its state and its tools: {out}")
    check("dead - failed: " in out and "MCP_TIMEOUT" in out,
          f"/mcp says why the dead server failed: {out}")
    w.no_leftovers()


def case_fleet(w):
    """A fleet's tasks share one server process, and calls of two tasks with the same call id
    (ids are only unique per agent) run at once, each answered, none refused."""
    starts = w.path("starts")
    config = w.config({"x": w.stdio_server("--starts", starts)})
    script = w.path("task.jsonl")
    with open(script, "w") as f:
        f.write(json.dumps({"text": "", "tool_calls": [
            {"id": "same", "name": "mcp__x__sleep", "input": {"seconds": 1}}]}) + "\n")
        f.write(json.dumps({"text": "slept well"}) + "\n")
    tasks = w.path("tasks.jsonl")
    with open(tasks, "w") as f:
        for i in range(4):
            f.write(json.dumps({"id": f"t{i}", "prompt": "sleep"}) + "\n")
    out = w.path("out.jsonl")
    started = time.time()
    r = w.troupe(["fleet", "--cwd", w.work, tasks, "--out", out, "--concurrency", "4",
                  "--model", "scripted:" + script, "--mcp-config", config, "--allow", "mcp__x"])
    elapsed = time.time() - started
    check(r.returncode == 0, f"the fleet completes: {r.returncode} {r.stderr}")
    lines = [json.loads(line) for line in lines_of(out)]
    check(len(lines) == 4 and all(l["terminal_reason"] == "completed" for l in lines), lines)
    for line in lines:
        shown = w.troupe(["show", line["session_id"]])
        check("slept" in shown.stdout and "already running" not in shown.stdout,
              f"task {line['id']}'s call was answered: {shown.stdout[-2000:]}")
    check(len(lines_of(starts)) == 1, f"one server process for the fleet: {lines_of(starts)}")
    check(elapsed < 3.5, f"the four one-second calls ran at once ({elapsed:.1f} s)")
    w.no_leftovers()


CASES = {
    "filesystem": case_filesystem,
    "everything": case_everything,
    "everything: interrupt": case_everything_interrupt,
    "an interrupted call is cancelled at the server": case_interrupt_cancels,
    "a server that exits mid-call": case_exit_mid_call,
    "a server that never initializes": case_never_initialize,
    "an unknown tool names the servers": case_unknown_tool,
    "a malformed line": case_malformed,
    "tools/list_changed": case_list_changed,
    "paginated tools/list": case_paginate,
    "http": case_http,
    "config": case_config,
    "mcp list and get": case_mcp_list,
    "subagents share a server, or each has its own": case_subagents,
    "/mcp in a chat": case_chat_command,
    "a fleet shares a server": case_fleet,
    "Ctrl+C while a server starts": case_interrupt_at_startup,
    "a re-listing the server never answers": case_deaf_relist,
    "Ctrl+C during mcp list": case_mcp_list_interrupt,
}


def main():
    if CASE not in CASES:
        sys.exit(f"unknown case {CASE!r}; cases: {', '.join(CASES)}")
    here = os.path.realpath(os.getcwd())
    base = "/var/tmp" if here == "/tmp" or here.startswith("/tmp/") else here
    root = tempfile.mkdtemp(prefix="mcp-test-", dir=base)
    try:
        CASES[CASE](World(root))
    finally:
        for pid in tagged_processes(root):  # a failed case's servers
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        shutil.rmtree(root, ignore_errors=True)
    print(f"ok: {CASE}")


if __name__ == "__main__":
    main()
