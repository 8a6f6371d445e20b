"""Ablation declarations: one YAML file per ablation, loaded by ``harness.experiment.ablation.load``."""
