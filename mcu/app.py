# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# The firmware's application: ties the hal, the control loop, the link, parameters, odometry, telemetry and the
# supervisor together. All state lives in the App object (no module globals), so the virtual board can build a
# fresh App after an emulated watchdog reset inside one process.
#
# Tasks:
#   control step   hal timer at control_hz (hard IRQ where the port has one): Controller.tick, allocation-free
#   service()      the slow loop, one non-blocking pass: link, odometry (100 Hz), telemetry stream, supervisor
import gc

from . import boardcfg, control, moves, odometry, params_store, safety, sensors, telemetry
from .hal.portable import ticks_diff, wrap_delta
from .shared import params, protocol, version

FIRMWARE = version.FIRMWARE_PREFIX + version.VERSION     # HELLO says it; the host compares
ODOM_PERIOD_MS = 10             # board odometry at 100 Hz (soft): it integrates count deltas, so lateness
#                                 moves the sample time, never loses distance
TELEMETRY_RECORDS = 64          # ring size: 0.64 s at 100 records/s between two drains
TELEMETRY_BURST = 4             # TELEMETRY_DATA frames per service pass at most (38 B each)
H_REBASE = 1 << 29              # the moves' heading sample restarts at 0 beyond this (Q12 H counts; ~40 turns)


def image_flags():
    """GET_DIAG's image flags, found once at boot. DIAG_FROZEN: this firmware runs from a Pico image it is frozen
    into (tools/build_uf2.py adds the module frozen_image). With it, what an earlier flash left on the filesystem,
    which no longer runs: DIAG_UNUSED_PACKAGE (lib/viperdrive: the frozen package comes before /lib on sys.path),
    DIAG_UNUSED_MAIN (main.py: a frozen main.py runs instead), DIAG_UNUSED_ROOT (the firmware's modules at the root,
    where flashes before the package put them). A few os.stat calls."""
    try:
        from . import frozen_image  # type: ignore[attr-defined]  # only in a frozen image
    except ImportError:
        return 0
    import os

    def there(name):
        try:
            os.stat(name)
            return True
        except OSError:
            return False

    flags = protocol.DIAG_FROZEN
    if there("lib/viperdrive"):
        flags |= protocol.DIAG_UNUSED_PACKAGE
    if there("main.py"):
        flags |= protocol.DIAG_UNUSED_MAIN
    for name in ["hal", "shared"] + [f for f in frozen_image.FILES if "/" not in f and f != "frozen_image.py"]:
        if there(name) or (name.endswith(".py") and there(name[:-3] + ".mpy")):
            flags |= protocol.DIAG_UNUSED_ROOT
            break
    return flags


