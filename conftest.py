"""Loads the claims plugin; everything else lives in repro/pytest_plugin.py."""
pytest_plugins = ("repro.pytest_plugin",)
