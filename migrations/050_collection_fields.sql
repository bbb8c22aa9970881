-- Typed collections (docs/collections.md): a collection's fields, whether
-- its records may hold other properties, and a hash of both that every
-- write of a record confirms. Existing collections stay untyped: no
-- fields, other properties kept, the empty hash.
ALTER TABLE collections
    ADD COLUMN fields jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(fields) = 'array'),
    ADD COLUMN additional boolean NOT NULL DEFAULT true,
    ADD COLUMN fields_hash text NOT NULL DEFAULT '';

-- A record's data is checked against its collection's fields in the
-- service, against the fields it last read (their hash h). Each write's
-- statement calls this first: it takes a share lock on the collection's
-- row, which a change of the fields (an UPDATE of that row) waits for
-- and holds off until it commits, and raises a serialization failure when
-- the fields are no longer those checked against, so the writer checks
-- again with the new ones. It returns false when the collection does not
-- exist.
CREATE FUNCTION records_fields_hold(p text, c text, h text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    current text;
BEGIN
    SELECT fields_hash INTO current FROM collections WHERE project_id = p AND id = c FOR SHARE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF current <> h THEN
        RAISE EXCEPTION 'the fields of collection % changed while a record was written', c
            USING ERRCODE = 'serialization_failure', HINT = 'stencil.fields:' || p || '/' || c;
    END IF;
    RETURN true;
END $$;
