-- Latency per request, flagged when slower than var('slow_request_ms'), with the team that
-- owns the endpoint (the seed seeds/endpoint_owners.csv; null for an endpoint it does not list).
{{ config(materialized='append', tags=['performance']) }}
SELECT
  e.eventId,
  e.`timestamp`,
  e.request.endpoint AS endpoint,
  e.request.latency_ms AS latency_ms,
  e.request.latency_ms >= {{ var('slow_request_ms') }} AS is_slow,
  o.team AS team
FROM parsed_events AS e
LEFT JOIN {{ ref('endpoint_owners') }} AS o ON o.endpoint = e.request.endpoint
