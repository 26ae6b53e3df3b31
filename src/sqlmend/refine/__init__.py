"""Error-guided refinement (ErrorLLM §3.3) and the refinement baselines.

* :mod:`~sqlmend.refine.localize` -- LocLLM: where each detected error is;
* :mod:`~sqlmend.refine.extract` -- Ext: subtree, schema subgraph, evidence;
* :mod:`~sqlmend.refine.guidelines` -- per-type guideline templates and priority order;
* :mod:`~sqlmend.refine.refiner` -- RefLLM: the guided rewrite;
* :mod:`~sqlmend.refine.stage` -- :class:`RefineStage`, the pipeline stage;
* :mod:`~sqlmend.refine.baselines` -- self-correction, DIN-SQL, self-debugging, MAC-SQL.
"""

from __future__ import annotations

from sqlmend.refine.stage import RefineStage

__all__ = ["RefineStage"]
