#!/usr/bin/env python3
"""One parent launching N background subagents in one reply, through the troupe binary.

Scripted models (no network): the parent's first reply holds N `task` calls (background); each
child answers with one text reply, or (`shell` mode) first runs one trivial shell command.
The parent answers every turn its children's notifications start with a short text.

Reports, per run and as the median of the runs:
  step     time from the parent's reply with the N calls to the last of their N results in its
           transcript (how long the launches block the parent's step)
  wall     the whole run, process start to exit (every child done, every notification taken)
  rss      peak RSS of troupe itself, and of troupe plus every process below it (sampled every
           20 ms from /proc), per child above the single-agent run
  bash     most bash processes alive at one time below troupe (sampled)
  turns    the parent's turns (notifications taken one turn each, or batched)
  files    files written per child session directory
Usage: agent_fanout.py TROUPE_BINARY [children=1000] [runs=3] [mode=text|shell]
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def is_bash(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip() == "bash"
    except OSError:
        return False


class Sampler(threading.Thread):
    """Peak RSS of a process tree and its most bash processes at once, every 20 ms."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.stop = pid, threading.Event()
        self.own_peak = self.tree_peak = self.bash_peak = 0

    def run(self):
        while not self.stop.is_set():
            tree = descendants(self.pid)
            self.own_peak = max(self.own_peak, rss_kib(self.pid))
            self.tree_peak = max(self.tree_peak, sum(rss_kib(p) for p in tree))
            self.bash_peak = max(self.bash_peak, sum(1 for p in tree if is_bash(p)))
            self.stop.wait(0.02)


def write_jsonl(path: str, lines: list) -> None:
    with open(path, "w") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")


def one_run(troupe: str, children: int, mode: str) -> dict:
    root = tempfile.mkdtemp(prefix="troupe-fanout-")
    work = os.path.join(root, "work")
    os.makedirs(work)
    child = os.path.join(work, "child.jsonl")
    replies = [{"text": "done"}]
    if mode == "shell":
        replies.insert(0, {"text": "", "tool_calls": [{"name": "shell",
                                                        "input": {"command": "true"}}]})
    write_jsonl(child, replies)
    calls = [{"name": "task", "input": {"prompt": f"job {i}", "mode": "background",
                                        "description": f"job {i}", "model": f"scripted:{child}"}}
             for i in range(children)]
    parent = os.path.join(root, "parent.jsonl")
    # One reply per notification turn at most, whether they come one by one or together.
    write_jsonl(parent, [{"text": "", "tool_calls": calls}] +
                [{"text": "noted"}] * (children + 1))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TROUPE_", "OPENAI_", "ANTHROPIC_"))}
    env["TROUPE_HOME"] = os.path.join(root, "home")
    args = [troupe, "run", "--cwd", work, "--model", f"scripted:{parent}", "--session-id",
            "fanout", "--permission-mode", "bypass", "--max-agents", str(max(children, 1)),
            "--output-format", "stream-json", "go"]
    start = time.perf_counter()
    process = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sampler = Sampler(process.pid)
    sampler.start()
    out, err = process.communicate()
    wall = time.perf_counter() - start
    sampler.stop.set()
    sampler.join()
    if process.returncode != 0:
        sys.exit(f"agent_fanout: troupe exited {process.returncode}: {err.decode()[-2000:]}")
    session = os.path.join(root, "home", "sessions", "fanout")
    log = [json.loads(l) for l in open(os.path.join(session, "transcript.jsonl"))]
    launch = next(m for m in log if m["role"] == "assistant" and m.get("tool_calls"))
    results = [m for m in log if m["role"] == "tool"]
    step_ms = max(m["timestamp_ms"] for m in results[:children]) - launch["timestamp_ms"]
    agents = os.path.join(session, "agents")
    finished = 0
    files = 0
    for agent in os.listdir(agents):
        for _, _, names in os.walk(os.path.join(agents, agent)):
            files += len(names)
        info = json.load(open(os.path.join(agents, agent, "session.json")))
        finished += info.get("state") == "completed"
    result = json.loads(out.decode().strip().splitlines()[-1])
    subprocess.run(["rm", "-rf", root])
    return {"step_ms": step_ms, "wall_s": wall, "own_rss_mib": sampler.own_peak / 1024,
            "tree_rss_mib": sampler.tree_peak / 1024, "bash_peak": sampler.bash_peak,
            "turns": result.get("num_turns"), "files_per_child": files / max(children, 1),
            "completed": finished}


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    troupe = os.path.abspath(sys.argv[1])
    children = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    mode = sys.argv[4] if len(sys.argv) > 4 else "text"
    if mode not in ("text", "shell"):
        sys.exit("mode is text or shell")
    rows = [one_run(troupe, children, mode) for _ in range(runs)]
    baseline = statistics.median(r["own_rss_mib"] for r in [one_run(troupe, 1, mode)])
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    for i, r in enumerate(rows, 1):
        print(f"agent_fanout {mode} run {i}: " + ", ".join(
            f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in r.items()))
    per_child_kib = (med["own_rss_mib"] - baseline) * 1024 / children
    print(f"agent_fanout {mode}, {children} children, median of {runs}: step "
          f"{med['step_ms']:.0f} ms, wall {med['wall_s']:.2f} s, peak RSS {med['own_rss_mib']:.1f}"
          f" MiB (process tree {med['tree_rss_mib']:.1f} MiB; {per_child_kib:.1f} KiB per child "
          f"over a 1-child run's {baseline:.1f} MiB), bash at peak {med['bash_peak']:.0f}, "
          f"parent turns {med['turns']:.0f}, files per child {med['files_per_child']:.1f}, "
          f"completed {med['completed']:.0f}/{children}")


if __name__ == "__main__":
    main()
