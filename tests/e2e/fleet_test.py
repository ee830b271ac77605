#!/usr/bin/env python3
"""troupe fleet, driven as a user would: a tasks file in, one result line per task out.

Usage: fleet_test.py TROUPE_BINARY CASE. Each CASE is one ctest entry (tests/CMakeLists.txt).
Every task's model is a script of its own (scripted:PATH), except in the shared back-off case,
where a fake OpenAI-compatible server on 127.0.0.1 answers by task. Outcomes only: nothing
waits on a fixed time to be correct, except the back-off case, which measures one.
"""

import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

TROUPE = os.path.abspath(sys.argv[1])
CASE = sys.argv[2]


class Fleet:
    def __init__(self, root):
        self.root = root
        self.home = os.path.join(root, "home")
        self.work = os.path.join(root, "work")
        os.makedirs(self.work)
        self.scripts = 0

    def env(self, extra=None):
        env = dict(os.environ)
        env.update({"TROUPE_HOME": self.home, "XDG_CONFIG_HOME": os.path.join(self.root, "config"),
                    "TROUPE_MODEL": "", "OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": "",
                    "TROUPE_MAX_STEPS": ""})
        env.update(extra or {})
        return env

    def script(self, replies):
        self.scripts += 1
        path = os.path.join(self.root, f"script{self.scripts}.jsonl")
        with open(path, "w") as f:
            for r in replies:
                f.write(json.dumps(r) + "\n")
        return "scripted:" + path

    def tasks(self, lines, name="tasks.jsonl"):
        path = os.path.join(self.root, name)
        with open(path, "w") as f:
            for line in lines:
                f.write((line if isinstance(line, str) else json.dumps(line)) + "\n")
        return path

    def run(self, args, extra_env=None, timeout=120, stdin=None, cwd=None):
        return subprocess.run([TROUPE, "fleet", "--cwd", self.work] + args, env=self.env(extra_env),
                              capture_output=True, text=True, timeout=timeout, stdin=stdin,
                              cwd=cwd)

    def troupe(self, args, timeout=60, cwd=None):
        return subprocess.run([TROUPE] + args, env=self.env(), capture_output=True, text=True,
                              timeout=timeout, cwd=cwd)


