"""Deployment artefacts: the Helm chart (helm/sleuth)."""
