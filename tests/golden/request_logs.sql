-- One row per request: who called which endpoint, and how it went.

SELECT
  eventId,
  `timestamp`,
  user.userId AS userId,
  request.endpoint AS endpoint,
  request.status_code AS status_code,
  CASE WHEN request.status_code >= 500 THEN 'server_error' WHEN request.status_code >= 400 THEN 'client_error' ELSE 'ok' END AS status_class
FROM parsed_events
