#!/usr/bin/env python3
"""Checks that the structure docs/architecture.md states is the structure of src/tfm/.

    check_structure.py ARCHITECTURE_MD SRC_TFM_DIR     the check (ctest `architecture_doc`)
    check_structure.py --self-test                     shows each rule can fail (ctest
                                                       `architecture_doc_selftest`)

It reads two tables from the document itself, so the document and the code cannot drift apart:

  "Layers": `| `layer` | `dep`, `dep` |` rows, lowest layer first. A layer is a directory of
    src/tfm/ (a file belongs to its first directory). A row may name only layers of earlier rows,
    so the table is an order and the graph has no cycle. Every `#include "tfm/X/..."` in a file
    of layer L must have X == L or X among L's row, and every layer a row names must be included
    by some file of L (the table lists exactly what each layer uses). Every directory of src/tfm/
    must have a row.
  "Third-party headers": `| `<prefix>`, ... | `place`, ... |` rows. An `#include <prefix...>`
    may appear only in files matching one of the row's places (fnmatch patterns relative to
    src/tfm/, e.g. `ops/cpu/*` or `perf/model_bench.cpp`), and every place must hold at least
    one such include.

  "Tensor memory": `| `place`, ... | why |` rows. A direct access to tensor memory (`.data<`,
    `raw_data(`, `storage()->data`, `memcpy`/`memmove`/`memset(`, outside comments) may appear
    only in files matching a place, and every place must hold one: above core/ and ops/, code
    works through ops and reads results through the copy-to-host op (ops/host.h).

Standard library only (python3), no build needed. Exit 0: true; 1: a list of what is false.
"""
from __future__ import annotations

import fnmatch
import os
import re
import sys
import tempfile

SOURCE_EXTS = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")
TFM_INCLUDE = re.compile(r'^\s*#\s*include\s+"tfm/([^"]+)"', re.M)
ANGLE_INCLUDE = re.compile(r"^\s*#\s*include\s+<([^>]+)>", re.M)
CODE = re.compile(r"`([^`]+)`")


MEMORY_ACCESS = re.compile(r"(?:\.|->)data<|\braw_data\(|storage\(\)->data\b|"
                           r"\bmem(?:cpy|move|set)\s*\(")
LINE_COMMENT = re.compile(r"//.*$", re.M)


class DocError(Exception):
    pass


def table_after(doc: str, heading: str) -> list[list[str]]:
    """The cells of the first markdown table after the line `heading`, header rows dropped."""
    lines = doc.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == heading)
    except StopIteration:
        raise DocError(f"no line {heading!r}") from None
    rows, seen = [], False
    for line in lines[start + 1:]:
        s = line.strip()
        if s.startswith("|"):
            seen = True
            cells = [c.strip() for c in s.strip("|").split("|")]
            rows.append(cells)
        elif seen:
            break
        elif s.startswith("#"):
            break
    if len(rows) < 3:
        raise DocError(f"no table after {heading!r}")
    return rows[2:]  # header and |---| rule


def parse_layers(doc: str) -> list[tuple[str, list[str]]]:
    out = []
    for cells in table_after(doc, "## Layers"):
        names = CODE.findall(cells[0])
        if len(names) != 1 or len(cells) < 2:
            raise DocError(f"Layers row {cells!r}: want | `layer` | `dep`, ... |")
        out.append((names[0], CODE.findall(cells[1])))
    return out


def parse_homes(doc: str) -> list[tuple[list[str], list[str]]]:
    out = []
    for cells in table_after(doc, "### Third-party headers"):
        if len(cells) < 2:
            raise DocError(f"Third-party headers row {cells!r}")
        prefixes = [p.strip("<>") for p in CODE.findall(cells[0]) if p.startswith("<")]
        places = CODE.findall(cells[1])
        if not prefixes or not places:
            raise DocError(f"Third-party headers row {cells!r}: want | `<prefix>` | `place` |")
        out.append((prefixes, places))
    return out


def parse_memory_places(doc: str) -> list[str]:
    places = []
    for cells in table_after(doc, "### Tensor memory"):
        names = CODE.findall(cells[0])
        if not names:
            raise DocError(f"Tensor memory row {cells!r}: want | `place`, ... | why |")
        places.extend(names)
    return places


def sources(src: str):
    for root, dirs, files in os.walk(src):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(SOURCE_EXTS):
                path = os.path.join(root, f)
                rel = os.path.relpath(path, src).replace(os.sep, "/")
                with open(path, encoding="utf-8", errors="replace") as fh:
                    yield rel, fh.read()


def public_headers(include: str) -> set[str]:
    if not os.path.isdir(include):
        return set()
    return {f for f in os.listdir(include) if f.endswith((".h", ".hpp"))}


