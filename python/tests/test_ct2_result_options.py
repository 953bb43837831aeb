"""CTranslate2's return_logits_vocab, replace_unknowns and prefix_bias_beta through tfm.ctranslate2,
each against what it must equal, composed here from other calls (tests/fixtures/ct2 holds what the
real CTranslate2 answered to tools/ct2_program.py's cases of them, compared in
test_ctranslate2.py): each step's logits give score_batch's per-token log-probabilities, each
replaced token is the source token of its attention row's argmax, a soft prefix's log-probability
is score_batch's. Standard library only (numpy reads the logits too when it is installed)."""
import array
import math
import os

import pytest

import tfm
import tfm.ctranslate2 as ct2


@pytest.fixture(scope="module")
def model(source_dir):
    return os.path.join(source_dir, "tests", "fixtures", "ct2", "model")


@pytest.fixture(scope="module")
def translator(model):
    return ct2.Translator(model, intra_threads=1)


@pytest.fixture(scope="module")
def sources(source_dir):
    import json

    with open(os.path.join(source_dir, "tests", "fixtures", "ct2", "expected.json"),
              encoding="utf-8") as f:
        fx = json.load(f)
    return fx["sources"], fx["targets"]


def log_softmax_at(row, i):
    top = max(row)
    return row[i] - top - math.log(sum(math.exp(x - top) for x in row))


@pytest.mark.parametrize("beam_size", [1, 3])
def test_logits_give_score_batchs_log_probs(translator, sources, beam_size):
    src, _ = sources
    # min_decoding_length 0: CTranslate2's default 1 puts </s> at -inf in the first row.
    results = translator.translate_batch(src, beam_size=beam_size, num_hypotheses=beam_size,
                                         min_decoding_length=0, return_logits_vocab=True)
    vocab = translator.model_info.trg_vocab_size
    for s, r in zip(src, results):
        assert len(r.logits) == len(r.hypotheses)
        for hyp, steps in zip(r.hypotheses, r.logits):
            scored = translator.score_batch([s], [hyp])[0]  # the tokens, then </s>
            assert len(steps) == len(scored.tokens) == len(hyp) + 1
            ids = translator._impl.target_tokens_to_ids(scored.tokens)
            for step, i, want in zip(steps, ids, scored.log_probs):
                assert isinstance(step, array.array) and step.typecode == "f"
                assert len(step) == vocab
                assert log_softmax_at(step, i) == pytest.approx(want, abs=1e-4)
    assert all(r.logits == [] for r in translator.translate_batch(src, beam_size=beam_size))


def test_logits_read_as_float32_arrays(translator, sources):
    np = pytest.importorskip("numpy")
    r = translator.translate_batch(sources[0][:1], beam_size=1, return_logits_vocab=True)[0]
    rows = np.stack([np.asarray(step) for step in r.logits[0]])
    assert rows.dtype == np.float32
    assert rows.shape == (len(r.hypotheses[0]) + 1, translator.model_info.trg_vocab_size)
    assert rows[0].tolist() == list(r.logits[0][0])


def test_logits_mask_what_the_step_forbids(translator, sources):
    """min_decoding_length disables </s> in the rows of the steps it forbids it at, and
    disable_unk <unk> in every row, as in CTranslate2's logits: at the lowest float32."""
    src, _ = sources
    lowest = array.array("f", [-3.4028234663852886e38])[0]
    eos, unk = translator._impl.target_tokens_to_ids(["</s>", "<unk>"])
    for r in translator.translate_batch(src, beam_size=1, min_decoding_length=3,
                                        disable_unk=True, return_logits_vocab=True):
        steps = r.logits[0]
        assert [s[eos] == lowest for s in steps[:4]] == [True, True, True, False]
        assert all(s[unk] == lowest for s in steps)


def test_replace_unknowns_takes_the_most_attended_source_token(translator, sources):
    src, _ = sources
    oov = [s + ["QQQ"] for s in src]
    prefix = [["<unk>"]] * len(oov)
    plain = translator.translate_batch(oov, target_prefix=prefix, beam_size=2, num_hypotheses=2,
                                       return_attention=True)
    replaced = translator.translate_batch(oov, target_prefix=prefix, beam_size=2,
                                          num_hypotheses=2, replace_unknowns=True)
    seen = set()
    for s, a, b in zip(oov, plain, replaced):
        assert b.attention == []  # kept for the replacement alone
        for hyp, rows, got in zip(a.hypotheses, a.attention, b.hypotheses):
            want = [s[max(range(len(row)), key=row.__getitem__)] if t == "<unk>" else t
                    for t, row in zip(hyp, rows)]
            assert got == want
            assert got[0] != "<unk>" and got[0] in s
            seen.add(got[0])
    assert len(seen) > 1  # not one fixed position
    with pytest.raises(tfm.InvalidArgumentError, match="token lists"):
        translator.translate_batch([[5, 6]], replace_unknowns=True)
    with pytest.raises(tfm.InvalidArgumentError, match="replace_unknowns"):
        tfm.Translator(translator.model_info.directory).translate_batch(
            ["haus"], replace_unknowns=True)


