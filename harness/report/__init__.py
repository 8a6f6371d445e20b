"""Everything rendered from an analysis: the markdown report and its sections, tables, figures,
the reports index, the W&B summary run and W&B sync."""
