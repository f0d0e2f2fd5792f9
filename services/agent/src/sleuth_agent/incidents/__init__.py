"""Incident memory (issue 17): every diagnosed investigation is remembered, and answers say when
the same failure — or evidence like it — was seen before, in the asker's scope, with what fixed it.

- :mod:`._record` — what an incident keeps (never raw tool output: a normalised evidence
  signature) and who may see it again.
- :mod:`._index` — the in-memory index every agent searches (object, family, BM25 over signatures).
- :mod:`._store` — Redis (``<prefix>:agent:incidents:*``, retention) and :class:`IncidentMemory`.
- :mod:`._bus` — ``<prefix>.incidents.recorded``, heard by every agent.
- :mod:`._answer` — the "Seen before" section.
- :mod:`._feedback` — 👍/👎 and "fixed by" on an answer (``<prefix>.agent.feedback``), by its readers only.
"""

from sleuth_agent.incidents._answer import seen_before_section
from sleuth_agent.incidents._bus import incidents_router
from sleuth_agent.incidents._feedback import FeedbackResponder, feedback_router, unknown_answer
from sleuth_agent.incidents._index import IncidentIndex, SeenBefore, similarity
from sleuth_agent.incidents._record import incident_of, namespaces_named, normalise, visible_to
from sleuth_agent.incidents._store import IncidentMemory, IncidentStore

__all__ = ["FeedbackResponder", "IncidentIndex", "IncidentMemory", "IncidentStore", "SeenBefore", "feedback_router",
           "incident_of", "incidents_router", "namespaces_named", "normalise", "seen_before_section", "similarity",
           "unknown_answer", "visible_to"]
