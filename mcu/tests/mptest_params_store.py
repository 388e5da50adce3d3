# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# params_store.Params: defaults from the table, validated set(), atomic save, and recovery from a missing,
# corrupt or partly wrong file (defaults for what is bad, defaulted set, never an exception).
import json
import os

from viperdrive import params_store
from viperdrive.shared import params as table

DIR = "/tmp"
_n = [0]


def _path():
    _n[0] += 1
    p = "%s/vd_params_test_%d.json" % (DIR, _n[0])
    _rm(p)
    _rm(p + ".tmp")
    return p


def _rm(p):
    try:
        os.remove(p)
    except OSError:
        pass


def _exists(p):
    try:
        os.stat(p)
        return True
    except OSError:
        return False


def _write(p, text):
    with open(p, "w") as f:
        f.write(text)


def test_defaults_from_the_table():
    ps = params_store.Params()
    assert not ps.defaulted
    for p in table.TABLE:
        assert ps.get(p[table.ID]) == p[table.DEFAULT]
        assert ps[p[table.NAME]] == p[table.DEFAULT]
    assert ps.get_by_name("deadman_ms") == 100


def test_missing_file_gives_defaults_and_flag():
    ps = params_store.Params()
    assert ps.load(_path()) is False
    assert ps.defaulted
    assert ps.values == table.defaults()
    assert "unreadable" in ps.problems[0]


def test_save_load_round_trip_is_atomic():
    p = _path()
    ps = params_store.Params()
    assert ps.set_by_name("kp", 0.125) is None
    assert ps.set_by_name("deadman_ms", 150) is None
    assert ps.set_by_name("wheel_separation", 0.1853) is None
    ps.save(p)
    assert not _exists(p + ".tmp")          # the temp file was renamed over the target
    q = params_store.Params()
    assert q.load(p) is True and not q.defaulted and q.problems == []
    assert q["kp"] == 0.125 and q["deadman_ms"] == 150 and isinstance(q["deadman_ms"], int)
    assert abs(q["wheel_separation"] - 0.1853) < 1e-6
    # saving again replaces the existing file
    assert q.set_by_name("kp", 0.5) is None
    q.save(p)
    r = params_store.Params()
    assert r.load(p) and r["kp"] == 0.5
    _rm(p)


def test_corrupt_files_give_defaults_never_raise():
    p = _path()
    for text in ('{"kp": 0.2, "ki": ', "\x00\xff garbage", "", "[1, 2, 3]", '"kp"', "null"):
        _write(p, text)
        ps = params_store.Params()
        assert ps.load(p) is False, text
        assert ps.defaulted, text
        assert ps.values == table.defaults(), text
    with open(p, "wb") as f:
        f.write(b'\xff\xfe{"kp": \x80\x81}')    # not even UTF-8 (flash corruption)
    ps = params_store.Params()
    assert ps.load(p) is False and ps.defaulted and ps.values == table.defaults()
    _rm(p)


def test_bad_entries_default_individually():
    p = _path()
    d = table.defaults()
    d["kp"] = "fast"            # wrong type
    d["ki"] = -1.0              # below min
    d["deadman_ms"] = 100.5     # H parameter, not whole
    d["stall_ms"] = True        # a bool is not a number here
    d["kd"] = 0.25              # fine
    d["max_accel"] = 12         # fine: an int for a float parameter
    del d["vel_tau"]            # missing
    d["no_such_param"] = 3      # unknown: ignored
    _write(p, json.dumps(d))
    ps = params_store.Params()
    assert ps.load(p) is False and ps.defaulted
    dflt = table.defaults()
    for name in ("kp", "ki", "deadman_ms", "stall_ms", "vel_tau"):
        assert ps[name] == dflt[name], name
        assert any(name in s for s in ps.problems), (name, ps.problems)
    assert ps["kd"] == 0.25
    assert ps["max_accel"] == 12.0 and isinstance(ps["max_accel"], float)
    assert len(ps.problems) == 5
    _rm(p)


def test_set_validates_and_keeps_old_value_on_refusal():
    ps = params_store.Params()
    kp = table.by_name("kp")[table.ID]
    assert ps.set(kp, 0.3) is None and ps.get(kp) == 0.3
    reason = ps.set(kp, 11.0)
    assert "kp" in reason and "11.0" in reason and "10.0" in reason
    assert ps.get(kp) == 0.3
    assert "finite" in ps.set(kp, float("nan"))
    assert "finite" in ps.set(kp, float("inf"))
    assert "number" in ps.set(kp, "1")
    assert "unknown parameter id 99" == ps.set(99, 1.0)
    assert "unknown parameter" in ps.set_by_name("kpp", 1.0)
    dm = table.by_name("deadman_ms")[table.ID]
    assert ps.set(dm, 150.0) is None and ps.get(dm) == 150 and isinstance(ps.get(dm), int)
    assert "whole number" in ps.set(dm, 150.5)
    assert "deadman_ms" in ps.set(dm, 5)
    assert ps.get(dm) == 150
    try:
        ps.get(99)
    except KeyError:
        pass
    else:
        raise AssertionError("get of an unknown id returned a value")


def test_save_storage_error_raises_oserror_and_keeps_old_file():
    p = _path()
    ps = params_store.Params()
    ps.set_by_name("kp", 0.2)
    ps.save(p)
    ps.set_by_name("kp", 0.9)
    try:
        ps.save("/tmp/vd_no_such_dir_xyz/params.json")
    except OSError:
        pass
    else:
        raise AssertionError("save into a missing directory did not raise OSError")
    q = params_store.Params()
    assert q.load(p) and q["kp"] == 0.2
    _rm(p)


def test_a_save_ends_the_defaulted_state():
    # first boot: no file, every value a default (DIAG_PARAMS_DEFAULTED); after `params save` the file holds every
    # value and a reset would load them: the flag must clear (it stayed set after a successful save)
    p = _path()
    ps = params_store.Params()
    assert ps.load(p) is False and ps.defaulted and ps.problems
    ps.save(p)
    assert not ps.defaulted and ps.problems == [] and not ps.unsaved()
    _rm(p)
