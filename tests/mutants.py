#!/usr/bin/env python3
"""Mutation check: does the suite catch the behaviours users depend on being broken?

Each line of the list (tests/mutants.jsonl) is one mutation:
  {"file": "actors/session.hpp", "find": "queue_cap = 100;", "replace": "queue_cap = 1000;",
   "breaks": "the prompt queue's default cap of 100", "tests": "queue"}
`find` must occur exactly once in `file` (a list that no longer matches the code is an error,
not a pass). `tests` (optional) is a ctest -R pattern tried first, so that a mutant the likely
tests kill costs seconds; a mutant they miss still has to survive the whole suite.

For each mutation, in turn: a scratch copy of the sources (<work>/src, built in <work>/src/build,
both kept between runs so that only what changed is rebuilt) gets the change, the build is brought up to date, the suite runs,
and the file is put back. A mutant is KILLED when a test fails, SURVIVED when the whole suite
passes. Before the first one the unchanged suite must pass, or no verdict would mean anything.

Usage: tests/mutants.py [--list FILE] [--work DIR] [--jobs N] [--only TEXT]... [--skip-baseline]
Exit status: 0 when every mutant was killed; 1 when one survived; 2 when the list or the
unchanged code is wrong (a stale mutation, one that does not build, a failing baseline).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ["troupe", "unit_tests", "actor_tests", "e2e_tests", "fuzz_replay"]
TEST_TIMEOUT_S = "300"


def fail(message: str) -> None:
    print(f"mutants: {message}", file=sys.stderr)
    sys.exit(2)


def load_mutants(path: Path) -> list[dict]:
    mutants = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            m = json.loads(line)
        except json.JSONDecodeError as e:
            fail(f"{path}:{number}: not JSON: {e}")
        if not isinstance(m, dict):
            fail(f"{path}:{number}: a mutation is a JSON object")
        for key in ("file", "find", "breaks"):
            if not isinstance(m.get(key), str) or not m[key]:
                fail(f"{path}:{number}: \"{key}\" must be a non-empty string")
        if not isinstance(m.get("replace"), str):
            fail(f"{path}:{number}: \"replace\" must be a string (empty: delete the text)")
        if "tests" in m and not isinstance(m["tests"], str):
            fail(f"{path}:{number}: \"tests\" must be a ctest -R pattern")
        if m["find"] == m["replace"]:
            fail(f"{path}:{number}: \"replace\" is the same as \"find\"")
        m["line"] = number
        mutants.append(m)
    return mutants


def check_applies(m: dict) -> str:
    """The problem with applying `m` to the checkout, or ""."""
    source = ROOT / m["file"]
    if not source.is_file():
        return f"{m['file']} does not exist"
    count = source.read_text().count(m["find"])
    if count != 1:
        return f"{m['file']} holds the search text {count} times, not once: {m['find']!r}"
    return ""


def sources() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, check=True, capture_output=True).stdout.decode()
    return [p for p in listed.split("\0") if p and (ROOT / p).is_file()]


def sync(src: Path) -> None:
    """Makes <work>/src the checkout's sources, touching only files whose bytes differ."""
    wanted = set(sources())
    for relative in wanted:
        origin, copy = ROOT / relative, src / relative
        data = origin.read_bytes()
        if copy.is_file() and copy.read_bytes() == data:
            continue
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(data)
        shutil.copymode(origin, copy)
    for copy in list(src.rglob("*")):
        relative = copy.relative_to(src)
        if relative.parts[0] != "build" and copy.is_file() and str(relative) not in wanted:
            copy.unlink()


