"""lakeskip.expressions."""
