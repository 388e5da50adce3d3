# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Hardening round two, items 5, 7 and 8 without a board: absurd numbers refused with their range, an unusable
--flash refused before the rig announces a port, a random flash image refused, the exit codes of a file that is not
MCAP and of missing Pico images, an empty robot file noted."""
from __future__ import annotations

import os

import pytest
from cli_helpers import no_traceback, run_cli

pytestmark = pytest.mark.unit


def _ekf(tmp_path, extra: str):
    cfg = tmp_path / "ekf.yaml"
    cfg.write_text("ekf_filter_node:\n  ros__parameters:\n    two_d_mode: true\n" + extra +
                   "    odom0: odom\n    odom0_config: [false, false, false, false, false, false, true, true, false,"
                   " false, false, true, false, false, false]\n")
    return cfg


@pytest.mark.parametrize("key,value,words", [
    ("frequency", "1.0e12", "in (0, 1000] Hz"),
    ("sensor_timeout", "1.0e9", "in (0, 3600] s"),
    ("history_length", "1.0e9", "in [0, 3600] s"),
    ("odom0_timeout", "1.0e9", "in (0, 3600] s"),
])
def test_ekf_numbers_outside_what_a_robot_can_mean_are_refused_with_the_range(tmp_path, key, value, words):
    r = run_cli("check-config", _ekf(tmp_path, f"    {key}: {value}\n"))
    no_traceback(r)
    assert r.returncode == 7 and key in r.stderr and words in r.stderr, r.stderr


def test_a_design_settling_time_past_ten_seconds_is_a_usage_error():
    r = run_cli("tune", "--design", "--settle", "1e9s", "--port", "loop://")
    no_traceback(r)
    assert r.returncode == 2 and "'1e9s' is outside (0, 10] s" in r.stderr, r.stderr


@pytest.mark.parametrize("flash,words", [
    ("/nonexistent/folder/p.flash", "the folder /nonexistent/folder does not exist"),
    ("/proc/p.flash", "cannot create a file in /proc"),
])
def test_an_unusable_flash_path_is_refused_before_any_port_is_announced(flash, words):
    from viperdrive.rigs.pico import require_images_or_skip
    require_images_or_skip(pytest.skip)
    r = run_cli("sim", "--pico", "--flash", flash, timeout=30)
    no_traceback(r)
    assert r.returncode == 7 and words in r.stderr, r.stderr
    assert "listening on" not in r.stdout


def test_a_random_flash_image_is_refused_naming_what_it_lacks(tmp_path):
    from viperdrive.rigs.pico import require_images_or_skip
    require_images_or_skip(pytest.skip)
    flash = tmp_path / "random.flash"
    flash.write_bytes(os.urandom(2 * 1024 * 1024))
    r = run_cli("sim", "--pico", "--flash", flash, timeout=30)
    no_traceback(r)
    assert r.returncode == 7 and "no valid boot stage 2" in r.stderr, r.stderr
    assert "listening on" not in r.stdout


def test_missing_pico_images_exit_2_as_documented(tmp_path):
    r = run_cli("sim", "--pico", env={"VIPERDRIVE_PICO_IMAGES": str(tmp_path)}, timeout=30)
    no_traceback(r)
    assert r.returncode == 2 and "micropython.org/download/RPI_PICO" in r.stderr, r.stderr


def test_a_file_that_is_not_mcap_is_exit_7_from_fuse_and_log_plot(tmp_path):
    junk = tmp_path / "junk.mcap"
    junk.write_text("not a recording\n")
    r1 = run_cli("fuse", junk, "--config", _ekf(tmp_path, "    frequency: 20.0\n"), "--out", tmp_path / "o.csv")
    r2 = run_cli("log", "plot", junk, "--out-dir", tmp_path / "png")
    no_traceback(r1)
    no_traceback(r2)
    assert r1.returncode == 7 and r2.returncode == 7, (r1.stderr, r2.stderr)
    assert "not a readable MCAP file" in r1.stderr and "not a readable MCAP file" in r2.stderr


def test_an_empty_robot_file_is_noted(tmp_path):
    empty = tmp_path / "robot.yaml"
    empty.write_text("")
    r = run_cli("check-config", empty)
    assert r.returncode == 0, r.stderr
    assert "the robot file is empty: every value is the built-in default" in r.stdout


def test_a_schema_without_its_nested_types_is_said_in_words_by_fuse(tmp_path):
    # mcap_ros2's decoder names such a field with an unformatted template (type "{ftype.type}": a missing f-prefix
    # in the library); fuse says what is wrong instead
    from mcap.writer import Writer
    path = tmp_path / "foreign.mcap"
    with open(path, "wb") as f:
        w = Writer(f)
        w.start("ros2", "test")
        sid = w.register_schema("nav_msgs/msg/Odometry", "ros2msg", b"std_msgs/Header header\nstring child_frame_id\n"
                                b"geometry_msgs/PoseWithCovariance pose\n")
        cid = w.register_channel("/odom", "cdr", sid)
        for i in range(20):
            w.add_message(cid, log_time=i * 10_000_000, data=os.urandom(64), publish_time=i * 10_000_000)
        w.finish()
    r = run_cli("fuse", path, "--config", _ekf(tmp_path, "    frequency: 20.0\n"), "--out", tmp_path / "o.csv")
    no_traceback(r)
    text = r.stdout + r.stderr
    assert "{ftype" not in text, text
    assert "the recording's schema does not define the type of field" in text, text


def test_sim_pico_uf2_that_is_not_an_image_is_refused_with_one_line(tmp_path):
    """`sim --pico --uf2`: a missing file, /dev/zero, a FIFO, a text file, a folder: a clear error, no rig left."""
    from viperdrive.rigs.pico import require_images_or_skip
    require_images_or_skip(pytest.skip)
    fifo = tmp_path / "fifo.uf2"
    os.mkfifo(fifo)
    text = tmp_path / "text.uf2"
    text.write_text("not an image\n" * 100)
    for bad, words in ((tmp_path / "missing.uf2", "is not there"), ("/dev/zero", "is not a regular file"),
                       (fifo, "is not a regular file"), (tmp_path, "is not a regular file"),
                       (text, "not a UF2 file")):
        r = run_cli("sim", "--pico", "--uf2", bad, timeout=60)
        no_traceback(r)
        assert r.returncode in (2, 7) and words in r.stderr, (bad, r.returncode, r.stderr)
        assert "listening on" not in r.stdout
    r = run_cli("sim", "--pico", "--circuitpython", "--uf2", text, timeout=30)
    assert r.returncode == 2 and "--uf2 is a MicroPython image" in r.stderr, r.stderr
