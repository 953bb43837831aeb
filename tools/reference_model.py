#!/usr/bin/env python3
"""The project's model in plain PyTorch: the reference the C++ `tfm` is checked against.

It implements the contract of docs/design.md ("Model", "Files", "Parameter names and config
keys"): `ModelConfig` holds exactly the config keys, and `Transformer.state_dict()` names are
exactly the tensor names of the table (the module tree is laid out so that they come out right;
there are no buffers, so state_dict() == parameters).

Math (the seeds' math with their bugs fixed; docs/seeds.md):
  embedding   x = E[ids] * (sqrt(C) if embed_scale == 'emb' else 1) + PE[0..L-1]
              x = dropout(x);  x = LayerNorm(x) if embed_norm          (seed 004's order)
  positions   sinusoidal:        PE[p, 2i] = sin(p / 10000^(2i/C)), PE[p, 2i+1] = cos(same)
              sinusoidal_concat: n = C // 2, inc = ln(10000) / max(n - 1, 1), inv_j = exp(-j inc),
                                 PE[p] = [sin(p inv) | cos(p inv)] (+ a zero column when C is odd)
              learned:           pos.{src,trg}.weight (max_length, C)
  attention   q/k/v/out projections, head h = columns [h*Dh, (h+1)*Dh), scores * Dh^-0.5, pad keys
              masked (everywhere), causal mask in decoder self-attention, softmax,
              attention dropout, @ V, out projection
  sublayer    post: x = LN(x + dropout(f(x)))      pre: x = x + dropout(f(LN(x)))
  FFN         fc2(act(fc1(x))), act relu or exact (erf) gelu; NO dropout inside the FFN
              (the paper and seed 004; seed 000 has one - see docs/seeds.md)
  final_norm  a LayerNorm at the end of each stack (independent of pre/post: nn.Transformer
              has post-norm layers and final norms)
  output      logits = h @ W^T (+ output.bias), W = output.weight, or embed.trg.weight when
              tie_output; then logits *= C^-0.5 if embed_scale == 'prj'
Sequences: the source is [BOS] x1 .. xm [EOS], BOS when source_bos (default false), EOS when
source_eos (default true: tfm appends EOS to each source line, as fairseq and Marian do; the
converters set both from the layout); the decoder reads [BOS, y1 .. yn] and predicts
[y1 .. yn, EOS]; pad_id positions are masked as keys everywhere and ignored by the loss. decoder_only: no encoder, no cross-attention,
no embed.src; the model scores targets alone.

Init (init_parameters): Xavier uniform for matrices, N(0, C^-0.5) for embeddings and learned
positions, zero biases, LayerNorm weight 1 / bias 0; drawn from numpy's PCG64 with a seed, so the
numbers are the same on every machine.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

import safetensors_io

FORMAT_VERSION = 1


@dataclass
class ModelConfig:
    """The config keys of docs/design.md, in the order config.json lists them."""
    d_model: int = 512
    heads: int = 8
    d_ff: int = 2048
    encoder_layers: int = 6
    decoder_layers: int = 6
    dropout: float = 0.1
    attention_dropout: float = 0.0
    norm: str = "post"                 # pre | post
    final_norm: bool = False
    embed_norm: bool = False
    embed_scale: str = "emb"           # emb | prj | none
    share_embeddings: bool = False     # embed.src is embed.trg
    tie_output: bool = False           # output.weight is embed.trg.weight
    output_bias: bool = False
    positions: str = "sinusoidal"      # sinusoidal | sinusoidal_concat | learned
    decoder_only: bool = False
    bias: bool = True                  # attention projections and FFN
    activation: str = "relu"           # relu | gelu
    layer_norm_eps: float = 1e-5
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    source_bos: bool = False           # [BOS] before each source sentence
    source_eos: bool = True            # [EOS] after each source sentence
    max_length: int = 1024
    src_vocab_size: int = 0
    trg_vocab_size: int = 0
    src_vocab_fingerprint: str = ""    # the vocabularies tfm trained with (empty: not recorded)
    trg_vocab_fingerprint: str = ""
    format_version: int = FORMAT_VERSION

    def validate(self) -> "ModelConfig":
        def need(cond, msg):
            if not cond:
                raise ValueError(f"config: {msg}")
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            want = {"int": int, "float": float, "bool": bool, "str": str}[f.type]
            ok = isinstance(v, want) and not (want is int and isinstance(v, bool))
            if want is float and isinstance(v, int) and not isinstance(v, bool):
                ok = True
            need(ok, f"{f.name} must be {f.type}, got {v!r}")
        need(self.format_version == FORMAT_VERSION, f"format_version {self.format_version} != 1")
        need(self.d_model > 0 and self.heads > 0 and self.d_model % self.heads == 0,
             f"d_model {self.d_model} must be a positive multiple of heads {self.heads}")
        need(self.d_ff > 0, "d_ff must be positive")
        need(self.decoder_layers >= 1, "decoder_layers must be >= 1")
        need(0.0 <= self.dropout < 1.0 and 0.0 <= self.attention_dropout < 1.0,
             "dropout rates must be in [0, 1)")
        need(self.norm in ("pre", "post"), f"norm must be pre|post, got {self.norm!r}")
        need(self.embed_scale in ("emb", "prj", "none"), f"bad embed_scale {self.embed_scale!r}")
        need(self.positions in ("sinusoidal", "sinusoidal_concat", "learned"),
             f"bad positions {self.positions!r}")
        need(self.activation in ("relu", "gelu"), f"bad activation {self.activation!r}")
        need(self.layer_norm_eps > 0, "layer_norm_eps must be positive")
        need(self.max_length > 0, "max_length must be positive")
        need(self.trg_vocab_size > 0, "trg_vocab_size must be positive")
        ids = {"pad_id": self.pad_id, "bos_id": self.bos_id, "eos_id": self.eos_id}
        for k, v in ids.items():
            need(0 <= v < self.trg_vocab_size, f"{k} {v} outside the target vocabulary")
        need(len(set(ids.values())) == 3, "pad_id, bos_id and eos_id must differ")
        if self.decoder_only:
            # No encoder: its keys are written as 0 / false so that a config says one thing.
            need(self.encoder_layers == 0, "decoder_only needs encoder_layers 0")
            need(self.src_vocab_size == 0, "decoder_only needs src_vocab_size 0")
            need(not self.share_embeddings, "decoder_only has no source embedding to share")
        else:
            need(self.encoder_layers >= 1, "encoder_layers must be >= 1")
            need(self.src_vocab_size > 0, "src_vocab_size must be positive")
            need(self.pad_id < self.src_vocab_size and self.eos_id < self.src_vocab_size
                 and self.bos_id < self.src_vocab_size,
                 "pad_id, bos_id and eos_id must be in the source vocabulary")
            need(not self.share_embeddings or self.src_vocab_size == self.trg_vocab_size,
                 "share_embeddings needs src_vocab_size == trg_vocab_size")
        return self

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        # As tfm writes them: only when recorded.
        for key in ("src_vocab_fingerprint", "trg_vocab_fingerprint"):
            if not d[key]:
                del d[key]
        return d

    def to_json(self, indent: int | None = 2) -> str:
        if indent is None:
            return json.dumps(self.to_dict(), separators=(",", ":"))
        return json.dumps(self.to_dict(), indent=indent) + "\n"

    @classmethod
    def from_dict(cls, d: dict) -> "ModelConfig":
        """Unknown keys are an error; missing keys take the defaults above."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"config: unknown keys {unknown}")
        return cls(**d).validate()


