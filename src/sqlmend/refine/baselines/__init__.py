"""Refinement baselines, with the stage interface of :class:`sqlmend.refine.RefineStage`.

They correct without detecting first, which is what ErrorLLM's comparison shows:

* :class:`SelfCorrectionStage` -- vanilla self-correction (Huang et al., 2024);
* :class:`DinSqlStage` -- DIN-SQL's gentle self-correction prompt (Pourreza and Rafiei, 2023);
* :class:`SelfDebugStage` -- self-debugging with execution feedback (Chen et al., 2024);
* :class:`MacSqlStage` -- MAC-SQL's refiner, triggered by an execution error or no rows
  (Wang et al., 2024).
"""

from __future__ import annotations

from sqlmend.refine.baselines.din_sql import DinSqlStage
from sqlmend.refine.baselines.mac_sql import MacSqlStage
from sqlmend.refine.baselines.self_correction import SelfCorrectionStage
from sqlmend.refine.baselines.self_debug import SelfDebugStage

__all__ = ["DinSqlStage", "MacSqlStage", "SelfCorrectionStage", "SelfDebugStage"]
