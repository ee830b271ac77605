#!/usr/bin/env python3
"""The tools' sandbox, driven as a user would: headless runs whose scripted model calls the
shell, a background task and the file tools, and what is on disk (and on a loopback listener)
afterwards.

Usage: sandbox_test.py TROUPE_BINARY CASE. Each CASE is one ctest entry (tests/CMakeLists.txt).
The test's directories are made under the current directory (ctest's build tree), or under
/var/tmp when that is in /tmp: inside the sandbox /tmp is the session's own, so "outside the
workspace" must be elsewhere.
"""

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time

TROUPE = os.path.abspath(sys.argv[1])
CASE = sys.argv[2]


class Box:
    def __init__(self, root):
        self.root = root
        self.home = os.path.join(root, "home")
        self.work = os.path.join(root, "work")
        self.outside = os.path.join(root, "outside")
        for d in (self.work, self.outside):
            os.makedirs(d)
        os.makedirs(os.path.join(self.work, ".git", "hooks"))
        with open(os.path.join(self.work, ".git", "config"), "w") as f:
            f.write("[core]\n")
        self.scripts = 0

    def env(self, extra=None):
        env = dict(os.environ)
        env.update({"TROUPE_HOME": self.home, "XDG_CONFIG_HOME": os.path.join(self.root, "config"),
                    "TROUPE_MODEL": "", "OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": "",
                    "TROUPE_MAX_STEPS": ""})
        env.pop("TROUPE_BWRAP", None)
        env.update(extra or {})
        return env

    def script(self, calls):
        """One reply per call (a tool call each), then a final text reply."""
        self.scripts += 1
        path = os.path.join(self.root, f"script{self.scripts}.jsonl")
        with open(path, "w") as f:
            for name, tool_input in calls:
                f.write(json.dumps({"text": "", "tool_calls": [{"name": name, "input": tool_input}]})
                        + "\n")
            f.write(json.dumps({"text": "done"}) + "\n")
        return "scripted:" + path

    def run(self, calls, args, extra_env=None, command="run"):
        """Runs the calls headless; returns (process, [tool result texts in order])."""
        argv = [TROUPE, command, "--cwd", self.work, "--model", self.script(calls),
                "--output-format", "stream-json"] + args + ["go"]
        done = subprocess.run(argv, env=self.env(extra_env), capture_output=True, text=True,
                              timeout=120)
        outputs = []
        for line in done.stdout.splitlines():
            event = json.loads(line)
            if event.get("type") == "user" and isinstance(event["message"]["content"], list):
                for block in event["message"]["content"]:
                    if block.get("type") == "tool_result":
                        outputs.append(block["content"])
        return done, outputs

    def troupe(self, args, extra_env=None):
        return subprocess.run([TROUPE] + args, env=self.env(extra_env), capture_output=True,
                              text=True, timeout=60, cwd=self.work)


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def read(path):
    with open(path) as f:
        return f.read()


