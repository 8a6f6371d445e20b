"""Statistics over stored runs (docs/ARCHITECTURE.md names each module's part)."""
