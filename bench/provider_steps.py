#!/usr/bin/env python3
"""Per-step overhead of `troupe run` against the fake model server (loopback, latency 0).

Each step the model asks for one trivial shell command (`true`); the fake server records when
each request arrives. Reports startup (process start to first request), time per step (between
consecutive requests: troupe's work, the bash child, and the fake server's own time), and
troupe's peak RSS. Usage: provider_steps.py TROUPE_BINARY [steps=50] [runs=3] [provider=openai]
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "..", "tests", "support", "fake_model_server.py")


def server_time(script_path, bodies, provider):
    """Replays the recorded requests from a minimal keep-alive client: the fake server's own time
    per request (parse, validate, record, stream), to subtract from a step."""
    import http.client
    server = subprocess.Popen([sys.executable, SERVER, "--script", script_path],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    port = int(server.stdout.readline().split()[1])
    conn = http.client.HTTPConnection("127.0.0.1", port)
    path = "/v1/chat/completions" if provider == "openai" else "/v1/messages"
    headers = {"content-type": "application/json", "authorization": "Bearer bench",
               "x-api-key": "bench", "anthropic-version": "2023-06-01"}
    times = []
    for body in bodies:
        data = json.dumps(body).encode()
        start = time.perf_counter()
        conn.request("POST", path, body=data, headers=headers)
        conn.getresponse().read()
        times.append(time.perf_counter() - start)
    conn.close()
    server.stdin.close()
    server.terminate()
    server.wait()
    return statistics.median(times)


def run_once(binary, steps, provider, root):
    script = [{"text": "step", "tool_calls": [{"name": "shell", "input": {"command": "true"}}]}
              for _ in range(steps)] + [{"text": "done"}]
    script_path = os.path.join(root, "script.json")
    record_path = os.path.join(root, "requests.jsonl")
    with open(script_path, "w") as f:
        json.dump(script, f)
    server = subprocess.Popen([sys.executable, SERVER, "--script", script_path, "--record",
                               record_path], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    port = int(server.stdout.readline().split()[1])
    env = dict(os.environ, TROUPE_HOME=os.path.join(root, "home"), TROUPE_MODEL="")
    if provider == "openai":
        env.update(OPENAI_API_KEY="bench", OPENAI_BASE_URL=f"http://127.0.0.1:{port}/v1")
    else:
        env.update(ANTHROPIC_API_KEY="bench", ANTHROPIC_BASE_URL=f"http://127.0.0.1:{port}")
    work = os.path.join(root, "work")
    os.makedirs(work, exist_ok=True)
    started = time.time()
    proc = subprocess.Popen([binary, "run", "--cwd", work, "--model", f"{provider}/bench",
                             "--allow", "shell",
                             "--output-format", "stream-json", "go"], env=env,
                            stdout=subprocess.DEVNULL)
    # troupe's own high-water mark (wait4's ru_maxrss may also cover the shell it reaped).
    hwm = 0
    while proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        hwm = max(hwm, int(line.split()[1]))
        except OSError:
            pass
        time.sleep(0.02)  # sampled: VmHWM only grows, and polling must not steal the CPU
    status = proc.returncode
    server.stdin.close()
    server.terminate()
    server.wait()
    if status != 0:
        raise SystemExit(f"troupe exited with status {status}")
    records = [json.loads(line) for line in open(record_path)]
    arrivals = [r["received_at"] for r in records]
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:])]
    own = server_time(script_path, [r["body"] for r in records], provider)
    return arrivals[0] - started, gaps, hwm / 1024.0, own


def main():
    binary = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    provider = sys.argv[4] if len(sys.argv) > 4 else "openai"
    startups, per_step, rss, server = [], [], [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="troupe-bench-") as root:
            startup, gaps, peak, own = run_once(binary, steps, provider, root)
            startups.append(startup * 1000)
            per_step.append(statistics.median(gaps) * 1000)
            rss.append(peak)
            server.append(own * 1000)
    print(f"provider steps ({provider}, {steps} steps of `true`, median of {runs} runs)")
    print(f"  startup to first request: {statistics.median(startups):7.1f} ms")
    print(f"  per step (request to request): {statistics.median(per_step):7.2f} ms")
    print(f"  of which the fake server's own time (replayed): {statistics.median(server):7.2f} ms")
    print(f"  peak RSS of troupe: {statistics.median(rss):7.1f} MiB")


if __name__ == "__main__":
    main()
