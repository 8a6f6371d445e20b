"""The declarations of the ``ablate`` commands (their arguments, options and help), one module per command group.

Each imports what runs the command only when it runs. :mod:`harness.cli.app` registers them.
"""
