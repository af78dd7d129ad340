"""Loads the claims plugin; everything else lives in repro/harness/plugin.py."""

pytest_plugins = ("repro.harness.plugin",)
