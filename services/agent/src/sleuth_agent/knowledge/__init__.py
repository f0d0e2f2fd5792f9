"""Team knowledge in answers (issue 17): runbooks and notes, searched with BM25 and tags.

- :mod:`._runbooks` — a runbook is Markdown with YAML front matter (``title``, ``tags``); parsing
  refuses what is too big or malformed, with the reason.
- :mod:`._search` — a BM25 index (``bm25s``) over title, tags and body, ranked by tag matches first;
  a runbook tagged with namespaces is shown only to askers who may read every one of them.
"""

from sleuth_agent.knowledge._runbooks import Runbook, RunbookError, parse_runbook
from sleuth_agent.knowledge._search import Hit, RunbookIndex, Visibility, query_tags, tokens

__all__ = ["Hit", "Runbook", "RunbookError", "RunbookIndex", "Visibility", "parse_runbook", "query_tags", "tokens"]
