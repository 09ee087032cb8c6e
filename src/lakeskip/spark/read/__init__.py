"""The read path: planned scans handed to Spark's Parquet reader, deletion vectors on read, predicates from the JVM."""
