#!/usr/bin/env python3
"""Interrupts as a user sends them to a headless run: Ctrl+C, then Ctrl+C again while the
session is still ending (here: a slow SessionEnd hook), in both output formats; and one Ctrl+C
delivered twice within a millisecond (a wrapper forwarding the terminal's signal).

Usage: interrupt_test.py TROUPE_BINARY CASE. Each CASE is one ctest entry (tests/CMakeLists.txt).
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

TROUPE = os.path.abspath(sys.argv[1])
CASE = sys.argv[2]


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def setup(root, hook=True):
    """A workspace whose SessionEnd hook (when `hook`) marks its start, sleeps 2 s, marks its end;
    a script whose one command sleeps. Returns (argv, env, began, finished)."""
    work = os.path.join(root, "work")
    os.makedirs(os.path.join(work, ".troupe"))
    began = os.path.join(root, "hook-began")
    finished = os.path.join(root, "hook-finished")
    if hook:
        with open(os.path.join(work, ".troupe", "settings.json"), "w") as f:
            json.dump({"hooks": {"SessionEnd": [{"hooks": [
                {"type": "command", "command": f"touch {began}; sleep 2; touch {finished}"}]}]}}, f)
    script = os.path.join(root, "script.jsonl")
    with open(script, "w") as f:
        f.write(json.dumps({"text": "", "tool_calls": [
            {"name": "shell", "input": {"command": "echo started; sleep 30"}}]}) + "\n")
        f.write(json.dumps({"text": "done"}) + "\n")
    env = dict(os.environ, TROUPE_HOME=os.path.join(root, "home"), TROUPE_MODEL="")
    argv = [TROUPE, "run", "--cwd", work, "--model", "scripted:" + script,
            "--permission-mode", "bypass", "--sandbox", "off"]
    return argv, env, began, finished


def session_state(root):
    sessions = os.path.join(root, "home", "sessions")
    (only,) = os.listdir(sessions)
    with open(os.path.join(sessions, only, "session.json")) as f:
        return json.load(f)["state"]


def second_interrupt(root, output_format):
    """SIGINT during the command, then SIGINT again during the 2 s SessionEnd hook."""
    argv, env, began, finished = setup(root)
    proc = subprocess.Popen(argv + ["--output-format", output_format, "go"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.8)
        proc.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 10  # the turn is interrupted; the session's end runs its hook
        while not os.path.exists(began) and time.monotonic() < deadline:
            time.sleep(0.02)
        check(os.path.exists(began), "the SessionEnd hook began after the first interrupt")
        time.sleep(0.2)  # a hand's second Ctrl+C: not within the window of one sent twice
        second = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    stopped = time.monotonic() - second
    check(proc.returncode == 130, f"exit 130 after two interrupts: {proc.returncode}\n{err}")
    check(stopped < 1.5, f"the second interrupt stops the run at once: {stopped:.1f} s")
    check("exit_reason" not in out + err, f"no actor's exit reason shown: {out[-400:]}{err}")
    check(session_state(root) == "interrupted", "the session is recorded as interrupted")
    time.sleep(2.2)
    check(not os.path.exists(finished), "the hook was stopped with the session, not left running")
    return out, err


def case_text(root):
    out, _ = second_interrupt(root, "text")
    lines = out.strip().splitlines()
    check(lines[-1].startswith("● interrupted · 1 turn(s) · 1 step(s)"),
          f"the run ends `interrupted`, with what it did: {lines[-3:]}")


def case_stream_json(root):
    out, _ = second_interrupt(root, "stream-json")
    result = json.loads(out.strip().splitlines()[-1])
    check(result["type"] == "result" and result["subtype"] == "error_during_execution",
          f"a result line ends the stream: {result}")
    check(result["terminal_reason"] == "interrupted", f"as interrupted: {result}")
    check(result["session_id"] != "" and result["num_steps"] == 1, f"of its session: {result}")
    results = [json.loads(l) for l in out.splitlines() if '"tool_result"' in l]
    check(len(results) == 1, f"the interrupted call has its result: {out[-800:]}")


def case_duplicate(root):
    """One Ctrl+C that arrives twice, a millisecond apart, is one interrupt: the step's results
    are written and the session ends `interrupted`, not cut off as by a second Ctrl+C."""
    argv, env, _, _ = setup(root, hook=False)
    proc = subprocess.Popen(argv + ["--output-format", "stream-json", "go"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.8)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.001)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    check(proc.returncode == 130, f"exit 130: {proc.returncode}\n{err}")
    result = json.loads(out.strip().splitlines()[-1])
    check(result["terminal_reason"] == "interrupted" and result["num_steps"] == 1,
          f"the run's own result: {result}")
    check("Interrupted by the user." in out, "the interrupt is in the stream")
    check(session_state(root) == "interrupted", "the session is recorded as interrupted")


def case_while_ending(root):
    """One Ctrl+C during the SessionEnd hook of a run that completed: the hook is stopped, and
    said to be; the run stays completed (exit 0)."""
    argv, env, began, finished = setup(root)
    with open(argv[argv.index("--model") + 1][len("scripted:"):], "w") as f:
        f.write(json.dumps({"text": "all done"}) + "\n")
    proc = subprocess.Popen(argv + ["--output-format", "stream-json", "go"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(began) and time.monotonic() < deadline:
            time.sleep(0.02)
        check(os.path.exists(began), "the SessionEnd hook began")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    check(proc.returncode == 0, f"the run completed before the signal: {proc.returncode}\n{err}")
    lines = [json.loads(l) for l in out.strip().splitlines()]
    check(lines[-1]["type"] == "result" and lines[-1]["subtype"] == "success", lines[-1])
    notices = [l for l in lines if l.get("subtype") == "hook" and "stopped by an interrupt"
               in l.get("message", "")]
    check(len(notices) == 1, f"the stopped hook is said to be: {out[-600:]}")
    time.sleep(2.2)
    check(not os.path.exists(finished), "the hook was stopped, not left running")


CASES = {"text": case_text, "stream-json": case_stream_json, "a signal sent twice": case_duplicate,
         "one while the session ends": case_while_ending}


def main():
    root = tempfile.mkdtemp(prefix="interrupt-test-")
    try:
        CASES[CASE](root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"ok: {CASE}")


if __name__ == "__main__":
    main()
