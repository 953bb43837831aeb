#!/usr/bin/env python3
"""Checks that the translation options have one validator and no range check anywhere else.

    check_options.py REPO_ROOT       the check (ctest `options_structure`)
    check_options.py --self-test     shows each rule can fail (ctest `options_structure_selftest`)

The options are the fields of `struct TranslationOptions` and `struct TranslatorOptions` in
include/tfm/translator.h. Their one validator is src/tfm/runtime/translation_options.cpp, a table
with one `{"field", ...}` entry per option. The rules:

  1. Every field of both structs has an entry in the validator's table, and every entry names a
     field (a new option cannot be added without saying what its value may be).
  2. Outside the validator, no code of the front doors (src/tfm outside the exceptions below,
     python/src, python/tfm) checks such an option's range: no comparison of an option's name
     (its field name, or a front end's spelling of it: a flag's variable, a JSON key) with a
     number inside a check (TFM_CHECK, an `if`, require_*, check_thread_count), no require_* or
     check_thread_count call naming an option, no CLI11 ->check() range on an option's flag.
     Comparing two values (a batch's tokens with max_batch_tokens) is logic, not a range check.

Exceptions, each with its reason, are EXCEPTIONS below.

Standard library only (python3), no build needed. Exit 0: true; 1: a list of what is false.
"""
from __future__ import annotations

import os
import re
import sys

import structure_cli

VALIDATOR = "src/tfm/runtime/translation_options.cpp"
HEADER = "include/tfm/translator.h"
SCANNED = ("src/tfm", "python/src", "python/tfm")

# Paths (relative to the repository) whose checks are not of these options, with the reason.
EXCEPTIONS = {
    "src/tfm/decode/": "the search's own invariants on decode::SearchOptions (an internal API "
                       "that only the validated TranslationOptions reach)",
    "src/tfm/perf/": "tfm bench's ModelBenchOptions (a benchmark's shapes, not a translation)",
    "src/tfm/cli/bench.cpp": "tfm bench's flags (ModelBenchOptions)",
    "src/tfm/cli/vocab.cpp": "tfm vocab's --threads (SentencePiece training, not a translator)",
    "src/tfm/data/length_batches.cpp": "BatchLimits, the batcher's own invariants",
    "src/tfm/train/": "training (TrainOptions have their own validator, train_options.cpp)",
    "src/tfm/runtime/train_options.cpp": "TrainOptions' validator",
    "src/tfm/runtime/trainer.cpp": "training",
    "src/tfm/core/": "the generic checks the validators call (validate.h, check_thread_count)",
    "src/tfm/model/generation_config.cpp": "generation.json's own fields (a converted model's "
                                           "Transformers generation config), not the options",
}

# Front ends' spellings of the options besides the field names, where each front end lives:
# tfm translate's and tfm score's Flags members, tfm serve's JSON keys and flags. (Python's
# keywords are the field names.)
SPELLINGS = {
    "src/tfm/cli/": {"num_hypotheses": ["n_best"], "max_decoding_length": ["max_length"],
                     "min_decoding_length": ["min_length"],
                     "sampling_temperature": ["temperature"], "intra_threads": ["threads"],
                     "max_batch_size": ["batch_size"], "max_batch_tokens": ["batch_tokens"]},
    "src/tfm/serve/": {"num_hypotheses": ["n_best"], "max_decoding_length": ["max_length"],
                       "min_decoding_length": ["min_length"], "sampling_topk": ["topk"],
                       "sampling_topp": ["topp"], "sampling_temperature": ["temperature"]},
}

STRUCT = re.compile(r"struct (TranslationOptions|TranslatorOptions) \{(.*?)\n\};", re.S)
ENTRY = re.compile(r'^\s*\{"(\w+)",', re.M)
NUMBER = r"-?(?:\d[\d']*(?:\.\d*)?(?:e[-+]?\d+)?|\d*\.\d+)"
CHECK_START = re.compile(r"\b(TFM_CHECK(?:_ARG)?|if|require_\w+|check_thread_count)\s*\(")
CLI_RANGE = re.compile(r'add_option\(\s*"(--[\w-]+)[^;]*->check\(CLI::')


def option_fields(header_text: str) -> list[str]:
    """The data members of the option structs: each statement's last name before any '='."""
    fields = []
    for _, body in STRUCT.findall(header_text):
        for statement in re.sub(r"//.*", "", body).split(";"):
            declarator = re.split(r"(?<![=!<>])=(?!=)", statement)[0].strip()
            names = re.findall(r"\w+", declarator)
            if names and not declarator.endswith(")"):
                fields.append(names[-1])
    return fields


def names_of(fields: list[str], rel: str) -> set[str]:
    """The names the options go by in the file `rel`: the fields, and its front end's spellings."""
    names = set(fields)
    for where, spellings in SPELLINGS.items():
        if rel.startswith(where):
            for f in fields:
                names.update(spellings.get(f, []))
    return names


def strip_comments(text: str, python: bool) -> str:
    if python:
        return re.sub(r"#.*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//.*", "", text)


def balanced(text: str, open_at: int) -> str:
    """The text inside the parenthesis opening at text[open_at]."""
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return text[open_at + 1:i]
    return text[open_at + 1:]


def range_comparison(condition: str, names: set[str]) -> str | None:
    """The option compared with a number in `condition`, if any."""
    ident = r"(?:[\w.]*\.|->|\b)(" + "|".join(sorted(map(re.escape, names))) + r")\b"
    op = r"(?:<=|>=|<(?![<=])|>(?![>=]))"  # an equality is a choice, not a range
    for pattern in (ident + r"\s*\)?\s*" + op + r"\s*\(?" + NUMBER + r"\b",
                    r"\b" + NUMBER + r"\s*" + op + r"\s*" + ident):
        m = re.search(pattern, condition)
        if m:
            return m.group(1)
    return None


