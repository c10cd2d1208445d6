"""The switch for the serving speed-ups, and the list of them.

Each speed-up gives the same pages as Datasette's own way, only sooner; with
`COMPUTEKB_SPEEDUPS=off` in the environment of the server (or of the tests),
each is left out and Datasette's own way runs. What each buys is measured in
docs/BENCHMARKS.md.

- plugins/speed.py: tag facets counted from the per-table tag counts when a
  page filters only on equal values of other facet columns, the tag columns
  of a page counted at the same time, and a facet asked for twice counted once.
- plugins/units.py: the display of a value with a unit remembered per value
  and unit (pint is slow to format a value).
- serving/hooked_metadata.py and plugins/speed.py: on Datasette 0.65, the
  dashboards' configuration left out of the metadata that each permission
  check deep-copies, and given by a `get_metadata` hook to the lookups of
  plugin settings.
- serving/charts.py: a dashboard chart's SVG kept once drawn, per specification
  and rows, and sent again without drawing.

Here rather than in plugins/, as Datasette loads each plugin file on its own.
"""

import os

ENVIRONMENT_VARIABLE = "COMPUTEKB_SPEEDUPS"


def enabled() -> bool:
    """Whether the speed-ups are on: they are unless the variable says `off`."""
    return os.environ.get(ENVIRONMENT_VARIABLE, "on").strip().lower() != "off"
