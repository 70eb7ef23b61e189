"""``clirbench plot exposure``: the top-10 language shares of multi result files, through the CLI, each
bar's drawn length measured in the SVG against the records' own ``preference.top10_share``."""
from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET

import pytest

from clirbench.cli import main

SVG = "{http://www.w3.org/2000/svg}"
LANGS = ("en", "zh", "ar")


@pytest.fixture(scope="module")
def multi_results(tmp_path_factory):
    out = tmp_path_factory.mktemp("exposure")
    assert main(["run", "--model", "bm25", "--task", "xquad", "--langs", ",".join(LANGS), "--scenario", "multi",
                 "--resamples", "50", "--output", str(out / "bm25")]) == 0
    return out


def _x_extent(group) -> tuple[float, float]:
    """The smallest and largest x of the first path under ``group`` (a bar or the axes' background)."""
    d = next(group.iter(f"{SVG}path")).get("d")
    xs = [float(x) for x, _ in re.findall(r"([-\d.]+) ([-\d.]+)", d)]
    return min(xs), max(xs)


def _groups(svg_path) -> dict:
    return {g.get("id"): g for g in ET.parse(svg_path).getroot().iter(f"{SVG}g") if g.get("id")}


def _texts(svg_path) -> list[str]:
    """Every text matplotlib drew (svg.fonttype path: each text's glyphs follow a comment naming it)."""
    return [t.strip() for t in re.findall(r"<!-- (.*?) -->", svg_path.read_text(encoding="utf-8"))]


def _records(folder) -> dict:
    return {json.loads(p.read_text(encoding="utf-8"))["query_lang"]: json.loads(p.read_text(encoding="utf-8"))
            for p in sorted(folder.rglob("*.q-*.json"))}


def _other_system(src, dst):
    """A copy of ``src``'s results as another system (another revision), each row's top-10 shares
    rotated by one document language (still a valid row: the same numbers, summing to 100)."""
    shutil.copytree(src, dst)
    for path in dst.rglob("*.q-*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        data["retriever"]["revision"] = "fingerprint:0123456789abcdef"
        row = data["preference"]["top10_share"]
        data["preference"]["top10_share"] = {d: row[LANGS[(i + 1) % 3]] for i, d in enumerate(LANGS)}
        path.write_text(json.dumps(data), encoding="utf-8")
    return dst


def test_plot_exposure_draws_each_records_shares(multi_results, tmp_path):
    other = _other_system(multi_results / "bm25", tmp_path / "other")
    svg = tmp_path / "exposure.svg"
    assert main(["plot", "exposure", str(multi_results / "bm25"), str(other), "--out", str(svg)]) == 0
    again = tmp_path / "again.svg"
    assert main(["plot", "exposure", str(multi_results / "bm25"), str(other), "--out", str(again)]) == 0
    assert svg.read_bytes() == again.read_bytes()
    groups = _groups(svg)
    # two systems side by side (one row of panels: one set of documents): axes_1 and axes_2, each with
    # its background patch first; every bar's length over the axes' width is its share / 100
    for column, folder in enumerate((multi_results / "bm25", other)):
        records = _records(folder)
        assert set(records) == set(LANGS)
        left, right = _x_extent(groups[f"axes_{column + 1}"])
        width = right - left
        for qi, q in enumerate(LANGS):
            shares = records[q]["preference"]["top10_share"]
            assert sum(c["value"] for c in shares.values()) == pytest.approx(100.0, abs=1e-9)
            drawn = 0.0
            for di, d in enumerate(LANGS):
                gid = f"share_0_{column}_{qi}_{di}" + ("_own" if d == q else "")
                assert f"share_0_{column}_{qi}_{di}" + ("" if d == q else "_own") not in groups  # only q's own is marked
                a, b = _x_extent(groups[gid])
                assert (b - a) / width * 100 == pytest.approx(shares[d]["value"], abs=0.01), (column, q, d)
                drawn += b - a
            assert drawn == pytest.approx(width, rel=1e-4)  # the bar fills the panel: the shares sum to 100
            # the own language's segment comes first, from the axis
            a, _ = _x_extent(groups[f"share_0_{column}_{qi}_{qi}_own"])
            assert a == pytest.approx(left, abs=1e-3)
    texts = _texts(svg)
    rec = _records(multi_results / "bm25")["zh"]["preference"]["top10_share"]["zh"]
    assert f"zh: {rec['value']:.1f}% [{rec['ci_low']:.1f}, {rec['ci_high']:.1f}]" in texts
    for label in ("q en", "q zh", "q ar", "the query's language", "neutral mix (100/k each)", "document language"):
        assert label in texts, label
    assert sum(t.startswith("xquad/multi/en-zh-ar · ") for t in texts) == 2
    # the neutral mix of a three-language parallel pool: dotted lines at 100/3 and 200/3
    neutral = [g for gid, g in groups.items() if gid.startswith("neutral_0_0_")]
    left, right = _x_extent(groups["axes_1"])
    xs = sorted(_x_extent(g)[0] for g in neutral)
    assert xs == pytest.approx([left + (right - left) / 3, left + 2 * (right - left) / 3], abs=1e-3)
    png = tmp_path / "exposure.png"
    assert main(["plot", "exposure", str(multi_results / "bm25"), "--out", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_exposure_refuses_results_without_shares(multi_results, tmp_path, capsys):
    out = tmp_path / "mono"
    assert main(["run", "--model", "bm25", "--task", "xquad", "--langs", "en,zh", "--scenario", "mono-same",
                 "--resamples", "50", "--output", str(out)]) == 0
    # results made before the top-10 shares were kept: their preference rows lack the part
    old = tmp_path / "old"
    shutil.copytree(multi_results / "bm25", old)
    for path in old.rglob("*.q-*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        del data["preference"]["top10_share"]
        path.write_text(json.dumps(data), encoding="utf-8")
    capsys.readouterr()
    for folder in (out, old):
        assert main(["plot", "exposure", str(folder), "--out", str(tmp_path / "p.svg")]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("clirbench: error: no top-10 language share") and "\n" not in err
        assert not (tmp_path / "p.svg").exists()
    assert main(["plot", "exposure", str(multi_results / "bm25"), "--out", str(tmp_path / "p.pdf")]) == 2
    assert "must end in .svg or .png" in capsys.readouterr().err
