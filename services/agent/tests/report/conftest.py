"""The rule tests share ``objects.py`` (builders of Kubernetes objects and a one-rule runner),
loaded once as ``report_objects``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

if "report_objects" not in sys.modules:
    _spec = importlib.util.spec_from_file_location("report_objects", Path(__file__).parent / "objects.py")
    assert _spec and _spec.loader
    _module = importlib.util.module_from_spec(_spec)
    sys.modules["report_objects"] = _module
    _spec.loader.exec_module(_module)
