"""Secrets out of recorded commands (clirbench.util.redact): every spelling of each class, through the
function and through the real CLI (``leaderboard submit/build --command``, then ``leaderboard html``),
reading back every written file and the terminal; ordinary commands kept as they are."""
from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import pytest

from clirbench.cli import main
from clirbench.util.redact import MASK, redact, redact_command, redact_url, secret_name

from xquad_files import XQUAD

JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
PEM_BODY = "MIIEowIBAAKCAQEAx4UbaDzY\\nq1w2e3r4t5y6u7i8o9p0"

# (command, its secret values, the command as recorded)
CASES = [
    # the spellings
    ("curl -H 'Authorization: Bearer xyz' https://api.example.com/v1",
     ["xyz"], "curl -H 'Authorization: Bearer ***' https://api.example.com/v1"),
    ('curl -H "Authorization: token gho_short1" https://api.github.com',
     ["gho_short1"], 'curl -H "Authorization: token ***" https://api.github.com'),
    ("curl -H 'X-API-Key: k3y-v4lue' https://h/v1", ["k3y-v4lue"], "curl -H 'X-API-Key: ***' https://h/v1"),
    ("setenv OPENAI_API_KEY sk-abc123def456ghi && clirbench run --model m",
     ["sk-abc123def456ghi"], "setenv OPENAI_API_KEY *** && clirbench run --model m"),
    ("clirbench run --model m --translator openai:gpt-4o sk-proj-Bare0123456789",
     ["sk-proj-Bare0123456789"], "clirbench run --model m --translator openai:gpt-4o ***"),
    ("DB_PASS=hunter2db clirbench run --model m", ["hunter2db"], "DB_PASS=*** clirbench run --model m"),
    ("MYSQL_PWD=myPwd_99 mysql -u root results", ["myPwd_99"], "MYSQL_PWD=*** mysql -u root results"),
    ("mysql -u root -pMyS3cret results < dump.sql", ["MyS3cret"], "mysql -u root -p*** results < dump.sql"),
    ("""clirbench run --model m --config '{"api_key": "js0n-k3y", "model": "m"}'""",
     ["js0n-k3y"], """clirbench run --model m --config '{"api_key": "***", "model": "m"}'"""),
    ("clirbench run --translator openai:m@https://h/v1?model=x&pass=amp3rsand-pw&n=1",
     ["amp3rsand-pw"], "clirbench run --translator openai:m@https://h/v1?model=x&pass=***&n=1"),
    # more headers, schemes and quoting styles
    ("curl -H 'Authorization:Basic dXNlcjpwYXNzd29yZA==' https://h",
     ["dXNlcjpwYXNzd29yZA=="], "curl -H 'Authorization:Basic ***' https://h"),
    ("curl --header=\"Proxy-Authorization: Bearer pr0xy.t0k\" https://h",
     ["pr0xy.t0k"], "curl --header=\"Proxy-Authorization: Bearer ***\" https://h"),
    ("curl -H 'X-Auth-Token: aut0ken' -H 'api-key: azur3key' -H 'Cookie: session=c00kie' -H 'Accept: text/plain' u",
     ["aut0ken", "azur3key", "c00kie"],
     "curl -H 'X-Auth-Token: ***' -H 'api-key: ***' -H 'Cookie: ***' -H 'Accept: text/plain' u"),
    ("http GET h Authorization:'Bearer quoted-b34rer'", ["quoted-b34rer"], "http GET h Authorization:'***'"),
    (f"curl -H 'Authorization: Bearer {JWT}' h", [JWT], "curl -H 'Authorization: Bearer ***' h"),
    (f"clirbench run --model m --task-option jwt_in_text {JWT}", [JWT],
     "clirbench run --model m --task-option jwt_in_text ***"),
    # flags
    ("clirbench run --token=t0k3n-eq --password pa55-sp --max-tokens 512 --api-key 'quoted key'",
     ["t0k3n-eq", "pa55-sp", "quoted key"],
     "clirbench run --token=*** --password *** --max-tokens 512 --api-key '***'"),
    ("wget --http-password=wg3tpw --user=bob https://h/f", ["wg3tpw"], "wget --http-password=*** --user=bob https://h/f"),
    ("java -Ddb.password=j4vapw -jar x.jar", ["j4vapw"], "java -Ddb.password=*** -jar x.jar"),
    # environment assignments and shells
    ("PGPASSWORD='pg pass' AWS_SECRET_ACCESS_KEY=" + AWS_SECRET + " HF_TOKEN=hf_abcdefghijklmnopqrstu clirbench run",
     ["pg pass", AWS_SECRET, "hf_abcdefghijklmnopqrstu"],
     "PGPASSWORD='***' AWS_SECRET_ACCESS_KEY=*** HF_TOKEN=*** clirbench run"),
    ("export GITHUB_TOKEN=\"ghp_exported123\"; clirbench run", ["ghp_exported123"],
     "export GITHUB_TOKEN=\"***\"; clirbench run"),
    ("set -x ANTHROPIC_API_KEY fish-k3y; set pass = csh-pa55", ["fish-k3y", "csh-pa55"],
     "set -x ANTHROPIC_API_KEY ***; set pass = ***"),
    ("$env:OPENAI_API_KEY = \"ps-k3y-value\"; clirbench run", ["ps-k3y-value"],
     "$env:OPENAI_API_KEY = \"***\"; clirbench run"),
    ("docker run -e MY_SECRET=d0cker-s3c img", ["d0cker-s3c"], "docker run -e MY_SECRET=*** img"),
    # URLs
    ("git clone https://gituser:ur1-pw@git.example.com/r.git", ["ur1-pw", "gituser"],
     "git clone https://***@git.example.com/r.git"),
    ("git clone https://ghp_InUserinfo0123@github.com/o/r", ["ghp_InUserinfo0123"], "git clone https://***@github.com/o/r"),
    ("curl 'https://h/x?api_key=qk3y&token=qt0k&X-Amz-Signature=s1gn&lang=en'", ["qk3y", "qt0k", "s1gn"],
     "curl 'https://h/x?api_key=***&token=***&X-Amz-Signature=***&lang=en'"),
    ("curl -u alice:cu4lpw https://h", ["cu4lpw"], "curl -u alice:*** https://h"),
    # other programs
    ("redis-cli -a r3dispw ping && sshpass -p ssh-pw ssh h", ["r3dispw", "ssh-pw"],
     "redis-cli -a *** ping && sshpass -p *** ssh h"),
    # JSON / YAML with secret-ish keys
    ("""clirbench run --cfg '{\\"client_secret\\": \\"esc-s3c\\"}'""", ["esc-s3c"],
     """clirbench run --cfg '{\\"client_secret\\": \\"***\\"}'"""),
    ("printf 'password: yaml-pw\\nmodel: m\\n' > c.yaml", ["yaml-pw"], "printf 'password: ***\\nmodel: m\\n' > c.yaml"),
    ("""echo '{"apiKey":"camel-k3y","accessToken":"acc-t0k"}'""", ["camel-k3y", "acc-t0k"],
     """echo '{"apiKey":"***","accessToken":"***"}'"""),
    # private keys
    (f"echo '-----BEGIN RSA PRIVATE KEY-----\\n{PEM_BODY}\\n-----END RSA PRIVATE KEY-----' > k.pem",
     [PEM_BODY], "echo '-----BEGIN RSA PRIVATE KEY-----***-----END RSA PRIVATE KEY-----' > k.pem"),
    ("ssh-add - <<< '-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjE", ["b3BlbnNzaC1rZXktdjE"],
     "ssh-add - <<< '-----BEGIN OPENSSH PRIVATE KEY-----***"),
    # bare well-known shapes (detect-secrets' and the short prefixes)
    ("clirbench run AKIAIOSFODNN7EXAMPLE xoxb-1234-5678-abcdef glpat-abcdefghij12 sk_live_abc123 "
     "AIzaSyA1234567890abcdefghijklmnop ghp_abcdefghijklmnopqrstuvwxyz0123456789",
     ["AKIAIOSFODNN7EXAMPLE", "xoxb-1234-5678-abcdef", "glpat-abcdefghij12", "sk_live_abc123",
      "AIzaSyA1234567890abcdefghijklmnop", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"],
     "clirbench run *** *** *** *** *** ***"),
    ("clirbench run --translator openai:m sk-ant-api03-Anthropic_key-99", ["sk-ant-api03-Anthropic_key-99"],
     "clirbench run --translator openai:m ***"),
    # more of each class: lower case, no blank, ; inside a quoted header, names ending in token/secret
    ("curl -H 'Cookie: session=c00k1e; csrftoken=csrf-t0k' -H \"authorization:\tbearer l0wer\" h",
     ["c00k1e", "csrf-t0k", "l0wer"], "curl -H 'Cookie: ***' -H \"authorization:\tbearer ***\" h"),
    ("clirbench --api_key u-k1 --apikey=u-k2 --openai-api-key u-k3 --hf_token u-k4 --client-secret u-k5",
     ["u-k1", "u-k2", "u-k3", "u-k4", "u-k5"],
     "clirbench --api_key *** --apikey=*** --openai-api-key *** --hf_token *** --client-secret ***"),
    ("psql \"host=h password=pq-pw dbname=d\" && aws configure set aws_secret_access_key aws-cfg-k",
     ["pq-pw", "aws-cfg-k"], "psql \"host=h password=*** dbname=d\" && aws configure set aws_secret_access_key ***"),
    ("git -c http.extraHeader=AUTHORIZATION:basic g1t-b4sic clone u && docker login -p d0cker-pw -u me r",
     ["g1t-b4sic", "d0cker-pw"], "git -c http.extraHeader=AUTHORIZATION:basic *** clone u && docker login -p *** -u me r"),
    ("http -a me:h77p-pw GET h; curl -H 'PRIVATE-TOKEN: gl-priv-t0k' h", ["h77p-pw", "gl-priv-t0k"],
     "http -a me:*** GET h; curl -H 'PRIVATE-TOKEN: ***' h"),
]

# ordinary commands: recorded exactly as given
ORDINARY = [
    "clirbench run --model intfloat/multilingual-e5-large --task xquad --langs en,zh --seed 42",
    "cd /data && clirbench run --model m > log 2>&1",
    "clirbench run --model bm25 --task xquad | tee run.log; echo \"exit=$?\" >> log",
    "clirbench run --model dense:BAAI/bge-m3 --revision 5617a9f61b028005a4858fdac845db406aefb181 "
    "--cache-dir ~/.cache/clirbench/ab/cdef0123456789abcdef0123456789abcdef01234567",
    "HF_HOME=/x TOKENIZERS_PARALLELISM=false CUDA_VISIBLE_DEVICES=0 clirbench run --max-tokens 512 --keywords a,b",
    "clirbench run --model dense:e5 --query-prompt 'query: ' --doc-prompt 'passage: ' --pass-at-k 10",
    "clirbench run --model psq:tables/de-en.json.gz --task irds:mmarco/v2/zh/dev --index faiss:HNSW32",
    "clirbench sweep s.yaml --address ray://10.0.0.5:10001 --output /scratch/5d41402abc4b2a76b9719d911017c592",
    "git clone git@github.com:org/repo.git && git checkout 4b825dc642cb6eb9a060e54bf8d69288fbee4904",
    "docker run -e HF_HUB_OFFLINE=1 -v /data:/data -p 8080:80 img --no-auth",
    "mysql -u root -p results",
    "docker run -p 8080:80 img && echo $OPENAI_API_KEY | wc -c",
]


@pytest.mark.parametrize("command, secrets, recorded", CASES, ids=[c[2][:40] for c in CASES])
def test_every_spelling_is_redacted(command, secrets, recorded):
    out = redact_command(command)
    assert out == recorded
    for secret in secrets:
        assert secret not in out
    assert redact(out) == out  # idempotent: a board redacted twice reads the same


@pytest.mark.parametrize("command", ORDINARY)
def test_ordinary_commands_are_kept(command):
    assert redact_command(command) == command


def test_secret_names():
    for name in ("OPENAI_API_KEY", "--auth-token", "X-API-Key", "MYSQL_PWD", "DB_PASS", "PGPASSWORD", "apiKey",
                 "client_secret", "AWS_ACCESS_KEY_ID", "X-Amz-Credential", "contraseña", "Authorization", "sig"):
        assert secret_name(name), name
    for name in ("--max-tokens", "TOKENIZERS_PARALLELISM", "keywords", "passages", "HF_HOME", "--token-budget",
                 "--no-auth", "SSH_AUTH_SOCK", "model", "seed", "--pass-at-k"):
        assert not secret_name(name), name


def test_data():
    from clirbench.util.redact import redact_data

    data = {"translator": "openai:m@https://u:d1@h/v1", "api_key": "d2", "options": [["token", "d3"], ["split", "test"]],
            "n": 3, "note": "Bearer d4"}
    assert redact_data(data) == {"translator": "openai:m@https://***@h/v1", "api_key": "***",
                                 "options": [["token", "***"], ["split", "test"]], "n": 3, "note": "Bearer ***"}


def test_urls():
    assert redact_url("http://user:pw1@host:8080/v1") == "http://***@host:8080/v1"
    assert redact_url("https://h/v1?Pass=x1&passwd=x2&sig=x3&lang=en") == "https://h/v1?Pass=***&passwd=***&sig=***&lang=en"
    assert redact_url("https://h/v1?model=a%2Cb&n=1") == "https://h/v1?model=a%2Cb&n=1"  # not re-encoded


def test_the_rest_of_a_long_command_is_kept():
    command = ("cd /data && OPENAI_API_KEY=sk-proj-abcdef123456 clirbench run --model bm25 --task xquad "
               "--translate query --translator openai:gpt-4o-mini > log 2>&1")
    assert redact(command) == ("cd /data && OPENAI_API_KEY=*** clirbench run --model bm25 --task xquad "
                               "--translate query --translator openai:gpt-4o-mini > log 2>&1")
    assert MASK == "***"


# -- through the CLI ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def one_result(tmp_path_factory) -> Path:
    """One real bm25 result (XQuAD en→de) and its per-query table, alone in a folder."""
    root = tmp_path_factory.mktemp("redact")
    assert main(["run", "--model", "bm25", "--task", "xquad", "--langs", "en,de", "--scenario", "mono-cross",
                 "--query-lang", "de", "--data-dir", str(XQUAD), "--output", str(root / "runs"),
                 "--cache-dir", str(root / "cache"), "--no-progress", "--resamples", "10"]) == 0
    src = root / "runs" / "bm25" / "xquad" / "mono-cross" / "unique"
    res = root / "res"
    res.mkdir()
    for p in src.glob("en.q-de.*"):
        shutil.copy(p, res / p.name)
    return res / "en.q-de.json"


def _page_text(path: Path) -> str:
    """A page's text as a reader sees it: tags (the <wbr> and <span> of wrapped commands) out, entities read."""
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text()))


