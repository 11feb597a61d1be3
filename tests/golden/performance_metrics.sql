-- Latency per request, flagged when slower than var('slow_request_ms').

SELECT
  eventId,
  `timestamp`,
  request.endpoint AS endpoint,
  request.latency_ms AS latency_ms,
  request.latency_ms >= 1000 AS is_slow
FROM parsed_events
