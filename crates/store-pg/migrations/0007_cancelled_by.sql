-- Who asked for a run's cancellation ({"by": NAME or null, "how": "api" | "console" |
-- "terminal"}), for the holder to name in the run's stop.
ALTER TABLE runs ADD COLUMN cancelled_by jsonb;
