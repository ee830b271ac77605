"""A program on a real terminal for the tests: a detached tmux session of its own (a server on a
socket under the test's temporary directory), keys typed with send-keys, the screen read with
capture-pane, and waits that poll the screen with a limit instead of sleeping fixed times."""

import shutil
import subprocess
import time


class TmuxTerminal:
    """Subclasses set `case` (the unittest case) and `dir`, then call start(command)."""

    def start(self, command):
        self.socket = f"{self.dir}/tmux.sock"
        self.tmux("new-session", "-d", "-x", "110", "-y", "45", command)

    def tmux(self, *args, check=True):
        return subprocess.run(["tmux", "-S", self.socket, "-f", "/dev/null", *args],
                              capture_output=True, text=True, check=check)

    def keys(self, *keys):
        self.tmux("send-keys", "-t", "0", *keys)

    def type(self, text):
        self.tmux("send-keys", "-t", "0", "-l", text)

    def screen(self, escapes=False):
        args = ["capture-pane", "-t", "0", "-p", "-J", "-S", "-200"]
        if escapes:
            args.append("-e")
        return self.tmux(*args).stdout

    def wait_for(self, text, limit=10.0, escapes=False):
        deadline = time.time() + limit
        while time.time() < deadline:
            if text in self.screen(escapes):
                return
            time.sleep(0.05)
        self.case.fail(f"{text!r} did not appear on the screen:\n{self.screen()}")

    def close(self):
        self.tmux("kill-server", check=False)
        shutil.rmtree(self.dir, ignore_errors=True)