def cpp_problems(path: str, text: str, names: set[str]) -> list[str]:
    problems = []
    code = strip_comments(text, python=False)
    for m in CHECK_START.finditer(code):
        inside = balanced(code, m.end() - 1)
        line = code.count("\n", 0, m.start()) + 1
        if m.group(1).startswith("require_") or m.group(1) == "check_thread_count":
            first = inside.split(",")[0]
            for name in names:
                dashed = name.replace("_", "-")
                if re.search(r'"--' + re.escape(dashed) + r'"|\b' + re.escape(name) + r"\b",
                             first):
                    problems.append(f"{path}:{line}: {m.group(1)} checks option '{name}' "
                                    f"outside {VALIDATOR}")
                    break
            continue
        name = range_comparison(inside, names)
        if name:
            problems.append(f"{path}:{line}: a range check of option '{name}' outside "
                            f"{VALIDATOR}")
    for m in CLI_RANGE.finditer(code):
        flag = m.group(1)[2:].replace("-", "_")
        if flag in names or ("max_" + flag) in names:
            line = code.count("\n", 0, m.start()) + 1
            problems.append(f"{path}:{line}: a CLI11 range check of {m.group(1)} outside "
                            f"{VALIDATOR}")
    return problems


def python_problems(path: str, text: str, names: set[str]) -> list[str]:
    problems = []
    code = strip_comments(text, python=True)
    for i, line in enumerate(code.splitlines(), 1):
        m = re.match(r"\s*(?:if|elif|while|assert)\b(.*)", line)
        if not m:
            continue
        name = range_comparison(m.group(1), names)
        if name:
            problems.append(f"{path}:{i}: a range check of option '{name}' outside {VALIDATOR}")
    return problems


def excepted(rel: str) -> bool:
    return any(rel == e or (e.endswith("/") and rel.startswith(e)) for e in EXCEPTIONS)


def check(root: str) -> list[str]:
    with open(os.path.join(root, HEADER), encoding="utf-8") as f:
        fields = option_fields(f.read())
    if not fields:
        return [f"{HEADER}: no fields found in TranslationOptions / TranslatorOptions"]
    with open(os.path.join(root, VALIDATOR), encoding="utf-8") as f:
        entries = ENTRY.findall(f.read())
    problems = [f"{VALIDATOR}: no entry for option '{x}' (add one saying what its value may be)"
                for x in fields if x not in entries]
    problems += [f"{VALIDATOR}: entry '{x}' is no field of the option structs"
                 for x in entries if x not in fields]
    for top in SCANNED:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                if rel == VALIDATOR or excepted(rel):
                    continue
                names = names_of(fields, rel)
                if name.endswith((".cpp", ".h", ".cu")):
                    with open(path, encoding="utf-8") as f:
                        problems += cpp_problems(rel, f.read(), names)
                elif name.endswith(".py"):
                    with open(path, encoding="utf-8") as f:
                        problems += python_problems(rel, f.read(), names)
    return problems


HEADER_OK = """struct TranslatorOptions {
  int64_t max_batch_size = 32;  // sentences
};
struct TranslationOptions {
  Search search = Search::greedy;
  int64_t beam_size = 1;
  double sampling_temperature = 1.0;
};
"""
VALIDATOR_OK = """const Entry<T> kTranslation[] = {
    {"search", [](const T& o, const Context& n) {}},
    {"beam_size",
     [](const T& o, const Context& n) { require_at_least(n("beam_size"), o.beam_size, 1); }},
    {"sampling_temperature", [](const T&, const Context&) {}},
};
const Entry<R> kTranslator[] = {
    {"max_batch_size", [](const R&, const Context&) {}},
};
"""


def self_test() -> int:
    cases = [
        ("clean", {"src/tfm/cli/translate.cpp":
                   "if (tokens >= o.max_batch_tokens) x();\n  o.beam_size = f.beam_size;\n"}, 0),
        ("missing entry", {HEADER: HEADER_OK.replace("};\nstruct", "  int64_t extra = 0;\n};\n"
                                                     "struct", 1)}, 1),
        ("stale entry", {VALIDATOR: VALIDATOR_OK + '    {"gone", nullptr},\n'}, 1),
        ("TFM_CHECK range", {"src/tfm/serve/api.cpp":
                             "TFM_CHECK(o.beam_size >= 1) << \"bad\";\n"}, 1),
        ("multi-line check", {"src/tfm/runtime/translator.cpp":
                              "TFM_CHECK(x &&\n          options_.max_batch_size <= 64)\n"}, 1),
        ("require call", {"src/tfm/cli/translate.cpp":
                          'require_at_least("--beam-size", f.beam_size, 1);\n'}, 1),
        ("spelling", {"src/tfm/serve/api.cpp": "if (temperature < 0.5) throw 1;\n"}, 1),
        ("python", {"python/tfm/translator.py": "    if beam_size < 1:\n        raise X\n"}, 1),
        ("cli11", {"src/tfm/cli/serve.cpp":
                   'cmd->add_option("--max-batch-size", o.x)->check(CLI::PositiveNumber);\n'}, 1),
        ("exception", {"src/tfm/decode/search.cpp": "TFM_CHECK(o.beam_size >= 1);\n"}, 0),
    ]
    cases = [(what, {HEADER: HEADER_OK, VALIDATOR: VALIDATOR_OK, **files}, want)
             for what, files, want in cases]
    return structure_cli.self_test("check_options.py", cases, check)


if __name__ == "__main__":
    sys.exit(structure_cli.main(sys.argv, __doc__, check, self_test))
