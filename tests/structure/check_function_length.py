#!/usr/bin/env python3
"""Checks that no function in src/tfm outside the kernels is longer than 80 lines.

    check_function_length.py SRC_TFM_DIR      the check (ctest `function_length`)
    check_function_length.py --self-test      shows the rule can fail (`function_length_selftest`)

A function's length is its lines from the first line of its signature to its closing brace.
Functions are found by their braces: a `{` whose statement has a parameter list and sits at
namespace or class level opens one (a lambda or a block inside a function counts as that
function's). The kernels, src/tfm/ops/cpu and src/tfm/ops/cuda, are exempt: a register tile or a
fused loop reads best whole. Every other function over the limit must be in EXCEPTIONS with its
reason, and an exception that no longer applies (the function is gone or short) is an error too,
so the list stays true.

Standard library only (python3), no build needed. Exit 0: true; 1: a list of what is false.
"""
from __future__ import annotations

import os
import re
import sys

import structure_cli

LIMIT = 80
KERNEL_DIRS = ("ops/cpu/", "ops/cuda/")
SOURCE_EXTS = (".h", ".cpp", ".cu", ".cuh")

# "path (relative to src/tfm):function name" -> why it stays longer than LIMIT.
OP_FRONT_END = ("an op's front end: the shape checks, the dispatch to each device's kernel and "
                "the backward closure over what the forward saved read as one unit")
EXCEPTIONS: dict[str, str] = {
    "ops/attention.cpp:attention": OP_FRONT_END,
    "ops/cross_entropy.cpp:softmax_cross_entropy": OP_FRONT_END,
    "ops/decode_attention.cpp:decode_attention": OP_FRONT_END,
    "ops/linear.cpp:linear": OP_FRONT_END + " (three compute types)",
    "model/config.cpp:ModelConfig::from_json": "one statement per config key, in the file's "
                                                "order: the schema reads top to bottom",
    "data/vocab_trainer.cpp:train_vocab": "SentencePiece's trainer arguments, one line each",
    "decode/beam.cpp:run": "the beam search's step loop, whose per-sentence state lives across "
                           "its phases (score, choose, reorder, finish); not split yet",
}


def strip(text: str) -> str:
    """Comments, string and character literals blanked (newlines kept, so lines still count)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i) and (m := re.match(r'R"([^(]*)\(', text[i:])):
            end = text.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    # Preprocessor lines (with their continuations) blanked too: a function-like macro's
    # parentheses would otherwise make the next brace look like a function's.
    return re.sub(r"(?m)^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", lambda m: re.sub(r"[^\n]", " ", m.group(0)),
                  "".join(out))


def functions(text: str) -> list[tuple[str, int, int]]:
    """(name, first line, last line) of every function defined at namespace or class level."""
    code = strip(text)
    found = []
    stack: list[tuple[str, str, int]] = []  # (kind, name, first line)
    start = 0  # where the current statement began
    for i, c in enumerate(code):
        if c in ";":
            start = i + 1
        elif c == "{":
            head = code[start:i]
            kind, name = "block", ""
            outer = stack[-1][0] if stack else "namespace"
            if re.search(r"\bnamespace\b", head) and "(" not in head:
                kind = "namespace"
            elif re.search(r"\b(class|struct|union|enum)\b", head) and "(" not in head:
                kind = "class"
            elif outer in ("namespace", "class") and ")" in head and "=" not in head.split("(")[0]:
                kind = "function"
                m = re.search(r"([~\w:]+|operator\s*\S+)\s*\(", head)
                name = m.group(1) if m else "?"
            first = code.count("\n", 0, start + len(head) - len(head.lstrip())) + 1
            stack.append((kind, name, first))
            start = i + 1
        elif c == "}":
            if stack:
                kind, name, first = stack.pop()
                if kind == "function":
                    found.append((name, first, code.count("\n", 0, i) + 1))
            start = i + 1
    return found


def check(src: str, exceptions: dict[str, str] | None = None) -> list[str]:
    exceptions = EXCEPTIONS if exceptions is None else exceptions
    problems, long_ones = [], set()
    for dirpath, _, files in os.walk(src):
        for f in sorted(files):
            if not f.endswith(SOURCE_EXTS):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, src).replace(os.sep, "/")
            if rel.startswith(KERNEL_DIRS):
                continue
            with open(path, encoding="utf-8") as fh:
                for name, first, last in functions(fh.read()):
                    length = last - first + 1
                    if length <= LIMIT:
                        continue
                    key = f"{rel}:{name}"
                    long_ones.add(key)
                    if key not in exceptions:
                        problems.append(f"src/tfm/{rel}:{first}: {name} is {length} lines (limit "
                                        f"{LIMIT}): split it, or list it in EXCEPTIONS with why")
    for key in exceptions:
        if key not in long_ones:
            problems.append(f"EXCEPTIONS lists {key}, which is no longer over {LIMIT} lines")
    return problems


def self_test() -> int:
    body = "\n".join(f"  x += {i};" for i in range(LIMIT))
    cases = [
        ("short", {"runtime/x.cpp": "namespace a {\nint f(int x) {\n  return x;\n}\n}\n"}, 0),
        ("long", {"runtime/x.cpp": f"namespace a {{\nint f(int x) {{\n{body}\n  return x;\n}}\n}}\n"},
         1),
        ("long member", {"runtime/x.cpp": f"struct S {{\n  void g() const {{\n{body}\n  }}\n}};\n"}, 1),
        ("lambdas inside count",
         {"runtime/x.cpp": "void h() {\n  auto l = [] {\n" + body + "\n  };\n}\n"}, 1),
        ("braces in strings", {"runtime/x.cpp": 'void k() {\n  const char* s = "{{{{";\n}\n'}, 0),
        ("macros are no functions",
         {"runtime/x.h": "#define LIST(X) \\\n  X(a) \\\n  X(b)\nnamespace a {\nstruct T {\n"
                         + body + "\n};\n}\n"}, 0),
        ("kernel exempt", {"ops/cpu/k.cpp": f"void f() {{\n{body}\n}}\n"}, 0),
    ]
    return structure_cli.self_test("check_function_length.py", cases, lambda root: check(root, {}))


if __name__ == "__main__":
    sys.exit(structure_cli.main(sys.argv, __doc__, check, self_test))
