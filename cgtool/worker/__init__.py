"""The process boundary: the parent's client (client.py) and the child process (child.py, `python -m cgtool.worker`)."""
