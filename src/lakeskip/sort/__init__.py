"""lakeskip.sort."""
