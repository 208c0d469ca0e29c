"""One module per command; COMMANDS is the plain list the CLI registers."""

from cgtool.commands.bench import bench
from cgtool.commands.capture import capture
from cgtool.commands.dot import dot
from cgtool.commands.lint import lint

COMMANDS = [capture, lint, bench, dot]
