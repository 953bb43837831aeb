#!/usr/bin/env python3
"""Checks that every op of src/tfm/ops/*.h has a case in the op registry.

    check_op_registry.py REPO_ROOT     the check (ctest `op_registry`)
    check_op_registry.py --self-test   shows the rule can fail (`op_registry_selftest`)

An op is a function declared at namespace level in src/tfm/ops/<name>.h (the front ends; the
kernels under ops/cpu and ops/cuda are theirs). tests/support/op_registry.cpp registers cases with
case_("op", ...); tests/ops/test_backend_ops.cpp runs every case through the gradient, thread,
CPU-level and CUDA checks. An op without a case, or a case naming no op, is an error.
Headers that declare no ops, with the reason, are in NOT_OPS.

Standard library only (python3), no build needed. Exit 0: true; 1: a list of what is false.
"""
from __future__ import annotations

import os
import re
import sys

import structure_cli

REGISTRY = "tests/support/op_registry.cpp"
OPS = "src/tfm/ops"
NOT_OPS = {
    "cuda_backend.h": "the CUDA plugin's table of entry points (architecture.md, \"Plugins\")",
    "dispatch.h": "the front ends' own helpers (argument checks, dtype dispatch)",
    "host.h": "to_host, the copy-to-host view every test reads results through",
    "kernel_args.h": "the argument structs the CPU and CUDA kernels share",
}
DECL = re.compile(r"^(?:[\w:<>]+[ &*]+)+?(\w+)\(", re.M)
CASE = re.compile(r'\bcase_\(\s*"(\w+)"')


def ops_of(header: str) -> list[str]:
    """The functions declared at column 0 (namespace level) of a header, templates' too."""
    text = re.sub(r"//.*", "", header)
    names = []
    for m in DECL.finditer(text):
        line = text[m.start():text.find("\n", m.start())]
        if line.startswith(("struct", "class", "enum", "using", "namespace", "return", "#")):
            continue
        names.append(m.group(1))
    return names


def check(root: str) -> list[str]:
    ops: dict[str, str] = {}
    for f in sorted(os.listdir(os.path.join(root, OPS))):
        if not f.endswith(".h") or f in NOT_OPS:
            continue
        with open(os.path.join(root, OPS, f), encoding="utf-8") as fh:
            for name in ops_of(fh.read()):
                ops.setdefault(name, f)
    with open(os.path.join(root, REGISTRY), encoding="utf-8") as fh:
        cases = set(CASE.findall(re.sub(r"//.*", "", fh.read())))
    problems = [f"{OPS}/{f}: op {name} has no case in {REGISTRY}" for name, f in ops.items()
                if name not in cases]
    problems += [f"{REGISTRY}: case '{name}' names no op of {OPS}/*.h" for name in sorted(cases)
                 if name not in ops]
    return problems


def self_test() -> int:
    header = "namespace tfm {\nTensor relu(const Tensor& x);\nvoid add_(Tensor& a);\n}\n"
    registry = 'case_("relu", "x", in, run);\ncase_("add_", "x", in, run);\n'

    def tree(h: str, r: str) -> dict[str, str]:
        return {os.path.join(OPS, "x.h"): h, REGISTRY: r}

    cases = [("clean", tree(header, registry), 0),
             ("an op without a case", tree(header + "Tensor gelu(const Tensor& x);\n", registry), 1),
             ("a case without an op", tree(header, registry + 'case_("gone", "x", in, run);\n'), 1),
             ("structs are no ops", tree(header + "struct TopK {\n  Tensor values;\n};\n", registry),
              0)]
    return structure_cli.self_test("check_op_registry.py", cases, check)


if __name__ == "__main__":
    sys.exit(structure_cli.main(sys.argv, __doc__, check, self_test))
