-- Collections (docs/collections.md): the data routes read and write. A collection
-- belongs to one project; its records are JSON objects.

CREATE TABLE collections (
    project_id  text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    id          text NOT NULL CHECK (id ~ '^[a-z][a-z0-9_]{2,49}$'),
    name        text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
    description text NOT NULL DEFAULT '',
    created_by  bigint REFERENCES users (id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT collections_pkey PRIMARY KEY (project_id, id)
);

-- A record's size limit (64 KiB of compact JSON) is checked where records
-- are written, in the store; the table keeps what must never be otherwise.
CREATE TABLE records (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id    text NOT NULL,
    collection_id text NOT NULL,
    data          jsonb NOT NULL CHECK (jsonb_typeof(data) = 'object'),
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (project_id, collection_id) REFERENCES collections (project_id, id) ON DELETE CASCADE
);

-- Records of one collection in id order (pages, counts, the engine's reads).
CREATE INDEX records_collection_idx ON records (project_id, collection_id, id);
-- Containment filters (data @> $1) within one collection: btree_gin lets
-- the collection's columns and the document share one GIN index.
CREATE INDEX records_data_idx ON records USING gin (project_id, collection_id, data jsonb_path_ops);
-- Statistics of whole documents only mislead the planner about containment
-- (it estimated a rare value in a sixth of the records and scanned them
-- all); without them it assumes a containment filter is selective, and uses
-- the index above.
ALTER TABLE records ALTER COLUMN data SET STATISTICS 0;
