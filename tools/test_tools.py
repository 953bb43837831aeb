#!/usr/bin/env python3
"""Tests of tools/: /usr/bin/python3 tools/test_tools.py  (plain unittest; exit 77 = skipped,
when this python3 has no torch/numpy, which CTest reports as "Not Run").

  SafetensorsTests  round trip, layout/alignment, and every malformed-file check
  ReferenceTests    names == the contract, config JSON, position tables, causality, padding
  ConvertTests      each seed_models layout -> convert_pytorch.py -> reference_model gives the
                    seed model's own log-probs (float64, <= 1e-9 relative) and logits
  FixtureTests      tests/fixtures/ is what make_reference.py generates (byte for byte), and
                    the committed reference numbers agree with reference_model
"""
from __future__ import annotations

import dataclasses
import io
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stderr

try:
    import numpy as np
    import torch
except ImportError as e:  # pragma: no cover
    print(f"skipped: {e} (run with a python3 that has torch and numpy, e.g. /usr/bin/python3)")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import convert_pytorch as cp  # noqa: E402
import make_reference as mr  # noqa: E402
import reference_model as rm  # noqa: E402
import safetensors_io as st  # noqa: E402
import seed_models as sm  # noqa: E402

FIXTURES = os.path.normpath(os.path.join(HERE, "..", "tests", "fixtures"))
torch.set_num_threads(1)


# ============================================================================ safetensors

def _raw(header: dict, data: bytes = b"", pad: bytes = b"") -> bytes:
    h = json.dumps(header).encode() + pad
    return struct.pack("<Q", len(h)) + h + data


class SafetensorsTests(unittest.TestCase):
    def test_round_trip(self):
        t = {"w": np.arange(12, dtype=np.float32).reshape(3, 4),
             "ids": np.array([[1, -2], [3, 4]], dtype=np.int32),
             "d": np.linspace(0, 1, 5), "b": np.array([255, 0], dtype=np.uint8),
             "h": np.array([1.5], dtype=np.float16), "l": np.array([2 ** 40], dtype=np.int64),
             "empty": np.zeros((0, 3), np.float32), "scalar": np.array(7.25, dtype=np.float32),
             "big_endian": np.array([1.0, 2.0], dtype=">f4"), "": np.ones(1, np.float32)}
        meta = {"config": '{"a":1}', "format_version": "1", "ünï": "cödé"}
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "x.safetensors")
            st.save_file(t, path, meta)
            back, m = st.load_file(path)
            self.assertEqual(os.listdir(d), ["x.safetensors"])  # no temporary left behind
        self.assertEqual(m, meta)
        self.assertEqual(set(back), set(t))
        for k, v in t.items():
            self.assertEqual(back[k].shape, v.shape, k)
            self.assertEqual(back[k].dtype, v.dtype.newbyteorder("="), k)
            np.testing.assert_array_equal(back[k], v, k)
        self.assertEqual(st.serialize(t, meta), st.serialize(t, meta))

    def test_layout(self):
        t = {"a": np.ones(3, np.int8), "b": np.ones(3, np.float64), "c": np.ones(3, np.float32)}
        raw = st.serialize(t)
        (n,) = struct.unpack_from("<Q", raw)
        self.assertEqual((8 + n) % 8, 0)  # data buffer 8-aligned (header padded with spaces)
        header = json.loads(raw[8:8 + n])
        self.assertEqual([header[k]["data_offsets"][0] for k in "bca"], [0, 24, 36])
        self.assertNotIn("__metadata__", header)

    def test_bf16_read(self):
        f = np.array([1.0, -2.5, 3.140625], np.float32)
        bf = (f.view(np.uint32) >> 16).astype("<u2").tobytes()
        raw = _raw({"x": {"dtype": "BF16", "shape": [3], "data_offsets": [0, 6]}}, bf)
        np.testing.assert_array_equal(st.deserialize(raw)[0]["x"], f)

    def test_bad_files(self):
        ok = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
        cases = {
            "too short": b"\x01\x00",
            "exceeds": struct.pack("<Q", 200_000_000) + b"{}",
            "past the end": struct.pack("<Q", 100) + b"{}",
            "start with": _raw({"x": ok}, b"\0" * 8)[:8] + b" " + _raw({"x": ok}, b"\0" * 8)[8:-1],
            "not JSON": struct.pack("<Q", 3) + b"{x}",
            "duplicate": struct.pack("<Q", 2 * len(json.dumps({"x": ok})) - 1)
            + (json.dumps({"x": ok})[:-1] + "," + json.dumps({"x": ok})[1:]).encode() + b"\0" * 8,
            "unknown dtype": _raw({"x": {**ok, "dtype": "F12"}}, b"\0" * 8),
            "exactly dtype": _raw({"x": {**ok, "extra": 1}}, b"\0" * 8),
            "bad shape": _raw({"x": {**ok, "shape": [-2]}}, b"\0" * 8),
            "bad data_offsets": _raw({"x": {**ok, "data_offsets": [8, 0]}}, b"\0" * 8),
            "span": _raw({"x": {**ok, "shape": [3]}}, b"\0" * 8),
            "gap or overlap": _raw({"x": ok, "y": {**ok, "data_offsets": [4, 12]}}, b"\0" * 12),
            "starts at": _raw({"x": {**ok, "data_offsets": [4, 12]}}, b"\0" * 12),
            "cover": _raw({"x": ok}, b"\0" * 12),
            "string -> string": _raw({"__metadata__": {"a": 1}, "x": ok}, b"\0" * 8),
            "not a JSON object": struct.pack("<Q", 2) + b"[]",
        }
        for msg, raw in cases.items():
            with self.subTest(msg):
                with self.assertRaises(st.SafetensorsError) as ctx:
                    st.deserialize(raw)
                self.assertIn(msg.split()[0], str(ctx.exception))

    def test_bad_writes(self):
        with self.assertRaises(st.SafetensorsError):
            st.serialize({"__metadata__": np.ones(1)})
        with self.assertRaises(st.SafetensorsError):
            st.serialize({"x": np.ones(1, np.complex64)})
        with self.assertRaises(st.SafetensorsError):
            st.serialize({"x": np.ones(1)}, {"k": 1})


