#!/usr/bin/env python3
"""The folder layout is the architecture (ARCHITECTURE.md): each folder includes only the
folders below it, and store/ holds no actor, prints nothing and reads no environment."""

import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")

# What each folder may include of the project's own folders (itself always).
MAY_INCLUDE = {
    "protocol": set(),
    "tools": {"protocol"},
    "providers": {"protocol", "tools"},
    "context": {"protocol"},
    "store": {"protocol"},
    "actors": {"protocol", "tools", "providers", "context", "store"},
    "orchestrator": {"protocol", "tools", "providers", "context", "store", "actors"},
}

# What store/ must not do: it is read by every process that looks at a session.
STORE_FORBIDDEN = [
    (re.compile(r'#include\s*<caf/'), "includes CAF (no actor below actors/)"),
    (re.compile(r'#include\s*<spdlog/'), "logs (errors are returned, not logged)"),
    (re.compile(r'\b(printf|fprintf|puts|fputs|perror)\s*\('), "prints"),
    (re.compile(r'std::(cout|cerr|clog)\b'), "prints"),
    (re.compile(r'\b(getenv|secure_getenv|setenv|unsetenv|putenv)\s*\(|\benviron\b'),
     "reads the environment"),
]

INCLUDE = re.compile(r'^\s*#\s*include\s*"([a-z_]+)/', re.M)
RELATIVE = re.compile(r'^\s*#\s*include\s*"\.\.?/', re.M)


def main():
    problems = []
    for folder, allowed in MAY_INCLUDE.items():
        for source in sorted((ROOT / folder).glob("*.[ch]pp")):
            text = source.read_text(encoding="utf-8")
            if RELATIVE.search(text):
                problems.append(f"{source.relative_to(ROOT)} includes by a relative path "
                                f"(\"../…\"): name the folder")
            for included in INCLUDE.findall(text):
                if included != folder and included in MAY_INCLUDE and included not in allowed:
                    problems.append(f"{source.relative_to(ROOT)} includes {included}/, "
                                    f"which {folder}/ may not")
            if folder == "store":
                for pattern, what in STORE_FORBIDDEN:
                    if pattern.search(text):
                        problems.append(f"{source.relative_to(ROOT)} {what}")
    if not any((ROOT / "store").glob("*.cpp")):
        problems.append("store/ has no sources: run from the project's root")
    for p in problems:
        print(p)
    print(f"{len(problems)} layering problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
