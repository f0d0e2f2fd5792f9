"""The LLM agent loop (DESIGN §1, §3): after the deterministic investigator, a model
investigates with the same scoped tools, seeded with the deterministic findings and held to the
same evidence rule.

``make_llm_investigator(settings, metrics, redis)`` → ``LlmInvestigator`` or None (no endpoint
configured); ``await investigator.run(job, scope, base_result, ...)`` → (result, ``LlmRun``).
"""

from sleuth_agent.llm._budget import DailyCapReached, DailyLlmBudget
from sleuth_agent.llm._catalog import ToolCatalog, choose_clusters, tool_name
from sleuth_agent.llm._harness import check_answer, cited_ids
from sleuth_agent.llm._loop import AgentLoop, LoopConfig, LoopResult, flatten
from sleuth_agent.llm._prompt import announces_work, grounding, mark_data, system_prompt
from sleuth_agent.llm._run import LlmInvestigator, LlmRun, make_llm_investigator

__all__ = [
    "AgentLoop",
    "DailyCapReached",
    "DailyLlmBudget",
    "LlmInvestigator",
    "LlmRun",
    "LoopConfig",
    "LoopResult",
    "ToolCatalog",
    "announces_work",
    "check_answer",
    "choose_clusters",
    "cited_ids",
    "flatten",
    "grounding",
    "make_llm_investigator",
    "mark_data",
    "system_prompt",
    "tool_name",
]
