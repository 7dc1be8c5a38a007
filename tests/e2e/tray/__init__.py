"""Browser tests of the tray against the scripted fake protocol server, one module per feature."""
