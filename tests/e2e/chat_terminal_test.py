#!/usr/bin/env python3
"""troupe chat in a real terminal: tmux runs it, send-keys types, capture-pane reads the screen.

Usage: chat_terminal_test.py TROUPE_BINARY. Each test starts its own tmux server (a socket of
its own under a temporary directory) running one chat against the scripted model, and waits
for what must appear on the screen (polling, with a limit) rather than for fixed times.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tmux_terminal import TmuxTerminal  # noqa: E402

TROUPE = None


class Chat(TmuxTerminal):
    """One `troupe chat` in a detached tmux session."""

    def __init__(self, case, replies, args=(), env=None, home=None):
        self.case = case
        self.dir = tempfile.mkdtemp(prefix="troupe-tmux-")
        self.home = home or os.path.join(self.dir, "home")
        self.work = os.path.join(self.dir, "work")
        os.makedirs(self.work)
        self.script = os.path.join(self.dir, "replies.jsonl")
        with open(self.script, "w") as f:
            for r in replies:
                f.write(json.dumps(r) + "\n")
        variables = {"TROUPE_HOME": self.home, "TROUPE_MODEL": "", "OPENAI_API_KEY": "",
                     "ANTHROPIC_API_KEY": "", "LANG": "C.UTF-8", "TERM": "xterm-256color"}
        variables.update(env or {})
        exports = " ".join(f"{k}={json.dumps(v)}" for k, v in variables.items())
        unset = "" if "NO_COLOR" in variables else "unset NO_COLOR; "
        command = (f"{unset}env {exports} {TROUPE} chat --model scripted:{self.script} "
                   f"--cwd {self.work} {' '.join(args)}; echo EXIT=$?; sleep 600")
        self.start(command)

    def wait_count(self, text, count, limit=10.0):
        deadline = time.time() + limit
        while time.time() < deadline:
            if self.screen().count(text) >= count:
                return
            time.sleep(0.05)
        self.case.fail(f"{text!r} did not appear {count} times:\n{self.screen()}")

    def last_line(self):
        lines = [l for l in self.screen().split("\n") if l.strip()]
        return lines[-1] if lines else ""


def prompt_ready(chat, count=1):
    # The prompt mark, once per prompt shown so far.
    chat.wait_count("› ", count)


class ChatInATerminal(unittest.TestCase):
    def chat(self, replies, **kwargs):
        c = Chat(self, replies, **kwargs)
        self.addCleanup(c.close)
        return c

    def test_a_conversation_with_a_tool_streams_above_the_prompt(self):
        c = self.chat([{"text": "Hello from the agent.", "delay_ms": 200},
                       {"text": "Let me run it.\n\n```shell\necho term-ok\n```"},
                       {"text": "The shell said term-ok."}],
                      args=["--allow", "shell"])
        c.wait_for("scripted:")          # the status line
        prompt_ready(c)
        c.type("hello")
        c.keys("Enter")
        c.wait_for("Hello from the agent.")
        c.wait_for("1 turn")
        c.type("run the shell")
        c.keys("Enter")
        c.wait_for("← shell (exit 0)")
        c.wait_for("The shell said term-ok.")
        c.wait_for("2 turns")
        self.assertTrue(c.last_line().startswith("›"), c.screen())

    def test_slash_commands_answer_without_the_model(self):
        c = self.chat([{"text": "first reply"}])
        prompt_ready(c)
        for line, answer in [("/help", "/rename NAME"), ("/tokens", "-token window"),
                             ("/agents", "no subagents in this session"),
                             ("/rename terminal chat", 'named "terminal chat"'),
                             ("/model", "model: scripted:"),
                             ("/frobnicate", "unknown command /frobnicate")]:
            c.type(line)
            c.keys("Enter")
            c.wait_for(answer)
        c.type("/exit")
        c.keys("Enter")
        c.wait_for("EXIT=0")
        listed = subprocess.run([TROUPE, "ls", "--json"], capture_output=True, text=True,
                                env={**os.environ, "TROUPE_HOME": c.home}).stdout
        self.assertEqual(json.loads(listed.splitlines()[0])["name"], "terminal chat")

    def test_history_and_line_editing(self):
        c = self.chat([{"text": "one"}, {"text": "two"}])
        prompt_ready(c)
        c.type("first line")
        c.keys("Enter")
        c.wait_for("one")
        prompt_ready(c, 2)
        c.keys("Up")                     # the history brings the line back
        c.wait_for("› first line", limit=5)
        c.keys("C-a")                    # home, then edit at the start
        c.type("the ")
        c.keys("Enter")
        c.wait_for("two")
        transcript = self.transcript(c)
        self.assertEqual(transcript[2]["content"], "the first line")

    def test_ctrl_c_interrupts_a_generation_and_the_chat_goes_on(self):
        c = self.chat([{"text": "slow reply", "delay_ms": 20000}, {"text": "after the interrupt"}])
        prompt_ready(c)
        c.type("take your time")
        c.keys("Enter")
        time.sleep(0.3)
        c.keys("C-c")
        c.wait_for("Interrupted by the user.")
        prompt_ready(c, 2)
        c.type("again")
        c.keys("Enter")
        c.wait_for("after the interrupt")

    def test_ctrl_c_clears_a_line_and_twice_on_an_empty_prompt_exits(self):
        c = self.chat([{"text": "unused"}])
        prompt_ready(c)
        c.type("half a thought")
        c.keys("C-c")                    # clears the line, does not exit
        time.sleep(0.3)
        self.assertNotIn("EXIT=", c.screen())
        c.keys("C-c")
        c.wait_for("press Ctrl+C again to exit")
        c.keys("C-c")
        c.wait_for("EXIT=0")
        self.assertEqual(self.transcript(c), [])

    def test_without_libedit_the_chat_says_so_and_ends(self):
        # The chat opens libedit itself (troupe run never loads it); where it cannot, it is a
        # one-line error before anything is written, not a chat that could not ask questions.
        c = self.chat([{"text": "never asked"}],
                      env={"TROUPE_LIBEDIT": "/nonexistent/libedit.so.2"})
        c.wait_for("cannot load libedit (/nonexistent/libedit.so.2")
        c.wait_for("troupe chat needs it on a terminal")
        c.wait_for("EXIT=2")
        self.assertFalse(os.path.exists(os.path.join(c.home, "sessions")),
                         "no session was made")

    def test_ctrl_d_exits(self):
        c = self.chat([{"text": "unused"}])
        prompt_ready(c)
        c.keys("C-d")
        c.wait_for("EXIT=0")

    def test_a_permission_question_is_answered_at_the_prompt(self):
        c = self.chat([{"text": "```shell\necho asked-and-ran\n```"}, {"text": "done"}])
        prompt_ready(c)
        c.type("run something")
        c.keys("Enter")
        c.wait_for("Allow? [y]es / [n]o / [a]lways")
        c.type("y")
        c.keys("Enter")
        c.wait_for("asked-and-ran")
        c.wait_for("done")

    def test_keys_typed_ahead_never_answer_a_question(self):
        c = self.chat([{"text": "Let me check.\n\n```shell\necho checked\n```", "delay_ms": 1500},
                       {"text": "All checked."}, {"text": "Looking at the logs."}])
        prompt_ready(c)
        c.type("run it")
        c.keys("Enter")
        time.sleep(0.3)
        c.type("yes")                    # typed ahead, before any question was asked
        c.keys("Enter")
        c.wait_for("Allow? [y]es / [n]o / [a]lways")
        time.sleep(0.3)
        self.assertNotIn("checked\n", c.screen().split("Allow?")[-1])  # not run yet
        c.type("n")
        c.keys("Enter")
        c.wait_for("The user declined to run this call.")
        # The typed-ahead line was a message after all: it goes to the agent at the next prompt.
        c.wait_for("› yes")
        c.wait_for("All checked.")
        log = self.transcript(c)
        self.assertIn("yes", [m["content"] for m in log if m["role"] == "user"])

    def test_a_question_whose_step_is_interrupted_elsewhere_is_withdrawn(self):
        c = self.chat([{"text": "```shell\necho first-call\n```"},
                       {"text": "```shell\necho second-call\n```"}, {"text": "done"}],
                      args=["--session-id", "asked"])
        prompt_ready(c)
        c.type("first")
        c.keys("Enter")
        c.wait_for("Allow? [y]es / [n]o / [a]lways")
        env = {**os.environ, "TROUPE_HOME": c.home}
        subprocess.run([TROUPE, "interrupt", "asked"], capture_output=True, env=env, check=True)
        c.wait_for("the question was withdrawn")
        c.type("again")
        c.keys("Enter")
        c.wait_for("shell: echo second-call")             # the next question is asked
        c.wait_for("Allow? [y]es / [n]o / [a]lways")
        c.type("y")
        c.keys("Enter")
        c.wait_for("second-call")

    def test_typed_ahead_keys_keep_their_edits_and_ctrl_c_drops_them(self):
        c = self.chat([{"text": "```shell\necho ok\n```", "delay_ms": 1500}, {"text": "ran"},
                       {"text": "edited reply"}, {"text": "slow", "delay_ms": 5000},
                       {"text": "after"}])
        prompt_ready(c)
        c.type("go")
        c.keys("Enter")
        time.sleep(0.2)
        c.type("hellp")                  # typed ahead, with an edit
        c.keys("BSpace")
        c.type("o")
        c.keys("Enter")
        c.wait_for("Allow? [y]es")
        c.type("y")
        c.keys("Enter")
        c.wait_for("edited reply")
        users = [m["content"] for m in self.transcript(c) if m.get("origin") == "prompt"]
        self.assertEqual(users, ["go", "hello"])
        c.type("wait")
        c.keys("Enter")
        time.sleep(0.3)
        c.type("dropped")                # typed ahead, then Ctrl+C
        c.keys("Enter")
        time.sleep(0.2)
        c.keys("C-c")
        c.wait_for("Interrupted by the user.")
        time.sleep(0.5)
        users = [m["content"] for m in self.transcript(c) if m.get("origin") == "prompt"]
        self.assertNotIn("dropped", users)

    def test_sigterm_at_the_prompt_ends_the_chat_cleanly(self):
        c = self.chat([{"text": "unused"}])
        prompt_ready(c)
        shell = c.tmux("display-message", "-p", "-t", "0", "#{pane_pid}").stdout.strip()
        pid = subprocess.run(["pgrep", "-P", shell, "-x", "troupe"], capture_output=True,
                             text=True).stdout.split()
        self.assertTrue(pid, "no troupe process under the pane's shell")
        os.kill(int(pid[0]), 15)
        c.wait_for("EXIT=0")

    def test_a_first_prompt_shows_under_the_session_header(self):
        c = self.chat([{"text": "Answered."}], args=["look", "around"])
        c.wait_for("Answered.")
        screen = c.screen()
        self.assertLess(screen.index("● session"), screen.index("› look around"), screen)

    def test_the_prompt_survives_a_resize(self):
        c = self.chat([{"text": "unused"}])
        prompt_ready(c)
        c.tmux("resize-window", "-t", "0", "-x", "40", "-y", "20")
        time.sleep(0.3)
        c.type("a" * 30 + " " + "b" * 30)
        c.keys("C-a")
        c.type("X")
        c.keys("Enter")
        c.wait_for("unused")
        self.assertEqual(self.transcript(c)[0]["content"], "X" + "a" * 30 + " " + "b" * 30)

    def test_colours_on_a_terminal_and_none_with_no_color(self):
        coloured = self.chat([{"text": "hi"}])
        prompt_ready(coloured)
        coloured.wait_for("\x1b[", escapes=True)
        plain = self.chat([{"text": "hi"}], env={"NO_COLOR": "1"})
        prompt_ready(plain)
        plain.type("hello")
        plain.keys("Enter")
        plain.wait_for("hi")
        self.assertNotIn("\x1b[", plain.screen(escapes=True))

    def test_a_crashed_chat_is_answered_on_resume_without_asking(self):
        home = tempfile.mkdtemp(prefix="troupe-tmux-home-")
        self.addCleanup(shutil.rmtree, home, True)
        session = os.path.join(home, "sessions", "crashed")
        os.makedirs(session)
        with open(os.path.join(session, "transcript.jsonl"), "w") as f:
            f.write(json.dumps({"id": "msg_1", "role": "user", "origin": "prompt",
                                "content": "what is 6 times 7?", "timestamp_ms": 1}) + "\n")
        c = self.chat([{"text": "It is 42."}], args=["--resume", "crashed"], home=home)
        c.wait_for("It is 42.")
        prompt_ready(c)

    def test_a_notification_at_the_prompt_starts_a_turn_and_typing_survives(self):
        c = self.chat([{"text": "first"}, {"text": "Noted the deploy."}])
        prompt_ready(c)
        c.type("hi")
        c.keys("Enter")
        c.wait_for("first")
        prompt_ready(c, 2)
        c.type("half typed")
        env = {**os.environ, "TROUPE_HOME": c.home}
        listed = subprocess.run([TROUPE, "ls", "--json"], capture_output=True, text=True,
                                env=env).stdout
        session = json.loads(listed.splitlines()[0])["id"]
        sent = subprocess.run([TROUPE, "notify", session, "deploy finished"],
                              capture_output=True, text=True, env=env)
        self.assertEqual(sent.returncode, 0, sent.stderr)
        c.wait_for("◆ task notification: external")
        c.wait_for("Noted the deploy.")
        c.wait_for("› half typed")       # what was typed comes back with the prompt

    def test_an_idle_timeout_ends_the_chat(self):
        c = self.chat([{"text": "unused"}], args=["--idle-timeout", "1"])
        prompt_ready(c)
        c.wait_for("EXIT=0", limit=10)

    def test_a_slow_step_shows_that_the_agent_works_and_the_line_goes_with_it(self):
        c = self.chat([{"text": "Running it.\n\n```shell\nsleep 2; echo slept\n```"},
                       {"text": "It slept.", "delay_ms": 1500}],
                      args=["--allow", "shell"])
        prompt_ready(c)
        c.type("sleep a while")
        c.keys("Enter")
        c.wait_for("Running it.")
        c.wait_for("working 1s · Ctrl+C to interrupt")   # the shell call, ticking
        c.wait_for("← shell (exit 0)")
        c.wait_for("s · Ctrl+C to interrupt")            # the slow reply after it: the turn's time
        c.wait_for("It slept.")
        prompt_ready(c, 2)
        screen = c.screen()
        self.assertNotIn("working", screen)              # taken away, never left in the output
        lines = [l.rstrip() for l in screen.split("\n")]
        # The output it sat under is whole: the result and the reply on their own lines.
        self.assertIn("  │ slept", lines)
        self.assertIn("It slept.", lines)
        self.assertTrue(c.last_line().startswith("›"), screen)

    def test_no_working_line_on_a_dumb_terminal(self):
        c = self.chat([{"text": "slow", "delay_ms": 1500}], env={"TERM": "dumb"})
        prompt_ready(c)
        c.type("hi")
        c.keys("Enter")
        deadline = time.time() + 10
        seen = ""
        while time.time() < deadline and "slow" not in seen:
            seen = c.screen()
            self.assertNotIn("working", seen)
            time.sleep(0.05)
        c.wait_for("slow")

    def test_no_working_line_when_stdout_is_a_pipe(self):
        work = tempfile.mkdtemp(prefix="troupe-pipe-")
        self.addCleanup(shutil.rmtree, work, True)
        script = os.path.join(work, "replies.jsonl")
        with open(script, "w") as f:
            f.write(json.dumps({"text": "slow and piped", "delay_ms": 1500}) + "\n")
        env = {**os.environ, "TROUPE_HOME": os.path.join(work, "home"), "TERM": "xterm-256color"}
        done = subprocess.run([TROUPE, "chat", "--model", "scripted:" + script, "--cwd", work],
                              input="hello\n", capture_output=True, text=True, env=env,
                              timeout=30)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("slow and piped", done.stdout)
        self.assertNotIn("working", done.stdout)
        self.assertNotIn("\r", done.stdout)
        self.assertNotIn("\x1b[K", done.stdout)

    def transcript(self, chat):
        sessions = os.path.join(chat.home, "sessions")
        for name in os.listdir(sessions):
            with open(os.path.join(sessions, name, "transcript.jsonl")) as f:
                return [json.loads(line) for line in f if line.strip()]
        return []


class ListInATerminal(unittest.TestCase):
    def test_ls_cuts_only_the_name_to_the_terminal_width(self):
        work = tempfile.mkdtemp(prefix="troupe-tmux-ls-")
        self.addCleanup(shutil.rmtree, work, True)
        home = os.path.join(work, "home")
        script = os.path.join(work, "replies.jsonl")
        with open(script, "w") as f:
            f.write(json.dumps({"text": "ok"}) + "\n")
        env = {**os.environ, "TROUPE_HOME": home}
        name = "a name far too long for a narrow terminal to hold on one line of the table"
        for args in (["--session-id", "narrow", "hi"], ["--resume", "narrow", "/rename " + name]):
            done = subprocess.run([TROUPE, "run", "--model", "scripted:" + script, "--cwd", work,
                                   *args], capture_output=True, text=True, env=env)
            self.assertEqual(done.returncode, 0, done.stderr)
        socket = os.path.join(work, "tmux.sock")
        tmux = ["tmux", "-S", socket, "-f", "/dev/null"]
        self.addCleanup(subprocess.run, [*tmux, "kill-server"], capture_output=True)
        subprocess.run([*tmux, "new-session", "-d", "-x", "70", "-y", "10",
                        f"env TROUPE_HOME={home} LANG=C.UTF-8 {TROUPE} ls; echo DONE; sleep 600"],
                       check=True)
        deadline = time.time() + 10
        screen = ""
        while time.time() < deadline and "DONE" not in screen:
            screen = subprocess.run([*tmux, "capture-pane", "-t", "0", "-p"],
                                    capture_output=True, text=True).stdout
            time.sleep(0.05)
        lines = [l.rstrip() for l in screen.split("\n") if l.strip()]
        self.assertTrue(lines[0].startswith("ID"), screen)
        row = next(l for l in lines if l.startswith("narrow"))
        self.assertEqual(len(row), 70, screen)          # the whole width, and no more
        self.assertTrue(row.endswith("…"), screen)
        self.assertIn("a name far too long", row)
        self.assertIn("completed", row)                 # the other columns are whole


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: chat_terminal_test.py TROUPE_BINARY")
    TROUPE = os.path.abspath(sys.argv.pop(1))
    # troupe runs with its shipped defaults: no setting of the developer's environment
    # (TROUPE_*, a provider's key or base URL) reaches it; each test sets what it needs.
    for name in [n for n in os.environ if n.startswith(("TROUPE_", "OPENAI_", "ANTHROPIC_"))]:
        del os.environ[name]
    if shutil.which("tmux") is None:
        sys.exit("tmux is needed for the terminal test (scripts/install-deps.sh installs it)")
    unittest.main(verbosity=2)
