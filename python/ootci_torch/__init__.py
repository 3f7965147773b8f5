"""ootci's code inside the pytest process: the plan, the device test base, the pytest plugin."""
