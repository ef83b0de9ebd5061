"""Docs that run: every code block in README.md and docs/*.md that is
marked runnable, by the line `<!-- doctest -->` just before its fence, is
executed against a node this test starts, in the order of the file, one
node per file:

- ```python blocks run in one namespace per file, as a reader would paste
  them into one interpreter;
- ```sql blocks are split into statements, each run through ADBC (results
  are fetched, so a statement that fails at DoGet fails the test);
- ```sh blocks run their `lakestream sql ...` lines with the node's address
  (any other line, such as `make run`, is for the reader only).

The address the docs use, 127.0.0.1:31337 (the default), is replaced by the
node's. `make test-docs` runs this file alone; `make test` includes it."""
import os
import re
import shlex
import subprocess

import pytest

from conftest import BIN

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
MARKER = "<!-- doctest -->"
DEFAULT_ADDR = "127.0.0.1:31337"


def doc_files():
    files = ["README.md"] + sorted(os.path.join("docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
    return [f for f in files if MARKER in open(os.path.join(ROOT, f)).read()]


def blocks(path):
    """The marked blocks of a file: (line, language, text)."""
    lines = open(os.path.join(ROOT, path)).read().split("\n")
    out, i = [], 0
    while i < len(lines):
        if lines[i].strip() == MARKER:
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            m = re.match(r"^```(\w+)\s*$", lines[j]) if j < len(lines) else None
            assert m, f"{path}:{i + 1}: {MARKER} is not followed by a fenced code block"
            k = j + 1
            while k < len(lines) and lines[k].strip() != "```":
                k += 1
            assert k < len(lines), f"{path}:{j + 1}: unterminated code block"
            out.append((j + 1, m.group(1), "\n".join(lines[j + 1:k])))
            i = k
        i += 1
    return out


def sql_statements(text):
    """Splits SQL at semicolons outside quotes and comments."""
    stmts, cur, i, n = [], [], 0, len(text)
    while i < n:
        c = text[i]
        if c in "'\"":
            j = i + 1
            while j < n:
                if text[j] == c and text[j + 1:j + 2] == c:
                    j += 2  # a doubled quote inside
                    continue
                if text[j] == c:
                    break
                j += 1
            cur.append(text[i:j + 1])
            i = j + 1
            continue
        if text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == ";":
            stmts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    stmts.append("".join(cur).strip())
    return [s for s in stmts if s]


def run_sql(conn, text):
    for stmt in sql_statements(text):
        cur = conn.cursor()
        try:
            cur.execute(stmt)
            cur.fetch_arrow_table()
        except Exception as e:
            raise AssertionError(f"{stmt!r}: {e}") from e
        finally:
            cur.close()


def run_sh(server, text):
    for line in text.split("\n"):
        words = shlex.split(line, comments=True)
        if len(words) >= 2 and words[0] in ("lakestream", "./bin/lakestream") and words[1] == "sql":
            args = [a.replace(DEFAULT_ADDR, f"127.0.0.1:{server.port}") for a in words[2:]]
            if "--addr" not in args:
                args += ["--addr", f"127.0.0.1:{server.port}"]
            out = subprocess.run([BIN, "sql", *args], capture_output=True, text=True)
            assert out.returncode == 0, f"{line}: {out.stderr}"


@pytest.mark.parametrize("path", doc_files())
def test_doc_runs(path, server):
    import adbc_driver_flightsql.dbapi as flightsql
    found = blocks(path)
    assert found, f"{path} has no runnable block"
    namespace = {"__name__": "__doctest__"}
    conn = flightsql.connect(server.uri, autocommit=True)
    try:
        for line, lang, text in found:
            text = text.replace(DEFAULT_ADDR, f"127.0.0.1:{server.port}")
            try:
                if lang == "python":
                    exec(compile(text, f"{path}:{line}", "exec"), namespace)
                elif lang == "sql":
                    run_sql(conn, text)
                elif lang == "sh":
                    run_sh(server, text)
                else:
                    pytest.fail(f"{path}:{line}: cannot run a {lang} block")
            except Exception as e:
                raise AssertionError(f"{path}:{line}: the {lang} block fails: {e}") from e
    finally:
        conn.close()


def test_readme_pins_the_tested_clients():
    """The README's pip install line names the versions the tests run."""
    readme = open(os.path.join(ROOT, "README.md")).read()
    line = next(l for l in readme.split("\n") if l.strip().startswith("pip install"))
    pinned = dict(w.split("==") for w in line.split("#")[0].split()[2:])
    reqs = {}
    for l in open(os.path.join(ROOT, "tests", "requirements.txt")):
        l = l.split("#")[0].strip()
        if "==" in l:
            name, version = l.split("==")
            reqs[name] = version
    assert pinned, line
    for name, version in pinned.items():
        assert reqs.get(name) == version, f"README pins {name}=={version}, tests/requirements.txt {reqs.get(name)}"
    assert {"adbc-driver-flightsql", "adbc-driver-manager", "pyarrow"} <= set(pinned)