def test_prefix_bias_is_a_soft_prefix(translator, sources):
    src, targets = sources
    soft = [t[:3] for t in targets]
    hard = translator.translate_batch(src, target_prefix=soft, beam_size=2, return_scores=True)
    strong = translator.translate_batch(src, target_prefix=soft, beam_size=2,
                                        prefix_bias_beta=0.999, return_scores=True)
    weak = translator.translate_batch(src, target_prefix=soft, beam_size=2,
                                      prefix_bias_beta=0.01, return_scores=True)
    free = translator.translate_batch(src, beam_size=2, return_scores=True)
    for p, h, s, w, f in zip(soft, hard, strong, weak, free):
        assert s.hypotheses[0][:len(p)] == p == h.hypotheses[0][:len(p)]
    # A weak bias follows the model where it disagrees with the prefix.
    assert any(w.hypotheses[0][:3] != p for w, p in zip(weak, soft))
    assert sum(w.hypotheses == f.hypotheses for w, f in zip(weak, free)) >= 3
    # The score is the biased log-probability; score_batch gives the model's own.
    t = tfm.Translator(translator.model_info.directory)
    own = t.translate_batch(src, target_prefix=soft, beam_size=2, patience=1.0,
                            length_penalty=0.0, prefix_bias_beta=0.999, score_prefix=False,
                            return_scores=True)
    for s, r in zip(src, own):
        assert r.log_probs[0] == pytest.approx(float(t.score_batch([s], [r.hypotheses[0]])[0]),
                                               abs=1e-4)
        assert r.scores[0] > r.log_probs[0]


@pytest.mark.parametrize("options,match", [
    (dict(prefix_bias_beta=1.0), "prefix_bias_beta"),
    (dict(prefix_bias_beta=-0.5), "prefix_bias_beta"),
    (dict(prefix_bias_beta=0.5, return_alternatives=True), "return_alternatives"),
    (dict(prefix_bias_beta=0.5, beam_size=1, sampling_topk=5), "prefix_bias_beta.*sampling"),
    (dict(return_logits_vocab=True, return_alternatives=True), "return_logits_vocab"),
    # CTranslate2 refuses a callback with a soft prefix (biased decoding is a beam search).
    (dict(prefix_bias_beta=0.5, beam_size=1, callback=lambda step: False),
     "callback.*prefix_bias_beta"),
])
def test_refused_combinations(translator, sources, options, match):
    with pytest.raises(tfm.InvalidArgumentError, match=match):
        translator.translate_batch(sources[0][:1], target_prefix=[sources[1][0][:2]], **options)


def test_generation_logits(source_dir):
    """A tfm decoder-only model's Generator: one row per step whose token the sequence returns
    (the prompt's after the start token, the continuation's, </s>'s), each giving score_batch's
    log-probability; without the prompt in the result, the rows of the continuation."""
    g = ct2.Generator(os.path.join(source_dir, "tests", "fixtures", "decoder_only_odd"))
    bos, eos = g.model_info.bos_id, g.model_info.eos_id
    prompts = [[bos, 5, 6], [bos, 7]]
    for r, p in zip(g.generate_batch(prompts, max_length=6, return_logits_vocab=True), prompts):
        seq = r.sequences_ids[0]
        assert seq[:len(p) - 1] == p[1:]
        steps = r.logits[0]
        assert len(steps) == len(seq) + 1
        scored = g.score_batch([[bos] + seq + [eos]])[0]
        for step, i, want in zip(steps, seq + [eos], scored.log_probs):
            assert log_softmax_at(step, i) == pytest.approx(want, abs=1e-4)
    cut = g.generate_batch(prompts, max_length=6, include_prompt_in_result=False,
                           return_logits_vocab=True)
    full = g.generate_batch(prompts, max_length=6, return_logits_vocab=True)
    # CTranslate2 reads the batch's shortest prompt but its last token at once: 1 token here.
    for c, f in zip(cut, full):
        n = min(len(c.logits[0]), len(f.logits[0]) - 1) - 1  # the lengths count differently
        assert n > 0
        assert [list(x) for x in c.logits[0][:n]] == [list(x) for x in f.logits[0][1:n + 1]]
    assert g.generate_batch(prompts, max_length=4)[0].logits == []
    with pytest.raises(TypeError, match="prefix_bias_beta"):
        g.generate_batch(prompts, prefix_bias_beta=0.5)


def test_a_converted_model_decoding_by_generates_rules_names_it(source_dir):
    g = ct2.Generator(os.path.join(source_dir, "tests", "fixtures", "ct2_generator", "model"))
    with pytest.raises(tfm.InvalidArgumentError, match="return_logits_vocab.*generate"):
        g.generate_batch([["<|endoftext|>", "a"]], max_length=3, return_logits_vocab=True)
