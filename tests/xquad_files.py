"""The original XQuAD files for tests: the copy shipped in the package, decompressed once into a
temporary folder.

The files are byte-identical to the originals: the decompressed copy is checked against the SHA-256
pinned in ``clirbench/tasks/cards/xquad.yaml`` (by ``clirbench.tasks.hub.read_bytes``). No test reads
anything outside the repository (``tests/test_self_contained.py`` checks it).
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

def _decompressed() -> Path:
    from clirbench.tasks import get_task, hub

    card = get_task("xquad").card
    embedded = hub.embedded_dir(card)
    key = "-".join(card.files_sha256[l][:8] for l in card.languages[:3])
    folder = Path(tempfile.gettempdir()) / f"clirbench-test-data-{os.getuid() if hasattr(os, 'getuid') else 0}-{key}" / "xquad"
    folder.mkdir(parents=True, exist_ok=True)
    for lang in card.languages:
        target = folder / f"xquad.{lang}.json"
        if target.is_file() and hub.sha256_file(target) == card.files_sha256[lang]:
            continue
        content, _ = hub.read_bytes(card, hub.local_file(card, embedded, lang), lang)
        tmp = target.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(content)
        os.replace(tmp, target)  # atomic: parallel test processes never see half a file
    return folder


XQUAD = _decompressed()
DATA = XQUAD.parent  # a $CLIRBENCH_DATA_DIR-style folder holding xquad/
