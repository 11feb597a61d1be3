-- One row per error reported by an event (events without errors yield no rows).

SELECT
  eventId,
  `timestamp`,
  user.userId AS userId,
  err.errorCode AS errorCode,
  err.severity AS severity
FROM parsed_events
LATERAL VIEW explode(errors) e AS err
