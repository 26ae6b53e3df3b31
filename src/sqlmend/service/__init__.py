"""The HTTP service over the correction pipeline (FastAPI): ``/correct``, ``/check``, ``/health``, ``/metrics``."""

from __future__ import annotations

from sqlmend.service.app import create_app
from sqlmend.service.settings import ServiceSettings

__all__ = ["ServiceSettings", "create_app"]