def _written(*roots: Path) -> str:
    return "\n".join(p.read_bytes().decode("utf-8", "replace") for root in roots for p in sorted(root.rglob("*"))
                     if p.is_file())


def test_submit_and_build_record_commands_redacted_in_json_and_html(one_result, tmp_path, capsys):
    # one board per command: a result submitted again with the same values changes nothing, its command included
    boards, built, site = [tmp_path / "lb" / str(i) for i in range(len(CASES))], tmp_path / "built", tmp_path / "site"
    printed = []
    for board, (command, _, _) in zip(boards, CASES):
        assert main(["leaderboard", "submit", str(one_result), "--dir", str(board), "--command", command]) == 0
        assert main(["leaderboard", "html", "--out", str(site / board.name), "--dir", str(board)]) == 0
        printed.append(capsys.readouterr())
    everything = " ; ".join(c for c, _, _ in CASES[:12])
    assert main(["leaderboard", "build", str(one_result.parent), "--dir", str(built), "--command", everything]) == 0
    printed.append(capsys.readouterr())
    assert main(["leaderboard", "html", "--out", str(site / "built"), "--dir", str(built)]) == 0
    printed.append(capsys.readouterr())
    files = _written(tmp_path / "lb", built, site)
    terminal = "".join(o.out + o.err for o in printed)
    for _, secrets, _ in CASES:
        for secret in secrets:
            assert secret not in files and html.escape(secret) not in files, secret
            assert secret not in terminal, secret
    commands = [json.loads((board / "xquad.json").read_text())["systems"]["bm25"]["commands"] for board in boards]
    assert commands == [[recorded.replace("\t", " ")] for _, _, recorded in CASES]  # a tab is kept as a blank
    assert json.loads((built / "xquad.json").read_text())["systems"]["bm25"]["commands"] == \
        [" ; ".join(recorded for _, _, recorded in CASES[:12])]
    for board, [recorded] in zip(boards, commands):
        assert recorded in _page_text(site / board.name / "xquad.html"), recorded