def case_shell_writes(box):
    target = os.path.join(box.outside, "f")
    source = os.path.join(box.work, "src.txt")
    calls = [
        ("shell", {"command": f"echo x > {target}"}),
        ("shell", {"command": f"echo src > {source} && cp {source} {box.outside}/copy"}),
        ("shell", {"command": f"python3 -c \"open('{box.outside}/py', 'w').write('x')\""}),
        ("shell", {"command": "echo in > inside.txt && mkdir -p sub && echo deep > sub/d && "
                              "echo t > /tmp/private && cat /tmp/private"}),
        ("shell", {"command": "echo evil > .git/hooks/pre-commit; echo '[x]' >> .git/config; "
                              "mkdir -p .troupe && echo '{}' > .troupe/settings.json; "
                              "mkdir -p .claude && echo '{}' > .claude/settings.local.json; "
                              "mv .git .git-old"}),
        ("shell", {"command": "echo '{\"hooks\": {}}' > my-settings.json"}),
    ]
    given_settings = os.path.join(box.work, "my-settings.json")
    with open(given_settings, "w") as f:
        f.write("{}\n")
    done, out = box.run(calls, ["--permission-mode", "bypass", "--sandbox", "workspace-write",
                                "--settings", given_settings])
    check(done.returncode == 0, f"run failed: {done.stderr}")
    check(len(out) == 6, f"six results: {out}")
    check(read(given_settings) == "{}\n" and "Read-only file system" in out[5],
          f"a --settings file in the workspace stays read-only: {out[5]!r}")
    check(not os.listdir(box.outside), f"nothing written outside: {os.listdir(box.outside)}")
    check("Read-only file system" in out[0] and "troupe sandbox (workspace-write)" in out[0],
          f"the refusal and its note: {out[0]!r}")
    check(box.work in out[0], f"the note names the writable workspace: {out[0]!r}")
    check("Read-only file system" in out[1], f"cp refused: {out[1]!r}")
    check("Read-only file system" in out[2], f"python refused: {out[2]!r}")
    check(read(os.path.join(box.work, "inside.txt")) == "in\n", "a write in the workspace")
    check(read(os.path.join(box.work, "sub", "d")) == "deep\n", "a new directory in it")
    check(out[3].strip() == "t", f"/tmp is writable inside: {out[3]!r}")
    check(not os.path.exists("/tmp/private"), "and private: the host's /tmp has no such file")
    check(not os.path.exists(os.path.join(box.work, ".git", "hooks", "pre-commit")),
          "no hook planted")
    check(read(os.path.join(box.work, ".git", "config")) == "[core]\n", "git config unchanged")
    check(not os.path.exists(os.path.join(box.work, ".troupe", "settings.json")),
          "no project settings planted")
    check(not os.path.exists(os.path.join(box.work, ".claude", "settings.local.json")),
          "no Claude Code settings planted (troupe reads them as the project's)")
    check(os.path.isdir(os.path.join(box.work, ".git")) and
          not os.path.exists(os.path.join(box.work, ".git-old")), ".git not renamed away")
    check("busy" in out[4], f"the rename was refused: {out[4]!r}")


def case_network(box):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    accepted = []

    def accept():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            accepted.append(1)
            conn.close()

    threading.Thread(target=accept, daemon=True).start()
    connect = f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}))\""
    calls = [("shell", {"command": connect + " && echo connected"})]
    done, out = box.run(calls, ["--permission-mode", "bypass"])
    check(done.returncode == 0, f"run failed: {done.stderr}")
    check("connected" not in out[0] and "Operation not permitted" in out[0],
          f"the connect is refused with EPERM: {out[0]!r}")
    check("no network" in out[0], f"with the sandbox's note: {out[0]!r}")
    check(not accepted, "the listener saw nothing")
    done, out = box.run(calls, ["--permission-mode", "bypass", "--sandbox-network"])
    check("connected" in out[0], f"--sandbox-network lets it through: {out[0]!r}")
    check(len(accepted) == 1, "the listener saw one connection")
    listener.close()


def case_background(box):
    target = os.path.join(box.outside, "bg")
    calls = [
        ("shell", {"command": f"echo x > {target}; echo inside > bg-inside",
                   "run_in_background": True}),
        ("shell", {"command": "for i in $(seq 100); do [ -e bg-inside ] && break; sleep 0.1; "
                              "done; cat bg-inside"}),
    ]
    done, out = box.run(calls, ["--permission-mode", "bypass"])
    check(done.returncode == 0, f"run failed: {done.stderr}")
    check(out[1] == "inside\n", f"it could write inside: {out}")
    check(not os.path.exists(target), "the background task could not write outside")
    logs = [os.path.join(d, f) for d, _, files in os.walk(box.home) for f in files
            if f.endswith(".log") and "task_" in f]
    check(len(logs) == 1 and "Read-only file system" in read(logs[0]),
          f"its log says why: {[read(l) for l in logs]}")


def case_file_tools(box):
    calls = [
        ("write", {"path": os.path.join(box.outside, "w"), "content": "x"}),
        ("write", {"path": ".git/hooks/post-checkout", "content": "#!/bin/sh\n"}),
        ("write", {"path": "ok.txt", "content": "fine"}),
        ("write", {"path": "/tmp/notes.txt", "content": "shared with the shell"}),
        ("shell", {"command": "cat /tmp/notes.txt"}),
    ]
    os.symlink(box.outside, os.path.join(box.work, "link-out"))
    calls.append(("write", {"path": "link-out/through-link", "content": "x"}))
    done, out = box.run(calls, ["--permission-mode", "bypass"])
    check(done.returncode == 0, f"run failed: {done.stderr}")
    check(not os.listdir(box.outside), "nothing written outside, not even through a link")
    check("Permission denied (EACCES): the sandbox (workspace-write) refuses" in out[0],
          f"outside: {out[0]!r}")
    check("read-only (the repository's hooks)" in out[1], f"hooks: {out[1]!r}")
    check(read(os.path.join(box.work, "ok.txt")) == "fine", "a write inside")
    check(out[3] == "Created /tmp/notes.txt (21 bytes)", f"named as the model did: {out[3]!r}")
    check(out[4] == "shared with the shell", f"the shell's /tmp is the same: {out[4]!r}")
    check("refuses writes" in out[5], f"through a link: {out[5]!r}")