def expected_shapes(cfg: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Every tensor name of the contract table with its shape, in state_dict order."""
    C, Fd, out = cfg.d_model, cfg.d_ff, {}
    enc = not cfg.decoder_only
    out["embed.trg.weight"] = (cfg.trg_vocab_size, C)
    if enc and not cfg.share_embeddings:
        out["embed.src.weight"] = (cfg.src_vocab_size, C)
    if cfg.positions == "learned":
        if enc:
            out["pos.src.weight"] = (cfg.max_length, C)
        out["pos.trg.weight"] = (cfg.max_length, C)

    def attn(prefix):
        for p in ("q", "k", "v", "out"):
            out[f"{prefix}.{p}_proj.weight"] = (C, C)
            if cfg.bias:
                out[f"{prefix}.{p}_proj.bias"] = (C,)

    def norm(prefix):
        out[f"{prefix}.weight"] = (C,)
        out[f"{prefix}.bias"] = (C,)

    for stack, n in (("encoder", cfg.encoder_layers if enc else 0), ("decoder", cfg.decoder_layers)):
        if stack == "encoder" and not enc:
            continue
        if cfg.embed_norm:
            norm(f"{stack}.embed_norm")
        for i in range(n):
            p = f"{stack}.layers.{i}"
            attn(f"{p}.self_attn")
            norm(f"{p}.self_attn_norm")
            if stack == "decoder" and enc:
                attn(f"{p}.cross_attn")
                norm(f"{p}.cross_attn_norm")
            out[f"{p}.ffn.fc1.weight"] = (Fd, C)
            if cfg.bias:
                out[f"{p}.ffn.fc1.bias"] = (Fd,)
            out[f"{p}.ffn.fc2.weight"] = (C, Fd)
            if cfg.bias:
                out[f"{p}.ffn.fc2.bias"] = (C,)
            norm(f"{p}.ffn_norm")
        if cfg.final_norm:
            norm(f"{stack}.final_norm")
    if not cfg.tie_output:
        out["output.weight"] = (cfg.trg_vocab_size, C)
    if cfg.output_bias:
        out["output.bias"] = (cfg.trg_vocab_size,)
    return out


# ----------------------------------------------------------------------------- positions

def sinusoid_table(length: int, d: int, kind: str) -> np.ndarray:
    """(length, d) float64 sinusoidal position table, 'sinusoidal' or 'sinusoidal_concat'."""
    p = np.arange(length, dtype=np.float64)[:, None]
    if kind == "sinusoidal":
        # column 2i and 2i+1 share the frequency 10000^(-2i/d)
        two_i = (np.arange(d) // 2 * 2).astype(np.float64)
        angle = p / np.power(10000.0, two_i / d)
        table = angle.copy()
        table[:, 0::2] = np.sin(angle[:, 0::2])
        table[:, 1::2] = np.cos(angle[:, 1::2])
        return table
    if kind == "sinusoidal_concat":
        n = d // 2
        inc = math.log(10000.0) / max(n - 1, 1)
        inv = np.exp(-np.arange(n, dtype=np.float64) * inc)
        t = p * inv[None, :]
        table = np.concatenate([np.sin(t), np.cos(t), np.zeros((length, d % 2))], axis=1)
        return table
    raise ValueError(f"no sinusoid of kind {kind!r}")


# ----------------------------------------------------------------------------- modules

class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        C = cfg.d_model
        self.heads = cfg.heads
        self.q_proj = nn.Linear(C, C, bias=cfg.bias)
        self.k_proj = nn.Linear(C, C, bias=cfg.bias)
        self.v_proj = nn.Linear(C, C, bias=cfg.bias)
        self.out_proj = nn.Linear(C, C, bias=cfg.bias)
        self.dropout = nn.Dropout(cfg.attention_dropout)

    def forward(self, x, mem, key_pad, causal: bool):
        """x (B, T, C) queries, mem (B, S, C) keys/values, key_pad (B, S) True at pads."""
        B, T, C = x.shape
        S, H = mem.shape[1], self.heads
        Dh = C // H
        q = self.q_proj(x).view(B, T, H, Dh).transpose(1, 2)      # (B, H, T, Dh)
        k = self.k_proj(mem).view(B, S, H, Dh).transpose(1, 2)    # (B, H, S, Dh)
        v = self.v_proj(mem).view(B, S, H, Dh).transpose(1, 2)
        scores = (q @ k.transpose(-1, -2)) * Dh ** -0.5           # (B, H, T, S)
        mask = key_pad[:, None, None, :]
        if causal:
            mask = mask | torch.ones(T, S, dtype=torch.bool, device=x.device).triu(1)
        # Every row keeps at least one key (BOS / EOS are never pads), so -inf is safe.
        scores = scores.masked_fill(mask, float("-inf"))
        p = self.dropout(torch.softmax(scores, dim=-1))
        out = (p @ v).transpose(1, 2).reshape(B, T, C)
        return self.out_proj(out)


class FeedForward(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.fc1 = nn.Linear(cfg.d_model, cfg.d_ff, bias=cfg.bias)
        self.fc2 = nn.Linear(cfg.d_ff, cfg.d_model, bias=cfg.bias)
        self.act = F.relu if cfg.activation == "relu" else F.gelu  # F.gelu is the exact erf form

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Layer(nn.Module):
    """An encoder layer, or a decoder layer when `cross` (registration order = name order)."""

    def __init__(self, cfg: ModelConfig, decoder: bool, cross: bool):
        super().__init__()
        self.pre = cfg.norm == "pre"
        self.causal = decoder
        eps = cfg.layer_norm_eps
        self.self_attn = Attention(cfg)
        self.self_attn_norm = nn.LayerNorm(cfg.d_model, eps=eps)
        if cross:
            self.cross_attn = Attention(cfg)
            self.cross_attn_norm = nn.LayerNorm(cfg.d_model, eps=eps)
        self.ffn = FeedForward(cfg)
        self.ffn_norm = nn.LayerNorm(cfg.d_model, eps=eps)
        self.dropout = nn.Dropout(cfg.dropout)

    def _sub(self, x, norm, f):
        if self.pre:
            return x + self.dropout(f(norm(x)))
        return norm(x + self.dropout(f(x)))

    def forward(self, x, pad, mem=None, mem_pad=None):
        x = self._sub(x, self.self_attn_norm, lambda h: self.self_attn(h, h, pad, self.causal))
        if mem is not None:
            x = self._sub(x, self.cross_attn_norm,
                          lambda h: self.cross_attn(h, mem, mem_pad, False))
        return self._sub(x, self.ffn_norm, self.ffn)


class Stack(nn.Module):
    def __init__(self, cfg: ModelConfig, n: int, decoder: bool):
        super().__init__()
        eps = cfg.layer_norm_eps
        if cfg.embed_norm:
            self.embed_norm = nn.LayerNorm(cfg.d_model, eps=eps)
        cross = decoder and not cfg.decoder_only
        self.layers = nn.ModuleList(Layer(cfg, decoder, cross) for _ in range(n))
        if cfg.final_norm:
            self.final_norm = nn.LayerNorm(cfg.d_model, eps=eps)

    def forward(self, x, pad, mem=None, mem_pad=None):
        for layer in self.layers:
            x = layer(x, pad, mem, mem_pad)
        if hasattr(self, "final_norm"):
            x = self.final_norm(x)
        return x


class Output(nn.Module):
    """Holds output.weight (untied) and/or output.bias; either may be absent."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        V, C = cfg.trg_vocab_size, cfg.d_model
        if not cfg.tie_output:
            self.weight = nn.Parameter(torch.empty(V, C))
        if cfg.output_bias:
            self.bias = nn.Parameter(torch.zeros(V))


class Transformer(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        cfg.validate()
        self.cfg = cfg
        C, enc = cfg.d_model, not cfg.decoder_only
        self.embed = nn.ModuleDict()
        self.embed["trg"] = nn.Embedding(cfg.trg_vocab_size, C)
        if enc and not cfg.share_embeddings:
            self.embed["src"] = nn.Embedding(cfg.src_vocab_size, C)
        if cfg.positions == "learned":
            self.pos = nn.ModuleDict()
            if enc:
                self.pos["src"] = nn.Embedding(cfg.max_length, C)
            self.pos["trg"] = nn.Embedding(cfg.max_length, C)
        if enc:
            self.encoder = Stack(cfg, cfg.encoder_layers, decoder=False)
        self.decoder = Stack(cfg, cfg.decoder_layers, decoder=True)
        self.output = Output(cfg)
        self.dropout = nn.Dropout(cfg.dropout)
        names = list(self.state_dict())
        assert names == list(expected_shapes(cfg)), (names, list(expected_shapes(cfg)))

    # -- pieces
    def _embed(self, ids, side: str, stack: Stack):
        cfg = self.cfg
        table = self.embed["trg"] if side == "src" and cfg.share_embeddings else self.embed[side]
        x = table(ids)
        if cfg.embed_scale == "emb":
            x = x * math.sqrt(cfg.d_model)
        L = ids.shape[1]
        if L > cfg.max_length:
            raise ValueError(f"sequence length {L} exceeds max_length {cfg.max_length}")
        if cfg.positions == "learned":
            x = x + self.pos[side].weight[:L]
        else:
            pe = sinusoid_table(L, cfg.d_model, cfg.positions)
            x = x + torch.from_numpy(pe).to(x.dtype)
        x = self.dropout(x)
        if cfg.embed_norm:
            x = stack.embed_norm(x)
        return x

    def encode(self, src):
        """src (B, S) ids -> (memory (B, S, C), key pad mask (B, S))."""
        pad = src == self.cfg.pad_id
        return self.encoder(self._embed(src, "src", self.encoder), pad), pad

    def decode(self, trg_in, memory=None, src_pad=None):
        """trg_in (B, T) ids starting with BOS -> logits (B, T, V_trg)."""
        cfg = self.cfg
        h = self.decoder(self._embed(trg_in, "trg", self.decoder), trg_in == cfg.pad_id,
                         memory, src_pad)
        w = self.embed["trg"].weight if cfg.tie_output else self.output.weight
        logits = h @ w.t()
        if cfg.output_bias:
            logits = logits + self.output.bias
        if cfg.embed_scale == "prj":
            logits = logits * cfg.d_model ** -0.5
        return logits

    def forward(self, src, trg_in):
        """Logits (B, T, V_trg); src is ignored (may be None) when decoder_only."""
        if self.cfg.decoder_only:
            return self.decode(trg_in)
        memory, src_pad = self.encode(src)
        return self.decode(trg_in, memory, src_pad)

    # -- objectives
    def loss(self, src, trg_in, trg_out, label_smoothing: float = 0.1):
        """Mean label-smoothed cross-entropy over non-pad targets (torch CrossEntropyLoss)."""
        logits = self(src, trg_in)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), trg_out.reshape(-1),
                               ignore_index=self.cfg.pad_id, label_smoothing=label_smoothing)

    def batch_log_probs(self, src, trg_in, trg_out):
        """Per-sentence total log-probability of trg_out (pads excluded), (B,)."""
        logp = torch.log_softmax(self(src, trg_in), dim=-1)
        tok = logp.gather(-1, trg_out.unsqueeze(-1)).squeeze(-1)
        return (tok * (trg_out != self.cfg.pad_id)).sum(dim=1)

    @torch.no_grad()
    def log_probs(self, src: Sequence[Sequence[int]] | None, trg: Sequence[Sequence[int]]):
        """What `tfm score` prints: log P(target + EOS | source) per sentence, teacher forcing.

        src / trg are lists of id lists WITHOUT BOS/EOS (as `tfm score --ids` reads them);
        src is None for decoder_only models. Returns a float tensor (B,) in the model's dtype.
        """
        s, ti, to = make_batch(self.cfg, src, trg)
        was = self.training
        self.eval()
        try:
            return self.batch_log_probs(s, ti, to)
        finally:
            self.train(was)


