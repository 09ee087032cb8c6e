"""The write path: Spark tasks that write Parquet files, stats and indexes; the procedures' Spark executor."""
