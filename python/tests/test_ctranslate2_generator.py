"""tfm.Generator, CTranslate2's Generator API on tfm: tools/ct2_generator_program.py (a program
written against CTranslate2's documented Generator API) through tfm.ctranslate2 and tfm against
what the real package answered on the same random GPT-2 (tests/fixtures/ct2_generator, made by
tools/ct2_generator_diff.py --write-fixture: the tfm model is tfm's conversion of the weights
CTranslate2's converter read), and the API's own rules."""
import json
import os
import sys

import pytest

import tfm
import tfm.ctranslate2 as ct2
from conftest import interrupted_within

BOS = "<|endoftext|>"


@pytest.fixture(scope="module")
def fixture(source_dir):
    """The fixture's model, prompts and CTranslate2's outputs; its program and compare()."""
    sys.path.insert(0, os.path.join(source_dir, "tools"))
    import ct2_generator_program
    import ct2_program

    root = os.path.join(source_dir, "tests", "fixtures", "ct2_generator")
    with open(os.path.join(root, "expected.json"), encoding="utf-8") as f:
        data = json.load(f)
    data.update(model=os.path.join(root, "model"), program=ct2_generator_program,
                compare=ct2_program.compare)
    return data


@pytest.fixture(scope="module")
def generator(fixture):
    return ct2.Generator(fixture["model"], intra_threads=1)


def test_program_matches_ctranslate2(fixture):
    program = fixture["program"]
    got = program.run(ct2, fixture["model"], fixture["prompts"])
    assert set(got) == set(fixture["outputs"])
    assert fixture["compare"](got, fixture["outputs"], 1e-4, program.KNOWN_DIFFERENCES) == []


def test_program_runs_with_import_tfm_as_ctranslate2(fixture):
    """`import tfm as ctranslate2` runs the same program; tfm.Generator's defaults are the
    model's generation config (20 new tokens), so only the case without a max_length differs."""
    program = fixture["program"]
    got = program.run(tfm, fixture["model"], fixture["prompts"])
    assert fixture["compare"](got, fixture["outputs"], 1e-4,
                              program.KNOWN_DIFFERENCES) == ["defaults"]


def test_compare_sees_a_difference(fixture):
    want = fixture["outputs"]
    got = json.loads(json.dumps(want))
    got["defaults"][0]["sequences"][0] = got["defaults"][0]["sequences"][0][:-1]
    got["lp0"][1]["scores"][0] += 1e-3
    got["score_batch"][0]["log_probs"][0] += 1e-3
    assert fixture["compare"](got, want) == ["defaults", "lp0", "score_batch"]


def test_scores_are_score_batchs(generator, fixture):
    """A greedy continuation's score (length_penalty 0) is the sum of score_batch's
    log-probabilities of what was generated, the end token included when it ended there, with
    and without a start token: the search and the teacher-forced scoring agree (two paths of
    the library)."""
    for prompt in fixture["prompts"]:
        r = generator.generate_batch([prompt], length_penalty=0.0, max_length=12,
                                     return_scores=True, return_end_token=True)[0]
        seq = ([BOS] if prompt[0] == BOS else []) + r.sequences[0]
        scored = generator.score_batch([seq])[0]
        assert scored.tokens == seq[1:]
        assert r.scores[0] == pytest.approx(sum(scored.log_probs[len(prompt) - 1:]), abs=1e-4)


def test_length_penalty_divides_by_ctranslate2s_length(generator, fixture):
    prompt = fixture["prompts"][0]
    raw = generator.generate_batch([prompt], length_penalty=0.0, max_length=9,
                                   return_scores=True, return_end_token=True)[0]
    pen = generator.generate_batch([prompt], length_penalty=0.7, max_length=9,
                                   return_scores=True)[0]
    # The length: the returned tokens after the start token, the end token counted.
    n = len(raw.sequences_ids[0])
    assert pen.scores[0] == pytest.approx(raw.scores[0] / n ** 0.7, abs=1e-5)


def test_max_and_min_length_count_as_ctranslate2(generator):
    with_bos = [BOS, "a", "b"]
    r = generator.generate_batch([with_bos], max_length=5)[0]
    assert r.sequences[0][:2] == ["a", "b"] and len(r.sequences[0]) <= 5
    full = generator.generate_batch([with_bos], max_length=7)[0].sequences[0]
    # Without the prompt: max_length counts the generated tokens alone.
    r = generator.generate_batch([with_bos], max_length=5, include_prompt_in_result=False)[0]
    assert r.sequences[0] == full[2:7]
    # A start sequence without BOS: its first token is returned too, and not counted.
    r = generator.generate_batch([["x", "y"]], max_length=4)[0]
    assert r.sequences[0][:2] == ["x", "y"] and len(r.sequences[0]) <= 5
    r = generator.generate_batch([with_bos], min_length=12, max_length=12)[0]
    assert len(r.sequences[0]) == 12


