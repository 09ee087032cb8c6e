"""lakeskip.sql."""