def frame_source(cfg: ModelConfig, x) -> list[int]:
    """A source sentence as the encoder reads it: [BOS] x [EOS] as source_bos / source_eos say."""
    row = [cfg.bos_id] * cfg.source_bos + list(x) + [cfg.eos_id] * cfg.source_eos
    if not row:
        raise ValueError("an empty source with neither source_bos nor source_eos leaves the "
                         "encoder no token")
    return row


def make_batch(cfg: ModelConfig, src, trg):
    """(src (B,S) = framed x (frame_source), trg_in (B,T) = [BOS] + y, trg_out (B,T) = y + [EOS]),
    pad-padded, int64. src is None for decoder_only."""
    def pad(rows):
        L = max(len(r) for r in rows)
        return torch.tensor([list(r) + [cfg.pad_id] * (L - len(r)) for r in rows], dtype=torch.long)
    for rows in ([src] if src is not None else []) + [trg]:
        for r in rows:
            bad = [t for t in r if t in (cfg.pad_id, cfg.bos_id, cfg.eos_id)]
            if bad:
                raise ValueError(f"input ids must not contain pad/bos/eos ids: {r}")
    s = None if cfg.decoder_only else pad([frame_source(cfg, x) for x in src])
    return s, pad([[cfg.bos_id] + list(y) for y in trg]), pad([list(y) + [cfg.eos_id] for y in trg])


