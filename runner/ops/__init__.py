"""Operating a running pipeline, without Spark: consistent snapshots of its tables
(:mod:`.snapshot`), its status (:mod:`.status`) and table maintenance (:mod:`.maintain`)."""
