# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# The virtual board: the unmodified firmware (mcu/) on the MicroPython unix port, with the sim hardware backend
# (mcu/hal/sim.py) driving the physical model (sim/plant.py), the firmware's link served on TCP at an emulated
# serial byte rate, a JSON-lines control endpoint for ground truth and faults, and an emulated watchdog that
# restarts the firmware inside this process.
#
#   micropython sim/vboard.py [--listen HOST:PORT] [--control HOST:PORT] [--baud N] [--robot FILE]
#                             [--board FILE] [--params FILE] [--seed N] [--clock FILE] [--repl]
#
# Prints "control on HOST:PORT" (with --control) and then "listening on socket://HOST:PORT" once the firmware
# runs. docs/virtual-board.md is the manual; host/viperdrive/rigs/virtual.py launches this for host code and tests.
import gc
import sys
import time

_HERE = __file__.rpartition("/")[0] or "."
_ROOT = _HERE + "/.."
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import _thread  # noqa: E402

import firmware_package  # noqa: E402

# the board's import layout: the firmware is the package viperdrive (mcu/), the protocol its viperdrive.shared
firmware_package.mount(_ROOT)

import net  # noqa: E402
import plant as plant_mod  # noqa: E402
import world as world_mod  # noqa: E402
from viperdrive.shared import protocol  # noqa: E402

USAGE = ("usage: vboard.py [--listen HOST:PORT] [--control HOST:PORT] [--baud N] [--robot FILE] [--board FILE] "
         "[--params FILE] [--seed N] [--clock FILE] [--time-ratio R] [--repl] [--app MODULE]\n"
         "--time-ratio R: board seconds per real second (default: VIPERDRIVE_SIM_SPEED, else 1), 0.05..20")
WHEELS = ("left", "right", "both")
FAULT_KINDS = ("cut_link", "corrupt", "garbage", "inject", "stall", "lift", "encoder_drop", "battery",
               "freeze_control", "estop", "imu")
COMMANDS = ("truth", "fault", "push", "reset", "stats", "ping")


class UsageError(Exception):
    pass


def parse_args(argv):
    opts = {"listen": "127.0.0.1:0", "control": None, "baud": 115200, "robot": _HERE + "/robots/default.json",
            "board": _ROOT + "/mcu/boards/sim.json", "params": "/tmp/viperdrive-sim-params.json", "seed": None,
            "repl": False, "app": "app", "board_given": False, "clock": None, "time_ratio": None}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            raise UsageError(USAGE)
        if a == "--repl":
            opts["repl"] = True
            i += 1
            continue
        key = a[2:].replace("-", "_") if a.startswith("--") else None
        if key is None or key not in opts or key in ("repl", "board_given"):
            raise UsageError("unknown option %r\n%s" % (a, USAGE))
        if i + 1 >= len(argv):
            raise UsageError("%s needs a value" % a)
        val = argv[i + 1]
        if key in ("baud", "seed"):
            try:
                val = int(val)
            except ValueError:
                raise UsageError("%s must be a whole number, got %r" % (a, val)) from None
            if key == "baud" and not 300 <= val <= 20000000:
                raise UsageError("--baud %d outside 300..20000000" % val)
        if key == "time_ratio":
            try:
                val = float(val)
            except ValueError:
                raise UsageError("--time-ratio must be a number, got %r" % val) from None
        opts[key] = val
        if key == "board":
            opts["board_given"] = True      # a file the user named must exist: no silent built-in fallback
        i += 2
    return opts


def _bool(req, key):
    v = req.get(key, True)
    if not isinstance(v, bool):
        raise ValueError("%r must be true or false, got %r" % (key, v))
    return v


