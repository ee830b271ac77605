#!/usr/bin/env python3
"""Mutation check: does the suite catch the behaviours users depend on being broken?

Each line of the list (tests/mutants.jsonl) is one mutation:
  {"file": "actors/session.hpp", "find": "queue_cap = 100;", "replace": "queue_cap = 1000;",
   "breaks": "the prompt queue's default cap of 100", "tests": "queue"}
`file` is a source file of the checkout (as git lists it); `find` must occur exactly once in it
(a list that no longer matches the code is an error, not a pass). `tests` (optional) is a
ctest -R pattern tried first, so that a mutant the likely tests kill costs seconds; a mutant
they miss still has to survive the whole suite.

For each mutation, in turn: a scratch copy of the sources (<work>/src, built in <work>/src/build,
both kept between runs so that only what changed is rebuilt) gets the change, the build is
brought up to date, the suite runs, and the file is put back. A mutant is KILLED when a test
fails, SURVIVED when the whole suite passes. Before the first one the unchanged suite must pass,
or no verdict would mean anything. Only one run at a time uses a work directory.

Usage: tests/mutants.py [--list FILE] [--work DIR] [--jobs N] [--only TEXT]... [--skip-baseline]
A test counts as failed only when it fails twice in a row (ctest --repeat until-pass:2): a flake
kills no mutant.
Exit status: 0 when every mutant was killed; 1 when one survived; 2 when the list, the work
directory or the unchanged code is wrong (a stale mutation, one that does not build, a failing
baseline, a suite that could not run); 130 when interrupted (SIGINT or SIGTERM), after the
verdicts so far.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ["troupe", "unit_tests", "actor_tests", "e2e_tests", "fuzz_replay"]
TEST_TIMEOUT_S = 300         # one test
BUILD_TIMEOUT_S = 3 * 3600   # one build: a mutant that hangs the build is stopped, not waited for
SUITE_TIMEOUT_S = 2 * 3600   # one suite run
MARKER = ".troupe-mutants"   # what makes a directory one this tool may empty


class Problem(Exception):
    """Something wrong with the list, the work directory or the unchanged code: exit 2."""


class Interrupted(Exception):
    pass


def on_signal(signum, _frame):
    raise Interrupted(signal.Signals(signum).name)


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def sources() -> list[str]:
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT, check=True, capture_output=True).stdout.decode()
    except (OSError, subprocess.CalledProcessError) as e:
        raise Problem(f"cannot list the sources of {ROOT} with git: {e}")
    return [p for p in listed.split("\0") if p and (ROOT / p).is_file()
            and not (ROOT / p).is_symlink()]


def load_mutants(path: Path, known: set[str]) -> list[dict]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise Problem(f"cannot read the list {path}: {e}")
    mutants = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{path}:{number}"
        try:
            m = json.loads(line)
        except json.JSONDecodeError as e:
            raise Problem(f"{where}: not JSON: {e}")
        if not isinstance(m, dict):
            raise Problem(f"{where}: a mutation is a JSON object")
        for key in ("file", "find", "breaks"):
            if not isinstance(m.get(key), str) or not m[key]:
                raise Problem(f"{where}: \"{key}\" must be a non-empty string")
        if not isinstance(m.get("replace"), str):
            raise Problem(f"{where}: \"replace\" must be a string (empty: delete the text)")
        if "tests" in m and not isinstance(m["tests"], str):
            raise Problem(f"{where}: \"tests\" must be a ctest -R pattern")
        if m["find"] == m["replace"]:
            raise Problem(f"{where}: \"replace\" is the same as \"find\"")
        # Only a file of the checkout, named as git names it: never a path out of the copy.
        if m["file"] not in known:
            raise Problem(f"{where}: {m['file']!r} is not a source file of the checkout "
                          "(a path relative to its root, as `git ls-files` prints it)")
        count = (ROOT / m["file"]).read_text(encoding="utf-8").count(m["find"])
        if count != 1:
            raise Problem(f"{where} ({m['breaks']}): {m['file']} holds the search text {count} "
                          f"times, not once: {m['find']!r}; update the line")
        m["line"] = number
        mutants.append(m)
    if not mutants:
        raise Problem(f"{path} holds no mutation")
    return mutants


def claim(work: Path) -> int:
    """Makes `work` this tool's and locks it; returns the lock's descriptor."""
    work = work.resolve()
    if work == ROOT or work in ROOT.parents:
        raise Problem(f"--work {work} holds the checkout; give a directory of its own")
    if work.exists() and not work.is_dir():
        raise Problem(f"--work {work} is not a directory")
    if work.exists() and any(work.iterdir()) and not (work / MARKER).exists():
        raise Problem(f"--work {work} is not empty and was not made by this tool: its files "
                      "would be replaced; give a new or empty directory")
    work.mkdir(parents=True, exist_ok=True)
    (work / MARKER).touch()
    fd = os.open(work / MARKER, os.O_RDWR | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise Problem(f"another mutation run is using {work}; wait for it or give another --work")
    return fd


def sync(src: Path, wanted: list[str]) -> None:
    """Makes `src` the checkout's sources, touching only files whose bytes differ."""
    for relative in wanted:
        origin, copy = ROOT / relative, src / relative
        data = origin.read_bytes()
        if copy.is_file() and not copy.is_symlink() and copy.read_bytes() == data:
            if copy.stat().st_mode != origin.stat().st_mode:
                shutil.copymode(origin, copy)  # a script made executable: no rebuild needed
            continue
        copy.parent.mkdir(parents=True, exist_ok=True)
        if copy.is_symlink():
            copy.unlink()
        copy.write_bytes(data)
        shutil.copymode(origin, copy)
    keep = set(wanted)
    for copy in list(src.rglob("*")):
        relative = copy.relative_to(src)
        if relative.parts[0] != "build" and not copy.is_dir() and str(relative) not in keep:
            copy.unlink()