def check(doc_path: str, src: str, include: str | None = None) -> list[str]:
    """`include` is the public header directory (include/tfm/; default: beside src/)."""
    if include is None:
        include = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(src))), "include",
                               "tfm")
    public = public_headers(include)
    with open(doc_path, encoding="utf-8") as f:
        doc = f.read()
    try:
        layers = parse_layers(doc)
        homes = parse_homes(doc)
        memory_places = parse_memory_places(doc)
    except DocError as e:
        return [f"{doc_path}: {e}"]
    problems = []
    order = {}
    for name, deps in layers:
        if name in order:
            problems.append(f"{doc_path}: layer {name} has two rows")
        for d in deps:
            if d not in order:
                problems.append(f"{doc_path}: layer {name} names {d}, which is not a layer of an "
                                "earlier row (the table must be an order: lowest first)")
        order[name] = deps
    dirs = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    for d in dirs:
        if d not in order:
            problems.append(f"src/tfm/{d}/ has no row in the Layers table of {doc_path}")
    used = {name: set() for name in order}
    home_used = [[False] * len(places) for _, places in homes]
    memory_used = [False] * len(memory_places)
    for rel, text in sources(src):
        code = LINE_COMMENT.sub("", text)
        for m in MEMORY_ACCESS.finditer(code):
            hits = [i for i, pl in enumerate(memory_places) if fnmatch.fnmatchcase(rel, pl)]
            for i in hits:
                memory_used[i] = True
            if not hits:
                line = code.count("\n", 0, m.start()) + 1
                problems.append(f"src/tfm/{rel}:{line} touches tensor memory ({m.group(0).rstrip('( ')}), "
                                f"which {doc_path} (Tensor memory) allows only in "
                                f"{', '.join(memory_places)}: use an op, and to_host for results")
        layer = rel.split("/")[0] if "/" in rel else ""
        for inc in TFM_INCLUDE.findall(text):
            if "/" not in inc:  # a public header: every layer may include it
                if inc not in public:
                    problems.append(f"src/tfm/{rel} includes \"tfm/{inc}\", which is neither a "
                                    f"layer's header nor a public one (include/tfm/)")
                continue
            target = inc.split("/")[0]
            if layer not in order or target == layer:
                continue
            if target in order[layer]:
                used[layer].add(target)
            else:
                problems.append(f"src/tfm/{rel} includes \"tfm/{inc}\": layer {layer} may "
                                f"include only {', '.join(order[layer]) or 'itself'} "
                                f"({doc_path}, Layers)")
        for inc in ANGLE_INCLUDE.findall(text):
            for r, (prefixes, places) in enumerate(homes):
                if not any(inc.startswith(p) for p in prefixes):
                    continue
                hits = [i for i, pl in enumerate(places) if fnmatch.fnmatchcase(rel, pl)]
                for i in hits:
                    home_used[r][i] = True
                if not hits:
                    problems.append(f"src/tfm/{rel} includes <{inc}>, which {doc_path} "
                                    f"(Third-party headers) allows only in "
                                    f"{', '.join(places)}")
    # The public headers stand below every layer: they include only each other and no library's
    # headers but the standard one's, so a program using tfm needs nothing else to compile.
    third_party = [pre for prefixes, _ in homes for pre in prefixes]
    for name in sorted(public):
        with open(os.path.join(include, name), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for inc in TFM_INCLUDE.findall(text):
            if "/" in inc or inc not in public:
                problems.append(f"include/tfm/{name} includes \"tfm/{inc}\": a public header may "
                                "include only public headers")
        for inc in ANGLE_INCLUDE.findall(text):
            if any(inc.startswith(pre) for pre in third_party):
                problems.append(f"include/tfm/{name} includes <{inc}>: a public header may "
                                "include only the standard library")
    for name, deps in order.items():
        for d in deps:
            if d not in used[name] and name in dirs:
                problems.append(f"{doc_path}: layer {name} lists {d}, but no file of src/tfm/"
                                f"{name}/ includes a tfm/{d}/ header (the table must be exact)")
    for (prefixes, places), flags in zip(homes, home_used):
        for place, hit in zip(places, flags):
            if not hit:
                problems.append(f"{doc_path}: Third-party headers names {place} for "
                                f"<{prefixes[0]}...>, but no such file includes it")
    for place, hit in zip(memory_places, memory_used):
        if not hit:
            problems.append(f"{doc_path}: Tensor memory names {place}, but no such file touches "
                            "tensor memory (the table must be exact)")
    return problems


# ----------------------------------------------------------------------------- self-test

GOOD_DOC = """# x

## Layers

| layer | includes (besides itself) |
|---|---|
| `core` | – |
| `ops` | `core` |
| `cli` | `core`, `ops` |

### Third-party headers

| headers | included only in |
|---|---|
| `<dnnl>` | `ops/cpu/*`, `cli/main.cpp` |

### Tensor memory

| places | why |
|---|---|
| `core/*`, `ops/*` | x |
"""

GOOD_TREE = {
    "core/a.h": "#pragma once\nvoid* f(T t) { return t.raw_data(); }\n",
    "ops/b.h": '#include "tfm/core/a.h"\n',
    "ops/cpu/k.cpp": "#include <dnnl.hpp>\n#include \"tfm/ops/b.h\"\nint g(T t) { return *t.data<int>(); }\n",
    "cli/main.cpp": '#include <dnnl.h>\n#include "tfm/ops/b.h"\n#include "tfm/core/a.h"\n',
}


def run_case(doc: str, tree: dict[str, str], public: dict[str, str] | None = None) -> list[str]:
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "src", "tfm")
        include = os.path.join(d, "include", "tfm")
        os.makedirs(include)
        for rel, text in (public or {"api.h": "#pragma once\n#include <string>\n"}).items():
            with open(os.path.join(include, rel), "w") as f:
                f.write(text)
        for rel, text in tree.items():
            os.makedirs(os.path.dirname(os.path.join(src, rel)), exist_ok=True)
            with open(os.path.join(src, rel), "w") as f:
                f.write(text)
        with open(os.path.join(d, "arch.md"), "w") as f:
            f.write(doc)
        return check(os.path.join(d, "arch.md"), src, include)


