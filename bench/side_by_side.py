#!/usr/bin/env python3
"""troupe beside the floor and curl, on the same fake model server, in one run.

The floor (bench/floor_client.py) is the least an agent client can do per step: keep-alive HTTP,
its own SSE parsing, one persistent bash. curl sending one request is the least a process can do
before its first request. Setting troupe's numbers beside theirs, measured the same way on the
same machine in the same minute, turns "is troupe fast?" into ratios that do not depend on the
machine: troupe/floor per step, troupe/curl to the first request and in peak RSS.

Each step the model asks for one `printf 'step K\\n'`; the fake server records when each request
arrives. Usage: side_by_side.py TROUPE_BINARY [--steps 20] [--rounds 3] [--latency-ms 0]
[--troupe-arg=WORD ...] (words for troupe's command line after `run`, e.g. --sandbox=off)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "..", "tests", "support", "fake_model_server.py")
# GNU time (Debian package `time`, which scripts/install-deps.sh installs).
TIME = "/usr/bin/time"
FLOOR = os.path.join(HERE, "floor_client.py")
PROMPT = "run the steps"
SHELL_TOOL = {"type": "function", "function": {
    "name": "shell", "description": "Run a bash command.",
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                   "required": ["command"]}}}

TROUPE_OPENAI = "troupe (OpenAI wire)"
TROUPE_ANTHROPIC = "troupe (Anthropic wire)"
FLOOR_NAME = "floor (bench/floor_client.py)"
CURL = "curl, one request"
RUNTIMES = [TROUPE_OPENAI, TROUPE_ANTHROPIC, FLOOR_NAME, CURL]


def script_for(runtime, steps, latency_ms):
    extra = {"latency_ms": latency_ms} if latency_ms > 0 else {}
    done = [{"text": "done", **extra}]
    if runtime == CURL:
        return done
    return [{"text": "", "tool_calls": [{"name": "shell",
                                          "input": {"command": f"printf 'step {k}\\n'"}}], **extra}
            for k in range(1, steps + 1)] + done


def command_for(runtime, binary, port, root, troupe_args=()):
    """The command line and environment of one client run."""
    env = dict(os.environ)
    if runtime in (TROUPE_OPENAI, TROUPE_ANTHROPIC):
        work = os.path.join(root, "work")
        os.makedirs(work, exist_ok=True)
        env.update(TROUPE_HOME=os.path.join(root, "home"), TROUPE_MODEL="")
        if runtime == TROUPE_OPENAI:
            model = "openai/bench"
            env.update(OPENAI_API_KEY="bench", OPENAI_BASE_URL=f"http://127.0.0.1:{port}/v1")
        else:
            model = "anthropic/bench"
            env.update(ANTHROPIC_API_KEY="bench", ANTHROPIC_BASE_URL=f"http://127.0.0.1:{port}")
        return [binary, "run", *troupe_args, "--cwd", work, "--model", model, "--permission-mode",
                "bypass", "--output-format", "stream-json", PROMPT], env
    if runtime == FLOOR_NAME:
        return [sys.executable, "-S", FLOOR, f"http://127.0.0.1:{port}/v1", PROMPT], env
    body = os.path.join(root, "body.json")
    with open(body, "w") as f:
        json.dump({"model": "bench", "stream": True, "tools": [SHELL_TOOL],
                   "messages": [{"role": "user", "content": PROMPT}]}, f)
    return ["curl", "-sS", "-N", "-X", "POST", "-H", "content-type: application/json",
            "--data-binary", f"@{body}", f"http://127.0.0.1:{port}/v1/chat/completions"], env


def fail(msg, *logs):
    for log in logs:
        log.seek(0)
        tail = log.read()[-4000:].strip()
        if tail:
            print(f"--- {os.path.basename(log.name)} (tail)\n{tail}", file=sys.stderr)
    raise SystemExit(f"side_by_side.py: {msg}")


def run_once(runtime, binary, steps, latency_ms, root, troupe_args=()):
    script = script_for(runtime, steps, latency_ms)
    script_path = os.path.join(root, "script.json")
    record_path = os.path.join(root, "requests.jsonl")
    with open(script_path, "w") as f:
        json.dump(script, f)
    # stderr of both goes to files, shown only when a run fails: the table stays readable.
    server_err = open(os.path.join(root, "server.stderr"), "w+")
    client_err = open(os.path.join(root, "client.stderr"), "w+")
    # Arrivals only: the server writing out each body would take longer for the larger one, and
    # that time would count as the client's.
    server = subprocess.Popen([sys.executable, SERVER, "--script", script_path, "--record",
                               record_path, "--record-arrivals", "--nodelay"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=server_err)
    try:
        port = int(server.stdout.readline().split()[1])
        cmd, env = command_for(runtime, binary, port, root, troupe_args)
        # Peak RSS through GNU time: a process forked from this Python inherits Python's pages
        # until it execs, and the kernel counts them in its maxrss (curl would show ~16 MB).
        rss_path = os.path.join(root, "rss.txt")
        started = time.time()
        proc = subprocess.Popen([TIME, "-f", "%M", "-o", rss_path] + cmd, env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=client_err)
        # A hung client must not hang the benchmark: the script's own latency plus a generous margin.
        limit = 120 + len(script) * latency_ms / 1000
        killed = threading.Event()
        watchdog = threading.Timer(limit, lambda: (killed.set(), proc.kill()))
        watchdog.start()
        proc.wait()
        watchdog.cancel()
    finally:
        server.stdin.close()
        server.terminate()
        server.wait()
    if proc.returncode != 0:
        fail(f"{runtime}: {cmd[0]} exited with status {proc.returncode}"
             + (f" (killed after {limit:.0f} s)" if killed.is_set() else ""), server_err, client_err)
    with open(record_path) as f:
        records = [json.loads(line) for line in f]
    violations = [r["violation"] for r in records if r.get("violation")]
    if violations:
        print(f"warning: {runtime}: the fake server rejected {len(violations)} request(s): "
              f"{violations[0]}", file=sys.stderr)
    exchange = sorted((r for r in records if not r.get("naming") and not r.get("violation")),
                      key=lambda r: r["n"])
    if len(exchange) != len(script):
        fail(f"{runtime}: made {len(exchange)} model request(s), expected {len(script)} (one per "
             f"script entry); nothing is comparable", server_err, client_err)
    server_err.close()
    client_err.close()
    arrivals = [r["received_at"] for r in exchange]
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:])]
    return {"first": (arrivals[0] - started) * 1000,
            "per_step": (arrivals[-1] - arrivals[0]) / steps * 1000 if gaps else None,
            "gap": statistics.median(gaps) * 1000 if gaps else None,
            "rss": int(open(rss_path).read().split()[-1]) / 1024}  # KiB


def cell(values, digits):
    values = [v for v in values if v is not None]
    return f"{statistics.median(values):.{digits}f}" if values else "—"


def ratio(results, key, over):
    a, b = (statistics.median(r[key] for r in results[n]) for n in (over[0], over[1]))
    return a / b


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("troupe")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--latency-ms", type=int, default=0)
    ap.add_argument("--troupe-arg", action="append", default=[], metavar="ARG",
                    help="a word for troupe's command line after `run` (repeatable), e.g. "
                         "--troupe-arg=--sandbox=off to see what the sandbox's start costs")
    args = ap.parse_args()
    binary = os.path.abspath(args.troupe)
    results = {name: [] for name in RUNTIMES}
    for rnd in range(args.rounds):
        # Interleaved, and rotated each round, so a drift of the machine (heat, a neighbour's
        # load) falls on every runtime alike rather than on whichever runs first or last.
        shift = rnd % len(RUNTIMES)
        for name in RUNTIMES[shift:] + RUNTIMES[:shift]:
            with tempfile.TemporaryDirectory(prefix="troupe-sbs-") as root:
                results[name].append(run_once(name, binary, args.steps, args.latency_ms, root,
                                              args.troupe_arg))

    print(f"side by side: {args.steps} steps of `printf 'step K\\n'`, {args.rounds} rounds "
          f"(medians), model latency {args.latency_ms} ms, loopback fake model server"
          + (f", troupe run {' '.join(args.troupe_arg)}" if args.troupe_arg else ""))
    print("| runtime | per step in the loop (ms) | median gap (ms) | to first request (ms) "
          "| peak RSS (MB) |")
    print("|---|---:|---:|---:|---:|")
    for name in RUNTIMES:
        rs = results[name]
        print(f"| {name} | {cell([r['per_step'] for r in rs], 2)} | "
              f"{cell([r['gap'] for r in rs], 2)} | {cell([r['first'] for r in rs], 1)} | "
              f"{cell([r['rss'] for r in rs], 1)} |")
    print()
    print(f"troupe/floor per step: {ratio(results, 'per_step', (TROUPE_OPENAI, FLOOR_NAME)):.2f} "
          f"(OpenAI), {ratio(results, 'per_step', (TROUPE_ANTHROPIC, FLOOR_NAME)):.2f} "
          f"(Anthropic)  target <= 1.5")
    print(f"troupe/curl first request: {ratio(results, 'first', (TROUPE_OPENAI, CURL)):.2f} "
          f"(OpenAI), {ratio(results, 'first', (TROUPE_ANTHROPIC, CURL)):.2f} "
          f"(Anthropic)  target <= 1.25")
    print(f"troupe/curl peak RSS: {ratio(results, 'rss', (TROUPE_OPENAI, CURL)):.2f} "
          f"(OpenAI), {ratio(results, 'rss', (TROUPE_ANTHROPIC, CURL)):.2f} "
          f"(Anthropic)  target <= 1.5")
    print("(per step: (last request - first request) / steps, which includes the first step; "
          "peak RSS: GNU time's %M, the largest of the process and the children it reaped, "
          "e.g. a bash)")


if __name__ == "__main__":
    main()
