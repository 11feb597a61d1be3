"""The batch path: what runs inside foreachBatch for one micro-batch, parse to written tables."""
