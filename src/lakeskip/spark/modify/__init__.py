"""DELETE / UPDATE / MERGE INTO: one dispatch point and one engine per table kind (copy-on-write, primary key, deletion vectors)."""
