"""Object storage on loopback servers: moto (S3) and Azurite (Azure Blob)."""
