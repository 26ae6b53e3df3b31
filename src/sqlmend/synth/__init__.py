"""Training data of the error-token detector (ErrorLLM §3.1).

Rule-based perturbation operators (:mod:`sqlmend.synth.operators`) and the
execution-verified builder (:mod:`sqlmend.synth.build`). The other sources sit above
this package: near misses of the gold from the repair search
(:mod:`sqlmend.search.hard`, passed to :func:`synthesize` as ``near_misses``) and
LLM-assisted error labelling of real wrong predictions (:mod:`sqlmend.detect.asillm`).
"""

from __future__ import annotations

from sqlmend.synth.build import Example, differs, label_distribution, perturb, synthesize
from sqlmend.synth.operators import OPERATORS, Operator, operators_for

__all__ = ["OPERATORS", "Example", "Operator", "differs", "label_distribution", "operators_for", "perturb",
           "synthesize"]
