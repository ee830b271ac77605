#!/usr/bin/env python3
"""tests/mutants.py against a tiny git checkout whose `cmake` and `ctest` are stubs on PATH:
its verdicts, its refusals before anything is built, its lock, and an interrupt mid-suite.

The stub ctest fails (in ctest's own words) when the scratch copy's lib.txt holds BROKEN, hangs
when it holds HANG, and exits 8 without naming a test when it holds GARBLED."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "mutants.py"

STUB_CMAKE = """#!/bin/sh
echo "$@" >> "$STUB_LOG"
case "$1" in
  -S) mkdir -p "$4" && touch "$4/build.ninja" ;;
esac
exit 0
"""

STUB_CTEST = """#!/bin/sh
echo "ctest $@" >> "$STUB_LOG"
lib="$PWD/../lib.txt"
if grep -q HANG "$lib"; then
  echo $$ > "$STUB_LOG.pid"
  sleep 300
fi
if grep -q GARBLED "$lib"; then
  echo "something went wrong"; exit 8
fi
if grep -q BROKEN "$lib"; then
  echo "The following tests FAILED:"
  echo "	  3 - e2e/a test (with parentheses) (Failed)"
  exit 8
fi
echo "100% tests passed"
"""


class Checkout:
    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="troupe-mutants-test-"))
        self.repo = self.dir / "repo"
        (self.repo / "tests").mkdir(parents=True)
        shutil.copy(SCRIPT, self.repo / "tests/mutants.py")
        (self.repo / "lib.txt").write_text("value = ok;\n")
        (self.repo / ".gitignore").write_text("/build*/\n")
        bin_dir = self.dir / "bin"
        bin_dir.mkdir()
        for name, text in (("cmake", STUB_CMAKE), ("ctest", STUB_CTEST)):
            (bin_dir / name).write_text(text)
            (bin_dir / name).chmod(0o755)
        self.log = self.dir / "stub.log"
        self.env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}",
                    "STUB_LOG": str(self.log)}
        self.env.pop("JOBS", None)
        subprocess.run(["git", "init", "-q"], cwd=self.repo, check=True)
        subprocess.run(["git", "add", "-A"], cwd=self.repo, check=True)

    def mutants(self, *lines: dict | str) -> Path:
        path = self.dir / "list.jsonl"
        path.write_text("".join((l if isinstance(l, str) else json.dumps(l)) + "\n"
                                for l in lines))
        return path

    def run(self, *args: str, **kwargs) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(self.repo / "tests/mutants.py"), *args],
                              cwd=self.repo, env=self.env, capture_output=True, text=True,
                              timeout=60, **kwargs)

    def built(self) -> bool:
        return self.log.exists() and self.log.read_text() != ""

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def mutation(replace: str, **extra) -> dict:
    return {"file": "lib.txt", "find": "ok", "replace": replace, "breaks": f"ok -> {replace}",
            **extra}


class Verdicts(unittest.TestCase):
    def setUp(self):
        self.c = Checkout()

    def tearDown(self):
        self.c.close()

    def test_killed_and_survived(self):
        listed = self.c.mutants(mutation("BROKEN"), mutation("fine"))
        r = self.c.run("--list", str(listed))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("killed       ok -> BROKEN", r.stdout)
        self.assertIn("by e2e/a test (with parentheses) (Failed)", r.stdout)
        self.assertIn("SURVIVED     ok -> fine", r.stdout)
        self.assertIn("1 killed, 1 survived", r.stdout)
        self.assertIn(f"survivor: {listed}:2: ok -> fine", r.stdout)
        self.assertIn("add or sharpen a test", r.stdout)
        # The scratch copy is back to the checkout's code, and the checkout was never touched.
        self.assertEqual((self.c.repo / "build-mutants/src/lib.txt").read_text(), "value = ok;\n")
        self.assertEqual((self.c.repo / "lib.txt").read_text(), "value = ok;\n")
        # Every suite run lets a test fail twice before it counts.
        for line in self.c.log.read_text().splitlines():
            if line.startswith("ctest"):
                self.assertIn("--repeat until-pass:2", line)

    def test_all_killed_is_exit_0(self):
        r = self.c.run("--list", str(self.c.mutants(mutation("BROKEN"))))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_a_suite_that_names_no_failure_is_no_verdict(self):
        r = self.c.run("--list", str(self.c.mutants(mutation("GARBLED"))))
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("ERROR", r.stdout)
        self.assertIn("without naming a failed test", r.stdout)


class Refusals(unittest.TestCase):
    """Each is exit 2 with the line number, before anything is built."""

    def setUp(self):
        self.c = Checkout()

    def tearDown(self):
        self.c.close()

    def refused(self, listed: Path, *needles: str, args=()):
        r = self.c.run("--list", str(listed), *args)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        for needle in needles:
            self.assertIn(needle, r.stderr)
        self.assertFalse(self.c.built(), "built before refusing")

    def test_bad_lines(self):
        self.refused(self.c.mutants("{not json"), "list.jsonl:1: not JSON")
        self.refused(self.c.mutants("# a comment", '["an", "array"]'),
                     "list.jsonl:2: a mutation is a JSON object")
        self.refused(self.c.mutants({"file": "lib.txt", "find": "ok", "replace": "x"}),
                     '"breaks" must be a non-empty string')
        self.refused(self.c.mutants(mutation("ok")), '"replace" is the same as "find"')
        self.refused(self.c.mutants("# only a comment"), "holds no mutation")

    def test_stale_lines_are_refused_even_outside_only(self):
        stale = {"file": "lib.txt", "find": "gone", "replace": "x", "breaks": "stale"}
        self.refused(self.c.mutants(mutation("BROKEN"), stale),
                     "list.jsonl:2 (stale): lib.txt holds the search text 0 times",
                     args=("--only", "BROKEN"))
        twice = {"file": "lib.txt", "find": " ", "replace": "x", "breaks": "twice"}
        self.refused(self.c.mutants(twice), "holds the search text 2 times")

    def test_files_outside_the_checkout(self):
        outside = self.c.dir / "outside.txt"
        outside.write_text("ok\n")
        for name in (str(outside), "../outside.txt", "build-x/gen.txt", "missing.txt"):
            with self.subTest(name=name):
                self.refused(self.c.mutants({"file": name, "find": "ok", "replace": "x",
                                             "breaks": "escape"}),
                             "is not a source file of the checkout")
        self.assertEqual(outside.read_text(), "ok\n")

    def test_bad_arguments(self):
        listed = self.c.mutants(mutation("BROKEN"))
        r = self.c.run("--list", str(listed), "--jobs", "0")
        self.assertEqual(r.returncode, 2)
        self.assertIn("must be 1 or more", r.stderr)
        self.refused(self.c.dir / "nope.jsonl", "cannot read the list")
        self.refused(listed, "no mutant matches --only zzz", args=("--only", "zzz"))

    def test_a_foreign_work_directory_is_left_alone(self):
        work = self.c.dir / "mine"
        (work / "src").mkdir(parents=True)
        (work / "src/notes.md").write_text("mine")
        self.refused(self.c.mutants(mutation("BROKEN")), "was not made by this tool",
                     args=("--work", str(work)))
        self.assertEqual((work / "src/notes.md").read_text(), "mine")

    def test_a_work_directory_in_use_is_refused(self):
        work = self.c.repo / "build-mutants"
        work.mkdir()
        marker = work / ".troupe-mutants"
        marker.touch()
        with open(marker) as held:
            fcntl.flock(held, fcntl.LOCK_EX)
            self.refused(self.c.mutants(mutation("BROKEN")), "another mutation run is using")


class Interrupts(unittest.TestCase):
    def setUp(self):
        self.c = Checkout()

    def tearDown(self):
        self.c.close()

    def test_sigterm_mid_suite_stops_the_tests_and_restores_the_file(self):
        listed = self.c.mutants(mutation("BROKEN"), mutation("HANG"))
        run = subprocess.Popen([sys.executable, str(self.c.repo / "tests/mutants.py"),
                                "--list", str(listed)],
                               cwd=self.c.repo, env=self.c.env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        pid_file = Path(str(self.c.log) + ".pid")
        deadline = time.monotonic() + 30
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertTrue(pid_file.exists(), "the hanging suite never started")
        stub = int(pid_file.read_text())
        run.send_signal(signal.SIGTERM)
        out, err = run.communicate(timeout=30)
        self.assertEqual(run.returncode, 130, out + err)
        self.assertIn("stopped by SIGTERM after 1 of 2", out)
        self.assertIn("1 killed", out)
        self.assertEqual((self.c.repo / "build-mutants/src/lib.txt").read_text(),
                         "value = ok;\n")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.kill(stub, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            self.fail("the suite the run started outlived it")


class ShippedList(unittest.TestCase):
    def test_every_line_of_the_shipped_list_finds_its_text_once(self):
        # A refactoring that moves or rewords the code a mutation names makes its line stale;
        # `make test` says so at once instead of the next `make mutants`. In the scratch copy a
        # mutation runs in, the mutated line is meant to be missing: no verdict there.
        if any((p / ".troupe-mutants").exists() for p in SCRIPT.parents):
            self.skipTest("inside a mutation run's scratch copy")
        import importlib.util
        spec = importlib.util.spec_from_file_location("mutants", SCRIPT)
        mutants = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mutants)
        try:
            known = set(mutants.sources())
        except mutants.Problem as e:  # not a git checkout: the list cannot be checked here
            self.skipTest(str(e))
        listed = mutants.load_mutants(SCRIPT.parent / "mutants.jsonl", known)
        self.assertGreater(len(listed), 30)


if __name__ == "__main__":
    unittest.main(verbosity=2)
