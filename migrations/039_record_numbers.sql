-- Records hold only numbers JSON clients read as 64-bit floats
-- (docs/collections.md). A number stored before that rule past float64's
-- range (1e400: jsonb keeps it, every reader fails on it) becomes null,
-- so no stored record makes a FETCH fail. stencil_finite_json stays for
-- the test that holds it.
CREATE FUNCTION stencil_finite_json(j jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    CASE jsonb_typeof(j)
    WHEN 'number' THEN
        IF abs(j::numeric) > 1.7976931348623157e308 THEN
            RETURN 'null'::jsonb;
        END IF;
        RETURN j;
    WHEN 'object' THEN
        RETURN (SELECT coalesce(jsonb_object_agg(k, stencil_finite_json(v)), '{}'::jsonb) FROM jsonb_each(j) AS e (k, v));
    WHEN 'array' THEN
        RETURN (SELECT coalesce(jsonb_agg(stencil_finite_json(v) ORDER BY i), '[]'::jsonb)
            FROM jsonb_array_elements(j) WITH ORDINALITY AS a (v, i));
    ELSE
        RETURN j;
    END CASE;
END
$$;

-- jsonb writes numbers without an exponent: one past the range has over
-- 308 digits in a row.
UPDATE records SET data = stencil_finite_json(data) WHERE data::text ~ '[0-9]{255}[0-9]{54}';
