#!/usr/bin/env python3
"""What a user installs: `troupe --version` names the version and the commit it was built from,
and `make install` (cmake --install) puts a working troupe in PREFIX/bin.

Usage: install_test.py TROUPE_BINARY CASE SOURCE_DIR BUILD_DIR
"""

import os
import re
import subprocess
import sys
import tempfile

TROUPE, CASE, SOURCE, BUILD = sys.argv[1:5]


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def version_of(binary):
    shown = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30)
    check(shown.returncode == 0, f"--version exits 0: {shown.returncode} {shown.stderr}")
    return shown.stdout.strip()


def case_version():
    line = version_of(TROUPE)
    m = re.fullmatch(r"troupe (\d+\.\d+\.\d+) \(commit ([0-9a-f]{12}(-dirty)?|unknown)\)", line)
    check(m, f"troupe VERSION (commit HASH): {line!r}")
    head = subprocess.run(["git", "-C", SOURCE, "rev-parse", "--short=12", "HEAD"],
                          capture_output=True, text=True)
    if head.returncode == 0:
        check(m.group(2).split("-")[0] == head.stdout.strip(),
              f"the commit is the checkout's: {line!r} vs {head.stdout.strip()}")
    short = subprocess.run([TROUPE, "-v"], capture_output=True, text=True, timeout=30)
    check(short.stdout.strip() == line, f"-v says the same: {short.stdout!r}")


def case_install():
    with tempfile.TemporaryDirectory() as prefix:
        done = subprocess.run(["cmake", "--install", BUILD, "--prefix", prefix],
                              capture_output=True, text=True, timeout=120)
        check(done.returncode == 0, f"cmake --install: {done.stdout} {done.stderr}")
        installed = os.path.join(prefix, "bin", "troupe")
        check(os.access(installed, os.X_OK), f"{installed} is there and runs: "
                                             f"{os.listdir(prefix)}")
        check(version_of(installed) == version_of(TROUPE), "the installed troupe is this one")
        demo = subprocess.run([installed, "demo"], capture_output=True, text=True, timeout=120,
                              cwd=prefix, env=dict(os.environ, TROUPE_HOME=os.path.join(prefix, "h")))
        check(demo.returncode == 0, f"the installed troupe runs its demo: {demo.stderr[-2000:]}")


CASES = {"--version names the commit": case_version,
         "make install puts a working troupe in PREFIX/bin": case_install}

if CASE not in CASES:
    sys.exit(f"unknown case {CASE!r}; cases: {', '.join(CASES)}")
CASES[CASE]()
print(f"ok: {CASE}")
