"""Everything rendered from an analysis, which :mod:`harness.report.build` computes.

That is the markdown report and its sections, tables, figures, the reports index.
"""
