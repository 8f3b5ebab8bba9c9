"""The model a junction-tree method (AIM, MST) releases, from its last IPF fit.

``estimator="ipf"``: that fit as it is. ``estimator="mirror_descent"``: the same margins on the
same tree refitted, from that fit, by accelerated entropic mirror descent
(:class:`~dpcore.estimate.accelerated_mirror_descent.AcceleratedMirrorDescent`), which minimises
Private-PGM's weighted least squares and stops when the loss stops falling. The plain method
(:class:`~dpcore.estimate.mirror_descent.MirrorDescent`) stopped at 100 iterations far from the
minimum on long tables; the accelerated one gets there in about the same time
(docs/methods/aim.md#options).

Privacy: post-processing of released margins and the released total; no privacy cost.
"""
from __future__ import annotations

from collections.abc import Sequence

from dpcore.estimate.accelerated_mirror_descent import AcceleratedMirrorDescent
from dpcore.estimate.junction_tree import DecomposableModel
from dpcore.measure.margins import NoisyMargin

__all__ = ["released_model"]


def released_model(estimator: str, shape, margins: Sequence[NoisyMargin], total: float, model: DecomposableModel,
                   info: dict) -> tuple[DecomposableModel, dict]:
    """The released model (module docstring): ``model`` and its ``info`` as they are unless
    ``estimator`` is ``"mirror_descent"``."""
    if estimator != "mirror_descent":
        return model, info
    return AcceleratedMirrorDescent(start_model=model).fit(shape, margins, total)
