#!/usr/bin/env python3
"""Claude Code's command line on a real terminal (tmux): `troupe` alone opens the chat, and
`--permission-mode dontAsk` never asks, not even where a person could answer.

Usage: claude_terminal_test.py TROUPE_BINARY
"""

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tmux_terminal import TmuxTerminal  # noqa: E402

TROUPE = None


class Terminal(TmuxTerminal):
    """One troupe command line in a detached tmux session, its workspace the current directory."""

    def __init__(self, case, replies, args):
        self.case = case
        self.dir = tempfile.mkdtemp(prefix="troupe-claude-tmux-")
        self.home = os.path.join(self.dir, "home")
        self.work = os.path.join(self.dir, "work")
        os.makedirs(self.work)
        script = os.path.join(self.dir, "replies.jsonl")
        with open(script, "w") as f:
            for r in replies:
                f.write(json.dumps(r) + "\n")
        variables = {"TROUPE_HOME": self.home, "TROUPE_MODEL": f"scripted:{script}",
                     "XDG_CONFIG_HOME": os.path.join(self.dir, "config"), "OPENAI_API_KEY": "",
                     "ANTHROPIC_API_KEY": "", "LANG": "C.UTF-8", "TERM": "xterm-256color"}
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in variables.items())
        words = " ".join(shlex.quote(a) for a in args)
        command = (f"cd {shlex.quote(self.work)} && env {exports} {TROUPE} {words}; "
                   f"echo EXIT=$?; sleep 600")
        self.start(command)

    def wait_for(self, text, limit=15.0, escapes=False):
        super().wait_for(text, limit, escapes)


class ClaudeSpellingOnATerminal(unittest.TestCase):
    def terminal(self, replies, args):
        t = Terminal(self, replies, args)
        self.addCleanup(t.close)
        return t

    def test_troupe_alone_opens_the_chat(self):
        t = self.terminal([{"text": "hello from the chat"}], [])
        t.wait_for("› ")
        t.type("hi")
        t.keys("Enter")
        t.wait_for("hello from the chat")
        t.type("/exit")
        t.keys("Enter")
        t.wait_for("EXIT=0")

    def test_a_headless_run_on_a_terminal_asks_but_dont_ask_never_does(self):
        shell = [{"text": "```shell\ntouch made.txt\n```"}, {"text": "done"}]
        # Without dontAsk a person at the terminal is asked (the run waits for the answer).
        asked = self.terminal(shell, ["-p", "go"])
        asked.wait_for("Allow? [y]es / [n]o / [a]lways")
        asked.type("n")
        asked.keys("Enter")
        asked.wait_for("EXIT=1")
        # dontAsk refuses at once, and says which rule would allow the call.
        refused = self.terminal(shell, ["-p", "go", "--permission-mode", "dontAsk"])
        refused.wait_for("EXIT=1")
        screen = refused.screen()
        self.assertNotIn("Allow?", screen)
        self.assertIn("dont-ask", screen)
        self.assertFalse(os.path.exists(os.path.join(refused.work, "made.txt")))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: claude_terminal_test.py TROUPE_BINARY")
    TROUPE = os.path.abspath(sys.argv.pop(1))
    for name in [n for n in os.environ if n.startswith(("TROUPE_", "OPENAI_", "ANTHROPIC_"))]:
        del os.environ[name]
    if shutil.which("tmux") is None:
        sys.exit("tmux is needed for the terminal test (scripts/install-deps.sh installs it)")
    unittest.main(verbosity=2)
