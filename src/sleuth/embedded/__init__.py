"""The embedded stack: nats-server, Valkey and the Sleuth services as local processes."""

from sleuth.embedded.procs import ManagedProcess, NatsServer, ValkeyServer, free_port, wait_for_port

__all__ = ["ManagedProcess", "NatsServer", "ValkeyServer", "free_port", "wait_for_port"]