# ----------------------------------------------------------------------------- init and files

def init_parameters(model: Transformer, seed: int) -> None:
    """Xavier uniform matrices, N(0, C^-0.5) embeddings, zero biases, LayerNorm 1/0 (numpy RNG)."""
    rng = np.random.default_rng(seed)
    C = model.cfg.d_model
    with torch.no_grad():
        for name, p in model.state_dict(keep_vars=True).items():
            shape = tuple(p.shape)
            if name.startswith(("embed.", "pos.")):
                a = rng.standard_normal(shape) * C ** -0.5
            elif name.endswith("norm.weight"):
                a = np.ones(shape)
            elif name.endswith(".bias"):
                a = np.zeros(shape)
            else:  # a Linear weight (out, in)
                bound = math.sqrt(6.0 / (shape[0] + shape[1]))
                a = rng.uniform(-bound, bound, shape)
            p.copy_(torch.from_numpy(a.astype(np.float32)))


def named_tensors(model: Transformer) -> dict[str, torch.Tensor]:
    """Contract name -> tensor (the state_dict; kept as a function for the converters)."""
    return dict(model.state_dict())


def check_tensors(cfg: ModelConfig, tensors: dict) -> None:
    """Every name/shape of the contract present, nothing else."""
    want = expected_shapes(cfg)
    missing = [n for n in want if n not in tensors]
    unknown = [n for n in tensors if n not in want]
    if missing or unknown:
        raise ValueError(f"tensor names do not match the config: missing {missing}, "
                         f"unexpected {unknown}")
    for n, shape in want.items():
        if tuple(tensors[n].shape) != shape:
            raise ValueError(f"{n}: shape {tuple(tensors[n].shape)}, config wants {shape}")


