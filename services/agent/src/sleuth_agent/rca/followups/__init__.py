"""Follow-up reads by topic (DESIGN §3): each module reads what one topic needs through the
scoped tools and returns typed facts; none writes prose."""

__all__: list[str] = []
