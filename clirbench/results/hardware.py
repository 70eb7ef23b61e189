"""The machine a run ran on: probed once per run by the runner (``nvidia-smi`` at most once)."""
from __future__ import annotations

import shutil
import subprocess
import sys

from .records import Hardware

__all__ = ["hardware_info", "gpu_name"]


def gpu_name() -> str | None:
    """The first GPU's name: from torch when it is already imported, else ``nvidia-smi``; None if none."""
    torch = sys.modules.get("torch")  # never import torch just to ask
    if torch is not None:
        try:
            if torch.cuda.is_available():
                return str(torch.cuda.get_device_name(0))
        except Exception:  # noqa: BLE001 - a broken CUDA setup is just "no GPU" here
            pass
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                                 text=True, timeout=10, check=True).stdout.strip().splitlines()
            return out[0].strip() if out else None
        except (OSError, subprocess.SubprocessError):
            return None
    return None



def hardware_info() -> Hardware:
    """The machine this process runs on (GPU name or None)."""
    return Hardware.this_machine(gpu=gpu_name())
