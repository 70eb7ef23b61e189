"""clirbench: cross-lingual retrieval benchmark harness."""
__version__ = "0.1.0"
