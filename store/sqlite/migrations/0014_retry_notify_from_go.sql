-- retry: the PostgreSQL store's notifications moved out of a trigger; this
-- version exists so that both engines number their schema alike.
SELECT 1;
