"""Progress bars that show work has started: tqdm bars redrawn every second while a step runs.

A plain tqdm bar is drawn when it advances, so it sits at ``0/480 [00:00<?]`` for a whole first
model batch (a minute on a loaded CPU) and looks stuck. ``bar`` redraws it from a daemon thread
every ``every`` seconds (the elapsed time moves) until it is closed, and ``Bar.step`` names the step
in flight in its postfix (``batch 1/15``) before the step's result is there.
"""
from __future__ import annotations

import threading

__all__ = ["bar"]


def bar(iterable=None, *, every: float = 1.0, steps: int | None = None, **options):
    """A tqdm bar (``tqdm.auto``; ``options`` are tqdm's) redrawn every ``every`` seconds; with
    ``steps``, its postfix says ``batch 1/<steps>`` at once and ``step()`` moves it on."""
    from tqdm.auto import tqdm

    if steps:
        options["postfix"] = f"batch 1/{steps}"  # in the very first frame

    class Bar(tqdm):
        def __init__(self) -> None:
            super().__init__(iterable, **options)
            self.steps, self.done_steps = steps, 0
            self._stop = threading.Event()
            if not self.disable:
                threading.Thread(target=self._tick, name="clirbench-progress", daemon=True).start()

        def _tick(self) -> None:
            while not self._stop.wait(every):
                if not self.disable:
                    self.refresh()

        def step(self) -> None:
            """One step finished: the postfix names the next one."""
            self.done_steps += 1
            if self.steps and self.done_steps < self.steps:
                self.set_postfix_str(f"batch {self.done_steps + 1}/{self.steps}", refresh=False)

        def close(self) -> None:
            self._stop.set()
            super().close()

    return Bar()
