"""The CLI against a careless or hostile user (issue 17): non-finite and out-of-range numbers on the command line, a
recording killed mid-run, damaged files, malformed URLs. Every case runs the real command as a subprocess, and
each one failed before its fix (a hang with the board enabled, a traceback, a lost recording, a silent error)."""
from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest
from cli_helpers import VIPERDRIVE, SharedSim, run_cli


@pytest.fixture(scope="module")
def sim():
    s = SharedSim()
    yield s
    s.close()


def _no_traceback(r):
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout, r.stderr[-3000:]


# ------------------------------------------------------------------------------------------ numbers (item 2)

# the command lines of the issue: each hung with the board enabled, ignored the value or ended in a traceback
NON_FINITE = [
    (["drive", "--script", "square", "--side", "nan"], "--side"),
    (["drive", "--script", "square", "--speed", "nan"], "--speed"),
    (["drive", "--script", "spin", "--turn-rate", "inf"], "--turn-rate"),
    (["drive", "--script", "square", "--duration", "nan"], "--duration"),
    (["tune", "--duration", "inf"], "--duration"),
    (["tune", "--duration", "nan"], "--duration"),
    (["tune", "--autotune", "--relay-time", "nan", "--yes"], "--relay-time"),
    (["calibrate", "wheelbase", "--time", "nan", "--yes", "--no-write"], "--time"),
    (["calibrate", "feedforward", "--ramp-time", "inf", "--yes", "--no-write"], "--ramp-time"),
    (["log", "record", "{tmp}/x.mcap", "--duration", "nan"], "--duration"),
    (["info", "--baud", "0"], "--baud"),
]


@pytest.mark.parametrize("argv,option", NON_FINITE, ids=[" ".join(a) for a, _ in NON_FINITE])
def test_non_finite_or_zero_numbers_are_a_usage_error_naming_the_option(sim, tmp_path, argv, option):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    r = run_cli(*argv, "--port", sim.url, timeout=30)
    _no_traceback(r)
    assert r.returncode == 2, r.stderr
    assert f"error: argument {option}: " in r.stderr, r.stderr
    assert not (tmp_path / "x.mcap").exists()           # refused before anything was opened


def test_script_file_values_are_checked_too(sim, tmp_path):
    script = tmp_path / "s.txt"
    script.write_text("forward 0.2\nwait 1e308\n")
    r = run_cli("drive", "--script", script, "--port", sim.url, timeout=30)
    _no_traceback(r)
    assert r.returncode == 7 and "line 2: 'wait 1e308': the duration 1e+308 s is outside [0, 86400] s" in r.stderr


# ------------------------------------------------------------------------------------------ tracebacks (item 9)

def test_a_network_url_without_a_port_is_a_usage_error():
    for url, missing in (("socket://127.0.0.1", "no port"), ("rfc2217://", "no host"), ("socket://h:99999", "range")):
        r = run_cli("info", "--port", url)
        _no_traceback(r)
        assert r.returncode == 2 and f"--port {url}: " in r.stderr and missing in r.stderr, r.stderr
        assert "HOST:PORT" in r.stderr


@pytest.mark.parametrize("option", ["--robot", "--board"])
def test_sim_with_a_garbage_file_says_what_is_wrong(tmp_path, option):
    garbage = tmp_path / "garbage.json"
    garbage.write_bytes(bytes(range(256)) * 3)          # not text at all
    r = run_cli("sim", option, garbage, timeout=60)
    _no_traceback(r)
    assert r.returncode == 7, r.stderr
    assert str(garbage) in r.stderr and "not UTF-8 text" in r.stderr


def _small_recording(path):
    from viperdrive.logs import McapRecorder
    with McapRecorder(path) as rec:
        t = time.monotonic()
        for i in range(50):
            rec.odometry(t + 0.01 * i, (0.01 * i, 0.0, 0.0), (0.1, 0.0))
            rec.joint_states(t + 0.01 * i, (0.1 * i, 0.1 * i), (1.0, 1.0))


