"""Spider structural evaluation tests."""
