"""``python -m sleuth.bench [NAME ...]``: run every bench module in ``sleuth.benches`` (or those named)."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import sleuth.benches


def main(argv: list[str] | None = None) -> int:
    wanted = set(argv if argv is not None else sys.argv[1:])
    names = sorted(m.name for m in pkgutil.iter_modules(sleuth.benches.__path__))
    for name in names:
        if wanted and name not in wanted:
            continue
        module = importlib.import_module(f"sleuth.benches.{name}")
        if hasattr(module, "run"):  # helpers (big_snapshot: a generator) have no figures of their own
            module.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
