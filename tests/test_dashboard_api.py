# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The dashboard's JSON API under hostile input (viperdrive.dashboard.api), against a running dashboard on a
virtual board: strings where booleans go, 400-digit integers, NaN and Infinity, bodies too deep or too large, and
random JSON of the wrong types and sizes for every command (hypothesis). Each is answered 400 with a reason,
nothing energizes, and the dashboard lives."""
from __future__ import annotations

import json
import socket

import pytest
from dashboard_helpers import Dash, post
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from viperdrive import ranges
from viperdrive.dashboard import api

pytestmark = pytest.mark.board

HUGE = 10 ** 400


@pytest.fixture(scope="module")
def dash(sim):
    d = Dash(sim.url)
    session, role = d.hello()
    assert role == "control"
    d.session = session
    yield d
    rc, err = d.stop()
    assert rc in (0, 130), err
    assert "Traceback" not in err, err


def _energized(sim) -> bool:
    return sim.truth()["energized"]


@pytest.mark.parametrize("body", [{"on": "false"}, {"on": "no"}, {"on": [0]}, {"on": 0}, {"on": 1}, {"on": None},
                                  {"on": "true"}, {"on": {"x": 1}}, {}])
def test_arm_takes_a_json_boolean_only(sim, dash, body):
    status, out = dash.post("/api/arm", body, dash.session)
    assert status == 400 and "on" in out["error"], out
    assert not _energized(sim)


def test_lift_ramp_takes_a_json_boolean_only(sim, dash):
    status, out = dash.post("/api/step", {"size": 5.0, "lift_ramp": "false"}, dash.session)
    assert status == 400 and "lift_ramp must be true or false" in out["error"], out
    assert not _energized(sim)


@pytest.mark.parametrize("command,field,body", [
    ("drive", "v", {"v": HUGE, "w": 0.0}), ("drive", "w", {"v": 0.0, "w": -HUGE}),
    ("step", "size", {"size": HUGE}), ("param", "value", {"name": "kp", "value": HUGE}),
    ("design", "settle_s", {"settle_s": HUGE, "overshoot_pct": 5}),
    ("design", "overshoot_pct", {"settle_s": 0.1, "overshoot_pct": HUGE})])
def test_a_400_digit_integer_in_any_field_is_refused_and_the_dashboard_lives(sim, dash, command, field, body):
    raw = json.dumps(body).encode()
    assert len(raw) > 400
    status, out = post(dash.base, f"/api/{command}", None, dash.token, {"X-Viperdrive-Session": dash.session},
                       raw=raw)
    assert status == 400 and field in out["error"], out
    assert dash.alive() and dash.hello()[1] == "view"
    assert not _energized(sim)


@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity", b"1e999"])
def test_nan_and_infinity_are_refused(sim, dash, literal):
    raw = b'{"v": ' + literal + b', "w": 0}'
    status, out = post(dash.base, "/api/drive", None, dash.token, {"X-Viperdrive-Session": dash.session}, raw=raw)
    assert status == 400, out
    assert dash.alive()


def test_the_design_settling_time_has_the_clis_limit(sim, dash):
    status, out = dash.post("/api/design", {"settle_s": 1e9, "overshoot_pct": 5}, dash.session)
    assert status == 400 and ranges.SETTLE_S.text() in out["error"], out
    # the CLI says the same range
    from cli_helpers import run_cli
    r = run_cli("tune", "--design", "--settle", "1e9s", "--port", sim.url)
    assert r.returncode == 2 and ranges.SETTLE_S.text() in r.stderr, r.stderr


@pytest.mark.parametrize("raw", [b"[" * 100_00 + b"]" * 100_00, b'{"a": ' + b"1" * 5000 + b"}", b"\xff\xfe",
                                 b'"just a string"', b"[1, 2]", b"{" * 40 + b"}" * 40])
def test_bodies_that_are_not_a_json_object_are_refused(sim, dash, raw):
    status, out = post(dash.base, "/api/arm", None, dash.token, {"X-Viperdrive-Session": dash.session}, raw=raw)
    assert status == 400, out
    assert dash.alive()


def test_a_body_over_16_kib_or_a_lying_length_is_refused(sim, dash):
    status, out = post(dash.base, "/api/arm", None, dash.token, {"X-Viperdrive-Session": dash.session},
                       raw=b" " * 20000)
    assert status == 400 and "16 KiB" in out["error"]
    for length in ("-1", "1e3", "99999999999999999999", "0x10"):
        with socket.create_connection(("127.0.0.1", int(dash.netloc.rpartition(":")[2])), timeout=10) as s:
            s.sendall(f"POST /api/arm HTTP/1.1\r\nHost: {dash.netloc}\r\nX-Viperdrive-Token: {dash.token}\r\n"
                      f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n".encode())
            reply = s.recv(4096).decode(errors="replace")
        assert reply.startswith("HTTP/1.1 400"), (length, reply[:200])
    assert dash.alive()


# ---- every command, random JSON of the wrong types and sizes ----

def _wrong(kind) -> st.SearchStrategy:
    """Values a field of this kind must refuse."""
    scalars = st.one_of(st.none(), st.text(max_size=50), st.lists(st.integers(), max_size=3),
                        st.dictionaries(st.text(max_size=5), st.integers(), max_size=3))
    if isinstance(kind, api.Bool):
        return st.one_of(scalars, st.integers(), st.floats())
    if isinstance(kind, api.Number):
        r = kind.range
        outside = st.one_of(st.integers(min_value=10 ** 20, max_value=10 ** 300),
                            st.integers(max_value=-10 ** 20, min_value=-10 ** 300),
                            st.floats(allow_nan=False).filter(lambda x: not r.contains(x)))
        return st.one_of(scalars, st.booleans(), outside)
    return st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                     st.lists(st.text(max_size=3), max_size=3))


def _bodies(command: str) -> st.SearchStrategy:
    fields = api.COMMANDS[command]
    if not fields:
        return st.dictionaries(st.text(min_size=1, max_size=10), st.integers(), min_size=1, max_size=3)
    name = st.sampled_from(sorted(fields))

    def one_wrong(bad_field):
        good = {"on": st.just(False), "why": st.just("test"), "v": st.just(0.0), "w": st.just(0.0),
                "name": st.just("kp"), "value": st.just(0.05), "wheel": st.just("both"), "size": st.just(5.0),
                "lift_ramp": st.just(True), "settle_s": st.just(0.1), "overshoot_pct": st.just(5.0)}
        return st.fixed_dictionaries({f: (_wrong(k) if f == bad_field else good[f]) for f, k in fields.items()})
    return name.flatmap(one_wrong)


COMMANDS_WITH_FIELDS = [c for c in api.COMMANDS if c not in ("hello", "params", "save", "restore")]


@pytest.mark.parametrize("command", COMMANDS_WITH_FIELDS)
def test_random_wrong_json_for_every_command_is_a_400_and_nothing_moves(sim, dash, command):
    seen = []

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(body=_bodies(command))
    def check(body):
        try:
            raw = json.dumps(body).encode()
        except ValueError:
            return
        status, out = post(dash.base, f"/api/{command}", None, dash.token,
                           {"X-Viperdrive-Session": dash.session}, raw=raw)
        seen.append(status)
        assert status == 400 and out.get("error"), (body, status, out)
    check()
    print(f"{command}: {len(seen)} wrong bodies, answers {sorted(set(seen))}")
    assert dash.alive()
    assert not _energized(sim)