def test_results_and_async(generator):
    r = generator.generate_batch([[BOS, "a"]], max_length=4, return_scores=True)[0]
    assert isinstance(r, ct2.GenerationResult) and r.logits == []
    assert r.sequences_ids[0] == generator._t._impl.target_tokens_to_ids(r.sequences[0])
    a = generator.generate_batch([[BOS, "a"]], max_length=4, return_scores=True,
                                 asynchronous=True)[0]
    assert isinstance(a, tfm.AsyncGenerationResult)
    assert a.result().sequences == r.sequences and a.done()
    ids = generator.generate_batch([r.sequences_ids[0][:1]], max_length=4)[0]
    assert ids.sequences_ids  # id input works too


def test_unimplemented_options_raise(generator):
    """Every CTranslate2 option the library lacks raises NotImplementedError naming it (the
    same list as translate_batch's), never a silent ignore."""
    from tfm import _options

    for name, (off, _) in _options.UNSUPPORTED.items():
        on = {0: 2, 1: 1.5, False: True, None: (lambda step: False)}[off]
        with pytest.raises(NotImplementedError, match=name):
            generator.generate_batch([[BOS]], max_length=3, **{name: on})
    with pytest.raises(TypeError, match="max_decoding_length"):
        generator.generate_batch([[BOS]], max_decoding_length=3)
    assert "callback" not in _options.UNSUPPORTED  # the library's step callback


def test_generate_tokens_streams_generate_batchs_tokens(generator, fixture):
    """generate_tokens yields, prompt by prompt, the tokens generate_batch returns (greedy,
    without the prompt), each log_prob the one score_batch gives that token after the prompt
    and the tokens before it (teacher-forced: another path of the library), is_last on the
    last; the steps count from CTranslate2's first step."""
    prompts = [p for p in fixture["prompts"] if len(p) > 1]
    want = generator.generate_batch(prompts, max_length=8, include_prompt_in_result=False,
                                    return_end_token=True)
    steps = list(generator.generate_tokens(prompts, max_length=8, return_log_prob=True))
    shortest = min(len(p) for p in prompts)
    for i, (p, r) in enumerate(zip(prompts, want)):
        mine = [s for s in steps if s.batch_id == i]
        assert [s.token for s in mine] == r.sequences[0]
        assert [s.step for s in mine] == [len(p) - shortest + k for k in range(len(mine))]
        assert [s.is_last for s in mine] == [False] * (len(mine) - 1) + [True]
        assert all(s.hypothesis_id == 0 and s.token_id == generator._t._impl.target_tokens_to_ids(
            [s.token])[0] for s in mine)
        scored = generator.score_batch([p + r.sequences[0]])[0].log_probs[len(p) - 1:]
        assert [s.log_prob for s in mine] == pytest.approx(scored, abs=1e-4)
    # Without return_log_prob: no log_prob, as CTranslate2.
    assert {s.log_prob for s in generator.generate_tokens(prompts[0], max_length=3)} == {None}


def test_generate_tokens_closed_early_stops_the_search(generator):
    """Closing the stream ends the search at the next token: the callback (which sees every
    step first; at step 3 it waits until the consumer has taken three and had time to close)
    is not called after step 3, where the whole generation takes 30."""
    import time

    calls, taken = [], []

    def slow(s):
        calls.append(s.step)
        if s.step == 3:
            deadline = time.monotonic() + 10
            while len(taken) < 3 and time.monotonic() < deadline:
                time.sleep(0.005)
            time.sleep(0.5)
        return False

    it = generator.generate_tokens([BOS, "a"], max_length=30, min_length=30, callback=slow)
    for _ in range(3):
        taken.append(next(it).step)
    it.close()
    assert taken == [0, 1, 2]
    assert calls == [0, 1, 2, 3]
    full = list(generator.generate_tokens([BOS, "a"], max_length=30, min_length=30))
    assert [s.step for s in full] == list(range(30))


