-- Every version of a customer's email and tier: valid_from / valid_to are log positions
-- (valid_to NULL while current). A change of changed_at alone opens no version; a late
-- change lands where its log position puts it.
{{ config(materialized='merge', unique_key='customer_id', sequence_by='lsn',
          apply_as_deletes="op = 'd'", stored_as_scd_type=2,
          track_history_column_list=['email', 'tier']) }}
SELECT
  coalesce(after.id, before.id) AS customer_id,
  source.lsn AS lsn,
  op,
  after.email AS email,
  after.tier AS tier,
  timestamp_millis(ts_ms) AS changed_at
FROM parsed_events
WHERE op IN ('c', 'u', 'd', 'r')
