#!/usr/bin/env python3
"""Reads the TensorBoard event files of a `tfm train --tensorboard DIR` run and checks that every
scalar of train.log is there at every logged update, once, with the logged value.

    check_tfevents.py own EVENT_DIR TRAIN_LOG [RUNS]          a decoder of our own: the TFRecord
        framing with its masked CRC-32C computed here, the protobuf wire format decoded by hand,
        TensorBoard's purge on SessionLog START applied; standard library only
    check_tfevents.py tensorboard EVENT_DIR TRAIN_LOG [RUNS]  TensorBoard's own reader
        (tensorboard.backend.event_processing.event_accumulator.EventAccumulator)

RUNS: the number of event files expected (one a run). Exit 0: all found; 1: a list of what is not.
"""
from __future__ import annotations

import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_log_reader  # noqa: E402


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def masked(data: bytes) -> int:
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(path: str):
    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    while pos < len(data):
        header = data[pos:pos + 12]
        if len(header) < 12:
            raise ValueError(f"{path}: truncated record header at byte {pos}")
        length, length_crc = struct.unpack("<QI", header)
        if length_crc != masked(header[:8]):
            raise ValueError(f"{path}: bad length CRC at byte {pos}")
        body = data[pos + 12:pos + 12 + length]
        (body_crc,) = struct.unpack("<I", data[pos + 12 + length:pos + 16 + length])
        if len(body) != length or body_crc != masked(body):
            raise ValueError(f"{path}: bad record CRC at byte {pos}")
        yield body
        pos += 16 + length


def fields(msg: bytes):
    """(field number, wire type, value) of a protobuf message."""
    pos = 0

    def varint() -> int:
        nonlocal pos
        v, shift = 0, 0
        while True:
            b = msg[pos]
            pos += 1
            v |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return v

    while pos < len(msg):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            yield number, wire, varint()
        elif wire == 1:
            yield number, wire, msg[pos:pos + 8]
            pos += 8
        elif wire == 2:
            n = varint()
            yield number, wire, msg[pos:pos + n]
            pos += n
        elif wire == 5:
            yield number, wire, msg[pos:pos + 4]
            pos += 4
        else:
            raise ValueError(f"wire type {wire}")


def read_own(directory: str, problems: list[str]) -> dict[str, list[tuple[int, float]]]:
    series: dict[str, list[tuple[int, float]]] = {}
    for name in sorted(os.listdir(directory)):
        if "tfevents" not in name:
            continue
        first = True
        for body in records(os.path.join(directory, name)):
            event = {n: v for n, _, v in fields(body)}  # tensorboard.Event
            step = event.get(2, 0)
            if first and event.get(3) != b"brain.Event:2":
                problems.append(f"{name}: the first event is not file_version brain.Event:2")
            first = False
            if 7 in event:  # session_log
                status = dict((n, v) for n, _, v in fields(event[7])).get(1)
                if status == 1:  # START: what earlier files hold at step and after is stale
                    for tag in series:
                        series[tag] = [(s, v) for s, v in series[tag] if s < step]
            if 5 in event:  # summary
                for n, _, value in fields(event[5]):
                    if n != 1:
                        continue
                    v = {vn: vv for vn, _, vv in fields(value)}
                    (simple,) = struct.unpack("<f", v[2])
                    series.setdefault(v[1].decode(), []).append((step, simple))
    return series


def read_tensorboard(directory: str) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing import event_accumulator

    acc = event_accumulator.EventAccumulator(directory,
                                             size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)]
            for tag in acc.Tags()[event_accumulator.SCALARS]}


def main() -> int:
    reader, directory, log = sys.argv[1:4]
    runs = int(sys.argv[4]) if len(sys.argv) > 4 else None
    problems: list[str] = []
    got = read_own(directory, problems) if reader == "own" else read_tensorboard(directory)
    want = train_log_reader.read(log)
    files = [n for n in os.listdir(directory) if "tfevents" in n]
    if runs is not None and len(files) != runs:
        problems.append(f"{len(files)} event files, want {runs} (one a run): {sorted(files)}")
    if sorted(got) != sorted(want):
        problems.append(f"tags {sorted(got)}, want {sorted(want)}")
    for tag, values in sorted(want.items()):
        steps = [s for s, _ in got.get(tag, [])]
        if steps != sorted(values):
            problems.append(f"{tag}: steps {steps}, want {sorted(values)}")
            continue
        for step, value in got[tag]:
            if not train_log_reader.close(tag, value, values[step]):
                problems.append(f"{tag} at {step}: {value}, train.log says {values[step]}")
    n = sum(len(v) for v in want.values())
    for p in problems:
        print("FAIL:", p)
    print(f"check_tfevents ({reader}): {n} scalars of {len(want)} tags in train.log, "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
