"""Fakes of outside services the tests talk to over real sockets (no real model is ever called)."""
