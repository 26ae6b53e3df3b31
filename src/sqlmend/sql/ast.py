"""Node classes of the SQL syntax tree: a re-export of ``sqlglot.expressions``.

Code above ``sqlmend.sql`` never imports sqlglot; it uses ``sqlmend.sql.ast``
instead (``ast.Column``, ``ast.Select``, ``ast.Expression``, ``ast.to_column``...),
so that a sqlglot upgrade touches this package only.
"""

from __future__ import annotations

from sqlglot.expressions import *  # noqa: F401,F403  (the re-export is the point)
from sqlglot.expressions import Expression  # noqa: F401  (the base class, by a stable name)

Node = Expression  #: alias: the base class of every tree node