def _number(req, key, lo, hi, default=None):
    if key not in req:
        if default is None:
            raise ValueError("missing %r" % key)
        return default
    v = req[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v:
        raise ValueError("%r must be a number, got %r" % (key, v))
    if not lo <= v <= hi:
        raise ValueError("%r = %r outside [%r, %r]" % (key, v, lo, hi))
    return v


SPEED_MIN = 0.05
SPEED_MAX = 20.0


def board_speed(given):
    """--time-ratio, else VIPERDRIVE_SIM_SPEED, else 1.0; UsageError outside SPEED_MIN..SPEED_MAX."""
    if given is None:
        import os
        text = os.getenv("VIPERDRIVE_SIM_SPEED")
        if not text:
            return 1.0
        try:
            given = float(text)
        except ValueError:
            raise UsageError("VIPERDRIVE_SIM_SPEED must be a number, got %r" % text) from None
    if not SPEED_MIN <= given <= SPEED_MAX:
        raise UsageError("the board's speed %r is outside %g..%g (board time per real time)"
                         % (given, SPEED_MIN, SPEED_MAX))
    return given


def _wheel(req):
    w = req.get("wheel", "both")
    if w not in WHEELS:
        raise ValueError("'wheel' must be one of %s, got %r" % (", ".join(WHEELS), w))
    return w


class VirtualBoard:
    def __init__(self, opts):
        self.opts = opts
        desc = plant_mod.load_description(opts["robot"])
        self.plant = plant_mod.Plant(desc, seed=opts["seed"])
        self.rng = plant_mod.Rng((self.plant.seed * 2654435761 + 12345) & 0xFFFFFFFF)
        self.plant_lock = _thread.allocate_lock()
        # REPL mode: the REPL owns the console and the firmware runs without its link (tuning.start())
        self.link_server = None if opts["repl"] else net.LinkServer(
            *net.parse_hostport(opts["listen"], "--listen"),
            busy_frame=protocol.pack_nack(protocol.HELLO, protocol.NACK_BUSY))
        self.board_cfg = self._load_board_cfg()
        # the world: the plant stepped once per control period, and board time (sim/world.py)
        self.world = world_mod.World(self.plant, self.board_cfg.get("control_hz", 500), lock=self.plant_lock,
                                     clock_path=opts["clock"], link_state=self.link_server,
                                     speed=opts["time_ratio"])
        from viperdrive.hal import sim as hal_sim
        self.link = hal_sim.PacedLink(self.link_server, baud=opts["baud"], rng=self.rng, clock=self.world.ticks_us,
                                      sleep_us=self.world.sleep_us)
        self.world.line = self.link
        self.tuner = None
        self.control = None
        if opts["control"]:
            self.control = net.ControlServer(*net.parse_hostport(opts["control"], "--control"), self.handle)
        # modules present before the firmware's first import survive a reset; the firmware's are re-imported
        self._keep = set(sys.modules)
        self.app = None
        self.hal = None
        self.boots = 0
        self.watchdog_resets = 0
        self.last_reset_cause = protocol.RESET_POWER_ON
        self.reset_at_s = 0.0           # board time of the last reset (stats)
        self.last_wdt_recovery_ms = -1
        self.firmware_errors = 0
        self.last_error = ""
        self.crashed = False
        self.link_stopped = False       # the host sent STOP_LINK: the firmware "returned to the REPL"
        self.link_stops = 0
        self.main_gap_max_us = 0
        self.service_max_us = 0         # the firmware's slowest App.service() pass

    # ---- firmware lifecycle ----

    def _load_board_cfg(self):
        path = self.opts["board"]
        try:
            from viperdrive import boardcfg
        except ImportError:
            boardcfg = None
        try:
            open(path).close()
            exists = True
        except OSError:
            exists = False
        if not exists and self.opts.get("board_given"):
            raise ValueError("board config %s: no such file (give an existing board.json, or leave --board out "
                             "for mcu/boards/sim.json)" % path)
        if boardcfg is not None and exists:
            cfg = boardcfg.load(path)
        else:
            cfg = {"backend": "sim", "name": "virtual", "control_hz": 500, "counts_per_rev": self.plant.cpr,
                   "counter_bits": self.plant.counter_bits, "motor_sign": [1, 1], "encoder_sign": [1, 1],
                   "watchdog_ms": 500, "sim": {}}
        if cfg.get("backend") != "sim":
            raise ValueError("board config %s: backend must be \"sim\" on the virtual board" % path)
        cpr = cfg.get("counts_per_rev")
        if cpr is not None and cpr != self.plant.cpr:
            # a real misconfiguration a user can try on purpose: the board's odometry scale is then wrong
            print("vboard: warning: board config counts_per_rev=%d but the robot's encoder has %d"
                  % (cpr, self.plant.cpr), file=sys.stderr)
        bits = cfg.get("counter_bits")
        if bits in (16, 32):
            # the hardware counter width is the board's (the config picks it), the robot file only defaults it
            self.plant.counter_bits = bits
            self.plant.counter_mask = (1 << bits) - 1
        return cfg

    def _purge_firmware(self):
        for name in list(sys.modules):
            if name not in self._keep and not name.startswith("viperdrive.shared"):
                del sys.modules[name]

    def boot(self, cause):
        """Power-on or watchdog boot: a fresh firmware (re-imported), a fresh sim Board, outputs off."""
        if self.boots:
            self._purge_firmware()
        gc.collect()
        from viperdrive import hal
        from viperdrive.hal import sim as hal_sim
        hal_sim.DEFAULTS.update({"world": self.world, "link": self.link, "reset_cause": cause})
        self.last_reset_cause = cause
        self.reset_at_s = self.world.now_us() / 1e6
        self.world.frozen = False       # freeze_control froze the old firmware's task; a reset starts a new one
        self.crashed = False
        self.link_stopped = False
        self.boots += 1
        board = hal.load(self.board_cfg, world=self.world, link=self.link, reset_cause=cause)
        self.hal = board
        if self.opts["repl"]:
            from viperdrive import tuning
            self.tuner = tuning.start(cfg=self.board_cfg, params_path=self.opts["params"], hal_board=board)
            self.app = self.tuner.app
            # the REPL's namespace is this script's: `t` is the live tuner, also after a watchdog reset
            globals()["t"] = self.tuner
            return
        if self.opts["app"] == "app":
            from viperdrive import app
        else:
            app = __import__(self.opts["app"])      # --app MODULE: a module on sim/'s path
        self.app = app.App(board, self.board_cfg, params_path=self.opts["params"])
        self.app.start()

    def halt_firmware(self):
        """What a reset does to the running firmware: the control timer stops, the outputs go off."""
        board = self.hal
        if self.tuner is not None:
            # REPL mode: the tuner's slow-loop thread is this firmware's main loop; it stops with it
            self.tuner.stop_slow_loop()
            self.tuner = None
        if board is not None:
            board.stop_periodic()
            board.set_energized(False)
        self.app = None
        self.hal = None

    def stop_link(self):
        """The firmware served STOP_LINK: on a board it goes to its REPL (via a watchdog reset into REPL mode).
        Here the firmware halts with its outputs off and nothing answers the link until a power cycle (control
        endpoint {"cmd": "reset"}), which boots link mode again: the virtual board has no REPL on its link."""
        self.link.flush()               # the STOP_LINK_ACK leaves before the firmware goes quiet
        self.halt_firmware()
        # the line still runs (clients come and go, which the world's grant must see) but nothing listens: what
        # arrives is dropped, as a halted firmware's UART would overrun; a power cycle reconnects it
        self.link.cut = True
        self.link_stopped = True
        self.link_stops += 1
        print("vboard: the host sent STOP_LINK: firmware halted, outputs off, the link answers nothing until a "
              "power cycle (control: {\"cmd\": \"reset\"})", file=sys.stderr)

    def watchdog_reset(self):
        t0 = time.ticks_ms()        # the restart's cost in host time (it takes no board time: the world waits)
        self.halt_firmware()
        self.watchdog_resets += 1
        self.boot(protocol.RESET_WATCHDOG)
        self.last_wdt_recovery_ms = time.ticks_diff(time.ticks_ms(), t0)

    def power_cycle(self):
        self.halt_firmware()
        with self.plant_lock:
            self.plant.reset()
        self.link.cut = False
        self.link.corrupt_rate = 0.0
        self.boot(protocol.RESET_POWER_ON)

    # ---- main loop ----

    def service_once(self):
        if self.app is not None and not self.crashed:
            try:
                t0 = time.ticks_us()
                self.app.service()
                d = time.ticks_diff(time.ticks_us(), t0)
                if d > self.service_max_us:
                    self.service_max_us = d
            except Exception as e:  # noqa: BLE001
                # a crashed main loop on a real board drops to the REPL; nobody feeds the watchdog any more,
                # so it resets the board: the same happens here
                self.crashed = True
                self.firmware_errors += 1
                self.last_error = "%s: %s" % (type(e).__name__, e)
                print("vboard: firmware main loop crashed:", file=sys.stderr)
                sys.print_exception(e, sys.stderr)
            if self.app is not None and getattr(self.app, "link_stopped", False):
                self.stop_link()
        if self.control is not None:
            self.control.poll(0)
        if self.hal is not None and self.hal.watchdog_expired():
            self.watchdog_reset()

    def background(self):
        """REPL mode: the world and, in a thread, the control endpoint and the watchdog check; the REPL keeps the
        console."""
        self.world.start_thread()

        def loop():
            while True:
                try:
                    if self.control is not None:
                        self.control.poll(5)
                    else:
                        time.sleep_ms(5)
                    if self.hal is not None and self.hal.watchdog_expired():
                        print("\nvboard: watchdog reset: the firmware restarts, `t` is the new tuner")
                        self.watchdog_reset()
                except Exception as e:  # noqa: BLE001 - keep serving; report once per failure
                    sys.print_exception(e, sys.stderr)
                    time.sleep_ms(100)

        _thread.start_new_thread(loop, ())

    def run(self):
        """The one thread of the virtual board: the world's due periods between the firmware's slow-loop passes, so
        in board time the slow loop never falls behind the control period however the machine schedules us."""
        last = time.ticks_us()
        world = self.world
        while True:
            world.run_due()
            self.service_once()
            now = time.ticks_us()
            gap = time.ticks_diff(now, last)
            last = now
            if gap > self.main_gap_max_us:
                # the slowest main-loop pass (link service, endpoint, idle): what the host's reply latency sees
                self.main_gap_max_us = gap
            world.idle(self.link)

    # ---- control endpoint ----

    def handle(self, req):
        cmd = req.get("cmd")
        if cmd == "truth":
            with self.plant_lock:
                rep = self.plant.truth()
                rep["board_s"] = self.world.now_us() / 1e6     # the board time of this truth (t restarts at a reset)
            rep["ok"] = True
            return rep
        if cmd == "fault":
            return self.fault(req)
        if cmd == "push":
            torque = _number(req, "torque", -50.0, 50.0)
            dur = req.get("duration")
            if dur is not None:
                dur = _number(req, "duration", 0.0, 3600.0)
            wheel = _wheel(req)
            with self.plant_lock:
                self.plant.push(wheel, torque, dur)
            return {"ok": True, "wheel": wheel, "torque": torque}
        if cmd == "reset":
            what = req.get("what", "board")
            if what == "pose":
                with self.plant_lock:
                    self.plant.reset_pose()
            elif what == "board":
                self.power_cycle()
            else:
                raise ValueError("'what' must be \"board\" (power cycle) or \"pose\" (zero the ground truth)")
            return {"ok": True, "what": what}
        if cmd == "stats":
            return self.stats()
        if cmd == "ping":
            return {"ok": True}
        if cmd is None:
            return {"ok": False, "error": "missing \"cmd\" (one of %s)" % ", ".join(COMMANDS)}
        return {"ok": False, "error": "unknown cmd %r (one of %s)" % (cmd, ", ".join(COMMANDS))}

    def fault(self, req):
        kind = req.get("kind")
        p = self.plant
        link = self.link
        if kind == "cut_link":
            link.cut = _bool(req, "on")
            return {"ok": True, "kind": kind, "on": link.cut}
        if kind == "corrupt":
            link.corrupt_rate = float(_number(req, "rate", 0.0, 1.0))
            return {"ok": True, "kind": kind, "rate": link.corrupt_rate}
        if kind == "garbage":
            n = int(_number(req, "n", 0, 100000))
            link.inject(bytes(self.rng.next32() & 0xFF for _ in range(n)))
            return {"ok": True, "kind": kind, "n": n}
        if kind == "inject":
            # exact bytes toward the board, e.g. "aa40": a sync byte and a length, the start of a frame that never
            # ends (what a client that died mid-frame leaves on the line)
            text = req.get("hex")
            if not isinstance(text, str) or len(text) % 2 or len(text) > 2000:
                raise ValueError("'hex' must be an even-length hex string of at most 1000 bytes, got %r" % (text,))
            try:
                data = bytes(int(text[i:i + 2], 16) for i in range(0, len(text), 2))
            except ValueError:
                raise ValueError("'hex' must hold hex digits only, got %r" % (text,)) from None
            link.inject(data)
            return {"ok": True, "kind": kind, "n": len(data)}
        if kind == "stall":
            wheel = _wheel(req)
            on = _bool(req, "on")
            with self.plant_lock:
                p.set_stall(wheel, on)
            return {"ok": True, "kind": kind, "wheel": wheel, "on": on}
        if kind == "lift":
            on = _bool(req, "on")
            with self.plant_lock:
                p.set_lift(on)
            return {"ok": True, "kind": kind, "on": on}
        if kind == "encoder_drop":
            rate = _number(req, "rate", 0.0, 1.0)
            wheel = _wheel(req)
            with self.plant_lock:
                p.set_encoder_drop_wheel(wheel, rate)
            return {"ok": True, "kind": kind, "wheel": wheel, "rate": rate}
        if kind == "battery":
            volts = _number(req, "volts", 0.0, 60.0)
            with self.plant_lock:
                p.set_battery(volts)
            return {"ok": True, "kind": kind, "volts": volts}
        if kind == "estop":
            # the normally-closed stop circuit: open = pressed (or its wire cut), closed = released
            is_open = _bool(req, "open")
            with self.plant_lock:
                p.set_estop(is_open)
                t_us = self.world.ticks_us()
            return {"ok": True, "kind": kind, "open": is_open, "t_us": t_us}
        if kind == "imu":
            # the emulated IMU stops answering (every transfer NACKs: unplugged, browned out) or answers again
            answer = _bool(req, "answer")
            if p.imu is None:
                raise ValueError("the robot file has no imu")
            with self.plant_lock:
                p.set_imu_answering(answer)
            return {"ok": True, "kind": kind, "answer": answer}
        if kind == "freeze_control":
            on = _bool(req, "on")
            if self.hal is None:
                raise ValueError("no firmware control task is running")
            self.hal.frozen = on
            return {"ok": True, "kind": kind, "on": on}
        return {"ok": False, "error": "unknown fault kind %r (one of %s)" % (kind, ", ".join(FAULT_KINDS))}

    def stats(self):
        rep = {"ok": True, "boots": self.boots, "watchdog_resets": self.watchdog_resets,
               "last_reset_cause": protocol.RESET_NAMES.get(self.last_reset_cause, "?"),
               "last_wdt_recovery_ms": self.last_wdt_recovery_ms, "firmware_errors": self.firmware_errors,
               "last_error": self.last_error, "link_stopped": self.link_stopped, "link_stops": self.link_stops,
               "uptime_s": self.world.now_us() / 1e6,
               # board time of the last reset, and from it to the firmware's first frame: none here (the world
               # waits while the firmware is imported), a rig's chip counts its boot
               "reset_at_s": self.reset_at_s, "boot_ms": 0.0,
               "link_clients": self.link_server.clients, "link_connected": self.link_server.connected(),
               "link_busy_rejects": self.link_server.busy_rejects,
               "cut_link": self.link.cut, "corrupt_rate": self.link.corrupt_rate, "sim_time": self.plant.t,
               "free_heap": gc.mem_free(), "main_gap_max_us": self.main_gap_max_us,
               "service_max_us": self.service_max_us}
        rep.update(self.link.stats())
        rep["dropped_bytes"] = rep["dropped_rx"] + rep["dropped_tx"]       # both ways, as the Pico rig counts them
        rep.update(self.world.stats())
        if self.hal is not None:
            rep["watchdog_ms"] = self.hal.wdt_timeout_ms
            rep["watchdog_feeds"] = self.hal.wdt_feeds
        return rep


def main(argv):
    try:
        opts = parse_args(argv)
        opts["time_ratio"] = board_speed(opts["time_ratio"])
    except UsageError as e:
        print("vboard: %s" % e, file=sys.stderr)
        sys.exit(2)
    try:
        vb = VirtualBoard(opts)
        vb.boot(protocol.RESET_POWER_ON)
    except (plant_mod.DescriptionError, net.NetError, ValueError, OSError) as e:
        # some MicroPython exceptions carry no message (a UnicodeError): then at least its type
        print("vboard: error: %s" % (str(e) or type(e).__name__), file=sys.stderr)
        sys.exit(2)
    if vb.control is not None:
        print("control on %s:%d" % (vb.control.host, vb.control.port))
    if vb.link_server is not None:
        print("listening on %s" % vb.link_server.url)
    return vb


if __name__ == "__main__":
    _vb = main(sys.argv[1:])
    if _vb.opts["repl"]:
        _vb.background()
        print("vboard: the firmware runs in the background on the simulated robot; t = tuning.start() was done"
              " for you.\nTry: t.speeds()  t.gains()  t.set('kp', 0.06)  t.enable()  t.step(10.0)  t.save()")
    else:
        try:
            _vb.run()
        except KeyboardInterrupt:
            _vb.halt_firmware()
