"""Second opinions: other answers to the same question as evidence of error and as repairs.

:func:`consult` (:mod:`sqlmend.consensus.vote`) groups an original query's alternatives by result and
decides under a rule; :class:`~sqlmend.consensus.stage.ConsensusStage` is its pipeline stage;
:mod:`sqlmend.consensus.risk` calibrates the risk rule on a labelled history.
"""

from sqlmend.consensus.risk import History, Labelled
from sqlmend.consensus.vote import STRICT, Answer, Consensus, Decision, Group, Rule, consult

__all__ = ["STRICT", "Answer", "Consensus", "Decision", "Group", "History", "Labelled", "Rule", "consult"]
