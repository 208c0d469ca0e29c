"""One module per command (capture, lint, bench, dot); cgtool/cli.py loads each when it is used."""
