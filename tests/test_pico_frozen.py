# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""The Pico image with the firmware frozen in (tools/build_uf2.py, `make uf2`): built offline from the MicroPython
source kit, refused without the alignment fix, cached by its inputs; installed on the emulated Pico as a user does
(the .uf2 dragged onto a blank board, then `viperdrive flash --board pico --config-only`); it boots, says it is
frozen, keeps its parameters across a power cycle and runs a board move. The wire checks (signs, deadman, watchdog)
run on it from hil_tests (the `pico-frozen` rig). Without the kit these skip with one line; under CI=true they fail.
A board that still holds an earlier flash's files: tests/test_pico_rig.py (it has the stock-flashed image)."""
from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
import time
from pathlib import Path

import pytest

from viperdrive.shared import protocol as P
from viperdrive.shared.version import FIRMWARE_PREFIX, VERSION

pytestmark = pytest.mark.pico

ROOT = Path(__file__).resolve().parents[1]
VIPERDRIVE = str(Path(sys.executable).parent / "viperdrive")


def build_tool():
    spec = importlib.util.spec_from_file_location("build_uf2", ROOT / "tools" / "build_uf2.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def cli(*args, timeout=600):
    return subprocess.run([VIPERDRIVE, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def test_the_image_is_cached_by_its_inputs_and_its_viper_code_is_word_aligned(frozen_uf2):
    tool = build_tool()
    assert frozen_uf2.name == f"viperdrive-{VERSION}-RPI_PICO.uf2"
    digest = (frozen_uf2.parent / (frozen_uf2.name + ".sha256")).read_text().split()[0]
    assert digest == tool.sha256_file(frozen_uf2)
    # the banner is MicroPython's own version and the firmware's date, not this checkout's git commit
    date = time.strftime("%Y-%m-%d", time.gmtime(tool.firmware_date(ROOT)))
    assert f"MicroPython v1.28.0 on {date}\0".encode() in _payload(frozen_uf2), date
    # a second run with nothing changed does no work
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "build_uf2.py")], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and "up to date (its inputs have not changed)" in r.stdout, r.stdout + r.stderr
    print(f"make uf2 with nothing changed: {time.monotonic() - t0:.2f} s wall")
    # the viper code (fixedstep's control step and move engine, hal/rp2's edge timing) is Thumb code in flash, each
    # function at an address that is a multiple of 4 (read back from the image's ELF with nm here, apart from the
    # build's own check; mpy-tool names them by their file)
    built = frozen_uf2.parent / "work" / tool.SRC_DIR / "ports" / "rp2" / tool.BUILD
    names = tool.native_functions(built / "frozen_content.c")
    assert sum("_fixedstep_" in n for n in names) >= 4 and sum("_hal_rp2_" in n for n in names) >= 1, names
    nm = subprocess.run(["arm-none-eabi-nm", str(built / "firmware.elf")], capture_output=True, text=True,
                        check=True).stdout
    addr = {p[2]: int(p[0], 16) for p in (ln.split() for ln in nm.splitlines()) if len(p) == 3}
    assert all(addr[n] % 4 == 0 for n in names), {n: hex(addr[n]) for n in names}


def _payload(uf2: Path) -> bytes:
    """The image's bytes without the UF2 block headers (a string may cross a 256-byte block)."""
    data = uf2.read_bytes()
    return b"".join(data[o + 32:o + 32 + int.from_bytes(data[o + 16:o + 20], "little")]
                    for o in range(0, len(data), 512))


def test_a_tree_without_the_alignment_fix_is_refused(frozen_uf2, tmp_path):
    import tarfile
    tool = build_tool()
    mpy_tool = frozen_uf2.parent / "work" / tool.SRC_DIR / "tools" / "mpy-tool.py"
    text = mpy_tool.read_text()
    assert tool.fix_present(mpy_tool)
    # a kit whose tree is MicroPython v1.28.0 as it ships: ARMV6M only in the 2-byte branch
    unfixed = text.replace("            MP_NATIVE_ARCH_ARMV6M,\n", "", 1)
    assert unfixed != text
    kit = tmp_path / "kit"
    (kit / "src" / tool.SRC_DIR / "tools").mkdir(parents=True)
    (kit / "src" / tool.SRC_DIR / "tools" / "mpy-tool.py").write_text(unfixed)
    (kit / "src" / tool.PICOTOOL_DIR).mkdir()
    with tarfile.open(kit / tool.SRC_TARBALL, "w:xz") as t:
        t.add(kit / "src" / tool.SRC_DIR, arcname=tool.SRC_DIR)
    with tarfile.open(kit / "picotool-2.2.0-x86_64-linux-gnu.tar.xz", "w:xz") as t:
        t.add(kit / "src" / tool.PICOTOOL_DIR, arcname=tool.PICOTOOL_DIR)
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "build_uf2.py"), "--kit", str(kit), "--out", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "places frozen ARMv6-M native code at 2-byte alignment" in r.stderr and "Nothing was built" in r.stderr
    assert "Traceback" not in r.stderr
    assert not list(out.glob("*.uf2")) and not (out / "inputs.sha256").exists()
    # a kit whose source archive is damaged (a copy cut short): one line, nothing built
    (kit / tool.SRC_TARBALL).write_bytes((kit / tool.SRC_TARBALL).read_bytes()[:100])
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "build_uf2.py"), "--kit", str(kit), "--out", str(out),
                        "--jobs", "10" + "0" * 400], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "cannot be unpacked" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not list(out.glob("*.uf2"))


