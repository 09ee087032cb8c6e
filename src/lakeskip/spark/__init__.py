"""lakeskip.spark."""