def run(command: list[str], cwd: Path | None, timeout: int) -> subprocess.CompletedProcess:
    """Runs `command` in a process group of its own, so that a timeout or an interrupt stops
    it and everything it started (ctest's tests, the compilers)."""
    child = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, errors="replace", start_new_session=True)
    try:
        out, _ = child.communicate(timeout=timeout)
        return subprocess.CompletedProcess(command, child.returncode, out, "")
    except subprocess.TimeoutExpired:
        stop_group(child)
        return subprocess.CompletedProcess(command, -1, f"(stopped after {timeout} s)\n", "")
    except BaseException:
        stop_group(child)
        raise


def stop_group(child: subprocess.Popen) -> None:
    for sig, grace in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        try:
            os.killpg(child.pid, sig)
        except ProcessLookupError:
            break
        try:
            child.wait(timeout=grace)
            break
        except subprocess.TimeoutExpired:
            continue


def build(src: Path, out: Path, jobs: int) -> tuple[bool, str]:
    if not (out / "build.ninja").exists():
        configured = run(["cmake", "-S", str(src), "-B", str(out), "-G", "Ninja",
                          "-DCMAKE_BUILD_TYPE=Debug"], None, BUILD_TIMEOUT_S)
        if configured.returncode != 0:
            return False, configured.stdout
    built = run(["cmake", "--build", str(out), "-j", str(jobs), "--target", *TARGETS], None,
                BUILD_TIMEOUT_S)
    return built.returncode == 0, built.stdout


def build_errors(log: str) -> str:
    """The compiler's complaints from a build log, or its tail."""
    lines = log.strip().splitlines()
    errors = [l for l in lines if "error" in l.lower() and "ninja: build stopped" not in l]
    return "\n".join((errors or lines)[-12:])


FAILED_LINE = re.compile(r"^\s*\d+ - (.+) \(([^()]+)\)\s*$")


class SuiteError(Exception):
    """ctest failed without naming a failed test: no verdict."""


def run_suite(out: Path, jobs: int, pattern: str | None, stop_early: bool) -> list[str]:
    """The names of the tests that failed twice in a row (empty: all passed): a test that fails
    once and then passes is a flake, not a verdict."""
    command = ["ctest", "-j", str(jobs), "--timeout", str(TEST_TIMEOUT_S),
               "--repeat", "until-pass:2"]
    if pattern:
        command += ["-R", pattern]
    if stop_early:
        command.append("--stop-on-failure")
    ran = run(command, out, SUITE_TIMEOUT_S)
    if ran.returncode == 0:
        return []
    failed = []
    parts = ran.stdout.split("The following tests FAILED:")
    if len(parts) == 2:
        for line in parts[1].splitlines():
            matched = FAILED_LINE.match(line)
            if matched:
                failed.append(f"{matched.group(1)} ({matched.group(2)})")
    if not failed:
        last = (ran.stdout.strip().splitlines() or ["no output"])[-1]
        raise SuiteError(f"ctest exited {ran.returncode} without naming a failed test: {last}")
    return failed