class App:
    def __init__(self, hal, cfg, params_path="params.json", link=True, watchdog=True):
        self.hal = hal
        self.cfg = cfg
        self.params_path = params_path
        self.use_link = link
        self.use_watchdog = watchdog
        self.image = image_flags()      # GET_DIAG's DIAG_FROZEN and DIAG_UNUSED_* bits
        self.params = params_store.Params()
        # never raises: a missing or corrupt file boots on defaults and sets DIAG_PARAMS_DEFAULTED
        self.params.load(params_path)
        self.hz = cfg.get("control_hz", 500)
        self.cpr = cfg["counts_per_rev"]
        self.ctrl = control.controller(hal, cfg, self.params.values)
        v = self.params.values
        self.odometry = odometry.Odometry(v["wheel_radius"], v["wheel_separation"], self.cpr)
        # IMU, battery and e-stop state at the sensor rate (docs/firmware.md, "Sensors")
        self.sensors = sensors.Sensors(hal, cfg, self.ctrl, v)
        self.ring = telemetry.Ring(TELEMETRY_RECORDS)
        self.ctrl.attach_ring(self.ring.buf, self.ring.hdr, self.ring)
        self.telemetry_hz = 0
        self.supervisor = safety.Supervisor(hal, cfg.get("watchdog_ms", 500))
        self.reset_cause = hal.reset_cause()
        if self.reset_cause == protocol.RESET_WATCHDOG:
            # something hung: stay disabled, latch it until the host has seen it and sent CLEAR_FAULT
            self.ctrl.set_watchdog_reset(protocol.FAULT_WATCHDOG)
        self.link = None
        self.started = False
        self.link_stopped = False   # STOP_LINK served: run() returns, main() hands the board to the REPL
        self._t_start = hal.ticks_ms()
        self._next_odom = self._t_start
        self._odom_us = hal.ticks_us()
        self._last_pos = self.ctrl.positions()
        self._moves = hasattr(self.ctrl, "move_queue")     # the float law (no viper) has no move engine
        self._h_q12 = 0
        self._h_frac = 0.0
        self._h_per_rad = 0.0
        self._geometry()

    def _geometry(self):
        v = self.params.values
        self._h_per_rad = 4096.0 * 0.5 * v["wheel_separation"] * self.cpr / (6.283185307179586 * v["wheel_radius"])

    # ---- lifecycle ----

    def start(self):
        """Control timer, link, watchdog. The outputs stay de-energized until ENABLE."""
        self.ctrl.start()
        if self.use_link:
            from . import link
            self.link = link.Link(self.hal.open_link(), self)
        if self.use_watchdog:
            self.supervisor.start(self.ctrl.ticks(), self._link_mark())
        # HELLO's schema hash, computed now rather than at the first HELLO (shared/params.py keeps it): ~100 ms of
        # big-int arithmetic on an RP2040, which per HELLO left a host retrying HELLOs a board its watchdog reset
        params.schema_hash()
        # what loading and starting the firmware left behind: collected now, before the host talks to it, rather
        # than in the middle of the first exchanges (a collection stops the slow loop ~18 ms on an RP2040)
        gc.collect()
        self.started = True

    def stop(self):
        self.ctrl.stop()
        if self.link is not None:
            self.link.close()
            self.link = None
        self.started = False
        self.link_stopped = False   # STOP_LINK served: run() returns, main() hands the board to the REPL

    def service(self):
        """One pass of the slow tasks; never blocks."""
        if self.link is not None:
            self.link.service()
        self.sensors.service()
        if self.sensors.pending and self.link is not None:
            self.sensors.pending = False
            self.link.send(protocol.pack_sensors_data(*self.sensors.record()))
        now = self.hal.ticks_ms()
        if ticks_diff(now, self._next_odom) >= 0:
            self._next_odom = (now + ODOM_PERIOD_MS) & 0x3FFFFFFF
            self.update_odometry()
        if self.telemetry_hz and self.link is not None:
            self._stream_telemetry()
        if self.link_stopped:
            # no feed after STOP_LINK_ACK: the watchdog resets the board within the reset_ms the ACK announced
            return
        self.supervisor.check(self.ctrl.ticks(), self._link_mark())

    def run(self):
        """start(), then the slow loop until the host sends STOP_LINK. -> True (the link was stopped)."""
        self.start()
        idle = self.hal.idle
        while not self.link_stopped:
            self.service()
            idle()
        return True

    def _link_mark(self):
        # without a link (REPL tuning) the slow loop itself is the task that must keep running
        if self.link is not None:
            return self.link.passes
        return self.hal.ticks_ms()

    # ---- slow tasks ----

    def update_odometry(self):
        pl, pr = self.ctrl.positions()
        # position counters are int32 and wrap: the firmware's one Python copy of the wrap-safe difference (the
        # viper step inlines its own, where a call would cost: docs/firmware.md, "Counter wrap")
        dl = wrap_delta(pl, self._last_pos[0], 32)
        dr = wrap_delta(pr, self._last_pos[1], 32)
        self._last_pos = (pl, pr)
        self._odom_us = self.hal.ticks_us()
        dth = self.sensors.take_heading()
        if dl or dr or dth is not None:
            self.odometry.update(dl, dr, dth)
        else:
            self.odometry.gyro_heading = False      # no gyro this period: ODOM says the encoders hold the heading
        # the moves' heading: the same change, in Q12 H counts (half the wheels' difference), summed unwrapped.
        # Small ints only (a 32-bit port allocates a big int past 2**30, every 10 ms): while no move runs, a heading
        # past H_REBASE restarts near zero, and the engine takes its next target from there
        h = self._h_frac + (dth * self._h_per_rad if dth is not None else (dr - dl) * 2048)
        whole = int(h)
        self._h_frac = h - whole
        hg = self._h_q12 + whole
        if self._moves:
            if not -H_REBASE < hg < H_REBASE and self.ctrl.move_free() == control.MOVE_SLOTS:
                hg = 0
                self.ctrl.heading_rebase()
            self.ctrl.heading_sample(hg, (pr - pl) << 11)
        self._h_q12 = hg

    def _stream_telemetry(self):
        for rec in self.ring.drain(TELEMETRY_BURST):
            self.link.send(protocol.pack_telemetry_data(*rec))

    # ---- the link's handler interface ----

    def ticks_us(self):
        return self.hal.ticks_us()

    def info(self):
        return self.hz, self.cpr, FIRMWARE, self.cfg.get("name", "board")

    def set_velocity(self, left, right):
        self.ctrl.set_velocity(left, right)

    def state(self):
        return self.ctrl.state()

    def fault(self):
        return self.ctrl.fault()

    def enable(self, on):
        ok = self.ctrl.enable(on)
        # positions restarted at zero: the odometry keeps its pose and continues from there
        self._last_pos = self.ctrl.positions()
        return ok

    def zero(self):
        self.ctrl.zero()
        self.odometry.reset()
        self._last_pos = self.ctrl.positions()

    def clear_fault(self):
        return self.ctrl.clear_fault()

    def get_param(self, pid):
        return self.params.get(pid)

    def set_param(self, pid, value):
        """Validate and apply (bumplessly); None, or the reason the value was refused."""
        reason = self.params.set(pid, value)
        if reason is not None:
            return reason
        self._apply_params()
        return None

    def _apply_params(self):
        v = self.params.values
        self.ctrl.configure(v)
        self.odometry.configure(v["wheel_radius"], v["wheel_separation"], self.cpr)
        self.sensors.configure(v)
        self._geometry()

    def save_params(self):
        self.params.save(self.params_path)

    def load_params(self):
        """LOAD_PARAMS: every live value back to what a reset would load (the parameter file; defaults where it is
        missing or bad), applied like SET_PARAM. -> True when every value came from the file."""
        ok = self.params.load(self.params_path)
        self._apply_params()
        return ok

    def set_telemetry(self, rate_hz):
        """Stream rate in records/s (0: off), at most the control rate. -> the rate applied, None if refused."""
        if rate_hz > self.hz:
            return None
        if rate_hz == 0:
            self.ctrl.set_telemetry_div(0)
            self.telemetry_hz = 0
            return 0
        div = max(1, self.hz // rate_hz)
        self.ring.reset()
        self.ctrl.set_telemetry_div(div)
        self.telemetry_hz = self.hz // div
        return self.telemetry_hz

    def set_sensors(self, rate_hz):
        """SENSORS: the SENSORS_DATA stream rate (0: off). -> the rate applied, None above the sensor rate."""
        return self.sensors.set_stream(rate_hz)

    def stop_link(self):
        """STOP_LINK: de-energize now (before the ACK leaves); run() returns after this pass and main() hands the
        board to its REPL. -> ms within which the unfed watchdog resets the board (0: no watchdog runs)."""
        self.ctrl.enable(False)
        self.link_stopped = True
        return self.supervisor.timeout_ms if self.supervisor.started else 0

    def move(self, move_id, kind, flags, a, b, speed, accel, timeout):
        """MOVE: plan and queue. -> 0, or the NACK code (NOT_ALLOWED: outputs off, a fault, the queue full or no
        move engine on this port; OUT_OF_RANGE: moves.plan refused the values)."""
        c = self.ctrl
        if not self._moves or not c.enabled() or c.fault() or c.move_free() == 0:
            return protocol.NACK_NOT_ALLOWED
        try:
            words = moves.plan(self.params.values, self.cpr, self.hz, kind, a, b, speed, accel, timeout)
        except ValueError:
            return protocol.NACK_OUT_OF_RANGE
        return 0 if c.move_queue((move_id,) + words) else protocol.NACK_NOT_ALLOWED

    def move_lease(self, cancel):
        """MOVE_LEASE: the host is alive (the moves go on), or cancel them all."""
        if self._moves:
            if cancel:
                self.ctrl.move_cancel()
            else:
                self.ctrl.move_lease()

    def move_report(self):
        return self.ctrl.move_report() if self._moves else (0, 0, 0, [], 0)

    def odom(self):
        o = self.odometry
        return (self._odom_us, int(round(o.x * protocol.ODOM_LENGTH_SCALE)),
                int(round(o.y * protocol.ODOM_LENGTH_SCALE)), int(round(o.theta * protocol.ODOM_ANGLE_SCALE)),
                int(round(o.theta_enc * protocol.ODOM_ANGLE_SCALE)),
                protocol.ODOM_HEADING_GYRO if o.gyro_heading else protocol.ODOM_HEADING_ENCODERS)

    def diag(self):
        d = self.ctrl.stats()
        d.pop("periods", None)
        if self.link is not None:
            d.update(self.link.counters())
        else:
            d.update({"frames_ok": 0, "crc_errors": 0, "length_errors": 0, "garbage_bytes": 0, "frame_timeouts": 0,
                      "nacks": 0})
        flags = 0
        if self.params.defaulted:
            flags |= protocol.DIAG_PARAMS_DEFAULTED
        if getattr(self.hal, "soft", False):
            flags |= protocol.DIAG_TIMER_SOFT
        if self.params.unsaved():
            # a test killed before it could put its values back (SIGKILL), or a set without save: a reset, or
            # LOAD_PARAMS, would change the live values
            flags |= protocol.DIAG_PARAMS_UNSAVED
        d["uptime_ms"] = (self.hal.ticks_ms() - self._t_start) & 0x3FFFFFFF
        d["free_heap"] = min(self.hal.free_heap(), 0xFFFFFFFF)
        d["reset_cause"] = self.reset_cause
        d["flags"] = flags | self.image
        d["imu_state"] = self.sensors.imu_state
        d["imu_errors"] = self.sensors.imu_errors
        return d


def repl_requested(cfg, hal_board=None, exists=None):
    """The boot switch: a file named repl_mode on the board's filesystem, or the board config's repl_pin held at
    its active level (low with repl_pull "up", high with "down") at boot. The pin is read by the backend
    (hal.repl_pin_held, or hal_board.repl_pin_held() when a Board is given): only hal/ imports port modules."""
    if exists is None:
        exists = _exists
    if exists("repl_mode"):
        return True
    if "repl_pin" not in cfg:
        return False
    if hal_board is not None:
        return bool(hal_board.repl_pin_held())
    from . import hal
    return bool(hal.repl_pin_held(cfg))


def _exists(path):
    try:
        open(path).close()
        return True
    except OSError:
        return False


def _touch(path):
    with open(path, "w") as f:
        f.write("STOP_LINK\n")


def main(board_path="board.json"):
    """What main.py runs: link mode (outputs disabled until the host sends ENABLE), or REPL mode when the switch
    says so (then `from viperdrive import tuning; t = tuning.start()` at the prompt).

    Returns after STOP_LINK (the host wants the REPL, e.g. to reflash): once the watchdog has reset the board into
    REPL mode, or at once where no watchdog runs. -> "stop_link" then, None in REPL mode."""
    cfg = boardcfg.load(board_path)
    if repl_requested(cfg):
        print("viperdrive: REPL mode (repl_mode file or repl pin). Start the loop with:")
        print("  from viperdrive import tuning; t = tuning.start()")
        return None
    from . import hal
    board = hal.load(cfg)
    # the imports' garbage (every module compiled from source on a board without .mpy files) out of the way
    # before the App's buffers: CircuitPython on an RP2040 had the memory but not 5 KiB of it in one piece
    gc.collect()
    app = App(board, cfg)
    try:
        app.run()
    finally:
        # a crash (or Ctrl-C through a UART link) lands in the REPL: outputs off and, for a USB CDC link, Ctrl-C
        # given back. The watchdog keeps running and nobody feeds it: the board resets into link mode.
        app.stop()
    return _hand_to_repl(app, board)


def _hand_to_repl(app, board):
    """After STOP_LINK: outputs off, control timer and link stopped (app.stop() did that, which also gave Ctrl-C
    back). Write the REPL boot switch, then let the watchdog reset the board into REPL mode.

    Why not simply return to the REPL: the hardware watchdog cannot be stopped once started (rp2, esp32, stm32)
    and would reset the board into link mode under mpremote's feet, with a half-copied firmware. Feeding it from
    a machine.Timer does not survive either: mpremote soft-resets the board when it enters the raw REPL, which
    deinitialises the timers but not the watchdog. A soft reset into REPL mode has the same flaw. A real reset
    does stop the watchdog: the repl_mode file makes that reset boot into the REPL, where nothing starts the
    watchdog and the outputs stay off, and it keeps the board there until `viperdrive flash` removes the file as
    its last step, so an interrupted copy also lands in the REPL, never in a half-copied link mode."""
    try:
        _touch("repl_mode")
    except OSError as e:
        # a read-only filesystem: the reset below lands in link mode again, which is safe (outputs off)
        print("viperdrive: could not write repl_mode (%s)" % e)
    if not app.supervisor.started:
        print("viperdrive: link stopped by the host (STOP_LINK): REPL")
        return "stop_link"
    timeout = app.supervisor.timeout_ms
    print("viperdrive: link stopped by the host (STOP_LINK): the watchdog resets the board into REPL mode")
    # wait here rather than in the REPL: a host reaching the REPL now would lose it to the reset mid-command.
    # Bounded, so a port whose watchdog does not bite still ends in the REPL instead of hanging.
    t0 = board.ticks_ms()
    while ticks_diff(board.ticks_ms(), t0) < 4 * timeout + 1000:
        try:
            board.idle()
        except KeyboardInterrupt:
            # Ctrl-C is back on (mpremote sends it on connect): the reset is still coming, keep waiting for it
            pass
    print("viperdrive: the watchdog did not reset the board; REPL")
    return "stop_link"