def results(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def by_id(lines):
    out = {}
    for line in lines:
        assert line["id"] not in out, f"two result lines for {line['id']}: {lines}"
        out[line["id"]] = line
    return out


def by_last_id(lines):
    """Each id's last line: its result."""
    return {line["id"]: line for line in lines}


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def outcome_tasks(f):
    """One task per way a task can end, each with a script of its own."""
    done = f.script([{"text": "all done", "usage": {"input_tokens": 10, "output_tokens": 2}}])
    failing = f.script([{"error": {"status": 400, "message": "bad request from the fake"}}])
    looping = f.script([{"tool_calls": [{"name": "todo", "input": {"todos": []}}]}] * 5)
    blocked = f.script([{"tool_calls": [{"name": "shell", "input": {"command": "rm -rf x"}}]},
                        {"text": "I was not allowed to."}])
    return [
        {"id": "ok", "prompt": "say done", "model": done, "metadata": {"row": 1}},
        {"id": "fails", "prompt": "break", "model": failing},
        {"id": "loops", "prompt": "loop", "model": looping, "max_steps": 2},
        {"id": "blocked", "prompt": "delete", "model": blocked},
    ]


def case_mixed_outcomes(f):
    tasks = f.tasks(outcome_tasks(f) + ['{"id": "bad", "prompt": 7}', "not json at all"])
    out = os.path.join(f.root, "out.jsonl")
    r = f.run([tasks, "--out", out, "--concurrency", "3"])
    check(r.returncode == 1, f"some tasks failed, so exit 1: {r.returncode} {r.stderr}")
    lines = by_id(results(out))
    check(set(lines) == {"ok", "fails", "loops", "blocked", "bad", "line-6"}, f"ids: {lines}")
    check(lines["ok"]["terminal_reason"] == "completed", lines["ok"])
    check(lines["ok"]["result"] == "all done", lines["ok"])
    check(lines["ok"]["metadata"] == {"row": 1}, lines["ok"])
    check(lines["ok"]["usage"]["input_tokens"] == 10, lines["ok"])
    check(lines["ok"]["num_turns"] == 1 and lines["ok"]["num_steps"] == 1, lines["ok"])
    for key in ("session_id", "cost_usd", "duration_ms"):
        check(key in lines["ok"], f"{key} in {lines['ok']}")
    check(lines["fails"]["terminal_reason"] == "error", lines["fails"])
    check("bad request from the fake" in lines["fails"]["error"], lines["fails"])
    check(lines["loops"]["terminal_reason"] == "max_turns", lines["loops"])
    check(lines["blocked"]["terminal_reason"] == "permission_blocked", lines["blocked"])
    check("shell" in lines["blocked"]["error"], lines["blocked"])
    check(lines["bad"]["error"].startswith("invalid task (line 5): \"prompt\" must be a string"),
          lines["bad"])
    check(lines["line-6"]["error"] == "invalid task (line 6): not valid JSON", lines["line-6"])
    check("line 5" in r.stderr and "line 6" in r.stderr, r.stderr)
    check("1 completed, 5 failed" in r.stdout, r.stdout)
    check(not os.path.exists(os.path.join(f.home, "sessions")), "tasks live in the fleet's folder")
    # Each task is a full session: troupe show finds it by the id in its result.
    shown = f.troupe(["show", lines["ok"]["session_id"]])
    check(shown.returncode == 0 and "all done" in shown.stdout, shown.stdout + shown.stderr)
    # And the fleet's status counts it all.
    fleet_id = lines["ok"]["session_id"][: -len("-ok")]
    status = f.troupe(["fleet", "status", fleet_id, "--json"])
    check(status.returncode == 0, status.stderr)
    counts = json.loads(status.stdout)
    check(counts["total"] == 6 and counts["completed"] == 1 and counts["failed"] == 5
          and counts["without_result"] == 0, counts)
    check(counts["by_reason"]["invalid task"] == 2, counts)
    # A rerun runs nothing: every id has its line.
    again = f.run([tasks, "--out", out])
    check(len(results(out)) == 6, results(out))
    check(again.returncode == 1, again.stderr)
    # The user fixes the bad line: that task runs now, and its new line is its result.
    with open(tasks) as t:
        fixed = t.read().replace('{"id": "bad", "prompt": 7}',
                                 json.dumps({"id": "bad", "prompt": "now valid",
                                             "model": outcome_tasks(f)[0]["model"]}))
    with open(tasks, "w") as t:
        t.write(fixed)
    f.run([tasks, "--out", out])
    check(by_last_id(results(out))["bad"].get("terminal_reason") == "completed", results(out))


def case_stream_json(f):
    tasks = f.tasks(outcome_tasks(f)[:2] + ["{not json"])
    r = f.run([tasks, "--output-format", "stream-json", "--fleet-id", "sj"])
    events = [json.loads(line) for line in r.stdout.splitlines()]
    kinds = [e["type"] for e in events]
    check(kinds[0] == "fleet_started" and kinds[-1] == "fleet_ended", kinds)
    check(kinds.count("fleet_task_result") == 3, kinds)  # the bad line's result too
    check(events[-1]["completed"] == 1 and events[-1]["failed"] == 2, events[-1])
    on_disk = results(os.path.join(f.home, "fleets", "sj", "results.jsonl"))
    streamed = [{k: v for k, v in e.items() if k != "type"} for e in events
                if e["type"] == "fleet_task_result"]
    check(sorted(on_disk, key=lambda x: x["id"]) == sorted(streamed, key=lambda x: x["id"]),
          (on_disk, streamed))


def case_csv(f):
    done = f.script([{"text": "csv ok"}])
    path = os.path.join(f.root, "jobs.csv")
    with open(path, "w") as out:
        out.write("id,prompt,model,team\r\n")
        out.write(f"c1,\"a prompt, with a comma\",{done},red\r\n")
        out.write(f"c2,\"two\nlines\",{done},blue\r\n")
    r = f.run([path, "--fleet-id", "csv"])
    check(r.returncode == 0, r.stderr)
    lines = by_id(results(os.path.join(f.home, "fleets", "csv", "results.jsonl")))
    check(lines["c1"]["result"] == "csv ok" and lines["c1"]["metadata"] == {"team": "red"}, lines)
    shown = f.troupe(["show", "csv-c2"])
    check("two\nlines" in shown.stdout, shown.stdout)


def case_refusals(f):
    dup = f.tasks([{"id": "a", "prompt": "x"}, {"id": "b", "prompt": "y"}, {"id": "a", "prompt": "z"}])
    r = f.run([dup, "--fleet-id", "dup", "--model", f.script([{"text": "x"}])])
    check(r.returncode == 2, r.returncode)
    check("duplicate task id \"a\" on lines 1 and 3" in r.stderr, r.stderr)
    check(not os.path.exists(os.path.join(f.home, "fleets", "dup")), "nothing written")
    r = f.run([os.path.join(f.root, "missing.jsonl")])
    check(r.returncode == 2 and "no such file" in r.stderr, r.stderr)
    r = f.run([f.tasks([{"id": "a", "prompt": "x"}]), "--concurrency", "0"])
    check(r.returncode == 2 and "--concurrency" in r.stderr, r.stderr)
    r = f.run([f.tasks([{"id": "a", "prompt": "x"}]), "--budget-usd", "-1"])
    check(r.returncode == 2 and "--budget-usd" in r.stderr, r.stderr)
    r = f.run([f.tasks([{"id": "a", "prompt": "x"}]), "--fleet-id", "../x"])
    check(r.returncode == 2 and "invalid --fleet-id" in r.stderr, r.stderr)
    same = f.tasks([{"id": "a", "prompt": "x"}], "same.jsonl")
    r = f.run([same, "--out", same, "--model", f.script([{"text": "x"}])])
    check(r.returncode == 2 and "is the tasks file" in r.stderr, r.stderr)
    r = f.troupe(["fleet", "status", "nosuch"])
    check(r.returncode != 0 and "unknown fleet 'nosuch'" in r.stderr, r.stderr)
    # Tasks from stdin, JSONL with a byte-order mark (guessed as JSONL all the same).
    done = f.script([{"text": "from stdin"}])
    path = f.tasks(['\ufeff' + json.dumps({"id": "s", "prompt": "p", "model": done})], "stdin.jsonl")
    with open(path) as tasks:
        r = f.run(["-", "--fleet-id", "stdin"], stdin=tasks)
    check(r.returncode == 0, r.stderr)


def case_budget(f):
    costly = f.script([{"text": "spent", "usage": {"input_tokens": 900, "output_tokens": 100}}])
    tasks = f.tasks([{"id": f"t{i}", "prompt": "spend", "model": costly} for i in range(6)])
    r = f.run([tasks, "--fleet-id", "budget", "--concurrency", "1", "--budget-tokens", "1500"])
    check(r.returncode == 1, r.stderr)
    lines = by_id(results(os.path.join(f.home, "fleets", "budget", "results.jsonl")))
    ran = [i for i, line in lines.items() if line.get("terminal_reason") == "completed"]
    refused = [i for i, line in lines.items() if line.get("error") == "budget"]
    # 1000 tokens a task: the second one reaches 1500, so no third starts.
    check(sorted(ran) == ["t0", "t1"], lines)
    check(sorted(refused) == ["t2", "t3", "t4", "t5"], lines)
    check(not os.path.exists(os.path.join(f.home, "fleets", "budget", "sessions", "budget-t2")),
          "a task refused for the budget never started")
    # A rerun with more budget runs them (their new line follows and wins); the others stay.
    r = f.run([tasks, "--fleet-id", "budget", "--budget-tokens", "100000"])
    check(r.returncode == 0, r.stdout + r.stderr)
    status = json.loads(f.troupe(["fleet", "status", "budget", "--json"]).stdout)
    check(status["completed"] == 6 and status["budget"] == 0, status)
    with open(os.path.join(f.home, "fleets", "budget", "sessions", "budget-t0",
                           "transcript.jsonl")) as t:
        check(sum(1 for line in t if '"origin":"prompt"' in line) == 1, "t0 ran once")


def case_resume_after_kill(f):
    # Two slow steps a task: a kill lands while some have finished and others run.
    slow = f.script([{"tool_calls": [{"name": "todo", "input": {"todos": []}}], "delay_ms": 150},
                     {"text": "finished", "delay_ms": 150}])
    ids = [f"k{i:02d}" for i in range(40)]
    tasks = f.tasks([{"id": i, "prompt": f"task {i}", "model": slow} for i in ids])
    out = os.path.join(f.root, "kill.jsonl")
    proc = subprocess.Popen([TROUPE, "fleet", "--cwd", f.work, tasks, "--out", out,
                             "--concurrency", "8"], env=f.env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline:
        if os.path.exists(out) and len(results(out)) >= 10:
            break
        time.sleep(0.02)
    proc.kill()
    proc.wait()
    before = by_id(results(out))
    check(0 < len(before) < len(ids), f"the kill landed mid-fleet: {len(before)} results")
    sessions = os.path.join(f.home, "fleets")
    fleet_dir = os.path.join(sessions, os.listdir(sessions)[0])
    finished = {}
    for i, line in before.items():
        transcript = os.path.join(fleet_dir, "sessions", line["session_id"], "transcript.jsonl")
        with open(transcript, "rb") as t:
            finished[i] = t.read()
    cut_off = {}
    for i in ids:
        transcript = os.path.join(fleet_dir, "sessions", f"{os.path.basename(fleet_dir)}-{i}",
                                  "transcript.jsonl")
        if i not in before and os.path.exists(transcript):
            with open(transcript, "rb") as t:
                data = t.read()
            cut_off[i] = data[: data.rfind(b"\n") + 1]
    check(cut_off, "some tasks were cut off mid-run")
    # The same results file spelled another way is the same fleet.
    r = f.run([tasks, "--out", "./kill.jsonl", "--concurrency", "8"], cwd=f.root)
    check(r.returncode == 0, r.stderr + "\n" + "\n".join(
        json.dumps(line) for line in results(out) if line.get("terminal_reason") != "completed"))
    check(len(os.listdir(sessions)) == 1, f"one fleet: {os.listdir(sessions)}")
    after = by_id(results(out))  # no duplicate line
    check(sorted(after) == ids, f"every id once: {sorted(after)}")
    for i, line in before.items():
        check(after[i] == line, f"{i}'s line is kept as it was")
        transcript = os.path.join(fleet_dir, "sessions", line["session_id"], "transcript.jsonl")
        with open(transcript, "rb") as t:
            check(t.read() == finished[i], f"{i} finished before the kill and did not run again")
    for i in ids:
        check(after[i]["terminal_reason"] == "completed", after[i])
    # A task cut off went on from its transcript: what it had written is still its start.
    for i, data in cut_off.items():
        transcript = os.path.join(fleet_dir, "sessions", after[i]["session_id"], "transcript.jsonl")
        with open(transcript, "rb") as t:
            check(t.read().startswith(data), f"{i} resumed its transcript")


def case_recovered(f):
    """A task whose session ended but whose result line was lost (a kill between the two) is
    not run again: its line is made from what its session wrote."""
    done = f.script([{"text": "first and only answer",
                      "usage": {"input_tokens": 7, "output_tokens": 3}}])
    tasks = f.tasks([{"id": "ended", "prompt": "p", "model": done, "metadata": {"m": 1}},
                     {"id": "killed", "prompt": "p", "model": done},
                     {"id": "other", "prompt": "p", "model": done}])
    r = f.run([tasks, "--fleet-id", "rec"])
    check(r.returncode == 0, r.stderr)
    fleet = os.path.join(f.home, "fleets", "rec")
    out = os.path.join(fleet, "results.jsonl")
    lines = by_id(results(out))
    # As if killed: "ended" lost its line; "killed" also its end in session.json.
    with open(out, "w") as o:
        o.write(json.dumps(lines["other"]) + "\n")
    info_path = os.path.join(fleet, "sessions", "rec-killed", "session.json")
    with open(info_path) as i:
        info = json.load(i)
    info["state"] = "running"
    with open(info_path, "w") as i:
        json.dump(info, i)
    transcripts = {}
    for task in ("ended", "killed"):
        with open(os.path.join(fleet, "sessions", f"rec-{task}", "transcript.jsonl"), "rb") as t:
            transcripts[task] = t.read()
    r = f.run([tasks, "--fleet-id", "rec"])
    check(r.returncode == 0, r.stderr)
    after = by_id(results(out))
    check(sorted(after) == ["ended", "killed", "other"], after)
    for task in ("ended", "killed"):
        check(after[task]["recovered"] is True, after[task])
        check(after[task]["terminal_reason"] == "completed", after[task])
        check(after[task]["result"] == "first and only answer", after[task])
        with open(os.path.join(fleet, "sessions", f"rec-{task}", "transcript.jsonl"), "rb") as t:
            check(t.read() == transcripts[task], f"{task} did not run again")
    check(after["ended"]["usage"]["input_tokens"] == 7, after["ended"])
    check(after["ended"]["metadata"] == {"m": 1}, after["ended"])


def case_interrupt(f):
    slow = f.script([{"text": "slow", "delay_ms": 30000}])
    quick = f.script([{"text": "quick"}])
    tasks = f.tasks([{"id": "slow", "prompt": "wait", "model": slow}]
                    + [{"id": f"q{i}", "prompt": "go", "model": quick} for i in range(3)])
    # Relative --cwd, and a permission mode the resumed task needs: the rerun below, from "/"
    # with the fleet id alone, must find both in the fleet's record.
    proc = subprocess.Popen([TROUPE, "fleet", "--cwd", "work", tasks, "--fleet-id", "intr",
                             "--concurrency", "1", "--permission-mode", "bypass"], env=f.env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=f.root)
    state = os.path.join(f.home, "fleets", "intr", "sessions", "intr-slow", "transcript.jsonl")
    deadline = time.time() + 30
    while time.time() < deadline and not os.path.exists(state):
        time.sleep(0.02)
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    check(proc.returncode == 130, f"{proc.returncode} {err}")
    results_path = os.path.join(f.home, "fleets", "intr", "results.jsonl")
    check(not os.path.exists(results_path) or results(results_path) == [],
          "an interrupted task has no result: a rerun resumes it")
    check("left for a rerun" in out, out)
    with open(os.path.join(f.home, "fleets", "intr", "sessions", "intr-slow", "session.json")) as s:
        check(json.load(s)["state"] == "interrupted", "its state was written")
    # The rerun resumes the interrupted task (a continuation prompt) and runs the rest.
    with open(slow[len("scripted:"):], "w") as script:
        script.write(json.dumps({"tool_calls": [{"name": "shell",
                                                 "input": {"command": "touch resumed-here"}}]})
                     + "\n" + json.dumps({"text": "resumed and done"}) + "\n")
    # The rerun the message names: the fleet id alone, from anywhere, goes on as it started.
    check("troupe fleet --fleet-id intr" in out, out)
    r = f.troupe(["fleet", "--fleet-id", "intr"], cwd="/")
    check(r.returncode == 0, r.stdout + r.stderr)
    lines = by_id(results(results_path))
    check(sorted(lines) == ["q0", "q1", "q2", "slow"], lines)
    check(lines["slow"]["result"] == "resumed and done", lines["slow"])
    check(os.path.exists(os.path.join(f.work, "resumed-here")),
          "the rerun ran in the recorded workspace, with the recorded permission mode")


class Backoff(http.server.BaseHTTPRequestHandler):
    """OpenAI chat completions, not streamed. Task A's first request gets a 429 with
    Retry-After: 1; task B's first gets a shell call that takes 0.3 s; then both are done."""
    log = []
    lock = threading.Lock()
    seen = set()

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        first_user = next(m for m in body["messages"] if m["role"] == "user")["content"]
        task = "A" if "task A" in str(first_user) else "B"
        with Backoff.lock:
            now = time.monotonic()
            first = task not in Backoff.seen
            Backoff.seen.add(task)
            Backoff.log.append((now, task, first))
        if task == "A" and first:
            data = json.dumps({"error": {"message": "slow down", "type": "rate_limit"}}).encode()
            self.send_response(429)
            self.send_header("retry-after", "1")
        else:
            message = {"role": "assistant", "content": f"{task} done"}
            if task == "B" and first:
                message = {"role": "assistant", "content": None, "tool_calls": [{
                    "id": "call_1", "type": "function",
                    "function": {"name": "shell", "arguments": json.dumps({"command": "sleep 0.3"})}}]}
            data = json.dumps({"id": "x", "object": "chat.completion", "model": "fake",
                               "choices": [{"index": 0, "message": message,
                                            "finish_reason": "tool_calls" if message["content"] is None else "stop"}],
                               "usage": {"prompt_tokens": 5, "completion_tokens": 1}}).encode()
            self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def case_shared_backoff(f):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Backoff)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        tasks = f.tasks([{"id": "a", "prompt": "task A"}, {"id": "b", "prompt": "task B"}])
        r = f.run([tasks, "--fleet-id", "backoff", "--model", "openai/gpt-4.1", "--no-stream",
                   "--allow", "shell", "--permission-mode", "accept-edits"],
                  extra_env={"OPENAI_API_KEY": "test", "OPENAI_BASE_URL":
                             f"http://127.0.0.1:{server.server_port}/v1"})
    finally:
        server.shutdown()
    check(r.returncode == 0, r.stdout + r.stderr)
    log = Backoff.log
    paused_at = next(t for t, task, first in log if task == "A" and first)
    # Both first requests go out together, before anyone knows of a pause; every later one
    # must keep out of it.
    during = [(round(t - paused_at, 3), task) for t, task, first in log
              if paused_at < t < paused_at + 0.95 and not first]
    # B's second request, ready 0.3 s in, waited for A's Retry-After instead of hitting the
    # provider in the middle of its pause.
    check(during == [], f"requests during the provider's pause: {during} (log {log})")
    b_second = [t for t, task, first in log if task == "B" and not first]
    check(b_second and b_second[0] >= paused_at + 0.95, f"B waited for the pause: {log}")


CASES = {
    "mixed outcomes": case_mixed_outcomes,
    "stream-json": case_stream_json,
    "csv": case_csv,
    "refusals": case_refusals,
    "budget": case_budget,
    "resume after kill -9": case_resume_after_kill,
    "ctrl-c and resume": case_interrupt,
    "a finished task whose line was lost is not run again": case_recovered,
    "shared 429 back-off": case_shared_backoff,
}


def main():
    root = tempfile.mkdtemp(prefix="troupe-fleet-")
    try:
        CASES[CASE](Fleet(root))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"ok: {CASE}")


if __name__ == "__main__":
    main()
