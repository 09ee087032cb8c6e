"""Operations on a table: tags, rollback, time travel, expiry and orphan removal, system tables, staged (CTAS / RTAS) tables."""
