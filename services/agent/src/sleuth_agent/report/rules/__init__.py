"""One module per best-practice rule, each registering itself with ``@rule(...)``
(``sleuth_agent.report._registry``). ``load_rules()`` imports every module here: adding a rule is
adding a module (and its test)."""

__all__: list[str] = []