def test_ordinary_commands_are_recorded_through_the_cli(one_result, tmp_path, capsys):
    for i, command in enumerate(ORDINARY):  # one board each: the same values submitted again change nothing
        board, site = tmp_path / "lb" / str(i), tmp_path / "site" / str(i)
        assert main(["leaderboard", "submit", str(one_result), "--dir", str(board), "--command", command]) == 0
        assert main(["leaderboard", "html", "--out", str(site), "--dir", str(board)]) == 0
        capsys.readouterr()
        assert json.loads((board / "xquad.json").read_text())["systems"]["bm25"]["commands"] == [command]
        assert command in _page_text(site / "xquad.html") and "<script>x" not in (site / "xquad.html").read_text()


def test_a_multi_line_command_is_kept_on_one_line(one_result, tmp_path, capsys):
    board = tmp_path / "lb"
    command = "HF_TOKEN=hf_abcdefghijklmnopqrstu \\\n  clirbench run --model m\t--seed 1\n"
    assert main(["leaderboard", "submit", str(one_result), "--dir", str(board), "--command", command]) == 0
    capsys.readouterr()
    assert json.loads((board / "xquad.json").read_text())["systems"]["bm25"]["commands"] == \
        ["HF_TOKEN=*** clirbench run --model m --seed 1"]


