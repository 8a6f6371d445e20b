"""Everything rendered from an analysis: the markdown report and its sections, tables, figures,
the reports index (computed by :mod:`harness.cli.report`)."""