# ============================================================================ reference model

def tiny(**kw):
    base = dict(d_model=16, heads=4, d_ff=32, encoder_layers=2, decoder_layers=2, dropout=0.0,
                attention_dropout=0.0, src_vocab_size=23, trg_vocab_size=19, max_length=32)
    return rm.ModelConfig(**{**base, **kw}).validate()


class ReferenceTests(unittest.TestCase):
    def test_names_follow_the_contract(self):
        for name, over in mr.VARIANTS.items():
            cfg = rm.ModelConfig(**{**mr.BASE, **over}).validate()
            m = rm.Transformer(cfg)
            shapes = {n: tuple(t.shape) for n, t in m.state_dict().items()}
            self.assertEqual(shapes, rm.expected_shapes(cfg), name)
            self.assertEqual(len(list(m.buffers())), 0)
            self.assertEqual(len(list(m.parameters())), len(shapes))
        names = set(rm.expected_shapes(tiny(bias=False, tie_output=True, output_bias=True)))
        self.assertIn("output.bias", names)
        self.assertNotIn("output.weight", names)
        self.assertNotIn("encoder.layers.0.ffn.fc1.bias", names)
        self.assertIn("decoder.layers.1.cross_attn_norm.weight", names)
        dec = rm.expected_shapes(tiny(decoder_only=True, encoder_layers=0, src_vocab_size=0,
                                      positions="learned"))
        self.assertFalse([n for n in dec if "encoder" in n or "cross" in n or ".src." in n])

    def test_config(self):
        cfg = tiny(norm="pre", positions="learned", layer_norm_eps=1e-6)
        self.assertEqual(rm.ModelConfig.from_dict(json.loads(cfg.to_json())), cfg)
        fields = list(rm.ModelConfig.__dataclass_fields__)
        # The vocabulary fingerprints only when recorded, as tfm writes them.
        self.assertEqual(list(json.loads(cfg.to_json())),
                         [f for f in fields if not f.endswith("_vocab_fingerprint")])
        printed = dataclasses.replace(cfg, src_vocab_fingerprint="fnv1a64:0123456789abcdef",
                                      trg_vocab_fingerprint="fnv1a64:fedcba9876543210")
        self.assertEqual(list(json.loads(printed.to_json())), fields)
        self.assertEqual(rm.ModelConfig.from_dict(json.loads(printed.to_json())), printed)
        for bad in ({"nope": 1}, {"norm": "middle"}, {"heads": 5}, {"share_embeddings": True},
                    {"decoder_only": True}, {"eos_id": 0}, {"d_model": 16.0}):
            with self.subTest(bad), self.assertRaises(ValueError):
                rm.ModelConfig.from_dict({**tiny().to_dict(), **bad})

    def test_position_tables(self):
        t = rm.sinusoid_table(50, 16, "sinusoidal")
        p, i = 37, 5
        self.assertAlmostEqual(t[p, 2 * i], np.sin(p / 10000 ** (2 * i / 16)), places=14)
        self.assertAlmostEqual(t[p, 2 * i + 1], np.cos(p / 10000 ** (2 * i / 16)), places=14)
        c = rm.sinusoid_table(50, 15, "sinusoidal_concat")
        inv = np.exp(-np.arange(7) * np.log(10000) / 6)
        np.testing.assert_allclose(c[p, :7], np.sin(p * inv), atol=1e-15)
        np.testing.assert_allclose(c[p, 7:14], np.cos(p * inv), atol=1e-15)
        self.assertTrue((c[:, 14] == 0).all())
        self.assertEqual(rm.sinusoid_table(3, 2, "sinusoidal_concat")[1].tolist(),
                         [np.sin(1.0), np.cos(1.0)])  # n = 1: max(n - 1, 1) guards the division

    def _model(self, **kw):
        m = rm.Transformer(tiny(**kw))
        rm.init_parameters(m, 3)
        mr.perturb_vectors(m, np.random.default_rng(4))
        return m.double().eval()

    def test_causal_and_padding(self):
        for kw in ({}, {"norm": "pre", "final_norm": True, "positions": "sinusoidal_concat"},
                   {"decoder_only": True, "encoder_layers": 0, "src_vocab_size": 0}):
            m = self._model(**kw)
            src = None if m.cfg.decoder_only else [[5, 6, 7], [8]]
            s, ti, to = rm.make_batch(m.cfg, src, [[4, 5, 6], [7, 8]])
            with torch.no_grad():
                base = m(s, ti)
                ti2 = ti.clone()
                ti2[0, 2:] = 9  # change the future of position 1
                self.assertTrue(torch.equal(m(s, ti2)[0, :2], base[0, :2]))
                if s is not None:  # more source padding changes nothing
                    s2 = torch.cat([s, torch.zeros(2, 3, dtype=s.dtype)], 1)
                    torch.testing.assert_close(m(s2, ti), base, rtol=1e-13, atol=1e-13)
                # more target padding changes nothing at the real positions
                ti3 = torch.cat([ti, torch.zeros(2, 2, dtype=ti.dtype)], 1)
                torch.testing.assert_close(m(s, ti3)[:, :ti.shape[1]][to != 0],
                                           base[to != 0], rtol=1e-13, atol=1e-13)
                # log_probs of a batch == a sentence at a time
                lp = m.log_probs(src, [[4, 5, 6], [7, 8]])
                for i, y in enumerate([[4, 5, 6], [7, 8]]):
                    single = m.log_probs(None if src is None else [src[i]], [y])
                    self.assertAlmostEqual(lp[i].item(), single[0].item(), delta=1e-12)

    def test_log_probs_by_hand(self):
        m = self._model(embed_scale="prj", tie_output=True, output_bias=True)
        with torch.no_grad():
            lp = m.log_probs([[5, 6]], [[7]])
            s = torch.tensor([[5, 6, m.cfg.eos_id]])
            logits = m(s, torch.tensor([[m.cfg.bos_id, 7]]))
            ls = torch.log_softmax(logits[0], -1)
        self.assertAlmostEqual(lp.item(), (ls[0, 7] + ls[1, m.cfg.eos_id]).item(), delta=1e-13)
        with self.assertRaises(ValueError):
            m.log_probs([[5, m.cfg.eos_id]], [[7]])

    def test_source_framing(self):
        """source_bos / source_eos frame each source; an empty source needs one of them."""
        want = {(False, True): [[5, 6, 2], [7, 2, 0]], (True, True): [[1, 5, 6, 2], [1, 7, 2, 0]],
                (True, False): [[1, 5, 6], [1, 7, 0]], (False, False): [[5, 6], [7, 0]]}
        for (bos, eos), rows in want.items():
            cfg = tiny(source_bos=bos, source_eos=eos)
            s, ti, to = rm.make_batch(cfg, [[5, 6], [7]], [[4], [8, 9]])
            self.assertEqual(s.tolist(), rows, (bos, eos))
            self.assertEqual(ti.tolist(), [[1, 4, 0], [1, 8, 9]])
            self.assertEqual(rm.ModelConfig.from_dict(json.loads(cfg.to_json())), cfg)
        self.assertEqual(rm.make_batch(tiny(), [[]], [[4]])[0].tolist(), [[2]])
        with self.assertRaises(ValueError):
            rm.make_batch(tiny(source_eos=False), [[5], []], [[4], [4]])
        with self.assertRaises(ValueError):
            tiny(source_bos="yes")

    def test_label_smoothed_loss(self):
        m = self._model()
        s, ti, to = rm.make_batch(m.cfg, [[5, 6, 7], [8]], [[4, 5, 6], [7]])
        with torch.no_grad():
            logp = torch.log_softmax(m(s, ti), -1)
            keep = to != m.cfg.pad_id
            nll = -logp.gather(-1, to[..., None])[..., 0][keep]
            smooth = -logp.mean(-1)[keep]
            want = (0.9 * nll + 0.1 * smooth).mean()
            self.assertAlmostEqual(m.loss(s, ti, to).item(), want.item(), delta=1e-13)