def case_read_only(box):
    calls = [
        ("shell", {"command": "echo x > in-workspace; echo t > /tmp/t && cat /tmp/t"}),
        ("write", {"path": "also.txt", "content": "x"}),
    ]
    done, out = box.run(calls, ["--permission-mode", "bypass", "--sandbox", "read-only"])
    check(done.returncode == 0, f"run failed: {done.stderr}")
    check(not os.path.exists(os.path.join(box.work, "in-workspace")), "the workspace is read-only")
    check("Read-only file system" in out[0] and out[0].rstrip().find("t") >= 0,
          f"and /tmp is not: {out[0]!r}")
    check("refuses writes" in out[1], f"the write tool too: {out[1]!r}")
    check(not os.path.exists(os.path.join(box.work, "also.txt")), "nothing written")


def case_defaults(box):
    target = os.path.join(box.outside, "default")
    # touch, not a redirection: a redirection is judged as a write, which --allow shell is not.
    calls = [("shell", {"command": f"touch {target}"})]
    # Headless and bypass: workspace-write unless told otherwise.
    done, out = box.run(calls, ["--permission-mode", "bypass"])
    check(done.returncode == 0 and not os.path.exists(target), "bypass run: sandboxed")
    check("sandbox workspace-write" in done.stderr, f"the warning says so: {done.stderr!r}")
    # Elsewhere off: a default-mode run whose rule allows the shell writes where it likes.
    done, out = box.run(calls, ["--allow", "shell"])
    check(done.returncode == 0 and os.path.exists(target), f"default mode: no sandbox {out}")
    os.remove(target)
    # --sandbox off in bypass.
    done, out = box.run(calls, ["--permission-mode", "bypass", "--sandbox", "off"])
    check(os.path.exists(target), "--sandbox off")
    os.remove(target)
    # The settings key, and a bad value.
    os.makedirs(os.path.join(box.work, ".troupe"), exist_ok=True)
    settings = os.path.join(box.work, ".troupe", "settings.json")
    with open(settings, "w") as f:
        json.dump({"sandbox": {"mode": "workspace-write", "addDirs": [box.outside]}}, f)
    done, out = box.run(calls, ["--allow", "shell"])
    check(os.path.exists(target), "addDirs makes a directory writable")
    os.remove(target)
    with open(settings, "w") as f:
        json.dump({"sandbox": "read-only"}, f)
    done, out = box.run([("shell", {"command": "touch here"})], ["--allow", "shell"])
    check(not os.path.exists(os.path.join(box.work, "here")), "settings: read-only")
    with open(settings, "w") as f:
        json.dump({"sandbox": "walls"}, f)
    done, out = box.run(calls, ["--allow", "shell"])
    check(done.returncode == 2 and "must be read-only, workspace-write or off" in done.stderr,
          f"a bad settings value: {done.returncode} {done.stderr!r}")
    os.remove(settings)
    done, out = box.run(calls, ["--sandbox", "strict"])
    check(done.returncode == 2 and "invalid --sandbox 'strict'" in done.stderr, done.stderr)
    done, out = box.run(calls, ["--add-dir", os.path.join(box.root, "nope")])
    check(done.returncode == 2 and "no such directory" in done.stderr, done.stderr)
    # A fleet in bypass mode: sandboxed too.
    tasks = os.path.join(box.root, "tasks.jsonl")
    with open(tasks, "w") as f:
        f.write(json.dumps({"id": "a", "prompt": "go"}) + "\n")
    fleet = subprocess.run([TROUPE, "fleet", tasks, "--cwd", box.work, "--model",
                            box.script(calls), "--permission-mode", "bypass", "--out",
                            os.path.join(box.root, "results.jsonl")],
                           env=box.env(), capture_output=True, text=True, timeout=120)
    check(fleet.returncode == 0, f"fleet: {fleet.stderr}")
    check(not os.path.exists(target), "a fleet's task is sandboxed")


