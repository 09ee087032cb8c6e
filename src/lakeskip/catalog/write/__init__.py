"""Writing a table's data files: the append / primary-key write path and primary-key tables' deletion vectors."""
