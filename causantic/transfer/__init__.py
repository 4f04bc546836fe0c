"""Moving memory in and out: causantic's own export archive, and importers for other tools."""
