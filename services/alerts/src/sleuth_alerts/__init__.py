"""Sleuth alerts service: Alertmanager webhook receiver, batching per cluster, cooldowns."""
