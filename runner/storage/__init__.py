"""Storage: where the runner's locations live (local disk or object storage) and the settings
each consumer of a location needs (:mod:`runner.storage.settings`)."""
