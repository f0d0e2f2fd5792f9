# Sleuth — make help lists the targets.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
UV := $(VENV)/bin/uv
export UV_PROJECT_ENVIRONMENT := $(abspath $(VENV))
export UV_LINK_MODE := copy
# Every test starts many Python processes: let them keep compiled bytecode (some machines set
# PYTHONDONTWRITEBYTECODE=1, and then each process compiles everything it imports again).
unexport PYTHONDONTWRITEBYTECODE
STAMP := $(VENV)/.sleuth-installed

.DEFAULT_GOAL := help
.PHONY: help install test-tools run test test-fast lint bench soak chart asyncapi demo-question demo-kubectl clean

help: ## List the targets
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*?## "}{printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2}'

$(UV):
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	@$(VENV)/bin/python -m pip install -q --disable-pip-version-check uv

$(STAMP): $(UV) uv.lock pyproject.toml $(wildcard libs/*/pyproject.toml services/*/pyproject.toml)
	@$(UV) sync --frozen --all-packages --quiet
	@touch $(STAMP)

NPM_TOOLS := tools/npm/node_modules/.bin/kubernetes-mcp-server

$(NPM_TOOLS): tools/npm/package.json tools/npm/package-lock.json
	@cd tools/npm && npm install --no-audit --no-fund --silent
	@touch $(NPM_TOOLS)

install: $(STAMP) ## Create .venv with every member and the `sleuth` command (quick when nothing changed)

test-tools: $(NPM_TOOLS) ## Third-party servers the tests run against (kubernetes-mcp-server from npm, project-local)

run: install ## Start the whole stack with the demo cluster; web chat on http://127.0.0.1:8080
	$(VENV)/bin/sleuth up

# Tests run in TEST_WORKERS pytest-xdist processes (0 = in this one); a module stays on one worker,
# so its module-scoped stacks start once. free_port() gives each worker its own ports.
TEST_WORKERS ?= 2
TEST_DIST ?= loadfile

test: install test-tools ## Run the whole test suite (real nats-server, Valkey, MCP over HTTP, simcluster over HTTPS)
	$(VENV)/bin/python -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist $(TEST_DIST)

test-fast: install ## Unit tests only (no processes)
	$(VENV)/bin/python -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist $(TEST_DIST) -m "not connected and not e2e and not browser"

lint: install ## ruff, import-linter and mypy
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

bench: install ## Print performance figures as ratios against floors measured in the same run
	$(VENV)/bin/python -m sleuth.bench

SOAK_MINUTES ?= 10

soak: install ## Chaos soak: 3 NATS nodes, 2 gateways/agents/authz-caches under load while parts fail in turn (SOAK_MINUTES=10)
	$(VENV)/bin/sleuth soak --minutes $(SOAK_MINUTES) --json .sleuth-soak/soak.json

asyncapi: install ## Write docs/asyncapi/<service>.json, each service's AsyncAPI document, from code
	$(VENV)/bin/sleuth asyncapi

chart: install ## Render helm/sleuth as `helm template` would, offline (VALUES=file.yaml to add values)
	@$(VENV)/bin/python -m tests.deploy.chart $(if $(VALUES),-f $(VALUES))

demo-question: install ## Ask the demo cluster a question offline, as alice
	$(VENV)/bin/sleuth investigate --snapshot scenarios/demo --as alice --question "what is failing in team-a?" --format markdown

demo-kubectl: install ## Print how to point kubectl at a running `make run` stack
	@echo 'export KUBECONFIG=$$PWD/.sleuth/kubeconfig/alice.yaml; kubectl get pods -n team-a'

clean: ## Remove the virtualenv and runtime state
	rm -rf $(VENV) .sleuth tools/npm/node_modules
