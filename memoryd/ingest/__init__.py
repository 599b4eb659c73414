"""Repository ingestion: scan, bounded batches, finalize (job kinds ``ingest.*``)."""
