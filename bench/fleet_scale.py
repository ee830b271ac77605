#!/usr/bin/env python3
"""troupe fleet at scale, against bench_stream_server on 127.0.0.1 (OpenAI wire format, SSE).

Usage: fleet_scale.py BUILD_DIR [TASKS=10000] [STEPS=5] [LATENCY_MS=100] [--compare N]

1. The server's own ceiling: N concurrent keep-alive clients (this script's, asyncio) asking as
   fast as it answers with latency 0; requests per second over 3 s. (The Python client may be
   the limit; the figure is a floor of the server's ceiling.)
2. One `troupe fleet` of TASKS tasks, concurrency TASKS, each STEPS steps (a `todo` call each
   step but the last), the server answering every request after LATENCY_MS: wall, CPU time
   (user + sys), peak RSS of the process tree, peak open descriptors, requests per second.
3. With --compare N: N tasks through one `troupe fleet` against N separate `troupe run`
   processes (all started at once): wall and summed peak RSS side by side.

Prints one line per figure. Loopback only.
"""

import asyncio
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time

BUILD = sys.argv[1]
ARGS = [a for a in sys.argv[2:] if not a.startswith("--")]
TASKS = int(ARGS[0]) if len(ARGS) > 0 else 10000
STEPS = int(ARGS[1]) if len(ARGS) > 1 else 5
LATENCY = int(ARGS[2]) if len(ARGS) > 2 else 100
COMPARE = int(sys.argv[sys.argv.index("--compare") + 1]) if "--compare" in sys.argv else 0
TROUPE = os.path.join(BUILD, "troupe")
SERVER = os.path.join(BUILD, "bench", "bench_stream_server")


def start_server(latency, tool_steps):
    proc = subprocess.Popen([SERVER, str(latency), str(tool_steps)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    port = int(proc.stdout.readline().split()[1])
    return proc, port


async def hammer(port, clients, seconds):
    body = json.dumps({"model": "bench", "stream": True,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()
    request = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
               f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
    count = 0
    end = time.monotonic() + seconds

    async def client():
        nonlocal count
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        while time.monotonic() < end:
            writer.write(request)
            await writer.drain()
            await reader.readuntil(b"0\r\n\r\n")
            count += 1
        writer.close()

    await asyncio.gather(*(client() for _ in range(clients)))
    return count / seconds


def scan():
    """One pass over /proc: each process's parent and RSS (bytes)."""
    children, rss = {}, {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/statm") as f:
                rss[int(entry)] = int(f.read().split()[1]) * page
            children.setdefault(int(fields[1]), []).append(int(entry))
        except (OSError, IndexError, ValueError):
            pass
    return children, rss


def tree_rss(roots, children, rss):
    """Summed RSS of the roots and all their descendants."""
    total, stack = 0, list(roots)
    while stack:
        p = stack.pop()
        total += rss.get(p, 0)
        stack.extend(children.get(p, []))
    return total


def tree_sample(pid):
    """RSS (bytes) of pid and its descendants, and pid's open descriptors."""
    children, rss = scan()
    try:
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        fds = 0
    return tree_rss([pid], children, rss), fds


def env_for(root, port):
    env = dict(os.environ)
    env.update({"TROUPE_HOME": os.path.join(root, "home"), "OPENAI_API_KEY": "bench",
                "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1", "TROUPE_MODEL": "",
                "XDG_CONFIG_HOME": os.path.join(root, "config"), "TROUPE_LOG": "error"})
    return env


def run_fleet(root, port, tasks, concurrency, fleet_id=None):
    path = os.path.join(root, f"tasks{tasks}.jsonl")
    with open(path, "w") as f:
        for i in range(tasks):
            f.write(json.dumps({"id": f"t{i}", "prompt": f"task {i}: keep your todo list"}) + "\n")
    os.makedirs(os.path.join(root, "work"), exist_ok=True)
    start = time.monotonic()
    proc = subprocess.Popen([TROUPE, "fleet", path, "--model", "openai/gpt-4.1",
                             "--concurrency", str(concurrency), "--permission-mode", "bypass",
                             "--cwd", os.path.join(root, "work"), "--fleet-id", fleet_id or f"f{tasks}"],
                            env=env_for(root, port), stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    peak_rss = peak_fds = 0
    while proc.poll() is None:
        rss, fds = tree_sample(proc.pid)
        peak_rss, peak_fds = max(peak_rss, rss), max(peak_fds, fds)
        time.sleep(0.05)
    wall = time.monotonic() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = proc.stdout.read()
    with open(os.path.join(root, "home", "fleets", fleet_id or f"f{tasks}", "results.jsonl")) as f:
        lines = [json.loads(line) for line in f]
    completed = sum(1 for line in lines if line.get("terminal_reason") == "completed")
    return wall, usage, peak_rss, peak_fds, completed, out


def main():
    root = tempfile.mkdtemp(prefix="troupe-fleet-bench-")
    try:
        server, port = start_server(0, 0)
        for clients in (64, 256):
            rate = asyncio.run(hammer(port, clients, 3))
            print(f"server ceiling (latency 0, {clients} keep-alive clients, Python client): "
                  f"{rate:,.0f} requests/s")
        server.stdin.close()
        server.wait()

        server, port = start_server(LATENCY, STEPS - 1)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall, usage, rss, fds, completed, out = run_fleet(root, port, TASKS, TASKS)
        cpu = (usage.ru_utime - before.ru_utime) + (usage.ru_stime - before.ru_stime)
        ideal = STEPS * LATENCY / 1000
        print(f"fleet: {TASKS} tasks x {STEPS} steps, concurrency {TASKS}, latency {LATENCY} ms: "
              f"wall {wall:.2f} s (one wave's floor {ideal:.2f} s), CPU {cpu:.2f} s, "
              f"{TASKS * STEPS / wall:,.0f} requests/s, peak RSS {rss / 2**20:.0f} MiB "
              f"({rss / TASKS / 1024:.1f} KiB per agent), peak descriptors {fds}, "
              f"{completed} completed")
        if completed != TASKS:
            print(out)
        if COMPARE:
            wall_f, _, rss_f, _, done_f, _ = run_fleet(root, port, COMPARE, COMPARE, "compare")
            print(f"compare: one troupe fleet of {COMPARE}: wall {wall_f:.2f} s, "
                  f"RSS {rss_f / 2**20:.0f} MiB, {done_f} completed")
            env = env_for(root, port)
            procs = []
            start = time.monotonic()
            for i in range(COMPARE):
                procs.append(subprocess.Popen(
                    [TROUPE, "run", "--model", "openai/gpt-4.1",
                     "--permission-mode", "bypass", "--cwd", os.path.join(root, "work"),
                     f"task {i}: keep your todo list"],
                    env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            # Each process's own peak (wait4's ru_maxrss), summed: what they would hold if
            # they all ran at once, as a fleet's tasks do.
            peak_sum, ok, pending = 0, 0, {p.pid for p in procs}
            while pending:
                pid, status, usage = os.wait4(-1, 0)
                if pid in pending:
                    pending.discard(pid)
                    peak_sum += usage.ru_maxrss * 1024
                    ok += 1 if os.waitstatus_to_exitcode(status) == 0 else 0
            wall_r = time.monotonic() - start
            print(f"compare: {COMPARE} troupe run processes started at once: wall {wall_r:.2f} s, "
                  f"summed peak RSS {peak_sum / 2**20:.0f} MiB "
                  f"({peak_sum / COMPARE / 2**20:.1f} MiB each), {ok} exited 0")
        server.stdin.close()
        server.wait()
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
