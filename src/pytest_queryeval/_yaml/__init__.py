"""The YAML loader, below predict/ and suite/: a predictions file in YAML is read as a case file
is, its errors located by file, line and field."""
