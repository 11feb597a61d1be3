-- One row per request: who called which endpoint, and how it went.
{{ config(materialized='append', tags=['requests']) }}
SELECT
  eventId,
  `timestamp`,
  user.userId AS userId,
  request.endpoint AS endpoint,
  request.status_code AS status_code,
  {{ status_class('request.status_code') }} AS status_class
FROM parsed_events