# ============================================================================ converters

def seed_cases():
    """name -> (constructor, layout, extra converter flags, uses decoder only)."""
    return {
        "seed004_shared_tied": (lambda: sm.Seed004Transformer(
            23, 23, 0, 0, d_word_vec=16, d_model=16, d_inner=32, n_layers=2, n_head=4, d_k=4,
            d_v=4, dropout=0.0, n_position=40), "seed004", ["--heads", "4"]),
        "seed004_untied": (lambda: sm.Seed004Transformer(
            23, 19, 0, 0, d_word_vec=16, d_model=16, d_inner=32, n_layers=2, n_head=2, d_k=8,
            d_v=8, dropout=0.0, n_position=40, trg_emb_prj_weight_sharing=False,
            emb_src_trg_weight_sharing=False), "seed004", ["--heads", "2"]),
        "seed004_emb": (lambda: sm.Seed004Transformer(
            23, 23, 0, 0, d_word_vec=16, d_model=16, d_inner=32, n_layers=1, n_head=4, d_k=4,
            d_v=4, dropout=0.0, n_position=40, scale_emb_or_prj="emb"), "seed004",
            ["--heads", "4", "--embed-scale", "emb"]),
        "seed000_shared": (lambda: sm.Seed000Transformer(
            23, 23, num_layers=2, hidden_size=16, filter_size=32, dropout_rate=0.0,
            src_pad_idx=0, trg_pad_idx=0), "seed000", ["--heads", "8"]),
        "seed000_odd_unshared": (lambda: sm.Seed000Transformer(
            23, 19, num_layers=2, hidden_size=15, filter_size=32, dropout_rate=0.0,
            share_target_embedding=False, src_pad_idx=0, trg_pad_idx=0, num_heads=3),
            "seed000", ["--heads", "3"]),
        "seed000_decoder_only": (lambda: sm.Seed000Transformer(
            0, 19, num_layers=2, hidden_size=16, filter_size=32, dropout_rate=0.0,
            has_inputs=False, src_pad_idx=0, trg_pad_idx=0, num_heads=4), "seed000",
            ["--heads", "4"]),
        "torch_nn_post": (lambda: sm.TorchNNSeq2Seq(
            2, 2, 16, 4, 23, 19, dim_feedforward=32, dropout=0.0, pad_idx=1, maxlen=100),
            "torch-nn", ["--heads", "4"]),
        "torch_nn_pre_gelu": (lambda: sm.TorchNNSeq2Seq(
            1, 2, 16, 2, 23, 19, dim_feedforward=24, dropout=0.0, norm_first=True,
            activation="gelu", pad_idx=1, maxlen=100), "torch-nn",
            ["--heads", "2", "--norm", "pre", "--activation", "gelu"]),
    }


