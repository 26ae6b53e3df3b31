"""The review web app: a correction run's items, decisions, and the memory build.

Pages (HTML, Jinja2 templates, plain JavaScript for the keyboard):

* ``GET /`` -- the list, filtered by ``changed``, ``flagged``, ``rule``,
  ``error_type``, ``stage``, ``verdict`` (when the gold is known), ``db``,
  ``decision``; counts at the top;
* ``GET /item/{qid}`` -- one item: question, evidence, original vs corrected SQL
  as a diff, findings with evidence, stage trace, search candidates, the first
  rows and row counts of both results (run read-only, time-limited);
* ``POST /item/{qid}/decide`` -- accept / reject / edit (an edit is checked and
  executed again before it is saved), appended with fsync to ``reviews.jsonl``;
* ``POST /item/{qid}/check`` -- check and execute the reviewer's SQL, show it
  with a save button;
* ``GET /memory``, ``POST /memory/build`` -- confirmed corrections through
  MIRA's offline phase into the memory store, with what each produced.

Every state change is a POST carrying the page's CSRF token (and, when the
browser sends one, an ``Origin`` of this server); only the ``Host`` names given
are served (the CLI: the bound address and the loopback names). SQL from the page only runs
through :func:`~sqlmend.review.run.execute_preview` (one read-only SELECT/WITH,
time-limited, on a read-only connection).
"""

from __future__ import annotations

import hmac
import json
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool
from starlette.middleware.trustedhost import TrustedHostMiddleware
from jinja2 import Environment, PackageLoader, select_autoescape

from sqlmend.memory.store import is_url, shown
from sqlmend.search import adaptation
from sqlmend.search.verifier import FeatureVerifier
from sqlmend.review import confirm
from sqlmend.review.decisions import ReviewLog
from sqlmend.review.diff import highlight, sql_diff
from sqlmend.review.run import Item, Run, execute_preview, p_errors

#: Query parameters of the list filter, in display order.
FILTERS = ("changed", "flagged", "rule", "error_type", "stage", "verdict", "db", "decision", "p_error", "order")
_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")


def _env() -> Environment:
    env = Environment(loader=PackageLoader("sqlmend.review", "templates"),
                      autoescape=select_autoescape(["html"]), trim_blocks=True, lstrip_blocks=True)
    env.filters["sql"] = highlight
    env.filters["pretty"] = lambda v: json.dumps(v, indent=1, ensure_ascii=False, default=str)
    return env


def _decision_of(item: Item, latest: dict[str, Any]) -> str:
    d = latest.get(item.qid)
    return {"accept": "accepted", "reject": "rejected", "edit": "edited"}[d.action] if d else "undecided"


def _matches(item: Item, f: dict[str, str], latest: dict[str, Any]) -> bool:
    checks = {
        "changed": lambda v: item.changed == (v == "yes"),
        "flagged": lambda v: item.flagged == (v == "yes"),
        "rule": lambda v: v in item.rules,
        "error_type": lambda v: v in item.error_types,
        "stage": lambda v: (item.stage or "none") == v,
        "verdict": lambda v: (item.verdict or "unknown") == v,
        "db": lambda v: item.db_id == v,
        "decision": lambda v: _decision_of(item, latest) == v,
    }
    return all(checks[k](v) for k, v in f.items() if k in checks and v)


