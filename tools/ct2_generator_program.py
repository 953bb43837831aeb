"""A program written against CTranslate2's documented Generator API (4.x), run by the
differential tests with `ctranslate2` bound to the real package, to tfm.ctranslate2 or to tfm:
generate_batch with the options that change its output, asynchronous calls, generate_iterable,
generate_tokens and generate_batch's per-step callback, and score_batch, on a decoder-only
(GPT-2) model.

    run(ctranslate2, model_dir, prompts, cases=GENERATE_CASES) -> {case: outputs}

prompts: token lists (the model's vocabulary pieces), some starting with the model's start token
"<|endoftext|>", some not. The outputs are plain JSON values (token lists, floats), compared by
ct2_program.compare and stored as a fixture (tools/make_ct2_generator_fixture.py). Standard library
only.
"""
from __future__ import annotations

BOS = "<|endoftext|>"

# The options each generate_batch case passes (besides return_scores=True), on every prompt
# ("all") or on the prompts with more than their start token ("long": CTranslate2 then reads the
# prompts at once with include_prompt_in_result=False).
GENERATE_CASES = {
    "defaults": ("all", {}),
    "max_length8": ("all", {"max_length": 8}),
    "beam3_nbest2": ("all", {"beam_size": 3, "num_hypotheses": 2, "max_length": 10}),
    "beam2_lp0": ("all", {"beam_size": 2, "length_penalty": 0.0, "max_length": 12}),
    "lp0": ("all", {"length_penalty": 0.0, "max_length": 12}),
    "min_length": ("all", {"min_length": 10, "max_length": 14}),
    "no_prompt_in_result": ("long", {"include_prompt_in_result": False, "max_length": 9}),
    "no_prompt_min_length": ("long", {"include_prompt_in_result": False, "min_length": 6,
                                      "max_length": 9}),
    "no_prompt_short_prompts": ("all", {"include_prompt_in_result": False, "max_length": 9}),
    "static_prompt": ("plain", {"static_prompt": [BOS, "s", "y", "s"], "max_length": 8}),
    "return_end_token": ("all", {"return_end_token": True, "max_length": 20}),
    "end_token_eos": ("all", {"end_token": BOS, "max_length": 20}),
    "sampling_topk1": ("all", {"sampling_topk": 1, "max_length": 20}),
    "chunks_examples": ("all", {"max_batch_size": 2, "max_length": 20}),
    "chunks_tokens": ("all", {"max_batch_size": 9, "batch_type": "tokens", "max_length": 20}),
}

# Cases whose outputs tfm does not match, with why (docs/python.md, "Migrating from CTranslate2").
_BEAM = ("a converted model's beam search is Transformers generate()'s (2 x beam candidates a "
         "step, its early-stopping heuristic, ranking by log-prob / generated length^alpha); "
         "CTranslate2's stops after beam_size x patience finished hypotheses and ranks by its own "
         "length: other hypotheses and scores")
KNOWN_DIFFERENCES = {
    "beam3_nbest2": _BEAM,
    "beam2_lp0": _BEAM,
}


def _select(prompts, which):
    if which == "long":
        return [p for p in prompts if len(p) > 1]
    if which == "plain":  # after a static prompt: no start token of their own
        return [p[1:] if p and p[0] == BOS else p for p in prompts if len(p) > 1]
    return prompts


def _result(r):
    return {"sequences": [list(s) for s in r.sequences],
            "sequences_ids": [list(map(int, s)) for s in r.sequences_ids],
            "scores": [float(s) for s in r.scores]}


def _generate(g, prompts, cases):
    out = {}
    for name, (which, options) in cases.items():
        out[name] = [_result(r) for r in g.generate_batch(_select(prompts, which),
                                                          return_scores=True, **options)]
    pending = g.generate_batch(prompts, asynchronous=True, return_scores=True, max_length=12)
    out["asynchronous"] = [_result(a.result()) for a in pending]
    assert all(a.done() for a in pending)
    out["iterable"] = [_result(r) for r in g.generate_iterable(
        iter(prompts), max_batch_size=2, max_length=12, return_scores=True)]
    return out


def _step(s, log_prob=True):
    return [s.step, s.batch_id, s.token_id, s.hypothesis_id, s.token,
            float(s.log_prob) if log_prob else s.log_prob, bool(s.is_last)]


def _sorted_steps(steps):
    # Each prompt's steps in order; prompts by batch_id (the engines interleave them differently).
    return sorted(steps, key=lambda x: (x[1], x[0]))


def _tokens(g, prompts):
    long = _select(prompts, "long")
    out = {"generate_tokens": [_step(s) for s in g.generate_tokens(prompts[0], max_length=6,
                                                                   return_log_prob=True)]}
    out["generate_tokens_batch"] = _sorted_steps(
        [_step(s) for s in g.generate_tokens(long, max_length=7, return_log_prob=True)])
    out["generate_tokens_min_length"] = [_step(s) for s in g.generate_tokens(
        prompts[2], max_length=9, min_length=5, return_log_prob=True)]
    out["generate_tokens_no_log_prob"] = [_step(s, False) for s in g.generate_tokens(
        prompts[0], max_length=4)]
    # Closed after two tokens: what was yielded before.
    it = g.generate_tokens(prompts[2], max_length=20, min_length=15, return_log_prob=True)
    out["generate_tokens_closed"] = [_step(next(it)), _step(next(it))]
    it.close()
    # generate_batch's callback, the call cut into chunks (batch_id: the caller's index), one
    # prompt stopped by the callback's True at its third token.
    seen = []

    def collect(s):
        seen.append(_step(s))
        return s.batch_id == 2 and s.step == 2

    results = g.generate_batch(long, max_length=9, include_prompt_in_result=False,
                               max_batch_size=2, return_scores=True, callback=collect)
    out["callback_steps"] = _sorted_steps(seen)
    out["callback_results"] = [_result(r) for r in results]
    return out


def _score(g, prompts):
    # With and without the start token, and one ending with the end token.
    seqs = [p for p in prompts if len(p) > 1] + [[BOS, "e", "n", "d", BOS]]
    out = {"score_batch": [_scoring(r) for r in g.score_batch(seqs)],
           "score_max_input3": [_scoring(r) for r in g.score_batch(seqs, max_input_length=3)],
           "score_chunks": [_scoring(r) for r in g.score_batch(seqs, max_batch_size=2)]}
    pending = g.score_batch(seqs, asynchronous=True)
    out["score_asynchronous"] = [_scoring(a.result()) for a in pending]
    return out


def _scoring(r):
    return {"tokens": list(r.tokens), "log_probs": [float(x) for x in r.log_probs]}


def run(ct2, model_dir, prompts, cases=None):
    """Every case's outputs, from a ctranslate2-like module on model_dir."""
    g = ct2.Generator(model_dir, device="cpu", compute_type="float32", inter_threads=1,
                      intra_threads=1)
    out = {}
    out.update(_generate(g, prompts, GENERATE_CASES if cases is None else cases))
    out.update(_tokens(g, prompts))
    out.update(_score(g, prompts))
    return out
