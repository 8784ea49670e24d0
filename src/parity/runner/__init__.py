"""Launching worker processes and the worker's phase loop."""
