"""lakeskip.planner."""
