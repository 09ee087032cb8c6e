"""lakeskip.procedures."""
