-- Latency per request, flagged when slower than var('slow_request_ms').
{{ config(materialized='append', tags=['performance']) }}
SELECT
  eventId,
  `timestamp`,
  request.endpoint AS endpoint,
  request.latency_ms AS latency_ms,
  request.latency_ms >= {{ var('slow_request_ms') }} AS is_slow
FROM parsed_events
