# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# The hardware backends cannot run on the unix port, but they must get as far as their port module: importing
# each fails with exactly an ImportError naming the module (or machine class) the unix port lacks, never a
# SyntaxError, NameError or anything else; and hal.load() picks the backend the config names.
import sys

from viperdrive import boardcfg, hal

EXPECTED = {
    # module: a word the ImportError must name (the first port-only import of that backend)
    "viperdrive.hal.rp2": "rp2",
    "viperdrive.hal.esp32": "PWM",  # machine exists on unix, machine.PWM does not
    "viperdrive.hal.stm32": "pyb",
    "viperdrive.hal.circuitpython": "board",
}


def _forget(name):
    # a failed import leaves nothing usable behind, but be sure each check starts clean
    if name in sys.modules:
        del sys.modules[name]


def _import_error(modname):
    _forget(modname)
    try:
        __import__(modname)
    except ImportError as e:
        return str(e)
    raise AssertionError("%s imported on the unix port: it should need its port module" % modname)


def test_each_backend_fails_only_on_its_port_module():
    for modname, word in EXPECTED.items():
        msg = _import_error(modname)
        assert word in msg, "%s: ImportError %r does not name %s" % (modname, msg, word)


def test_portable_and_streams_import_on_unix():
    from viperdrive.hal import portable, streams
    assert len(portable.quadrature_pio_program()) == 32
    assert hasattr(streams, "UsbCdcStream") and hasattr(streams, "UartStream")


def test_load_picks_the_backend_from_the_config():
    for n, word in (("pico.json", "rp2"), ("esp32_devkit.json", "PWM"), ("pyboard.json", "pyb"),
                    ("circuitpython_feather.json", "board")):
        cfg = boardcfg.load("mcu/boards/" + n)
        try:
            hal.load(cfg)
        except ImportError as e:
            assert word in str(e), (n, str(e))
        else:
            raise AssertionError("%s: a hardware backend loaded on the unix port" % n)
    try:
        hal.load({"backend": "avr"})
    except ValueError as e:
        assert "avr" in str(e)
    else:
        raise AssertionError("unknown backend accepted")
