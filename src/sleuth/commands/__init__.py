"""Subcommands of ``sleuth``: every module here exposes ``register(subparsers)``, which adds its
parser and sets ``func`` (taking the parsed args, returning the exit status)."""