def summary(results: list[tuple[dict, str, str]], list_path: Path) -> None:
    survived = [m for m, verdict, _ in results if verdict == "SURVIVED"]
    broken = [m for m, verdict, _ in results if verdict == "BUILD FAILED"]
    errors = [m for m, verdict, _ in results if verdict == "ERROR"]
    killed = len(results) - len(survived) - len(broken) - len(errors)
    print(f"mutants: {killed} killed, {len(survived)} survived, {len(broken)} did not build, "
          f"{len(errors)} without a verdict (the suite could not run), of {len(results)}")
    for m in survived:
        print(f"  survivor: {list_path}:{m['line']}: {m['breaks']}\n"
              f"    {m['file']}: {m['find']!r} -> {m['replace']!r}")
    if survived:
        print("  No test fails when that behaviour breaks: add or sharpen a test until it fails "
              "with the change, or, if the change cannot alter behaviour, change the line.")
    for m in broken:
        print(f"  does not build: {list_path}:{m['line']}: {m['breaks']} — fix the replacement")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--list", type=Path, default=ROOT / "tests/mutants.jsonl")
    parser.add_argument("--work", type=Path, default=ROOT / "build-mutants")
    parser.add_argument("--jobs", type=positive, default=None,
                        help="parallel build and test jobs (default: $JOBS, else 2)")
    parser.add_argument("--only", action="append", default=[],
                        help="run only mutants whose file or 'breaks' text contains this")
    parser.add_argument("--skip-baseline", action="store_true",
                        help="trust that the unchanged suite passes (saves one suite run)")
    args = parser.parse_args()
    if args.jobs is None:
        try:
            args.jobs = positive(os.environ.get("JOBS", "2"))
        except argparse.ArgumentTypeError as e:
            raise Problem(f"$JOBS: {e}")

    wanted = sources()
    work = args.work.resolve()
    if ROOT in work.parents:  # a work directory git does not ignore must not copy itself
        inside = str(work.relative_to(ROOT))
        wanted = [p for p in wanted if p != inside and not p.startswith(inside + "/")]
    mutants = load_mutants(args.list, set(wanted))
    if args.only:
        mutants = [m for m in mutants
                   if any(o in m["file"] or o in m["breaks"] for o in args.only)]
        if not mutants:
            raise Problem("no mutant matches --only " + " ".join(args.only))

    lock = claim(work)
    src = work / "src"
    # The build directory sits where the checkout's does (src/build), so that compiler caches
    # that rewrite paths relative to it (ccache's base_dir) serve the scratch copy too.
    out = src / "build"
    src.mkdir(parents=True, exist_ok=True)
    print(f"mutants: {len(mutants)} mutation(s); scratch copy in {work}", flush=True)
    sync(src, wanted)
    ok, log = build(src, out, args.jobs)
    if not ok:
        raise Problem("the unchanged code does not build:\n" + build_errors(log))
    if not args.skip_baseline:
        started = time.monotonic()
        failing = run_suite(out, args.jobs, None, False)
        if failing:
            raise Problem("the suite fails on the unchanged code, so no verdict would mean "
                          "anything: " + ", ".join(failing))
        print(f"mutants: the unchanged suite passes ({time.monotonic() - started:.0f} s)",
              flush=True)

    results: list[tuple[dict, str, str]] = []
    try:
        for m in mutants:
            started = time.monotonic()
            target = src / m["file"]
            original = target.read_bytes()
            target.write_bytes(original.decode("utf-8").replace(m["find"], m["replace"], 1)
                               .encode("utf-8"))
            try:
                ok, log = build(src, out, args.jobs)
                if not ok:
                    verdict, detail = "BUILD FAILED", "\n" + build_errors(log)
                else:
                    killers = run_suite(out, args.jobs, m["tests"], True) if m.get("tests") \
                        else []
                    if not killers:
                        killers = run_suite(out, args.jobs, None, True)
                    verdict = "killed" if killers else "SURVIVED"
                    detail = "by " + killers[0] if killers else "no test failed"
            except SuiteError as e:
                verdict, detail = "ERROR", str(e)
            finally:
                target.write_bytes(original)
            results.append((m, verdict, detail))
            print(f"  {verdict:<12} {m['breaks']}  [{m['file']}; "
                  f"{time.monotonic() - started:.0f} s] {detail}", flush=True)
    except Interrupted as e:
        print(f"mutants: stopped by {e} after {len(results)} of {len(mutants)} mutant(s); the "
              "scratch copy is back to the checkout's code", flush=True)
        summary(results, args.list)
        os.close(lock)
        return 130
    summary(results, args.list)
    os.close(lock)
    if any(verdict in ("BUILD FAILED", "ERROR") for _, verdict, _ in results):
        return 2
    return 1 if any(verdict == "SURVIVED" for _, verdict, _ in results) else 0


if __name__ == "__main__":
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        sys.exit(main())
    except Problem as e:
        print(f"mutants: {e}", file=sys.stderr)
        sys.exit(2)
    except Interrupted as e:
        print(f"mutants: stopped by {e}", file=sys.stderr)
        sys.exit(130)
    except SuiteError as e:  # the baseline's
        print(f"mutants: the unchanged suite: {e}", file=sys.stderr)
        sys.exit(2)
    except Exception as e:  # never exit 1, which means a survivor
        print(f"mutants: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(2)
