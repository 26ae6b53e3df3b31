"""The settings of ``sqlmend serve`` that are not pipeline settings: access, limits, logging."""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict, Field

#: Environment variable holding the bearer token (``--token`` wins over it).
TOKEN_ENV = "SQLMEND_TOKEN"


class ServiceSettings(BaseModel):
    """How the service admits requests (``extra="forbid"``: a typo is an error)."""

    model_config = ConfigDict(extra="forbid")

    token: str | None = Field(None, description="bearer token every request but /health must carry "
                                                "(default: $SQLMEND_TOKEN; none: no auth)")
    allow_paths: bool = Field(False, description="accept database paths/URLs (`db`) in requests")
    max_body_bytes: int = Field(64 * 1024, gt=0, description="largest request body; larger: 413")
    deadline: float = Field(30.0, gt=0, description="seconds a request may take; later: 504 "
                                                    "(SQL time limits are capped to it)")
    max_concurrency: int = Field(4, ge=1, description="requests corrected at once (threads)")
    wide_sql_chars: int = Field(8192, ge=1, description="a request whose SQL is longer runs on a lane of its own "
                                                       "(wide_concurrency threads), so that wide queries never hold "
                                                       "the threads, or the interpreter, from the others")
    wide_concurrency: int = Field(1, ge=1, description="wide requests corrected at once (their own threads; the "
                                                      "others wait in their lane)")
    max_queue: int = Field(64, ge=0, description="requests waiting for a thread; beyond: 503")
    retry_after: int = Field(1, ge=1, description="seconds in the Retry-After header of a 503")
    log_requests: bool = Field(True, description="one JSON log line per request on stderr")

    @classmethod
    def from_env(cls, **values: object) -> ServiceSettings:
        """Build settings, taking the token from ``$SQLMEND_TOKEN`` when none is given."""
        if not values.get("token") and os.environ.get(TOKEN_ENV):
            values["token"] = os.environ[TOKEN_ENV]
        return cls(**values)
