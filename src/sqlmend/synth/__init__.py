"""Training data of the error-token detector (ErrorLLM §3.1).

Rule-based perturbation operators (:mod:`sqlmend.synth.operators`), the
execution-verified builder (:mod:`sqlmend.synth.build`) and LLM-assisted error
labelling of real wrong predictions (:mod:`sqlmend.synth.asillm`).
"""

from __future__ import annotations

from sqlmend.synth.build import Example, differs, label_distribution, perturb, synthesize
from sqlmend.synth.operators import OPERATORS, Operator, operators_for

__all__ = ["OPERATORS", "Example", "Operator", "differs", "label_distribution", "operators_for", "perturb",
           "synthesize"]
