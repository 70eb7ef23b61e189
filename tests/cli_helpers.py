"""Helpers shared by the CLI tests."""
from __future__ import annotations

from clirbench.cli import main


def one_line_error(capsys, argv) -> str:
    """Run ``clirbench argv`` through the real entry point; it must fail with one line, exit 2."""
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("clirbench: error:"), err
    assert "Traceback" not in err
    return lines[0]
