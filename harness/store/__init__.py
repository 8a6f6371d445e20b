"""The run store: one folder per run, written atomically, read back as tidy rows."""
