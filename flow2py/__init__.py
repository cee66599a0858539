"""flow2py: the compiler of Flow (docs/dev/architecture.md). Importing it loads nothing else, so
`flow2py --version` stays fast; pyproject.toml reads the version from here."""

__version__ = "0.1.0"
