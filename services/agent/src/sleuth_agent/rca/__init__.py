"""The deterministic investigator (DESIGN §3): plan → collect → follow up → match signatures →
rank → report. No LLM; the signatures are data (``signatures.yaml``).

``investigate(job, scope_reply, settings)`` is the entry point for the agent service and for
``sleuth investigate`` (offline, against simcluster + kube-mcp started in-process).
"""

from sleuth_agent.rca._investigate import ProgressCallback, ToolsFactory, investigate
from sleuth_agent.rca._signatures import load_catalog, match_facts

__all__ = ["ProgressCallback", "ToolsFactory", "investigate", "load_catalog", "match_facts"]
