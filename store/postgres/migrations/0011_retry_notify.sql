-- retry: wake waiting claims on every node. A statement that leaves an
-- item pending or scheduled (an add, a sighting, a failure, a release, a
-- lease that ran out) notifies the channel 'hostguard_retry.<schema>';
-- the notification is delivered when the transaction commits, once per
-- transaction however many statements sent it. The schema in the channel's
-- name keeps databases that hold several hostguard schemas apart.
CREATE FUNCTION retry_items_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF EXISTS (SELECT 1 FROM new_rows WHERE state IN (0, 1)) THEN
		PERFORM pg_notify('hostguard_retry.' || current_schema(), '');
	END IF;
	RETURN NULL;
END $$;

CREATE TRIGGER retry_items_notify_insert AFTER INSERT ON retry_items
	REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION retry_items_notify();
CREATE TRIGGER retry_items_notify_update AFTER UPDATE ON retry_items
	REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION retry_items_notify();
