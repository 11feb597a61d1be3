-- The live customers: one row per id, the latest change by log position wins whatever the
-- order the changes arrive in; a Debezium delete ('d') removes the row for good (a late,
-- older update does not bring it back).
{{ config(materialized='merge', unique_key='customer_id', sequence_by='lsn',
          apply_as_deletes="op = 'd'") }}
SELECT
  coalesce(after.id, before.id) AS customer_id,   -- a delete has only `before`
  source.lsn AS lsn,
  op,
  after.email AS email,
  after.tier AS tier,
  timestamp_millis(ts_ms) AS changed_at
FROM parsed_events
WHERE op IN ('c', 'u', 'd', 'r')                    -- 'r': a snapshot read; 't' (truncate) has no key