def self_test() -> int:
    """Each rule, broken once, must be reported; the unbroken case must pass."""
    cases = {
        "good": (GOOD_DOC, GOOD_TREE, None),
        "include against the order": (GOOD_DOC, {**GOOD_TREE, "core/c.cpp":
                                                 '#include "tfm/ops/b.h"\n'},
                                      "layer core may include only itself"),
        "cycle in the table": (GOOD_DOC.replace("| `core` | – |", "| `core` | `ops` |"),
                               GOOD_TREE, "not a layer of an earlier row"),
        "listed but unused": (GOOD_DOC.replace("| `cli` | `core`, `ops` |",
                                               "| `cli` | `ops` |").replace(
                                  "| `ops` | `core` |", "| `ops` | `core` |\n| `x` | `core` |"),
                              {**GOOD_TREE, "x/y.h": "\n"}, "the table must be exact"),
        "directory without a row": (GOOD_DOC, {**GOOD_TREE, "nn/m.h": "\n"},
                                    "src/tfm/nn/ has no row"),
        "header outside its home": (GOOD_DOC, {**GOOD_TREE, "ops/front.cpp": "#include <dnnl.h>\n"},
                                    "allows only in"),
        "home without the header": (GOOD_DOC, {**GOOD_TREE, "cli/main.cpp":
                                               '#include "tfm/ops/b.h"\n#include "tfm/core/a.h"\n'},
                                    "but no such file includes it"),
        "tensor memory above ops": (GOOD_DOC, {**GOOD_TREE, "cli/main.cpp": GOOD_TREE["cli/main.cpp"]
                                               + "void h(T t) { std::memcpy(p, t.raw_data(), 4); }\n"},
                                    "touches tensor memory"),
        "tensor memory in a comment": (GOOD_DOC, {**GOOD_TREE, "cli/main.cpp": GOOD_TREE["cli/main.cpp"]
                                                  + "// t.data<float>() is not called here\n"}, None),
        "memory place without an access": (GOOD_DOC.replace("| `core/*`, `ops/*` | x |",
                                                            "| `core/*`, `ops/*`, `cli/*` | x |"),
                                           GOOD_TREE, "Tensor memory names cli/*"),
        "no table": (GOOD_DOC.replace("## Layers", "## Levels"), GOOD_TREE, "no line"),
        "public header from any layer": (GOOD_DOC, {**GOOD_TREE, "core/t.h":
                                                    '#include "tfm/api.h"\n'}, None),
        "unknown top-level header": (GOOD_DOC, {**GOOD_TREE, "core/t.h":
                                                '#include "tfm/nope.h"\n'},
                                     "neither a layer's header nor a public one"),
        "public header including a layer's": (GOOD_DOC, GOOD_TREE, "may include only public",
                                              {"api.h": '#include "tfm/core/a.h"\n'}),
        "public header including a library": (GOOD_DOC, GOOD_TREE, "only the standard library",
                                              {"api.h": "#include <dnnl.h>\n"}),
    }
    failed = 0
    for name, (doc, tree, want, *public) in cases.items():
        got = run_case(doc, tree, public[0] if public else None)
        ok = (not got) if want is None else any(want in p for p in got)
        if not ok:
            failed += 1
            print(f"self-test {name!r}: expected {want or 'no problem'!r}, got {got}")
    print(f"self-test: {len(cases) - failed} of {len(cases)} cases behave")
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    if argv == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    problems = check(argv[0], argv[1])
    for p in problems:
        print(p)
    if not problems:
        print(f"{argv[0]}: the layer order, the third-party header homes and the tensor memory "
              f"places hold for {argv[1]}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
