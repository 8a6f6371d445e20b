"""How one run trains and is measured.

The only package that imports Lightning (LightningModule, DataModule, callbacks, precision, the
probes run after training). Import a module, not this package: this file imports nothing, so that
``import harness.training`` stays free.
"""