def test_log_plot_out_dir_naming_a_file_is_an_error(tmp_path):
    rec = tmp_path / "r.mcap"
    _small_recording(rec)
    taken = tmp_path / "plots"
    taken.write_text("my notes\n")
    r = run_cli("log", "plot", rec, "--out-dir", taken)
    _no_traceback(r)
    assert r.returncode == 7 and f"--out-dir {taken} is a file, not a folder" in r.stderr
    assert taken.read_text() == "my notes\n"


def test_fuse_on_a_corrupted_zstd_chunk_says_so(tmp_path):
    from viperdrive.ekf.sim import simulate_run, write_mcap
    path = tmp_path / "run.mcap"
    write_mcap(path, simulate_run(duration=20.0, seed=1, odom_rate=50, imu_rate=100).messages)
    data = bytearray(path.read_bytes())
    chunk = data.find(b"zstd")
    data[chunk + 20] ^= 0xFF                            # inside the first chunk's compressed bytes
    path.write_bytes(bytes(data))
    cfg = tmp_path / "ekf.yaml"
    cfg.write_text("ekf_filter_node:\n  ros__parameters:\n    frequency: 20.0\n    two_d_mode: true\n"
                   "    odom0: odom\n    odom0_config: [false, false, false, false, false, false, true, true, false,"
                   " false, false, true, false, false, false]\n")
    r = subprocess.run([VIPERDRIVE, "fuse", path, "--config", cfg, "--out", tmp_path / "o.csv"], capture_output=True,
                       text=True, timeout=120)
    _no_traceback(r)
    assert r.returncode == 1
    assert "the recording ends in damaged data" in r.stdout and "ZstdError" in r.stdout


# ------------------------------------------------------------------------------------------ killed recordings (item 5)

def _kept(path):
    """(messages, wall-clock ns of the first and last message) of a possibly cut MCAP file, read as far as it goes."""
    from mcap.reader import NonSeekingReader
    n, first, last = 0, None, None
    with open(path, "rb") as f:
        try:
            for _schema, _channel, message in NonSeekingReader(f).iter_messages(log_time_order=False):
                n += 1
                first = message.log_time if first is None else first
                last = message.log_time
        except Exception:  # noqa: BLE001 -- the cut: EndOfFile or whatever a partial record gives
            pass
    return n, first, last


@pytest.mark.parametrize("how", ["log record", "drive --record"])
def test_a_killed_recording_keeps_all_but_the_last_second(sim, tmp_path, how):
    out = tmp_path / "killed.mcap"
    if how == "log record":
        argv = ["log", "record", out, "--port", sim.url]
    else:
        script = tmp_path / "long.txt"
        script.write_text("twist 0.05 0 30\n")
        argv = ["drive", "--script", script, "--record", out, "--port", sim.url]
    proc = subprocess.Popen([VIPERDRIVE, *map(str, argv)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while _kept(out)[0] == 0 if out.exists() else True:     # until the first chunk is on disk
            assert time.monotonic() < deadline, "no complete chunk on disk after 30 s"
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        time.sleep(4.5)            # half way between two flushes
        killed_ns = time.time_ns()
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    n, first, last = _kept(out)
    assert n > 0, f"nothing readable in {os.path.getsize(out)} bytes"
    span = (last - first) / 1e9
    lost = (killed_ns - last) / 1e9
    print(f"{how}: kept {n} messages covering {span:.2f} s; the last {lost:.2f} s before the kill lost "
          f"({os.path.getsize(out)} bytes)")
    assert span >= 4.5 and lost <= 1.5, (n, span, lost)      # one flush period (1 s) plus scheduling
    assert n >= 300 * span                                     # /odom, /tf, /joint_states, /cmd_vel at 100 Hz
    # log plot reads what the cut file holds and says what was cut
    r = run_cli("log", "plot", out, "--out-dir", tmp_path / "png")
    _no_traceback(r)
    assert r.returncode == 0, r.stderr
    assert "warning:" in r.stderr and "no summary or footer (the recording was killed" in r.stderr
    assert f"Read {n} messages" in r.stderr
    assert sorted(p.name for p in (tmp_path / "png").iterdir()) == ["killed_path.png", "killed_pid.png",
                                                                    "killed_wheels.png"]
