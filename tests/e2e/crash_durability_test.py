#!/usr/bin/env python3
"""Crash durability: a session that runs tools and receives `troupe notify`s from another
process is killed with SIGKILL at random moments and resumed, again and again.

Usage: crash_durability_test.py TROUPE_BINARY [KILLS]. After every kill the transcript's whole
lines seen so far (acknowledged: on disk when the process died) must all still be there, once;
at the end every notification whose `troupe notify` exited 0 must be in the transcript exactly
once. Prints the figures (kills survived, lines and notifications lost) and exits 1 on any loss.
Outcomes only: the kill moments are random, nothing waits on a fixed time to be correct.
"""

import json
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

TROUPE = sys.argv[1]
KILLS = int(sys.argv[2]) if len(sys.argv) > 2 else 30
SESSION = "probe"


def main():
    root = tempfile.mkdtemp(prefix="troupe-crash-")
    try:
        return probe(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def write_script(path, replies):
    with open(path, "w") as f:
        for r in replies:
            f.write(json.dumps(r) + "\n")


def whole_lines(path):
    """The transcript's whole lines (a torn tail is not acknowledged), parsed."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return []
    out = []
    for raw in data[: data.rfind(b"\n") + 1].split(b"\n")[:-1]:
        if raw:
            out.append(json.loads(raw))
    return out


def probe(root):
    home, work = os.path.join(root, "home"), os.path.join(root, "work")
    os.makedirs(work)
    env = dict(os.environ, TROUPE_HOME=home, TROUPE_MODEL="", OPENAI_API_KEY="",
               ANTHROPIC_API_KEY="", TROUPE_LOG="error")
    # Every reply runs a tool (some with outputs saved whole under tool-results/); the session
    # waits for notifications between turns.
    tools = os.path.join(root, "tools.jsonl")
    replies = []
    for i in range(600):
        command = f"echo step {i}; head -c {40000 if i % 7 == 0 else 2000} /dev/zero | tr '\\0' s"
        replies.append({"text": f"step {i}", "delay_ms": 5,
                        "tool_calls": [{"name": "shell", "input": {"command": command}}]})
    write_script(tools, replies)
    final = os.path.join(root, "final.jsonl")
    write_script(final, [{"text": "ok"}] * 3000)
    base = [TROUPE, "run", "--cwd", work, "--permission-mode", "accept-edits", "--allow",
            "shell", "--session-id", SESSION]
    transcript = os.path.join(home, "sessions", SESSION, "transcript.jsonl")

    acked_notes, stop = {}, threading.Event()
    notify_runs, disk_full = [0], [0]
    queue = os.path.join(home, "sessions", SESSION, "queue.jsonl")

    def notifier():
        k = 0
        while not stop.is_set():
            k += 1
            big = k % 5 == 0 or k % 4 == 2  # now and then a large one, through stdin
            text = f"note-{k} " + ("n" * 300000 if big else "")
            args = [TROUPE, "notify", SESSION] + ([] if big else [text])
            limit = None
            if k % 4 == 2:
                # A full disk: the queue may grow by a few bytes only, so the line is written
                # in part and the write fails (a notify that must leave nothing behind).
                try:
                    limit = os.path.getsize(queue) + 100
                except OSError:
                    limit = 100

            def full_disk(limit=limit):
                if limit is not None:
                    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
                    resource.setrlimit(resource.RLIMIT_FSIZE,
                                       (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

            r = subprocess.run(args, input=text.encode() if big else None, env=env,
                               capture_output=True, timeout=60, preexec_fn=full_disk)
            notify_runs[0] += 1
            disk_full[0] += 1 if limit is not None and r.returncode != 0 else 0
            found = re.search(rb"notification (ntf_[0-9a-f]+)", r.stdout)
            if r.returncode == 0 and found:
                acked_notes[found.group(1).decode()] = f"note-{k} "
            time.sleep(random.uniform(0.0, 0.05))

    acked_lines = {}  # id -> the line as first seen
    lost_lines, duplicated, kills = [], [], 0
    started_notifier = False
    for round_ in range(KILLS):
        run = subprocess.Popen(base + ["--model", "scripted:" + tools, "--wait-notifications",
                                       "--idle-timeout", "60", f"round {round_}"],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               start_new_session=True)
        if not started_notifier:
            # Notifications need the session to exist: the first run makes it.
            deadline = time.time() + 30
            while not os.path.exists(transcript) and time.time() < deadline:
                time.sleep(0.01)
            threading.Thread(target=notifier, daemon=True).start()
            started_notifier = True
        time.sleep(random.uniform(0.1, 1.2))
        if run.poll() is not None:
            err = run.stderr.read().decode(errors="replace")
            print(f"round {round_}: the run ended by itself ({run.returncode}): {err[-2000:]}")
            return 1
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()
        kills += 1
        lines = whole_lines(transcript)
        ids = [m.get("id") for m in lines]
        seen = set(ids)
        lost_lines += [i for i in acked_lines if i not in seen]
        duplicated += sorted({i for i in ids if ids.count(i) > 1} - set(duplicated))
        for m in lines:
            acked_lines.setdefault(m.get("id"), m)

    stop.set()
    time.sleep(0.5)  # the notifier's last notify ends (it checks `stop` between runs)
    # A last run, not killed: it takes everything still queued, answers, and ends.
    last = subprocess.run(base + ["--model", "scripted:" + final, "final"], env=env,
                          capture_output=True, timeout=120)
    if last.returncode != 0:
        print("the final run failed:", last.stderr.decode(errors="replace")[-2000:])
        return 1
    lines = whole_lines(transcript)
    ids = [m.get("id") for m in lines]
    seen = set(ids)
    lost_lines += [i for i in acked_lines if i not in seen]
    duplicated += sorted({i for i in ids if ids.count(i) > 1} - set(duplicated))
    delivered = {}
    for m in lines:
        if m.get("origin") == "task-notification":
            delivered[m["id"]] = delivered.get(m["id"], 0) + 1
    lost_notes = [n for n in acked_notes if delivered.get(n, 0) == 0]
    twice = [n for n in acked_notes if delivered.get(n, 0) > 1]
    tool_results = sum(1 for m in lines if m.get("role") == "tool")
    print(f"kills survived: {kills}; transcript lines acknowledged: {len(acked_lines)}, "
          f"lost: {len(set(lost_lines))}, duplicated: {len(duplicated)}; tool results: "
          f"{tool_results}; notifies run: {notify_runs[0]} ({disk_full[0]} refused by a full "
          f"disk), acknowledged: {len(acked_notes)}, "
          f"lost: {len(lost_notes)}, delivered twice: {len(twice)}")
    ok = (not lost_lines and not duplicated and not lost_notes and not twice and kills == KILLS
          and tool_results > 0 and len(acked_notes) > 0)
    if not ok:
        print("lost lines:", sorted(set(lost_lines))[:10], "duplicated:", duplicated[:10],
              "lost notifications:", lost_notes[:10], "twice:", twice[:10])
    return 0 if ok else 1


if __name__ == "__main__":
    # troupe runs with its shipped defaults: no setting of the developer's environment
    # (TROUPE_*, a provider's key or base URL) reaches it; each test sets what it needs.
    for name in [n for n in os.environ if n.startswith(("TROUPE_", "OPENAI_", "ANTHROPIC_"))]:
        del os.environ[name]
    sys.exit(main())
