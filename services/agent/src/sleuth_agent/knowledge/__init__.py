"""Team knowledge in answers (issue 17): runbooks and notes, searched with BM25 and tags.

- :mod:`._runbooks` — a runbook is Markdown with YAML front matter (``title``, ``tags``); parsing
  refuses what is too big or malformed, with the reason.
- :mod:`._search` — a BM25 index (``bm25s``) over title, tags and body, ranked by tag matches first;
  a runbook tagged with namespaces is shown only to askers who may read every one of them.
- :mod:`._store` — runbooks from a directory (GitOps) and from Redis (chat), reloaded on change.
- :mod:`._commands` — the chat command ``kb add|show|list|rm`` (``<prefix>.agent.kb``).
- :mod:`._tools` — ``kb_search``/``kb_read`` for the AI model (knowledge, never evidence).
- :mod:`._answer` — standing instructions of a run, a suppression's "Expected" note, the footnote; and the "Runbook:" line a deterministic or LLM answer gets when a runbook's tags
  match the alert, the family or the object.
"""

from sleuth_agent.knowledge._answer import (
    about_namespaces,
    expected_note,
    facts,
    footnote,
    instructions_for,
    runbook_line,
    suppressing,
    visibilities,
)
from sleuth_agent.knowledge._commands import KbResponder, kb_router
from sleuth_agent.knowledge._runbooks import Runbook, RunbookError, Suppression, parse_runbook
from sleuth_agent.knowledge._search import Hit, RunbookIndex, Visibility, query_tags, tokens
from sleuth_agent.knowledge._store import Knowledge, RunbookStore
from sleuth_agent.knowledge._tools import KB_TOOLS, KnowledgeTools

__all__ = ["KB_TOOLS", "Hit", "KbResponder", "Knowledge", "KnowledgeTools", "Runbook", "RunbookError", "RunbookIndex",
           "RunbookStore", "Suppression", "Visibility", "about_namespaces", "expected_note", "facts", "footnote",
           "instructions_for", "kb_router", "parse_runbook", "query_tags", "runbook_line", "suppressing", "tokens",
           "visibilities"]
