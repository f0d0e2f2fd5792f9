#!/bin/sh
# Run one Sleuth service by name: sleuth-gateway, sleuth-agent, sleuth-authz-cache, sleuth-alerts,
# sleuth-scheduler, sleuth-reporter, sleuth-kube-mcp, sleuth-simcluster or the sleuth CLI; anything else is refused with the list.
set -eu
case "${1:-}" in
  sleuth|sleuth-gateway|sleuth-agent|sleuth-authz-cache|sleuth-alerts|sleuth-scheduler|sleuth-reporter|sleuth-kube-mcp|sleuth-simcluster)
    exec "$@" ;;
  *)
    echo "sleuth-entrypoint: unknown service '${1:-}'; one of: sleuth-gateway sleuth-agent sleuth-authz-cache sleuth-alerts sleuth-scheduler sleuth-reporter sleuth-kube-mcp sleuth-simcluster sleuth" >&2
    exit 64 ;;
esac