SRC = [[5, 6, 7, 8, 9, 10], [4, 11, 12], [13]]
TRG = [[5, 6, 7, 8, 9], [4, 11, 12], [], [13]]
SRC4 = SRC + [[14, 15]]


def convert_in_process(model, layout, flags, d):
    ck = os.path.join(d, "ck.pt")
    torch.save(model.state_dict(), ck)
    err = io.StringIO()
    with redirect_stderr(err):
        rc = cp.main(["--layout", layout, "--checkpoint", ck, "--out", os.path.join(d, "out")]
                     + flags)
    if rc != 0:
        raise AssertionError(err.getvalue())
    return rm.load_model_dir(os.path.join(d, "out"), torch.float64).eval()


class ConvertTests(unittest.TestCase):
    def _compare(self, seed_model, ref, exact_tables=True):
        m = (sm.to_float64(seed_model) if exact_tables else seed_model.double()).eval()
        cfg = ref.cfg
        src = None if cfg.decoder_only else SRC4
        s, ti, to = rm.make_batch(cfg, src, TRG)
        with torch.no_grad():
            want = sm.logits(m, s, ti)
            got = ref(s, ti)
            lp_want = (torch.log_softmax(want, -1).gather(-1, to[..., None])[..., 0]
                       * (to != cfg.pad_id)).sum(1)
            lp_got = ref.log_probs(src, TRG)
        torch.testing.assert_close(lp_got, lp_want, rtol=1e-9, atol=0)
        keep = to != cfg.pad_id  # seed 000 zeroes pad embeddings: pad rows may differ
        torch.testing.assert_close(got[keep], want[keep], rtol=1e-9, atol=1e-9)

    def test_layouts(self):
        for i, (name, (make, layout, flags)) in enumerate(seed_cases().items()):
            with self.subTest(name), tempfile.TemporaryDirectory() as d:
                torch.manual_seed(i)
                model = make()
                mr.randomize(model, 100 + i)
                model.eval()
                pad = "1" if layout == "torch-nn" else "0"
                ref = convert_in_process(model, layout, flags + ["--pad-id", pad, "--bos-id", "2",
                                                                 "--eos-id", "3"], d)
                self._check_config(name, ref.cfg)
                self._compare(model, ref)

    def test_source_framing_flags(self):
        """--[no-]source-bos / --[no-]source-eos override the layout's framing; the seed model
        fed each framing gives the converted model's log-probs, and each framing other numbers."""
        make, layout, flags = seed_cases()["seed004_shared_tied"]
        torch.manual_seed(0)
        model = make()
        mr.randomize(model, 5)
        model.eval()
        scores = {}
        for extra, want in (([], (True, True)), (["--no-source-eos"], (True, False)),
                            (["--no-source-bos"], (False, True)),
                            (["--no-source-bos", "--no-source-eos"], (False, False)),
                            (["--source-bos", "--source-eos"], (True, True))):
            with self.subTest(extra), tempfile.TemporaryDirectory() as d:
                ref = convert_in_process(model, layout, flags + extra, d)
                self.assertEqual((ref.cfg.source_bos, ref.cfg.source_eos), want)
                self._compare(model, ref)
                scores[want] = ref.log_probs(SRC4, TRG)
        for a in scores:
            for b in scores:
                if a < b:
                    self.assertGreater((scores[a] - scores[b]).abs().max().item(), 1e-3, (a, b))

    def _check_config(self, name, cfg):
        want = {
            "seed004_shared_tied": dict(share_embeddings=True, tie_output=True, embed_scale="prj",
                                        norm="post", embed_norm=True, layer_norm_eps=1e-6,
                                        max_length=40, positions="sinusoidal", bias=True,
                                        source_bos=True, source_eos=True),
            "seed004_untied": dict(share_embeddings=False, tie_output=False, embed_scale="none",
                                   heads=2),
            "seed004_emb": dict(embed_scale="emb", encoder_layers=1),
            "seed000_shared": dict(share_embeddings=True, tie_output=True, norm="pre",
                                   final_norm=True, positions="sinusoidal_concat", heads=8,
                                   embed_scale="emb", max_length=1024, source_bos=False,
                                   source_eos=True),
            "seed000_odd_unshared": dict(share_embeddings=False, d_model=15, src_vocab_size=23,
                                         trg_vocab_size=19),
            "seed000_decoder_only": dict(decoder_only=True, encoder_layers=0, src_vocab_size=0),
            "torch_nn_post": dict(norm="post", final_norm=True, output_bias=True,
                                  tie_output=False, max_length=100, layer_norm_eps=1e-5,
                                  source_bos=True, source_eos=True),
            "torch_nn_pre_gelu": dict(norm="pre", activation="gelu", d_ff=24, encoder_layers=1),
        }[name]
        for k, v in want.items():
            self.assertEqual(getattr(cfg, k), v, f"{name}: {k}")

    def test_learned_positions_and_wrapped_checkpoint(self):
        """A position table that is not the sinusoid becomes learned positions; a checkpoint
        dict holding the state dict under "model" (jadore's train.py) is accepted."""
        torch.manual_seed(0)
        model = sm.TorchNNSeq2Seq(2, 2, 16, 4, 23, 19, dim_feedforward=32, dropout=0.0,
                                  pad_idx=0, maxlen=20)
        mr.randomize(model, 7)
        model.positional_encoding.pos_embedding.normal_(0, 0.3)
        model.eval()
        with tempfile.TemporaryDirectory() as d:
            ck = os.path.join(d, "ck.pt")
            torch.save({"epoch": 3, "model": model.state_dict()}, ck)
            with redirect_stderr(io.StringIO()):
                rc = cp.main(["--layout", "torch-nn", "--checkpoint", ck, "--out", d + "/o",
                              "--heads", "4", "--pad-id", "0", "--bos-id", "1", "--eos-id", "2"])
            self.assertEqual(rc, 0)
            ref = rm.load_model_dir(d + "/o").eval()
        self.assertEqual((ref.cfg.positions, ref.cfg.max_length), ("learned", 20))
        self._compare(model, ref, exact_tables=False)

    def test_errors(self):
        torch.manual_seed(0)
        sd = sm.Seed004Transformer(23, 23, 0, 0, d_word_vec=16, d_model=16, d_inner=32,
                                   n_layers=1, n_head=4, d_k=4, d_v=4).state_dict()
        with tempfile.TemporaryDirectory() as d:
            def run(state, *flags, layout="seed004"):
                torch.save(state, d + "/ck.pt")
                err = io.StringIO()
                with redirect_stderr(err):
                    rc = cp.main(["--layout", layout, "--checkpoint", d + "/ck.pt",
                                  "--out", d + "/o", *flags])
                return rc, err.getvalue()
            rc, err = run({**sd, "encoder.extra.weight": torch.ones(2)}, "--heads", "4")
            self.assertEqual(rc, 1)
            self.assertIn("unknown tensor names", err)
            self.assertIn("encoder.extra.weight", err)
            missing = {k: v for k, v in sd.items() if "pos_ffn.w_2.weight" not in k}
            rc, err = run(missing, "--heads", "4")
            self.assertEqual(rc, 1)
            self.assertIn("missing tensor", err)
            self.assertIn("pos_ffn.w_2.weight", err)
            rc, err = run(sd, "--heads", "4", layout="torch-nn")
            self.assertEqual(rc, 1)
            self.assertIn("missing tensor 'tgt_tok_emb.embedding.weight'", err)
            rc, err = run(sd, "--heads", "5")
            self.assertEqual(rc, 1)
            self.assertIn("multiple of --heads", err)
            self.assertFalse(os.path.exists(d + "/o"))

    def test_command_line(self):
        """The script runs as a program: usage errors and a successful conversion."""
        torch.manual_seed(0)
        model = sm.Seed000Transformer(23, 23, num_layers=1, hidden_size=16, filter_size=32,
                                      dropout_rate=0.0, src_pad_idx=0, trg_pad_idx=0)
        with tempfile.TemporaryDirectory() as d:
            torch.save(model.state_dict(), d + "/ck.pt")
            script = os.path.join(HERE, "convert_pytorch.py")
            r = subprocess.run([sys.executable, script, "--layout", "seed000", "--checkpoint",
                                d + "/ck.pt", "--out", d + "/o", "--heads", "4"],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout, "")
            self.assertEqual(sorted(os.listdir(d + "/o")), ["config.json", "model.safetensors"])
            r = subprocess.run([sys.executable, script, "--layout", "nope"], capture_output=True,
                               text=True)
            self.assertEqual(r.returncode, 2)


