# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`viperdrive boards`: every shipped config listed with its proof level, the README's board table saying the same,
each "emulated" claim backed by a config the emulated-chip tests run; `boards show` writes a config out as shipped,
`boards check` applies the firmware's own validator on the host and refuses a bad file (exit 7, naming the key),
whatever the file is."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from cli_helpers import no_traceback, run_cli

from viperdrive.deploy import catalog

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent
BOARDS = ROOT / "mcu" / "boards"


def test_every_shipped_config_is_listed_with_a_known_proof_level():
    r = run_cli("boards", "--json")
    assert r.returncode == 0, r.stderr
    rows = {b["name"]: b for b in json.loads(r.stdout)["boards"]}
    assert set(rows) == {p.stem for p in BOARDS.glob("*.json")} == set(catalog.SHIPPED)
    for name, row in rows.items():
        assert row["proof"] in catalog.PROOF_LEVELS and row["mcu"] != "unknown", row
        assert row["backend"] == json.loads((BOARDS / f"{name}.json").read_text())["backend"]
    text = run_cli("boards")
    assert text.returncode == 0 and all(re.search(rf"^{n}\s", text.stdout, re.M) for n in rows), text.stdout


def test_the_readme_table_says_what_boards_says():
    readme = (ROOT / "README.md").read_text()
    table = dict(re.findall(r"^\s*\| `(\w+)` \| [^|]+ \| ([a-z ]+?) \|$", readme, re.M))
    expected = {n: b.proof for n, b in catalog.SHIPPED.items() if b.proof != "virtual"}
    assert table == expected


def test_every_emulated_claim_is_a_config_the_emulated_chip_runs():
    """"emulated": the rig's default boards (sim/pico/rig.mjs) or a config an emulated-Pico test loads;
    "backend emulated": its backend is the backend of an "emulated" config."""
    runs = (ROOT / "sim" / "pico" / "rig.mjs").read_text() + "".join(
        p.read_text() for p in (ROOT / "tests").glob("test_*.py")
        if p.name.startswith(("test_pico", "test_circuitpython")))
    backend = {n: json.loads((BOARDS / f"{n}.json").read_text())["backend"] for n in catalog.SHIPPED}
    emulated = {n for n, b in catalog.SHIPPED.items() if b.proof == "emulated"}
    for name in emulated:
        assert f"'{name}.json'" in runs or f'"{name}.json"' in runs, name
    for name, b in catalog.SHIPPED.items():
        if b.proof == "backend emulated":
            assert backend[name] in {backend[e] for e in emulated}, name


def test_show_writes_the_config_as_shipped_and_check_accepts_it(tmp_path):
    r = run_cli("boards", "show", "pico")
    assert r.returncode == 0 and r.stdout == (BOARDS / "pico.json").read_text()
    mine = tmp_path / "my_board.json"
    mine.write_text(r.stdout)
    r = run_cli("boards", "check", mine)
    assert r.returncode == 0 and "valid for the rp2 backend" in r.stdout and "left pwm 6, dir 7" in r.stdout, r
    r = run_cli("boards", "check", mine, "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["config"]["counts_per_rev"] == 1496
    r = run_cli("boards", "show", "pico_mdd10")
    assert r.returncode == 7 and "pico_drv8833" in r.stderr, r.stderr


def _pico(**change) -> dict:
    d = json.loads((BOARDS / "pico.json").read_text())
    for k, v in change.items():
        d[k] = v
    return d


@pytest.mark.parametrize("data, says", [
    ({**_pico(), "pins": {"left": {"pwm": 6, "dir": 6, "enc_a": 2, "enc_b": 3},
                          "right": {"pwm": 8, "dir": 9, "enc_a": 4, "enc_b": 5}}}, "pins.left.pwm and pins.left.dir"),
    (_pico(control_hz="500"), "control_hz"),
    (_pico(control_hz=10**30), "control_hz"),
    (_pico(counts_per_rev=True), "counts_per_rev"),
    (_pico(backend="avr"), "backend"),
    ([1, 2], "board config"),
])
def test_check_refuses_a_bad_config_naming_the_key(tmp_path, data, says):
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(data))
    r = run_cli("boards", "check", f)
    no_traceback(r)
    assert r.returncode == 7 and says in r.stderr, (r.returncode, r.stderr)


@pytest.mark.parametrize("kind", ["nan", "not json", "missing", "directory", "dev_zero", "fifo", "empty"])
def test_check_refuses_a_file_that_is_not_a_config(tmp_path, kind):
    f = tmp_path / "board.json"
    if kind == "nan":
        f.write_text(json.dumps(_pico()).replace('"control_hz": 500', '"control_hz": NaN'))
    elif kind == "not json":
        f.write_text("pins: {left: 1}\n")
    elif kind == "directory":
        f.mkdir()
    elif kind == "dev_zero":
        f = Path("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(f)
    elif kind == "empty":
        f.write_text("")
    r = run_cli("boards", "check", f, timeout=30)
    no_traceback(r)
    assert r.returncode == 7 and r.stderr.strip(), (kind, r.returncode, r.stderr)
