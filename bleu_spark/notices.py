"""Warnings, the one printer of them: said as soon as they are known (before a long step), and
the run's whole list at its end, each once. On the ground floor, so that any module (the kernels'
loader in a Python worker too) can say one without importing the console's tables."""
from __future__ import annotations

import sys
from typing import List

PROG = "bleu-spark"

# Warnings said already, which the run's list of warnings (`run.json`) holds too: the end of the
# run does not print them again.
_said: List[str] = []


def say_warnings(warnings: List[str]) -> None:
    """Warnings printed now, before the step they are about; not again at the end."""
    for warning in warnings:
        print(f"{PROG}: warning: {warning}", file=sys.stderr, flush=True)
        _said.append(warning)


SHOWN = 20  # warnings printed at a run's end; every one is in run.json


def print_warnings(warnings: List[str]) -> None:
    """The run's warnings, at its end: each once, those said already left out, at most SHOWN
    (a warning a group, of a million groups, would bury the rest)."""
    said = set(_said)
    left = [w for w in dict.fromkeys(warnings) if w not in said]
    for warning in left[:SHOWN]:
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    if len(left) > SHOWN:
        print(f"{PROG}: warning: ... and {len(left) - SHOWN:,} more warnings, every one in "
              f"run.json's warnings", file=sys.stderr)
    _said.clear()  # the run is over: a later run in this process says its own again