def build(src: Path, out: Path, jobs: int) -> tuple[bool, str]:
    if not (out / "build.ninja").exists():
        configured = subprocess.run(
            ["cmake", "-S", str(src), "-B", str(out), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Debug"],
            capture_output=True, text=True)
        if configured.returncode != 0:
            return False, configured.stdout + configured.stderr
    built = subprocess.run(["cmake", "--build", str(out), "-j", str(jobs), "--target", *TARGETS],
                           capture_output=True, text=True)
    return built.returncode == 0, built.stdout[-4000:] + built.stderr[-4000:]


FAILED_LINE = re.compile(r"^\s*\d+ - (.+?) \((Failed|Timeout|SEGFAULT|Subprocess aborted|"
                         r"Child aborted|Exception|\w[\w ]*)\)\s*$")


def run_suite(out: Path, jobs: int, pattern: str | None, stop_early: bool) -> list[str]:
    """The names of the tests that failed (empty: all passed)."""
    command = ["ctest", "-j", str(jobs), "--timeout", TEST_TIMEOUT_S]
    if pattern:
        command += ["-R", pattern]
    if stop_early:
        command.append("--stop-on-failure")
    ran = subprocess.run(command, cwd=out, capture_output=True, text=True)
    failed = []
    if ran.returncode != 0:
        tail = ran.stdout.split("The following tests FAILED:")
        if len(tail) == 2:
            for line in tail[1].splitlines():
                matched = FAILED_LINE.match(line)
                if matched:
                    failed.append(matched.group(1))
        if not failed:
            last = (ran.stdout.strip().splitlines() or ["no output"])[-1]
            failed.append(f"(ctest exited {ran.returncode}: {last})")
    return failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--list", type=Path, default=ROOT / "tests/mutants.jsonl")
    parser.add_argument("--work", type=Path, default=ROOT / "build-mutants")
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("JOBS", "2")))
    parser.add_argument("--only", action="append", default=[],
                        help="run only mutants whose file or 'breaks' text contains this")
    parser.add_argument("--skip-baseline", action="store_true",
                        help="trust that the unchanged suite passes (saves one suite run)")
    args = parser.parse_args()

    mutants = load_mutants(args.list)
    if args.only:
        mutants = [m for m in mutants
                   if any(o in m["file"] or o in m["breaks"] for o in args.only)]
        if not mutants:
            fail("no mutant matches --only " + " ".join(args.only))
    stale = [(m, problem) for m in mutants if (problem := check_applies(m))]
    for m, problem in stale:
        print(f"mutants: {args.list}:{m['line']} ({m['breaks']}): {problem}", file=sys.stderr)
    if stale:
        fail("the list no longer matches the code: update those lines")

    # The build directory sits where the checkout's does (src/build), so that compiler caches
    # that rewrite paths relative to it (ccache's base_dir) serve the scratch copy too.
    src = args.work / "src"
    out = src / "build"
    src.mkdir(parents=True, exist_ok=True)
    print(f"mutants: {len(mutants)} mutation(s); scratch copy in {args.work}", flush=True)
    sync(src)
    ok, log = build(src, out, args.jobs)
    if not ok:
        fail("the unchanged code does not build:\n" + log)
    if not args.skip_baseline:
        started = time.monotonic()
        failing = run_suite(out, args.jobs, None, False)
        if failing:
            fail("the suite fails on the unchanged code, so no verdict would mean anything: " +
                 ", ".join(failing))
        print(f"mutants: the unchanged suite passes ({time.monotonic() - started:.0f} s)",
              flush=True)

    results = []
    for m in mutants:
        started = time.monotonic()
        target = src / m["file"]
        original = target.read_text()
        target.write_text(original.replace(m["find"], m["replace"], 1))
        try:
            ok, log = build(src, out, args.jobs)
            if not ok:
                verdict, detail = "BUILD FAILED", log.strip().splitlines()[-1] if log else ""
            else:
                killers = run_suite(out, args.jobs, m["tests"], True) if m.get("tests") else []
                if not killers:
                    killers = run_suite(out, args.jobs, None, True)
                verdict = "killed" if killers else "SURVIVED"
                detail = killers[0] if killers else "no test failed"
        finally:
            target.write_text(original)
        seconds = time.monotonic() - started
        results.append((m, verdict, detail))
        print(f"  {verdict:<12} {m['breaks']}  [{m['file']}; {seconds:.0f} s] {detail}",
              flush=True)

    survived = [m for m, verdict, _ in results if verdict == "SURVIVED"]
    broken = [m for m, verdict, _ in results if verdict == "BUILD FAILED"]
    killed = len(results) - len(survived) - len(broken)
    print(f"mutants: {killed} killed, {len(survived)} survived, {len(broken)} did not build, "
          f"of {len(results)}")
    for m in survived:
        print(f"  survivor: {args.list}:{m['line']}: {m['breaks']}")
    if broken:
        return 2
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
