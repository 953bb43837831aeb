#!/usr/bin/env python3
"""Checks what `tfm plot` drew against the train.log files it read: every scalar of each log is a
point of its run's curve, at the pixel the panel's declared axes put it (to the 0.01 px the file
rounds to), and nothing else is drawn.

    check_plot.py SVG RUN_NAME=TRAIN_LOG...

Standard library only. Exit 0: all drawn as logged; 1: a list of what is not.
"""
from __future__ import annotations

import math
import os
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_log_reader  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"


def main() -> int:
    svg = ET.parse(sys.argv[1]).getroot()
    want = {}
    for arg in sys.argv[2:]:
        name, log = arg.split("=", 1)
        want[name] = train_log_reader.read(log)
    problems: list[str] = []
    drawn = set()
    for panel in svg.iter(SVG + "g"):
        if panel.get("class") != "panel":
            continue
        x0, x1 = map(float, panel.get("data-x").split())
        y0, y1 = map(float, panel.get("data-y").split())
        left, top, width, height = map(float, panel.get("data-box").split())
        log_scale = panel.get("data-scale") == "log"

        def pixel(update: float, value: float) -> tuple[float, float]:
            f = (math.log10(value / y0) / math.log10(y1 / y0) if log_scale
                 else (value - y0) / (y1 - y0))
            return left + (update - x0) / (x1 - x0) * width, top + height - f * height

        for line in panel.iter(SVG + "polyline"):
            run, tag = line.get("data-run"), line.get("data-tag")
            drawn.add((run, tag))
            values = want.get(run, {}).get(tag)
            if values is None:
                problems.append(f"{run} {tag}: drawn, but not in its train.log")
                continue
            points = [tuple(map(float, p.split(","))) for p in line.get("points").split()]
            if len(points) != len(values):
                problems.append(f"{run} {tag}: {len(points)} points, train.log has {len(values)}")
                continue
            for (px, py), (update, value) in zip(points, sorted(values.items())):
                scale = 100 if tag.endswith("accuracy") else 1
                ex, ey = pixel(update, value * scale)
                if not (y0 <= value * scale <= y1 and 0 <= update <= x1):
                    problems.append(f"{run} {tag} at {update}: outside the axes")
                if abs(px - ex) > 0.0051 or abs(py - ey) > 0.0051:
                    problems.append(f"{run} {tag} at {update}: drawn at ({px}, {py}), "
                                    f"train.log's {value} is at ({ex:.3f}, {ey:.3f})")
    for run, series in want.items():
        for tag in series:
            if (run, tag) not in drawn:
                problems.append(f"{run} {tag}: in train.log, not drawn")
    for p in problems:
        print("FAIL:", p)
    n = sum(len(v) for s in want.values() for v in s.values())
    print(f"check_plot: {n} logged values of {len(want)} run(s), {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
