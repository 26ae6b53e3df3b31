"""The memory stage of the correction pipeline: MIRA's online reuse (§3.3).

Retrieve the current database's items (§3.3.1), activate those the evidence
supports (§3.3.2), adapt them into one rewrite and pass it through the guard
(§3.3.3). With no model configured only mechanical items are verified and
applied; the trace says how each repair was made (``detail["how"]``).

Settings (``--option memory.KEY=VALUE``, :class:`MemoryStage.Settings`): ``store``
(folder of the per-database stores) or ``namespace`` (default: ``$SQLMEND_MEMORY_STORE``,
else namespace ``$SQLMEND_MEMORY_NAMESPACE`` or ``default`` - where ``sqlmend memory
build`` and ``memory add`` write by default); ``budget`` (retrieval context budget,
items); ``verify`` (False: w/o evidence-verified activation); ``local`` (False: w/o
target local adaptation). ``store`` may be a ``postgresql://`` URL: one store shared
by replicas (:mod:`sqlmend.memory.pgstore`).

Items are read once per database and cached; with a PostgreSQL store the
stage asks the store's revision on each use (one index lookup) and reloads a
database's items when another replica or a reviewer changed them. While that store
cannot be reached the stage skips, saying so, and tries it again after
:data:`RETRY_SECONDS` (tasks in between skip at once): the answers keep coming.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from pydantic import Field

from sqlmend.errors import ConfigError, SqlmendError
from sqlmend.llm.book import CallBook
from sqlmend.memory.activation import Activation, activate_model, check_mechanical, observe
from sqlmend.memory.adapt import adapt_mechanical, adapt_model
from sqlmend.memory.items import MemoryItem
from sqlmend.memory.keys import sql_keys
from sqlmend.memory.modelcall import embed
from sqlmend.memory.retrieval import retrieve
from sqlmend.memory.store import MemoryStore, is_url, store_root
from sqlmend.stage import RunSettings, StageBase, StageContext, StageSettings
from sqlmend.types import Finding, StageTrace

#: Seconds after a failed read of the PostgreSQL store before a task tries to reach it again.
RETRY_SECONDS = 1.0


class MemoryStage(StageBase):
    """MIRA's repair memory reuse as a pipeline stage (the contract of :mod:`sqlmend.stage`)."""

    name = "memory"

    class Settings(StageSettings):
        store: str | None = Field(None, description="folder of the per-database stores, or a "
                                                    "postgresql:// URL of a store shared by replicas "
                                                    "(default: $SQLMEND_MEMORY_STORE, else the namespace's)")
        namespace: str | None = Field(None, description="memory namespace under the cache "
                                                        "(default: $SQLMEND_MEMORY_NAMESPACE or 'default')")
        budget: int = Field(8, ge=1, description="retrieval context budget, in items")
        verify: bool = Field(True, description="evidence-verified activation (False: the MIRA §4.4 ablation)")
        local: bool = Field(True, description="target local adaptation (False: the MIRA §4.4 ablation)")

    def __init__(self, settings: "MemoryStage.Settings | None" = None, run: RunSettings | None = None):
        super().__init__(settings, run)
        s = self.settings
        self.namespace = s.namespace or os.environ.get("SQLMEND_MEMORY_NAMESPACE") or "default"
        store = s.store or os.environ.get("SQLMEND_MEMORY_STORE") or None
        self.folder = store if is_url(store) else store_root(self.namespace, store)
        self._items: dict[str, list[MemoryItem]] = {}
        self._revisions: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._pg: Any = None  # one shared connection to a PostgreSQL store
        self._down: str | None = None  # why that store cannot be read, while it cannot
        self._retry_at = 0.0

    def items(self, db_id: str) -> list[MemoryItem]:
        """Return (and cache) one database's items.

        Args:
            db_id: the database.

        Returns:
            Its items; empty when it has no memory.
        """
        if is_url(self.folder):
            return self._shared_items(db_id)
        if db_id not in self._items:
            try:
                with MemoryStore(self.folder, db_id, create=False) as store:
                    self._items[db_id] = store.items()
            except SqlmendError:  # no memory for this database (or an invalid id)
                self._items[db_id] = []
        return self._items[db_id]

    def _shared_items(self, db_id: str) -> list[MemoryItem]:
        """Items of a PostgreSQL store: cached, reloaded when the store's revision moved."""
        from sqlmend.memory.pgstore import PgMemoryStore, _connect

        with self._lock:
            if self._down and time.monotonic() < self._retry_at:
                return []
            try:
                if self._pg is None:
                    self._pg = _connect(self.folder)
                store = PgMemoryStore(self.folder, db_id, namespace=self.namespace, conn=self._pg)
                revision = store.revision()
                if self._revisions.get(db_id) != revision:
                    self._items[db_id] = store.items()
                    self._revisions[db_id] = revision
                self._down = None
            except ConfigError:  # an invalid id
                self._items.setdefault(db_id, [])
            except Exception as exc:  # unreachable, or the connection dropped: skip, reconnect later
                if self._pg is not None:
                    self._pg.close()
                self._pg = None
                self._down = f"memory store unreachable ({type(exc).__name__}): skipped, tried again later"
                self._retry_at = time.monotonic() + RETRY_SECONDS
                return []
            return self._items[db_id]

    def run(self, ctx: StageContext) -> StageTrace:
        """Correct ``ctx.sql`` with the database's repair memory (§3.3).

        Args:
            ctx: the stage context.

        Returns:
            The trace: findings for activated items, the guarded candidate.
        """
        start = time.perf_counter()
        trace = StageTrace(stage=self.name, status="ran")
        items = self.items(ctx.task.db_id)
        if not items:
            trace.status, trace.note = "skipped", (self._down if is_url(self.folder) else None) or \
                f"no repair memory for database {ctx.task.db_id}"
            return trace
        usage = CallBook(keep_prompts=False)
        try:
            self._run(ctx, items, trace, usage)
        except SqlmendError as e:
            trace.status, trace.note = "failed", f"memory stage failed: {e}"
        usage.to_trace(trace)
        trace.detail["usage"] = {"chat": usage.chat, "embed": usage.embed}
        trace.seconds = time.perf_counter() - start
        return trace

    def _run(self, ctx: StageContext, items: list[MemoryItem], trace: StageTrace, usage: CallBook) -> None:
        s = self.settings
        backend, embedder = ctx.backend("solver"), ctx.backend("embedder")
        qvec = None
        if embedder is not None and any(m.vector for m in items):
            vecs = embed(embedder, [ctx.task.question], usage)
            qvec = vecs[0] if vecs else None
        tree = ctx.tree()
        keys = sql_keys(ctx.sql, ctx.dialect, tree)
        candidates = retrieve(items, keys, qvec, s.budget)
        trace.detail["retrieved"] = [{"id": c.item.id, "kind": c.item.kind, "channel": c.channel,
                                      "score": round(c.score, 4)} for c in candidates]
        if not candidates:
            trace.note = "no related memory item"
            return
        result, _ = ctx.execute()
        observations = observe(ctx.db, ctx.sql, tree)
        acts: list[Activation] = [check_mechanical(c, ctx.task.question, keys, observations, ctx.db, ctx.sql,
                                                   result, s.verify) for c in candidates if c.item.mechanical]
        general = [c for c in candidates if not c.item.mechanical]
        if general and backend is not None:
            acts += activate_model(backend, ctx.db, ctx.task.question, ctx.sql, general, observations,
                                   usage, s.verify)
        active = [a for a in acts if a.active]
        trace.detail["activation"] = [{"id": a.candidate.item.id, "active": a.active, "reason": a.reason}
                                      for a in acts]
        if not active:
            trace.note = f"{len(candidates)} retrieved, none activated"
            return
        if backend is not None and (not s.local or any(not a.candidate.item.mechanical for a in active)):
            adaptation = adapt_model(backend, ctx.task.question, ctx.sql, active, observations, usage, s.local)
        else:
            adaptation = adapt_mechanical(ctx.sql, [a for a in active if a.candidate.item.mechanical],
                                          ctx.dialect, tree)
        trace.detail["how"] = adaptation.how
        trace.detail["applied"] = adaptation.applied
        for a in active:
            m = a.candidate.item
            trace.findings.append(Finding(
                code=f"memory:{m.id}", error_type=m.error_type, message=m.contract.incorrect_behavior,
                source="memory", location=str(a.binding), schema_refs=m.signature.schema_refs,
                evidence={"reason": a.reason, "channel": a.candidate.channel, "applied_by": adaptation.how}))
        if adaptation.candidate is None:
            trace.note = adaptation.note
            return
        trace.candidate = adaptation.candidate
        trace.verdict = ctx.guard(adaptation.candidate)
        trace.note = f"{len(active)} item(s) activated, {adaptation.how} rewrite: {trace.verdict.reason}"