def save_model_dir(path: str, cfg: ModelConfig, tensors: dict) -> None:
    """Writes config.json and model.safetensors (f32, metadata config + format_version)."""
    cfg.validate()
    check_tensors(cfg, tensors)
    os.makedirs(path, exist_ok=True)
    arrays = {n: (t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t))
              .astype(np.float32) for n, t in ((n, tensors[n]) for n in expected_shapes(cfg))}
    safetensors_io.save_file(arrays, os.path.join(path, "model.safetensors"),
                             {"config": cfg.to_json(indent=None),
                              "format_version": str(FORMAT_VERSION)})
    with open(os.path.join(path, "config.json"), "w") as f:
        f.write(cfg.to_json())


def load_model_dir(path: str, dtype=torch.float64) -> Transformer:
    """A model directory -> Transformer in `dtype` (float64 by default: the reference)."""
    tensors, meta = safetensors_io.load_file(os.path.join(path, "model.safetensors"))
    if "config" in meta:
        cfg = ModelConfig.from_dict(json.loads(meta["config"]))
    else:
        with open(os.path.join(path, "config.json")) as f:
            cfg = ModelConfig.from_dict(json.load(f))
    check_tensors(cfg, tensors)
    model = Transformer(cfg)
    model.load_state_dict({n: torch.from_numpy(a.astype(np.float32)) for n, a in tensors.items()})
    return model.to(dtype)
