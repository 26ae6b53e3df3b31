-- sqlmend model call log and cache in PostgreSQL, version 1: the columns of the SQLite file
-- (sqlmend/llm/calllog.py, all of its migrations) in the same order, so rows read the same.
CREATE TABLE sqlmend_llm_calls (
    id           bigserial        PRIMARY KEY,
    ts           double precision NOT NULL,
    stage        text             NOT NULL,
    endpoint     text             NOT NULL,
    backend      text             NOT NULL,
    model        text             NOT NULL,
    kind         text             NOT NULL,
    prompt_hash  text             NOT NULL,
    tokens_in    integer          NOT NULL DEFAULT 0,
    tokens_out   integer          NOT NULL DEFAULT 0,
    latency      double precision NOT NULL DEFAULT 0,
    cache_hit    integer          NOT NULL DEFAULT 0,
    error        text,
    tag          text,
    schema_valid integer,
    attempt      integer          NOT NULL DEFAULT 1,
    constrained  text
);
CREATE INDEX sqlmend_llm_calls_ts ON sqlmend_llm_calls (ts);
CREATE INDEX sqlmend_llm_calls_tag ON sqlmend_llm_calls (tag);

-- answers of deterministic calls, by call key (the same key as in the SQLite file)
CREATE TABLE sqlmend_llm_cache (
    key      text             PRIMARY KEY,
    kind     text             NOT NULL,
    response text             NOT NULL,
    created  double precision NOT NULL
);
