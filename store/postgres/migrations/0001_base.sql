-- The base schema: a table describing this database itself.
CREATE TABLE IF NOT EXISTS store_meta (
	key   text PRIMARY KEY,
	value text NOT NULL
);