@pytest.mark.parametrize("argv_tail, expect", [
    (["--command", "DB_PASS=refused-pw1 clirbench run \x1b[31m"], "DB_PASS=***"),
    (["--command", "clirbench run --api-key refused-pw2 \u202e"], "--api-key ***"),
    (["--command", "DB_PASS=refused-pw3 \udcff"], "is not valid UTF-8 text"),
    (["--command", "x", "--api-key", "refused-pw4"], "unrecognized arguments: --api-key ***"),
    (["--command", "x", "OPENAI_API_KEY=refused-pw5"], "unrecognized arguments: OPENAI_API_KEY=***"),
])
def test_a_refusal_never_prints_the_secret(one_result, tmp_path, capsys, argv_tail, expect):
    code = main(["leaderboard", "submit", str(one_result), "--dir", str(tmp_path / "lb"), *argv_tail])
    out = capsys.readouterr()
    lines = out.err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("clirbench: ") and expect in lines[0], out.err
    assert "refused-pw" not in out.err + out.out
    assert not (tmp_path / "lb" / "xquad.json").exists()


def test_a_hand_edited_board_with_a_secret_is_refused_without_printing_it(one_result, tmp_path, capsys):
    board = tmp_path / "lb"
    assert main(["leaderboard", "submit", str(one_result), "--dir", str(board), "--command", "run"]) == 0
    data = json.loads((board / "xquad.json").read_text())
    data["systems"]["bm25"]["commands"] = ["MYSQL_PWD=hand-edited1 \x07 cd /d && run > log"]
    (board / "xquad.json").write_text(json.dumps(data))
    assert main(["leaderboard", "show", "xquad", "--dir", str(board)]) == 2
    err = capsys.readouterr().err
    assert "MYSQL_PWD=***" in err and "hand-edited1" not in err
    data["systems"]["bm25"]["commands"] = ["cd /d && clirbench run < in > out | tee x; `date`"]
    (board / "xquad.json").write_text(json.dumps(data))
    assert main(["leaderboard", "show", "xquad", "--dir", str(board)]) == 0  # shell syntax is no markup


