"""What the structure checks share: a check of files written into a temporary tree (the
self-tests' cases), and the command line (`SCRIPT ROOT` or `SCRIPT --self-test`)."""
from __future__ import annotations

import os
import tempfile
from typing import Callable


def check_tree(files: dict[str, str], check: Callable[[str], list[str]]) -> list[str]:
    """check(root) on a temporary tree holding `files` (relative path -> text)."""
    with tempfile.TemporaryDirectory() as root:
        for rel, text in files.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        return check(root)


def self_test(script: str, cases: list[tuple[str, dict[str, str], int]],
              check: Callable[[str], list[str]]) -> int:
    """Each case (what, files, want): want 0 expects no problem, else at least one."""
    failed = 0
    for what, files, want in cases:
        got = check_tree(files, check)
        if (len(got) > 0) != (want > 0):
            failed += 1
            print(f"self-test '{what}': expected {'a problem' if want else 'none'}, got {got}")
    print(f"{script} self-test: {len(cases) - failed} of {len(cases)} cases as expected")
    return 1 if failed else 0


def main(argv: list[str], doc: str, check: Callable[[str], list[str]],
         run_self_test: Callable[[], int]) -> int:
    if argv[1:] == ["--self-test"]:
        return run_self_test()
    if len(argv) != 2:
        print(doc)
        return 2
    problems = check(argv[1])
    for p in problems:
        print(p)
    print(f"{os.path.basename(argv[0])}: {len(problems)} problem(s)")
    return 1 if problems else 0
