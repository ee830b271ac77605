#!/usr/bin/env python3
"""What troupe's resident memory is made of, beside curl's: each mapping's size and resident set.

troupe (a `troupe run` of one shell step) and curl (one streaming request) talk to the fake model
server, which holds its reply back (latency) so that each process can be read while it waits in
the middle of its work: /proc/PID/smaps, summed per file (the program, each shared library) and
for the anonymous memory (heap, thread stacks). A library both load costs both the same; what is
troupe's alone is the difference. Usage: rss_table.py TROUPE_BINARY [--latency-ms 400]
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "..", "tests", "support", "fake_model_server.py")
BODY = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


PROGRAM = "troupe (the program)"


def smaps(pid, program=""):
    """{mapping name: [size kB, rss kB]}; anonymous mappings (heap, stacks) under one name, the
    executable `program` (a real path) under PROGRAM wherever it lives."""
    table = collections.defaultdict(lambda: [0, 0])
    name = None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            fields = line.split()
            if "-" in fields[0] and ":" not in fields[0]:
                path = fields[5] if len(fields) > 5 else ""
                name = os.path.basename(path) if path.startswith("/") else "[anonymous]"
                if path.startswith("/") and os.path.realpath(path) == program:
                    name = PROGRAM
                elif path.startswith("/") and os.path.realpath(path).startswith("/tmp/"):
                    name = "[workspace files]"
            elif fields[0] == "Size:":
                table[name][0] += int(fields[1])
            elif fields[0] == "Rss:":
                table[name][1] += int(fields[1])
    return dict(table)


def sample(command, env, cwd, wait_for):
    """Starts `command`, waits until the server holds its request, reads its smaps there."""
    proc = subprocess.Popen(command, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 20
        while not wait_for() and time.time() < deadline:
            time.sleep(0.005)
        time.sleep(0.05)
        return smaps(proc.pid, os.path.realpath(command[0]))
    finally:
        proc.wait(timeout=60)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("troupe")
    parser.add_argument("--latency-ms", type=int, default=400)
    args = parser.parse_args()
    args.troupe = os.path.abspath(args.troupe)
    with tempfile.TemporaryDirectory(prefix="troupe-rss-") as root:
        script = os.path.join(root, "script.json")
        record = os.path.join(root, "requests.jsonl")
        step = {"text": "", "tool_calls": [{"name": "shell", "input": {"command": "true"}}]}
        # troupe: one shell step answered at once, then the final reply held back; curl: held.
        with open(script, "w") as f:
            json.dump([step, {"text": "done", "latency_ms": args.latency_ms},
                       {"text": "curl", "latency_ms": args.latency_ms}], f)
        server = subprocess.Popen([sys.executable, SERVER, "--script", script, "--record", record],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        try:
            port = int(server.stdout.readline().split()[1])

            def requests():
                try:
                    with open(record) as f:
                        return sum(1 for _ in f)
                except OSError:
                    return 0

            work = os.path.join(root, "work")
            os.makedirs(work)
            env = dict(os.environ, TROUPE_HOME=os.path.join(root, "home"), TROUPE_MODEL="",
                       OPENAI_API_KEY="bench", OPENAI_BASE_URL=f"http://127.0.0.1:{port}/v1")
            troupe = sample([args.troupe, "run", "--model", "openai/bench", "--permission-mode",
                             "bypass", "go"], env, work, lambda: requests() >= 2)
            body = os.path.join(root, "body.json")
            with open(body, "w") as f:
                json.dump(BODY, f)
            curl = sample(["curl", "-sS", "-N", "-X", "POST", "-H", "content-type: application/json",
                           "--data-binary", "@" + body,
                           f"http://127.0.0.1:{port}/v1/chat/completions"],
                          dict(os.environ), root, lambda: requests() >= 3)
        finally:
            server.stdin.close()
            server.terminate()
            server.wait()
    names = sorted(set(troupe) | set(curl),
                   key=lambda n: -max(troupe.get(n, [0, 0])[1], curl.get(n, [0, 0])[1]))
    mb = lambda kb: f"{kb / 1024:.2f}"
    print("resident memory by mapping, while each waits for the model (MB; mapped / resident)")
    print("| mapping | troupe mapped | troupe resident | curl mapped | curl resident |")
    print("|---|---:|---:|---:|---:|")
    for n in names:
        t = troupe.get(n, [0, 0])
        c = curl.get(n, [0, 0])
        if max(t[1], c[1]) < 64:
            continue
        label = n
        print(f"| {label} | {mb(t[0])} | {mb(t[1])} | {mb(c[0]) if c[0] else '—'} | "
              f"{mb(c[1]) if c[0] else '—'} |")
    t_total = sum(v[1] for v in troupe.values())
    c_total = sum(v[1] for v in curl.values())
    shared = sum(min(troupe[n][1], curl[n][1]) for n in troupe if n in curl and
                 n not in ("[anonymous]", PROGRAM))
    print(f"| **total** | | **{mb(t_total)}** | | **{mb(c_total)}** |")
    print(f"libraries both map: {mb(shared)} MB of troupe's resident set; troupe/curl "
          f"{t_total / c_total:.2f}")


if __name__ == "__main__":
    main()