# ============================================================================ fixtures

def _read(path):
    with open(path) as f:
        return f.read()


def _same_numbers(a_path, b_path):
    """Tolerance comparison for when bytes differ (float64 summation order on another CPU)."""
    a, am = st.load_file(a_path)
    b, bm = st.load_file(b_path)
    if am != bm or list(a) != list(b):
        return False
    for k in a:
        x, y = a[k], b[k]
        if x.dtype != y.dtype or x.shape != y.shape:
            return False
        if x.dtype.kind in "iub":
            if not np.array_equal(x, y):
                return False
        else:
            rtol = 1e-12 if x.dtype == np.float64 else 2e-6
            if not np.allclose(x, y, rtol=rtol, atol=rtol * max(1.0, float(np.abs(x).max(initial=0)))):
                return False
    return True


class FixtureTests(unittest.TestCase):
    def test_regenerate(self):
        if not os.path.isdir(FIXTURES):
            self.skipTest("no tests/fixtures")
        with tempfile.TemporaryDirectory() as d:
            mr.generate(d)
            # README.md is written by hand; hf/ is make_hf_fixtures.py's (Transformers models),
            # hf_tokenizers/ make_hf_tokenizer_fixtures.py's, hf_text/ make_hf_text_fixtures.py's,
            # ct2/ and ct2_marian/ make_ct2_fixture.py's, ct2_generator/ ct2_generator_diff.py's.
            generated = ("hf" + os.sep, "hf_tokenizers" + os.sep, "hf_text" + os.sep,
                         "ct2" + os.sep, "ct2_marian" + os.sep, "ct2_generator" + os.sep)
            files = lambda root: sorted(
                rel for rel in (os.path.relpath(os.path.join(p, f), root)
                                for p, _, fs in os.walk(root) for f in fs)
                if os.path.basename(rel) != "README.md" and not rel.startswith(generated))
            self.assertEqual(files(d), files(FIXTURES))
            inexact = []
            for rel in files(d):
                with open(os.path.join(d, rel), "rb") as f1, \
                        open(os.path.join(FIXTURES, rel), "rb") as f2:
                    if f1.read() == f2.read():
                        continue
                if rel.endswith("reference.safetensors") and _same_numbers(
                        os.path.join(d, rel), os.path.join(FIXTURES, rel)):
                    inexact.append(rel)
                    continue
                self.fail(f"tests/fixtures/{rel} differs from what make_reference.py generates")
            if inexact:
                print(f"\nnote: equal to rounding but not byte-identical here: {inexact}",
                      file=sys.stderr)

    def test_fixtures_agree_with_reference(self):
        for name in mr.VARIANTS:
            with self.subTest(name):
                d = os.path.join(FIXTURES, name)
                ref = rm.load_model_dir(d).eval()
                t, meta = st.load_file(os.path.join(d, "reference.safetensors"))
                self.assertEqual(json.loads(meta["config"]), ref.cfg.to_dict())
                src = torch.from_numpy(t["src"]).long() if "src" in t else None
                self.assertEqual(src is None, ref.cfg.decoder_only)
                ti, to = (torch.from_numpy(t[k]).long() for k in ("trg_in", "trg_out"))
                pad = ref.cfg.pad_id
                self.assertTrue((ti[:, 0] == ref.cfg.bos_id).all())
                self.assertTrue((ti == pad).any() and (src is None or (src == pad).any()))
                with torch.no_grad():
                    np.testing.assert_allclose(ref(src, ti).numpy(), t["logits"], rtol=1e-6,
                                               atol=1e-6)
                    np.testing.assert_allclose(ref.batch_log_probs(src, ti, to).numpy(),
                                               t["scores"], rtol=1e-12)
                grads = {k[5:] for k in t if k.startswith("grad.")}
                self.assertEqual(grads, set(rm.expected_shapes(ref.cfg)))
                traj = t["loss_trajectory"]
                self.assertEqual(traj.shape, (10,))
                self.assertTrue((np.diff(traj) < 0).all(), traj)

    def test_convert_fixtures(self):
        want = {}
        for name in mr.CONVERT_CASES:
            with self.subTest(name):
                d = os.path.join(FIXTURES, "convert", name)
                ref = rm.load_model_dir(d).eval()
                lines = lambda f: _read(os.path.join(d, f)).splitlines()
                ids = lambda f: [[int(x) for x in line.split()] for line in lines(f)]
                want[name] = np.array([float(x) for x in lines("expected_scores.txt")])
                got = ref.log_probs(ids("src.ids"), ids("trg.ids")).tolist()
                np.testing.assert_allclose(got, want[name], rtol=1e-8)
        # The seed004 pair: one checkpoint and the same ids, framed [BOS] x [EOS] and [BOS] x.
        framing = lambda n: (lambda c: (c.source_bos, c.source_eos))(
            rm.load_model_dir(os.path.join(FIXTURES, "convert", n)).cfg)
        self.assertEqual(framing("seed004"), (True, True))
        self.assertEqual(framing("seed004-no-source-eos"), (True, False))
        self.assertGreater(np.abs(want["seed004"] - want["seed004-no-source-eos"]).max(), 1e-3)

    def test_size(self):
        total = sum(os.path.getsize(os.path.join(p, f))
                    for p, _, fs in os.walk(FIXTURES) for f in fs)
        # 1.3 MB of tfm's own fixtures; hf_tokenizers/ 1.0 MB (12 Hugging Face tokenizer
        # directories and Transformers' ids for 200 lines each, tests/data/test_hf_tokenizers.cpp);
        # hf/ 1.6 MB (10 random-weight Transformers models and generate()'s outputs,
        # tests/convert/test_hf_parity.cpp); hf_text/ 0.47 MB (a Marian and an NLLB model with
        # their texts, tests/convert/test_hf_text.cpp); ct2/ 0.27 MB (a tiny model and
        # CTranslate2's answers, python/tests/test_ctranslate2.py); ct2_marian/ 0.2 MB (a
        # random-weight Transformers Marian model and CTranslate2's answers on its conversion);
        # ct2_generator/ 0.17 MB (a tiny GPT-2 and CTranslate2's Generator's answers,
        # test_ctranslate2_generator.py).
        self.assertLess(total, 5_200_000)


if __name__ == "__main__":
    unittest.main(verbosity=2)