# -- the sweep's state files and messages ---------------------------------------------------------------


def test_a_failed_sweep_cell_writes_and_prints_no_secret(tmp_path, monkeypatch, capsys):
    import yaml

    from clirbench.retrievers.spec import FAMILIES, Family

    def boom(arg, options):
        raise RuntimeError("cannot reach https://u:sweep-pw1@h/v1?api_key=sweep-pw2 (Bearer sweep-pw3)")

    monkeypatch.setitem(FAMILIES, "boom", Family("boom", boom))
    entry = {"task": "xquad", "langs": "en,de", "scenarios": "mono-cross", "query_langs": ["de"], "data_dir": str(XQUAD)}
    cfg = tmp_path / "s.yaml"
    cfg.write_text(yaml.safe_dump({"models": ["boom"], "tasks": [entry], "output": str(tmp_path / "out"),
                                   "cache_dir": str(tmp_path / "cache"), "resamples": 10, "leaderboard": False}))
    assert main(["sweep", str(cfg), "--no-progress"]) == 1
    printed = capsys.readouterr()
    failed = list((tmp_path / "out").rglob("*.failed"))
    assert failed and "cannot reach https://***@h/v1?api_key=***" in failed[0].read_text()
    assert "cannot reach" in printed.err
    for secret in ("sweep-pw1", "sweep-pw2", "sweep-pw3"):
        assert secret not in _written(tmp_path / "out") and secret not in printed.out + printed.err


def test_a_sweep_marker_keeps_no_translator_key(tmp_path):
    from clirbench.sweep.config import Cell, TaskEntry, Translation
    from clirbench.sweep.executors import _write_marker

    cell = Cell("bm25", TaskEntry("xquad", options=(("token", "marker-pw1"),)),
                Translation("query", "openai:m@https://u:marker-pw2@h/v1"))
    _write_marker(tmp_path / "c.done", cell, ["bm25/xquad/r.json"])
    data = json.loads((tmp_path / "c.done").read_text())
    assert "marker-pw" not in json.dumps(data)
    assert data["translation"]["translator"] == "openai:m@https://***@h/v1" and data["results"] == ["bm25/xquad/r.json"]
