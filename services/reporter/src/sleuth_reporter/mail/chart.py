"""The findings-per-severity chart of the email: a small horizontal bar chart drawn by pygal as
SVG, inlined in the HTML part. pygal's SVG carries a script (tooltips) and comments naming its
site: both are removed, so the email references nothing outside itself. Mail clients that do not
draw inline SVG (Gmail, Outlook) still show the same counts in the table above it."""

from __future__ import annotations

import html
import re
import sys

import pygal
from pygal.style import Style

from sleuth_common.messages import SEVERITIES

# pygal appends a finder for its map plugins to ``sys.meta_path`` that has only the legacy
# ``find_module``: on Python 3.11 every later import that reaches it warns (ImportWarning, an error
# under the tests' warning filter). No map is drawn here, so it is taken out again.
sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, pygal.PluginImportFixer)]

__all__ = ["COLORS", "severity_chart"]

COLORS = {"critical": "#b71c1c", "high": "#e65100", "medium": "#f9a825", "low": "#1565c0"}
_SCRIPT = re.compile(r"<script\b.*?</script>", re.S)
_COMMENT = re.compile(r"<!--.*?-->", re.S)


def severity_chart(counts: dict[str, int]) -> str:
    """An ``<svg>`` element: one bar per severity, each labelled with its count."""
    style = Style(
        background="white", plot_background="white", foreground="#333", foreground_strong="#222",
        foreground_subtle="#ddd", colors=tuple(COLORS[s] for s in SEVERITIES),
        font_family="Helvetica, Arial, sans-serif", value_font_size=14, label_font_size=13,
        title_font_size=15,
    )
    chart = pygal.HorizontalBar(
        width=480, height=190, style=style, js=[], disable_xml_declaration=True, explicit_size=True,
        show_legend=False, print_values=True, no_prefix=True, title="Findings by severity",
        margin=10, show_x_labels=False, show_y_guides=False, show_x_guides=False,
    )
    # Most severe on top: pygal draws a horizontal bar chart's first label at the bottom.
    order = list(reversed(SEVERITIES))
    chart.x_labels = order
    chart.add("findings", [{"value": counts.get(s, 0), "color": COLORS[s], "label": s} for s in order])
    svg = chart.render(is_unicode=True)
    svg = _COMMENT.sub("", _SCRIPT.sub("", svg))
    label = "Findings by severity: " + ", ".join(f"{counts.get(s, 0)} {s}" for s in SEVERITIES)
    return svg.replace("<svg ", f'<svg role="img" aria-label="{html.escape(label)}" ', 1)