def test_callback_exceptions_reach_the_caller(generator):
    class Boom(Exception):
        pass

    def boom(s):
        if s.batch_id == 1 and s.step == 1:
            raise Boom("at step 1")
        return False

    prompts = [[BOS, "a"], [BOS, "b"], [BOS, "c"]]
    with pytest.raises(Boom, match="at step 1"):
        generator.generate_batch(prompts, max_length=10, callback=boom)
    with pytest.raises(Boom):
        list(generator.generate_tokens(prompts, max_length=10, callback=boom))
    pending = generator.generate_batch(prompts, max_length=10, callback=boom, asynchronous=True)
    with pytest.raises(Boom):
        pending[0].result()
    with pytest.raises(TypeError, match="callable"):
        generator.generate_batch(prompts, max_length=10, callback=3)
    # The generator works afterwards; True from the callback ends that prompt only.
    full = generator.generate_batch(prompts, max_length=10)
    cut = generator.generate_batch(prompts, max_length=10,
                                   callback=lambda s: s.batch_id == 2 and s.step == 1)
    assert [r.sequences for r in cut[:2]] == [r.sequences for r in full[:2]]
    # Steps 0 ("c", the prompt's, in CTranslate2's count) and 1 (the first generated).
    assert cut[2].sequences[0] == full[2].sequences[0][:2]
    with pytest.raises(tfm.InvalidArgumentError, match="callback"):
        generator.generate_batch(prompts, max_length=10, beam_size=2, callback=print)


def test_scoring_reads_the_first_token_first(generator):
    """A sequence is scored as the decoder reads it: after "x", "y" is scored as in any
    sequence that starts with "x" (the same prefix), and differently after BOS, "x"."""
    a, b, c = generator.score_batch([["x", "y"], ["x", "y", "z"], [BOS, "x", "y"]])
    assert a.tokens == ["y"] and b.tokens == ["y", "z"] and c.tokens == ["x", "y"]
    assert a.log_probs[0] == pytest.approx(b.log_probs[0], abs=1e-6)
    assert abs(a.log_probs[0] - c.log_probs[1]) > 1e-3
    assert generator.score_batch([["x"], []])[0].log_probs == []


def test_an_encoder_decoder_model_is_refused(source_dir):
    with pytest.raises(tfm.Error, match="encoder-decoder"):
        tfm.Generator(os.path.join(source_dir, "tests", "fixtures", "ct2", "model"))


def test_tfm_models_generate_with_ctranslate2s_meanings(source_dir):
    """One of tfm's own decoder-only models (ids, no vocabulary) through the Generator: start
    sequences begin with BOS, max_length counts the returned tokens (the end token forced at
    the cap, tfm's rule), and the hypotheses and scores are Translator.generate_batch's under
    CTranslate2's search options (power length penalty, patience 1, the prompt outside the
    score)."""
    d = os.path.join(source_dir, "tests", "fixtures", "decoder_only_odd")
    g, t = ct2.Generator(d, intra_threads=1), tfm.Translator(d, intra_threads=1)
    bos = g.model_info.bos_id
    prompts = [[3, 4, 5], [7], [9, 10, 11, 12]]
    got = g.generate_batch([[bos] + p for p in prompts], max_length=6, beam_size=2,
                           return_scores=True)
    want = t.generate_batch(prompts, beam_size=2, max_decoding_length=7, length_penalty=1.0,
                            length_penalty_form="power", patience=1.0, score_prefix=False,
                            renormalize_min_length=True, min_decoding_length=0,
                            return_scores=True)
    for p, a, b in zip(prompts, got, want):
        assert a.sequences_ids[0] == list(b.hypotheses[0]) and a.sequences_ids[0][:len(p)] == p
        assert len(a.sequences_ids[0]) <= 6
        assert a.scores[0] == pytest.approx(b.scores[0], abs=1e-6)
    alone = g.generate_batch([[bos] + p for p in prompts], max_length=3,
                             include_prompt_in_result=False)
    for p, a in zip(prompts, alone):
        full = g.generate_batch([[bos] + p], max_length=len(p) + 3)[0]
        assert a.sequences_ids[0] == full.sequences_ids[0][len(p):]
    with pytest.raises(NotImplementedError, match="BOS"):
        g.generate_batch([[3, 4]])


def test_ctrl_c_stops_a_call_with_a_callback(generator):
    """Ctrl-C while generate_batch waits, or while generate_tokens streams, raises
    KeyboardInterrupt at once, and the search stops calling the callback (the call is given up,
    not decoded behind the caller's back); the generator works afterwards."""
    import time

    calls = []

    def slow(s):
        calls.append(s.step)
        time.sleep(0.05)
        return False

    def interrupted(call):
        interrupted_within(call, bound=3.0, after=0.5)
        seen = len(calls)
        time.sleep(0.3)
        assert 0 < seen and len(calls) <= seen + 1  # at most the step in progress
        calls.clear()

    long = dict(max_length=60, min_length=60)  # 60 steps of 50 ms: 3 s
    interrupted(lambda: generator.generate_batch([[BOS, "a"]], callback=slow, **long))
    interrupted(lambda: list(generator.generate_tokens([BOS, "a"], callback=slow, **long)))
    steps = [s.token for s in generator.generate_tokens([BOS, "a"], max_length=5)]
    assert generator.generate_batch([[BOS, "a"]], max_length=5, include_prompt_in_result=False,
                                    return_end_token=True)[0].sequences[0] == steps
