"""Paimon's on-disk format: rows, data-file metas, manifests, index manifests, snapshots, schemas, stats, deletion-vector files, bucket hashing and the format's options. No table logic."""