def case_unavailable(box):
    calls = [("shell", {"command": "echo hi"})]
    missing = {"TROUPE_BWRAP": os.path.join(box.root, "no-bwrap")}
    fake = os.path.join(box.root, "fake-bwrap")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n")
    os.chmod(fake, stat.S_IRWXU)
    no_namespaces = {"TROUPE_BWRAP": fake}
    for env, says in ((missing, "is not an executable"), (no_namespaces, "No permissions")):
        for args in (["--sandbox", "workspace-write"], ["--permission-mode", "bypass"]):
            done, out = box.run(calls, args, env)
            check(done.returncode == 2, f"{args}: exit 2, not {done.returncode}")
            check("is not available on this machine" in done.stderr and says in done.stderr and
                  "--sandbox off" in done.stderr, f"a clear error: {done.stderr!r}")
            check(not out, "nothing ran")
        done, out = box.run(calls, ["--permission-mode", "bypass", "--sandbox", "off"], env)
        check(done.returncode == 0 and out == ["hi\n"], "--sandbox off still runs")
        check_run = box.troupe(["sandbox", "--check"], env)
        check(check_run.returncode == 1 and "sandbox: NOT available" in check_run.stdout,
              check_run.stdout)
    works = box.troupe(["sandbox", "--check"])
    check(works.returncode == 0 and "sandbox: works" in works.stdout, works.stdout)
    # troupe sandbox -- CMD: the same walls, and the command's exit code.
    tried = box.troupe(["sandbox", "--", "sh", "-c",
                        f"echo x > {box.outside}/try; echo y > mine; exit 7"])
    check(tried.returncode == 7, f"its exit code: {tried.returncode}")
    check(not os.path.exists(os.path.join(box.outside, "try")) and
          os.path.exists(os.path.join(box.work, "mine")), "the walls hold")
    bare = box.troupe(["sandbox", "--sandbox", "off", "--", "sh", "-c", "exit 5"])
    check(bare.returncode == 5, f"off: the command found on PATH: {bare.returncode} {bare.stderr}")
    for mode in ("off", "workspace-write"):
        missing_command = box.troupe(["sandbox", "--sandbox", mode, "--", "no-such-command-x"])
        check(missing_command.returncode == 127 and "command not found" in missing_command.stderr,
              f"{mode}: 127 for a command not found: {missing_command.returncode}")
    liar = box.troupe(["sandbox", "--check"], {"TROUPE_BWRAP": "/bin/true"})
    check(liar.returncode == 1 and "NOT available" in liar.stdout,
          f"a bwrap that only exits 0 is not a sandbox: {liar.stdout!r}")


def case_probe_remembered(box):
    """A working bubblewrap is probed once per user and boot, not on every run: the answer is
    remembered in the runtime directory, only while bwrap and the kernel's settings stay as they
    were, only in a directory closed to others, and `sandbox --check` always probes."""
    runtime = os.path.join(box.root, "runtime")
    os.makedirs(runtime, mode=0o700)
    count = os.path.join(box.root, "bwrap-calls")
    counting = os.path.join(box.root, "counting-bwrap")
    with open(counting, "w") as f:
        f.write(f"#!/bin/sh\necho x >> {count}\n"
                "if [ -n \"$BREAK_BWRAP\" ]; then echo 'bwrap: No permissions' >&2; exit 1; fi\n"
                f"exec {shutil.which('bwrap')} \"$@\"\n")
    os.chmod(counting, stat.S_IRWXU)
    env = {"TROUPE_BWRAP": counting, "XDG_RUNTIME_DIR": runtime}
    remembered = os.path.join(runtime, "troupe", "sandbox-works")
    calls = [("shell", {"command": "echo hi"})]

    def calls_made(args=("--permission-mode", "bypass")):
        before = len(read(count).splitlines()) if os.path.exists(count) else 0
        done, out = box.run(calls, list(args), env)
        check(done.returncode == 0 and out == ["hi\n"], f"the run works: {done.stderr}")
        return len(read(count).splitlines()) - before

    check(calls_made() == 2, "the first run probes, then starts the shell")
    check(os.path.isfile(remembered) and stat.S_IMODE(os.stat(remembered).st_mode) == 0o600,
          "the answer is kept, owner-only")
    check(calls_made() == 1, "the next run only starts the shell")
    os.chmod(counting, stat.S_IRWXU)  # a changed bwrap (its inode's change time) is probed again
    check(calls_made() == 2, "a bwrap changed since is probed again")
    check(calls_made() == 1, "and remembered again")
    os.chmod(os.path.join(runtime, "troupe"), 0o755)
    check(calls_made() == 2, "a directory others can read proves nothing: probed")
    os.chmod(os.path.join(runtime, "troupe"), 0o700)
    with open(remembered, "w") as f:
        f.write("bwrap /usr/bin/bwrap 1:2 3 4.5\n")
    check(calls_made() == 2, "a key that does not match is probed again")
    check(calls_made() == 1, "and replaced by the right one")
    before = len(read(count).splitlines())
    check_run = box.troupe(["sandbox", "--check"], env)
    check(check_run.returncode == 0 and "sandbox: works" in check_run.stdout, check_run.stdout)
    check(len(read(count).splitlines()) == before + 1, "sandbox --check always probes")
    # What one bwrap proved says nothing of another: a failing one is refused as before.
    failing = os.path.join(box.root, "failing-bwrap")
    with open(failing, "w") as f:
        f.write("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n")
    os.chmod(failing, stat.S_IRWXU)
    done, out = box.run(calls, ["--permission-mode", "bypass"],
                        {"TROUPE_BWRAP": failing, "XDG_RUNTIME_DIR": runtime})
    check(done.returncode == 2 and "No permissions" in done.stderr and not out,
          f"a failing bwrap is still refused: {done.returncode} {done.stderr!r}")
    check(calls_made() == 1, "and the working one's answer is still remembered")
    # The same bwrap failing now (a profile, a container's filter: what the key cannot see):
    # --check says so in its exit status too, and the remembered answer is taken back.
    broken = box.troupe(["sandbox", "--check"], dict(env, BREAK_BWRAP="1"))
    check(broken.returncode == 1 and "NOT available" in broken.stdout,
          f"--check's exit status is its own probe's: {broken.returncode} {broken.stdout!r}")
    check(not os.path.exists(remembered), "a failed probe takes the remembered answer back")
    check(calls_made() == 2, "so the next run probes again")


