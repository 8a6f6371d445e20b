"""An example ablate plugin: T5's relative position bias (:mod:`.t5_bias`) and a lagged-copy task
(:mod:`.lag_copy`), registered by :mod:`.plugin`, the module its entry point names.

Importing this package registers nothing: the classes can be imported and tested on their own.
"""

__version__ = "0.1.0"
