-- Item ids are no longer stored in clear: a Torznab proxy's guid is often
-- a download link that carries the account's key. feed_seen keeps
-- feed.IDHash of each id, and the cursors' markers (format 2) the same.
-- hostguard_feed_id_hash is feed.IDHash, registered by the sqlite package.
UPDATE feed_seen SET item_id = hostguard_feed_id_hash(item_id);
ALTER TABLE feed_seen RENAME COLUMN item_id TO id_hash;

-- Cursor states of format 1: hash the head's and every gap's marker ids
-- (an empty id stays empty), then say format 2.
UPDATE feed_cursors
SET state = CAST(json_set(CAST(state AS TEXT), '$.head.id',
	hostguard_feed_id_hash(json_extract(CAST(state AS TEXT), '$.head.id'))) AS BLOB)
WHERE length(state) > 0 AND json_extract(CAST(state AS TEXT), '$.v') = 1
	AND json_type(CAST(state AS TEXT), '$.head.id') = 'text';

UPDATE feed_cursors
SET state = CAST(json_set(CAST(state AS TEXT), '$.gaps', json((
	SELECT json_group_array(json(json_set(g.value,
		'$.after.id', hostguard_feed_id_hash(json_extract(g.value, '$.after.id')),
		'$.before.id', hostguard_feed_id_hash(json_extract(g.value, '$.before.id')))) ORDER BY g.key)
	FROM json_each(CAST(feed_cursors.state AS TEXT), '$.gaps') AS g))) AS BLOB)
WHERE length(state) > 0 AND json_extract(CAST(state AS TEXT), '$.v') = 1
	AND json_type(CAST(state AS TEXT), '$.gaps') = 'array';

UPDATE feed_cursors
SET state = CAST(json_set(CAST(state AS TEXT), '$.v', 2) AS BLOB)
WHERE length(state) > 0 AND json_extract(CAST(state AS TEXT), '$.v') = 1;
