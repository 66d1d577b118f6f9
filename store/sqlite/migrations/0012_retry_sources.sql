-- retry: the latest word from each named source about an item, as a
-- compact JSON array of [unix ms, source] (a sighting) and
-- [unix ms, source, class] (a failure) entries, at most a few; NULL when
-- no source ever named itself. The scheduler alone reads and writes it.
ALTER TABLE retry_items ADD COLUMN sources TEXT;
