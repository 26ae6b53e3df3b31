"""A small HTTP service over the correction pipeline (FastAPI): ``/correct`` and ``/check``."""

from __future__ import annotations

from sqlmend.service.app import create_app

__all__ = ["create_app"]
