"""Reading a sweep's results back: rows, run views, aggregation and statistics."""
