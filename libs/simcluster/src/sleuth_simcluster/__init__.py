"""Sleuth."""