def test_installed_with_board_json_alone_it_boots_frozen_and_answers_at_once(frozen_pico_image, frozen_uf2,
                                                                             tmp_path):
    from viperdrive.board import Board, wait_for_hello
    from viperdrive.rigs.pico import PicoRig
    out = frozen_pico_image.output
    print(f"flash --config-only onto a blank Pico with the frozen image: {frozen_pico_image.chip_s:.1f} chip s, "
          f"{frozen_pico_image.wall_s:.1f} wall s")
    assert f"verified: pico-mdd10 runs '{FIRMWARE_PREFIX}{VERSION}', protocol v{P.PROTOCOL_VERSION}" in out
    assert frozen_pico_image.chip_s < 15.0          # one file, not 25 (the stock flash --mpy: ~40 chip s)
    d = frozen_pico_image.diag
    assert d["fault_code"] == 0 and d["overruns"] == 0
    # GET_DIAG says the firmware is frozen into the image, and nothing of an earlier flash is on the board
    assert [n for n in d["flag_names"] if n == "FROZEN" or n.startswith("UNUSED")] == ["FROZEN"], d["flag_names"]
    flash = frozen_pico_image.copy(tmp_path / "boot.flash")
    with PicoRig(flash=flash, uf2=frozen_uf2) as rig:
        wait_for_hello(rig.url, rig.clock)
        boots = []
        for _ in range(2):
            rig.reset()
            t0 = rig.clock.now()
            while True:
                b = Board(rig.url, clock_sync=False, clock=rig.clock)
                try:
                    info = b.configure()
                    boots.append(rig.clock.now() - t0)
                    break
                except Exception:  # noqa: BLE001 -- booting: no answer yet
                    assert rig.clock.now() - t0 < 10.0, "no HELLO within 10 chip s of a power cycle"
                finally:
                    b.cleanup()
    print(f"power cycle to HELLO with the frozen image: {', '.join(f'{s:.3f}' for s in boots)} chip s")
    assert info.firmware == FIRMWARE_PREFIX + VERSION
    assert max(boots) < 0.5, boots


def test_parameters_saved_on_the_frozen_image_survive_a_power_cycle(frozen_pico_image, frozen_uf2, tmp_path):
    from viperdrive.board import wait_for_hello
    from viperdrive.rigs.pico import PicoRig
    flash = frozen_pico_image.copy(tmp_path / "params.flash")
    with PicoRig(flash=flash, uf2=frozen_uf2) as rig:
        wait_for_hello(rig.url, rig.clock)
        r = cli("params", "set", "kp=0.07", "--save", "--port", rig.url)
        assert r.returncode == 0, r.stdout + r.stderr
    with PicoRig(flash=flash, uf2=frozen_uf2) as rig:    # a new rig process: the chip powered up again
        wait_for_hello(rig.url, rig.clock)
        r = cli("params", "get", "kp", "--port", rig.url)
        assert r.returncode == 0 and "0.07" in r.stdout, r.stdout + r.stderr


def test_a_board_move_runs_on_the_frozen_image(frozen_pico_image, frozen_uf2, tmp_path):
    """The move engine as the image's own mpy-cross compiled it into flash (viper, armv6m): a half turn arrives."""
    from viperdrive.board import Board, wait_for_hello
    from viperdrive.rigs.pico import PicoRig
    from viperdrive.robot.config import RobotConfig
    flash = frozen_pico_image.copy(tmp_path / "moves.flash")
    with PicoRig(flash=flash, uf2=frozen_uf2) as rig:
        wait_for_hello(rig.url, rig.clock)
        y0 = rig.control({"cmd": "truth"})["yaw_total"]
        with Board(rig.url, config=RobotConfig(), clock=rig.clock) as b:
            assert "FROZEN" in b.diag()["flag_names"]
            b.activate()
            turn = b.move_turn(math.pi, 2.0, 6.0)
            b.moves.wait_all(30.0)
            d = b.diag()
            b.deactivate()
        turned = math.degrees(rig.control({"cmd": "truth"})["yaw_total"] - y0)
    print(f"frozen image: half turn {turn.reason}, {turned:.1f} deg in ground truth; step {d['exec_avg_us']} us avg")
    assert turn.reason == "arrived" and abs(turned - 180.0) < 2.0 and d["fault_code"] == 0


def test_config_only_on_a_stock_image_is_refused_and_changes_nothing(pico_image_blank_stock):
    r, listing_before, listing_after = pico_image_blank_stock
    assert r.returncode == 7, r.stdout + r.stderr
    assert "no viperdrive firmware frozen in (a stock image)" in r.stderr and "Nothing was changed" in r.stderr
    assert "Traceback" not in r.stderr
    assert listing_after == listing_before


@pytest.fixture
def pico_image_blank_stock(tmp_path):
    """flash --config-only onto a blank Pico running the stock image: (its result, the board's files before and
    after)."""
    from viperdrive.executables import require
    from viperdrive.rigs.pico import PicoRig, require_images_or_skip
    require_images_or_skip(pytest.skip)

    def ls(url):
        r = subprocess.run([require("mpremote"), "connect", url, "fs", "ls", ":"], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout

    with PicoRig(flash=tmp_path / "stock.flash") as rig:
        rig.clock.sleep(1.0)                # the stock image's boot to its REPL (chip time)
        before = ls(rig.url)
        r = cli("flash", "--board", "pico", "--config-only", "--port", rig.url)
        after = ls(rig.url)
    return r, before, after
