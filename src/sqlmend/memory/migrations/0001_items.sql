-- sqlmend repair memory in PostgreSQL, version 1: items and the rejection log, per namespace and database.
-- An item's key is (namespace, db_id, id); its id is a hash of what it repairs, so the same repair
-- written twice (two replicas, a retry) is one row. `rev` changes on every write, so readers can
-- tell cheaply whether a database's memory changed.
CREATE SEQUENCE sqlmend_memory_rev;

CREATE TABLE sqlmend_memory_items (
    namespace   text        NOT NULL,
    db_id       text        NOT NULL,
    id          text        NOT NULL,
    seq         bigserial   NOT NULL,
    rev         bigint      NOT NULL DEFAULT nextval('sqlmend_memory_rev'),
    kind        text        NOT NULL,
    error_type  text        NOT NULL,
    question_id text,
    keys        jsonb       NOT NULL,
    vector      real[],
    body        jsonb       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (namespace, db_id, id)
);
CREATE INDEX sqlmend_memory_items_by_db ON sqlmend_memory_items (namespace, db_id, seq);

CREATE TABLE sqlmend_memory_rejections (
    namespace   text      NOT NULL,
    db_id       text      NOT NULL,
    question_id text      NOT NULL,
    stage       text      NOT NULL,
    reason      text      NOT NULL,
    seq         bigserial NOT NULL,
    PRIMARY KEY (namespace, db_id, question_id, stage, reason)
);

-- cleared databases: a counter per database, bumped by clear(), so a reader sees a clear too
CREATE TABLE sqlmend_memory_clears (
    namespace text   NOT NULL,
    db_id     text   NOT NULL,
    rev       bigint NOT NULL,
    PRIMARY KEY (namespace, db_id)
);
