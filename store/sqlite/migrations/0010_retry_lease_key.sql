-- retry: lease tokens carry 128 random bits. lease_key is the secret of the
-- latest lease granted on an item (32 hex digits), compared on every lease
-- operation; lease_gen stays the fencing order. Leases granted before this
-- migration have no key and can no longer be settled: they run out and
-- their items are claimed again.
ALTER TABLE retry_items ADD COLUMN lease_key TEXT;
