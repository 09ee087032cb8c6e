"""The planner's tiers below :class:`~lakeskip.planner.scan.ScanPlanner`: the snapshot's
stats as columns (``columns``), opening file indexes (``index_files``), the per-file tiers
(``files``) and the primary-key rule over them (``primary_key``)."""
