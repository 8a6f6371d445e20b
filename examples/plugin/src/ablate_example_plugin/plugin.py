"""The module the entry point names (group ``ablate.plugins``): importing it registers the
plugin's entries through :mod:`harness.plugin`, the public API for plugins, and nothing else.

``version=1``: bump an entry's version when its output on a given input changes (versions above
1 enter the run ids, so the runs of the old code are not mixed with the new ones).
"""

from ablate_example_plugin.lag_copy import LagCopy
from ablate_example_plugin.t5_bias import T5RelativeBias
from harness.plugin import POSITIONAL, TASKS

POSITIONAL.register("t5_bias", version=1)(T5RelativeBias)
TASKS.register("lag_copy")(LagCopy)
