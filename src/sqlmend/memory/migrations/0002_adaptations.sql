-- sqlmend repair memory in PostgreSQL, version 2: the search's adaptation to a system (issue 28), fitted on
-- the same history as the items. One versioned JSON document per namespace; `updated_at` moves on every refit.
CREATE TABLE sqlmend_memory_adaptations (
    namespace  text        PRIMARY KEY,
    version    integer     NOT NULL,
    body       jsonb       NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
