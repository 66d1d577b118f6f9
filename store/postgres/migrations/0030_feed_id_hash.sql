-- Item ids are no longer stored in clear: a Torznab proxy's guid is often
-- a download link that carries the account's key. feed_seen keeps
-- feed.IDHash of each id (the first 16 bytes of its SHA-256, in hex), and
-- the cursors' markers (format 2) the same.
CREATE FUNCTION pg_temp.hostguard_feed_id_hash(id text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN id IS NULL OR id = '' THEN id
		ELSE substr(encode(sha256(convert_to(id, 'UTF8')), 'hex'), 1, 32) END
$$;

UPDATE feed_seen SET item_id = pg_temp.hostguard_feed_id_hash(item_id);
ALTER TABLE feed_seen RENAME COLUMN item_id TO id_hash;

-- Cursor states of format 1: hash the head's and every gap's marker ids,
-- then say format 2.
UPDATE feed_cursors c
SET state = convert_to((
	SELECT jsonb_set(
		CASE WHEN jsonb_typeof(s->'head'->'id') = 'string'
			THEN jsonb_set(s, '{head,id}', to_jsonb(pg_temp.hostguard_feed_id_hash(s->'head'->>'id')))
			ELSE s END,
		'{v}', '2'::jsonb)
		|| CASE WHEN jsonb_typeof(s->'gaps') = 'array' THEN jsonb_build_object('gaps', (
			SELECT coalesce(jsonb_agg(
				jsonb_set(jsonb_set(g, '{after,id}', to_jsonb(pg_temp.hostguard_feed_id_hash(g->'after'->>'id'))),
					'{before,id}', to_jsonb(pg_temp.hostguard_feed_id_hash(g->'before'->>'id')))
				ORDER BY n), '[]'::jsonb)
			FROM jsonb_array_elements(s->'gaps') WITH ORDINALITY AS x(g, n)))
			ELSE '{}'::jsonb END
	FROM (SELECT convert_from(c.state, 'UTF8')::jsonb AS s) q)::text, 'UTF8')
WHERE length(c.state) > 0 AND (convert_from(c.state, 'UTF8')::jsonb->>'v') = '1';
