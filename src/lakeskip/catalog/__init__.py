"""lakeskip.catalog."""
