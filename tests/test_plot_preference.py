"""``clirbench plot preference``: the language-preference matrices of multi result files, through
the CLI, checked against the records' own preference rows."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from clirbench.cli import main


@pytest.fixture(scope="module")
def multi_results(tmp_path_factory):
    out = tmp_path_factory.mktemp("klang")
    assert main(["run", "--model", "bm25", "--task", "xquad", "--langs", "en,zh,ar", "--scenario", "multi",
                 "--resamples", "50", "--output", str(out)]) == 0
    return sorted(out.rglob("*.q-*.json"))


def test_plot_preference_draws_the_records_matrix(multi_results, tmp_path, capsys):
    from clirbench.plots.preference import preference_figure
    from clirbench.stats.preference import preference_matrix

    assert len(multi_results) == 3
    svg = tmp_path / "preference.svg"
    assert main(["plot", "preference", *map(str, multi_results), "--out", str(svg)]) == 0
    assert ET.parse(svg).getroot().tag.endswith("svg")
    again = tmp_path / "again.svg"
    assert main(["plot", "preference", *map(str, multi_results), "--out", str(again)]) == 0
    assert svg.read_bytes() == again.read_bytes()
    # the drawn grid: rows = query languages, columns = document languages, the share read straight
    # from each record's preference section
    records = [json.loads(p.read_text(encoding="utf-8")) for p in multi_results]
    (matrix,) = preference_matrix(records)
    drawn = np.asarray(preference_figure(matrix).axes[0].images[0].get_array())
    by_lang = {r["query_lang"]: r["preference"]["best_share"] for r in records}
    expected = [[by_lang[q][d]["value"] for d in ("en", "zh", "ar")] for q in ("en", "zh", "ar")]
    assert matrix["query_langs"] == matrix["doc_langs"] == ["en", "zh", "ar"]
    np.testing.assert_allclose(drawn, expected)
    np.testing.assert_allclose(drawn.sum(axis=1), 100.0, atol=1e-9)  # each query's best passage is somewhere


def test_plot_preference_refuses_results_without_a_matrix(tmp_path, capsys):
    out = tmp_path / "mono"
    assert main(["run", "--model", "bm25", "--task", "xquad", "--langs", "en,zh", "--scenario", "mono-same",
                 "--resamples", "50", "--output", str(out)]) == 0
    capsys.readouterr()
    files = sorted(map(str, out.rglob("*.q-*.json")))
    assert main(["plot", "preference", *files, "--out", str(tmp_path / "p.svg")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("clirbench: error: no preference matrix") and "\n" not in err
    assert main(["plot", "preference", *files, "--out", str(tmp_path / "p.pdf")]) == 2