def _facets(items: list[Item], latest: dict[str, Any]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {k: {} for k in FILTERS}

    def add(k: str, v: str) -> None:
        out[k][v] = out[k].get(v, 0) + 1

    for it in items:
        add("changed", "yes" if it.changed else "no")
        add("flagged", "yes" if it.flagged else "no")
        for r in it.rules:
            add("rule", r)
        for e in it.error_types:
            add("error_type", e)
        add("stage", it.stage or "none")
        if it.verdict:
            add("verdict", it.verdict)
        add("db", it.db_id)
        add("decision", _decision_of(it, latest))
    return {k: dict(sorted(v.items())) for k, v in out.items()}


def _suggestions(c: Any) -> list[tuple[str, str, str]]:
    """``(code, message, SQL)`` of each fix the run did not apply, for the reviewer to check and save."""
    from sqlmend.rules.engine import unapplied

    return [(f.code, f.message, text) for f, text in unapplied(c.original_sql, c.sql, c.findings)]


def create_app(run: Run, reviewer: str, store_folder: str | Path, judge: Any = None, embedder: Any = None,
               recovery: Any = None, timeout: float = 5.0, preview_rows: int = 10,
               allowed_hosts: list[str] | None = None, namespace: str = "default") -> Any:
    """Build the review app over one run.

    Args:
        run: the run (evaluate it first to filter by verdict).
        reviewer: the name written with every decision.
        store_folder: the memory store folder the build writes to, or a ``postgresql://`` URL.
        judge: chat backend of MIRA's judge (None: mechanical items only).
        embedder: embedding backend for item vectors (None: none).
        recovery: chat backend of repair recovery (None: direct recovery only).
        timeout: seconds per executed query.
        preview_rows: result rows shown.
        allowed_hosts: the ``Host`` names served (others get 400: a page of another site
            whose name was rebound to 127.0.0.1 cannot read the token); None: any.
        namespace: the memory inside a PostgreSQL store.

    Returns:
        A ``fastapi.FastAPI`` app; ``app.state.csrf`` is its CSRF token, ``app.state.store``
        the memory folder.
    """
    env = _env()
    log = ReviewLog(run.folder)
    token = secrets.token_urlsafe(32)
    store_folder = store_folder if is_url(store_folder) else Path(store_folder)
    app = FastAPI(title="sqlmend review", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.csrf = token
    app.state.store = store_folder
    app.mount("/static", StaticFiles(packages=[("sqlmend.review", "static")]), name="static")
    if allowed_hosts:
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts))

    @app.middleware("http")
    async def _headers(request: Request, call_next: Any) -> Any:
        response = await call_next(request)
        response.headers["Content-Security-Policy"] = _CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "same-origin"
        return response

    def page(name: str, **ctx: Any) -> HTMLResponse:
        ctx.update(reviewer=reviewer, csrf=token, run=run, store=shown(store_folder))
        return HTMLResponse(env.get_template(name).render(**ctx))

    async def form(request: Request) -> dict[str, str]:
        origin = request.headers.get("origin")
        if origin and urlparse(origin).netloc != request.headers.get("host"):
            raise HTTPException(403, "cross-origin request refused")
        body = (await request.body()).decode("utf-8", "replace")
        data = {k: v[-1] for k, v in parse_qs(body, keep_blank_values=True).items()}
        if not hmac.compare_digest(data.get("csrf", ""), token):
            raise HTTPException(403, "missing or wrong CSRF token: reload the page")
        return data

    def filters_of(params: Any) -> dict[str, str]:
        return {k: params.get(k, "") for k in FILTERS if params.get(k)}

    def form_filters(data: dict[str, str]) -> dict[str, str]:
        return filters_of({k: v[-1] for k, v in parse_qs(data.get("filters", "")).items()})

    risk: dict[str, float] = {}  # P(error) per item, computed when a list first asks for it
    adapted = adaptation.load(store_folder, namespace) if store_folder else None
    # an item is a suspect above this P(error): the system's calibrated threshold when its memory has one
    threshold = 1.0 - (adapted.suspect_below if adapted is not None else FeatureVerifier().suspect_below)

    def p_error(it: Item) -> float:
        if not risk:
            risk.update(p_errors(run) or {"": 0.0})
        return risk.get(it.qid, 0.0)

    def in_list(f: dict[str, str], latest: dict[str, Any]) -> list[Item]:
        """The items the filters keep, in dataset order or by P(error), highest first (``order=p_error``)."""
        out = [x for x in run.items if _matches(x, f, latest)]
        if f.get("p_error") in ("above", "below"):
            out = [x for x in out if (p_error(x) > threshold) == (f["p_error"] == "above")]
        if f.get("order") == "p_error":
            out.sort(key=lambda x: -p_error(x))
        return out

    def item_url(qid: str, f: dict[str, str]) -> str:
        return f"/item/{qid}" + (f"?{urlencode(f)}" if f else "")

    def item_page(qid: str, f: dict[str, str], edit: dict[str, Any] | None = None, status: int = 200) -> HTMLResponse:
        try:
            it = run.item(qid)
        except Exception:
            raise HTTPException(404, f"no question {qid} in this run") from None
        latest = log.latest()
        ids = [x.qid for x in in_list(f, latest)]
        pos = ids.index(qid) if qid in ids else -1
        nxt = ids[pos + 1] if 0 <= pos < len(ids) - 1 else None
        prev = ids[pos - 1] if pos > 0 else None
        c = it.correction
        db = run.db_path(c.db_id)
        before_html, after_html = sql_diff(c.original_sql, c.sql)
        results = {"original": execute_preview(db, c.original_sql, preview_rows, timeout)}
        if c.changed:
            results["corrected"] = execute_preview(db, c.sql, preview_rows, timeout)
        if it.task is not None and it.task.gold:
            results["gold"] = execute_preview(db, it.task.gold, preview_rows, timeout)
        suggestions = _suggestions(c)
        candidates = []  # a search stage's ranked candidates: detail["top"] (or "candidates"), with scores
        for s in c.stages:
            listed = s.detail.get("top") or s.detail.get("candidates")
            if isinstance(listed, list) and listed:
                original = s.detail.get("original")
                candidates.append((s.stage, listed, original.get("score") if isinstance(original, dict) else None))
        resp = page("item.html", item=it, c=c, task=it.task, before_html=before_html, after_html=after_html,
                    results=results, candidates=candidates, suggestions=suggestions, decision=latest.get(qid),
                    decision_label=_decision_of(it, latest), pos=pos, total=len(ids),
                    next_url=item_url(nxt, f) if nxt else "", prev_url=item_url(prev, f) if prev else "",
                    next_qid=nxt or "", list_url="/" + (f"?{urlencode(f)}" if f else ""), filters=f,
                    filters_qs=urlencode(f), edit=edit)
        resp.status_code = status
        return resp

    @app.get("/", response_class=HTMLResponse)
    def index(request: Request) -> HTMLResponse:
        f = filters_of(request.query_params)
        latest = log.latest()
        visible = in_list(f, latest)
        facets = _facets(run.items, latest)
        return page("list.html", items=visible, facets=facets, filters=f, latest=latest,
                    decision_of=lambda it: _decision_of(it, latest), filters_qs=urlencode(f),
                    total=len(run.items), risk=risk if (f.get("order") or f.get("p_error")) else {},
                    threshold=round(threshold, 3))

    @app.get("/item/{qid}", response_class=HTMLResponse)
    def item(qid: str, request: Request) -> HTMLResponse:
        return item_page(qid, filters_of(request.query_params))

    @app.post("/item/{qid}/check", response_class=HTMLResponse)
    async def check(qid: str, request: Request) -> HTMLResponse:
        data = await form(request)
        f = form_filters(data)
        it = run.item(qid)
        text = data.get("sql", "")
        result = await run_in_threadpool(execute_preview, run.db_path(it.db_id), text, preview_rows, timeout)
        return await run_in_threadpool(item_page, qid, f, {"sql": text, "result": result},
                                       200 if result["ok"] else 422)

    @app.post("/item/{qid}/decide")
    async def decide(qid: str, request: Request) -> Any:
        data = await form(request)
        f = form_filters(data)
        try:
            it = run.item(qid)
        except Exception:
            raise HTTPException(404, f"no question {qid} in this run") from None
        action = data.get("action", "")
        sql_text = data.get("sql") if action == "edit" else None
        if action == "edit":  # checked again: only SQL that runs read-only is saved
            result = await run_in_threadpool(execute_preview, run.db_path(it.db_id), sql_text or "", preview_rows,
                                             timeout)
            if not result["ok"]:
                return await run_in_threadpool(item_page, qid, f, {"sql": sql_text or "", "result": result}, 422)
        if action not in ("accept", "reject", "edit"):
            raise HTTPException(400, f"unknown action {action!r}")
        c = it.correction
        log.append(qid, c.db_id, action, reviewer, c.original_sql, c.sql, sql_text, data.get("note", ""))
        nxt = data.get("next", "")
        target = item_url(nxt, f) if nxt and any(x.qid == nxt for x in run.items) else item_url(qid, f)
        return RedirectResponse(target, status_code=303)

    @app.get("/memory", response_class=HTMLResponse)
    def memory() -> HTMLResponse:
        confirmed, skipped = confirm.confirmations(run, log.latest())
        return page("memory.html", confirmed=confirmed, skipped=skipped, build=confirm.last_build(run.folder))

    @app.post("/memory/build")
    async def memory_build(request: Request) -> Any:
        await form(request)
        confirmed, skipped = confirm.confirmations(run, log.latest())
        outcomes = await run_in_threadpool(confirm.build, run, confirmed, store_folder, judge, embedder, recovery,
                                           skipped, namespace)
        confirm.record(run.folder, outcomes, store_folder, reviewer)
        return RedirectResponse("/memory", status_code=303)

    return app