def case_escapes(box):
    """What would undo the walls from inside: capabilities (root's too), git pointed at other
    hooks, the user's settings created where they were missing, a host Unix socket."""
    fresh = os.path.join(box.root, "fresh")  # no repository yet: one made inside is judged
    plain = os.path.join(box.root, "plain")
    os.makedirs(fresh)
    os.makedirs(plain)
    linked = os.path.join(box.root, "linked")  # a linked worktree: .git is a file
    os.makedirs(linked)
    with open(os.path.join(linked, ".git"), "w") as f:
        f.write("gitdir: /somewhere/else\n")
    config_dir = os.path.join(box.work, "cfg")  # XDG_CONFIG_HOME inside the workspace
    host_fd, host_file = tempfile.mkstemp(prefix="sandbox-test-host-", dir="/tmp")
    os.write(host_fd, b"host secret\n")
    os.close(host_fd)
    server_path = os.path.join(box.root, "host.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(server_path)
    server.listen(1)
    unix_connect = (f"python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); "
                    f"s.connect('{server_path}')\" && echo reached")
    calls = [
        ("shell", {"command": "grep CapEff /proc/self/status; mount -o remount,bind,rw / "
                              "&& echo REMOUNTED"}),
        ("shell", {"command": "echo ../evil > .git/commondir"}),
        ("shell", {"command": f"echo 'gitdir: /tmp/evil' > {linked}/.git"}),
        ("shell", {"command": "mkdir -p cfg/troupe && echo '{}' > cfg/troupe/settings.json"}),
        ("shell", {"command": unix_connect}),
        ("shell", {"command": "mv cfg cfg-old && mkdir -p cfg/troupe && echo '{}' > "
                              "cfg/troupe/settings.json; ls"}),
        ("shell", {"command": f"ln -s {host_file} /tmp/to-host && echo linked"}),
        ("read", {"path": "/tmp/to-host"}),
        ("write", {"path": "/tmp/to-host", "content": "x"}),
        ("shell", {"command": "unshare -U true && echo NESTED"}),
        ("shell", {"command": f"cd {fresh} && git init -q . && git config core.fsmonitor "
                              f"'touch {box.outside}/fsmonitor-ran; false'"}),
        ("shell", {"command": f"cd {plain} && git init -q . && git config user.name x && "
                              "git remote add origin https://127.0.0.1/x.git && echo made"}),
    ]
    done, out = box.run(calls, ["--permission-mode", "bypass", "--sandbox-network",
                                "--add-dir", linked, "--add-dir", fresh, "--add-dir", plain],
                        {"XDG_CONFIG_HOME": config_dir})
    check(done.returncode == 0, f"run failed: {done.stderr}")
    check("CapEff:\t0000000000000000" in out[0] and "REMOUNTED" not in out[0],
          f"no capabilities, no remount (even as root): {out[0]!r}")
    # A commondir cannot be bound before it exists (an empty one breaks git): it is moved aside
    # as soon as the command that made it ends.
    check(not os.path.exists(os.path.join(box.work, ".git", "commondir")),
          f"git not pointed elsewhere: {out[1]!r}")
    check("commondir was made and is moved aside" in out[1], f"and the model is told: {out[1]!r}")
    check(any(n.startswith("commondir.moved-by-troupe-")
              for n in os.listdir(os.path.join(box.work, ".git"))), "moved, not lost")
    check(read(os.path.join(linked, ".git")) == "gitdir: /somewhere/else\n",
          f"a .git file stays: {out[2]!r}")
    check(not os.path.exists(os.path.join(config_dir, "troupe", "settings.json")),
          f"the user's settings directory is kept read-only before it exists: {out[3]!r}")
    check("reached" not in out[4] and "Operation not permitted" in out[4],
          f"a host Unix socket is out of reach even with the network: {out[4]!r}")
    check("Unix sockets are refused" in out[4], f"and the note says why: {out[4]!r}")
    check("busy" in out[5] and "cfg-old" not in os.listdir(box.work),
          f"what holds a read-only directory cannot be renamed away: {out[5]!r}")
    check(out[6].strip() == "linked" and "host secret" not in out[7] and
          "which the sandbox hides" in out[7],
          f"the read tool does not follow a link out to the host's /tmp: {out[7]!r}")
    check("the host's /tmp, not the sandbox's" in out[8] and read(host_file) == "host secret\n",
          f"nor does the write tool: {out[8]!r}")
    os.remove(host_file)
    check("NESTED" not in out[9], f"no user namespace inside, so no capabilities: {out[9]!r}")
    check(not os.path.exists(os.path.join(fresh, ".git")) and
          "core.fsmonitor" in out[10] and "moved aside" in out[10],
          f"a repository made inside with a command in its config is moved aside: {out[10]!r}")
    check(os.path.isdir(os.path.join(plain, ".git")) and "made" in out[11] and
          "moved aside" not in out[11], f"a plain git init is kept: {out[11]!r}")
    server.close()


def sandboxed_pids(marker):
    """Processes whose command line is exactly `sleep MARKER` (the host's pids)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().split(b"\0")[:2] == [b"sleep", marker.encode()]:
                    found.append(int(pid))
        except OSError:
            pass
    return found


def case_killed(box):
    # A troupe killed outright (SIGKILL: no handler, no clean-up) takes its sandboxes with it:
    # the shell's command and a background task's, which bubblewrap would otherwise keep
    # running, reparented, until they end by themselves.
    markers = ("3701.25", "3702.5")
    calls = [("shell", {"command": f"sleep {markers[1]}", "run_in_background": True}),
             ("shell", {"command": f"sleep {markers[0]}"})]
    argv = [TROUPE, "run", "--cwd", box.work, "--model", box.script(calls), "--permission-mode",
            "bypass", "--output-format", "stream-json", "go"]
    proc = subprocess.Popen(argv, env=box.env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not all(sandboxed_pids(m) for m in markers):
            check(time.monotonic() < deadline and proc.poll() is None,
                  f"both sleeps started in the sandbox (troupe status {proc.poll()})")
            time.sleep(0.05)
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 5
        while any(sandboxed_pids(m) for m in markers) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = {m: sandboxed_pids(m) for m in markers}
        check(not any(left.values()), f"nothing outlives a killed troupe: {left}")
    finally:
        proc.kill()
        for m in markers:
            for pid in sandboxed_pids(m):
                try:
                    os.kill(pid, 9)
                except OSError:
                    pass


CASES = {
    "escapes": case_escapes,
    "shell writes": case_shell_writes,
    "network": case_network,
    "background task": case_background,
    "file tools": case_file_tools,
    "read-only": case_read_only,
    "defaults and settings": case_defaults,
    "unavailable": case_unavailable,
    "probe remembered": case_probe_remembered,
    "killed": case_killed,
}


def main():
    here = os.path.realpath(os.getcwd())
    base = "/var/tmp" if here == "/tmp" or here.startswith("/tmp/") else here
    root = tempfile.mkdtemp(prefix="sandbox-test-", dir=base)
    try:
        CASES[CASE](Box(root))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"ok: {CASE}")


if __name__ == "__main__":
    main()
