"""Review in the browser and HTML reports (the top layer, beside ``bench``, ``cli``, ``service``).

* :mod:`run` -- a correction run folder (``sqlmend correct --out``) with its dataset;
* :mod:`decisions` -- the append-only ``reviews.jsonl`` (who, when, what);
* :mod:`diff` -- a highlighted word diff of two SQL texts;
* :mod:`confirm` -- accepted and edited corrections through MIRA's offline phase
  (``sqlmend.memory.build``) into a memory store;
* :mod:`app` -- the FastAPI + Jinja2 review app (``sqlmend review RUN_DIR``);
* :mod:`svg`, :mod:`report` -- a self-contained HTML report with inline SVG plots
  (``sqlmend report RUN_DIR --html``, ``sqlmend eval --html``);
* :mod:`scripted` -- a scripted reviewer (the gold), for ``sqlmend bench review``.
"""
