# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# The wheel-speed controller: the slow-path side of the fixed-point step in fixedstep.py.
#
# Controller owns the preallocated arrays the step works on, converts SI parameters (shared/params.py: gains on
# wheel rad/s -> duty) to the step's fixed point, hands commands to the step, and runs one period per tick().
# tick() is what the hal's periodic timer calls: it reads the encoders, runs the viper step, writes the PWM and
# allocates nothing. Everything else here is the slow path (floats and allocation allowed).
#
# On a port without the viper emitter (CircuitPython) importing fixedstep fails; FloatController (the same law
# on floats, control_float.py) is then the controller. controller(hal, cfg) picks.
from array import array

try:
    from . import fixedstep as fx
    from .fixedstep import (
        G_BANK,
        G_BANK_REQ,
        G_CMD_NEW,
        G_ENABLED,
        G_FAULT,
        G_REQ,
        G_SB,
        G_STATUS,
        G_TICKS,
        G_WDT,
        IO_DL,
        IO_DR,
        IO_IN,
        IO_T0,
        IO_T1,
        REQ_CLEAR,
        REQ_DISABLE,
        REQ_ENABLE,
        REQ_ZERO,
        W_POS,
        W_SPN,
        W_VEL,
        WS,
    )
except (ImportError, SyntaxError):  # no viper emitter (CircuitPython): controller() returns the float law
    fx = None  # type: ignore[assignment]

from .shared.params import irregular_score, rest_periods

TWO_PI = 6.283185307179586
SIGN_BIT = -2147483648


def gain_fixed(g, tmax):
    """(m, s, xl) for a gain g >= 0 (output units per input unit of the step): g ~= m / 2**s with
    2**14 <= m <= 2**15 (15-bit precision), s in [0, 45]; xl clamps the input so |term| <= tmax + gain
    (tmax <= 2**30: the step's split product and its sum then fit 32 bits)."""
    if not g > 0.0:
        return 0, 15, fx.X_MAX
    s = 0
    while g * (1 << s) < 16384.0 and s < 45:
        s += 1
    m = int(g * (1 << s) + 0.5)
    if m > 32768:
        m = 32768                   # only gains >= 2**15 output units per input unit get here: capped
    if m == 0 or s - 15 > 30:
        return 0, 15, fx.X_MAX      # below the resolution of the output: the term is zero
    return m, s, min((tmax << s) // m + 1, fx.X_MAX)


def fixed_gains(values, hz, cpr):
    """The step's bank words (list of KB ints) for parameter values (SI, by name) at rate hz, cpr counts/rev."""
    dt = 1.0 / hz
    rpc = TWO_PI / cpr              # wheel rad per count: gains on rad/s become gains on counts/s
    one = float(fx.DUTY_ONE)
    vq = float(1 << fx.VQ)
    iq = float(1 << fx.IQ)
    b = [0] * fx.KB

    def put(idx, g, tmax):
        b[idx], b[idx + 1], b[idx + 2] = gain_fixed(g, tmax)

    put(fx.K_AV, dt / (values["vel_tau"] + dt), fx.X_MAX)
    put(fx.K_P, values["kp"] * rpc * one / vq, fx.TERM_MAX)
    put(fx.K_I, values["ki"] * dt * rpc * one * iq / vq, fx.I_TERM_MAX)
    # Tt shorter than one period would over-correct (a back-calculation gain above 1): it acts as Tt = dt
    put(fx.K_AW, min(1.0, dt / values["windup_tau"]) * iq, fx.I_TERM_MAX)
    put(fx.K_AD, dt / (values["kd_tau"] + dt), fx.X_MAX)
    put(fx.K_D, values["kd"] * hz * rpc * one / vq, fx.TERM_MAX)
    put(fx.K_V, values["kv"] * rpc * one / vq, fx.TERM_MAX)
    put(fx.K_A, values["ka"] * hz * rpc * one / vq, fx.TERM_MAX)
    b[fx.K_KS] = int(values["ks"] * one + 0.5)
    b[fx.K_DB] = int(values["deadband"] * one + 0.5)
    b[fx.K_MAXD] = int(values["max_duty"] * one + 0.5)
    vmax_q = fx.V_MAX_COUNTS << fx.VQ

    def speed_q(rad_s):             # rad/s -> Q8 counts/s, inside the documented range
        return min(int(rad_s / rpc * vq + 0.5), vmax_q)

    b[fx.K_SPMAX] = speed_q(values["max_wheel_speed"])
    b[fx.K_ACC] = min(max(1, int(values["max_accel"] / rpc / hz * vq + 0.5)), vmax_q)
    b[fx.K_DM_N] = max(1, (values["deadman_ms"] * hz + 500) // 1000)
    b[fx.K_DIS_N] = max(1, (values["deadman_disable_ms"] * hz + 500) // 1000)
    b[fx.K_STALL_N] = max(1, (values["stall_ms"] * hz + 500) // 1000)
    b[fx.K_STALL_V] = speed_q(values["stall_speed"])
    b[fx.K_TRACK_N] = max(1, (values["track_err_ms"] * hz + 500) // 1000)
    b[fx.K_TRACK_E] = speed_q(values["track_err_max"])
    b[fx.K_OVER_V] = min(int(1.5 * values["max_wheel_speed"] / rpc * vq + 0.5), fx.X_MAX)
    enc_words(b, values, hz, rpc)
    return b


ENC_MUL_MAX = 16383                 # the encoder check's multipliers stay below 2**14 (|duty| <= 2**16: < 2**30)


def enc_words(b, values, hz, rpc):
    """The encoder plausibility words: K_ENC_N checks (one per wheel every 2 periods; 0: off), kS + deadband and
    enc_margin in Q16, and 1/kV (and 1/kV/enc_ratio) as duty Q16 -> Q8 counts/s multipliers m/2**sh."""
    one = float(fx.DUTY_ONE)
    kvq = values["kv"] * rpc * one / float(1 << fx.VQ)     # kV: Q16 duty per Q8 count/s
    ems = values["enc_ms"]
    b[fx.K_ENC_N] = 0
    if ems == 0 or not kvq > 0.0:
        return                      # off, or no model to judge by
    b[fx.K_ENC_N] = max(1, (ems * hz + 1000) // 2000)
    b[fx.K_ENC_0] = int((values["ks"] + values["deadband"]) * one + 0.5)
    b[fx.K_ENC_M] = int(values["enc_margin"] * one + 0.5)
    inv = 1.0 / kvq
    sh = 0
    while sh < 30 and inv * (1 << (sh + 1)) <= ENC_MUL_MAX:
        sh += 1
    # a kV so small that 1/kV overflows the multiplier: predicted speeds are capped, so the check only gets less
    # sensitive (never trips on what it cannot represent)
    b[fx.K_ENC_SH] = sh
    b[fx.K_ENC_IV] = min(int(inv * (1 << sh) + 0.5), ENC_MUL_MAX)
    b[fx.K_ENC_IR] = min(int(inv / values["enc_ratio"] * (1 << sh) + 0.5), ENC_MUL_MAX)


MOVE_SLOTS = 4
ACCEL_SHARE = 0.8               # moves: the share of max_accel their references use, alone or two overlapping


def move_words(k, values, hz, cpr):
    """The move engine's global k words: lease, position gains, tolerances, stall limits (in Q12 counts)."""
    mpc = TWO_PI * values["wheel_radius"] / cpr         # m of wheel travel per count
    q12 = 4096.0 / mpc                                  # Q12 counts per m of wheel travel
    k[fx.K_LEASE_N] = max(1, (values["move_lease_ms"] * hz + 500) // 1000)
    for im, is_, g in ((fx.K_MKD_M, fx.K_MKD_S, values["move_kp_distance"]),
                       (fx.K_MKH_M, fx.K_MKH_S, values["move_kp_heading"])):
        m, sh = ratio_fixed(g / 16.0, 16383)            # kp [1/s]: Q12 counts -> Q8 counts/s is kp / 16
        k[im] = m
        k[is_] = sh
    half = 0.5 * values["wheel_separation"]
    k[fx.K_MTOL_D] = max(1, int(values["move_tol_distance"] * q12))
    k[fx.K_MTOL_H] = max(1, int(values["move_tol_heading"] * half * q12))
    k[fx.K_MSTALL_E] = max(1, min(int(values["move_stall_tol"] * q12), fx.X_MAX))
    k[fx.K_MSTALL_N] = max(1, (values["move_stall_ms"] * hz + 500) // 1000)
    k[fx.K_MSETTLE_N] = max(1, hz // 50)                # 20 ms within the tolerances
    k[fx.K_MACC] = int(ACCEL_SHARE * values["max_accel"] / TWO_PI * cpr / hz / hz * 65536.0)


def ratio_fixed(r, mmax=32768):
    """(m, s) with r ~= m / 2**s, 0 <= m <= mmax, for 0 <= r (0 -> (0, 15)); s >= 15 when r <= 1."""
    if not r > 0.0:
        return 0, 15
    s = 0
    while r * (1 << (s + 1)) <= mmax and s < 40:
        s += 1
    return int(r * (1 << s) + 0.5), s


def joint_scale(left, right, limit):
    """Both wheel speeds scaled by one factor so the larger is at most limit (the same arc, slower)."""
    peak = max(abs(left), abs(right))
    if peak > limit:
        return left * limit / peak, right * limit / peak
    return left, right


class Controller:
    """Both wheels' speed loops on the viper step. Speeds in counts/s at this interface (the wire's units)."""

    def __init__(self, hal, cfg, values):
        self.hal = hal
        self.hz = cfg.get("control_hz", 500)
        self.cpr = cfg["counts_per_rev"]
        self.st = array("i", [0] * fx.ST_LEN)
        self.k = array("i", [0] * fx.K_LEN)
        self.c = array("i", [0, 0])
        self.e = array("i", [0, 0, 0, 0])     # edge backends: last edge's ticks_us, then the count's (per wheel)
        self.io = array("i", [0] * fx.IO_LEN)
        k = self.k
        k[fx.K_SB] = SIGN_BIT
        self.st[G_SB] = SIGN_BIT
        k[fx.K_HZ] = self.hz
        bits = getattr(hal, "counter_bits", 32)
        if bits == 16:
            k[fx.K_MASK], k[fx.K_HALF] = 0xFFFF, 0x8000
        elif bits == 32:
            k[fx.K_MASK], k[fx.K_HALF] = -1, SIGN_BIT
        else:
            raise ValueError("hal counter_bits must be 16 or 32, not %r" % (bits,))
        ms = cfg.get("motor_sign", [1, 1])
        es = cfg.get("encoder_sign", [1, 1])
        # mirrored flags (1 where the sign is -1): the step tests them without sign-extending a -1
        k[fx.K_MS], k[fx.K_MS + 1] = int(ms[0] < 0), int(ms[1] < 0)
        k[fx.K_ES], k[fx.K_ES + 1] = int(es[0] < 0), int(es[1] < 0)
        self._edge = getattr(hal, "edge_times_us", None)
        k[fx.K_EDGE] = 0                # on where the backend times edges and vel_edges is 1 (configure)
        # past a quarter second without a count the edge-timed speed is zero (< 4 counts/s), and the next edge
        # starts a new interval: no edge yet at boot
        k[fx.K_IDLE_MAX] = max(2, self.hz // 4)
        self.st[fx.W_IDLE] = self.st[WS + fx.W_IDLE] = 0x3FFFFFFF
        k[fx.K_OVR_US] = 1500000 // self.hz
        k[fx.K_REST_N] = rest_periods(self.hz)
        # e-stop: which bit of the inputs word (IO_IN) is the stop circuit, and its value while closed. The period
        # reads the inputs before the step (hal period_fn: SIO GPIO_IN; else hal.read_inputs()), so an open circuit
        # cuts the outputs in the period that sees it
        self._inputs = None
        est = cfg.get("estop")
        if est is not None:
            self._inputs = getattr(hal, "read_inputs", None)
            if self._inputs is None:
                raise ValueError("board config: estop is set but the %s backend cannot read inputs in the control "
                                 "period" % cfg.get("backend", "?"))
            bit = 1 << est["pin"] if isinstance(est["pin"], int) else 1   # a pin name: bit 0 (read_inputs)
            k[fx.K_ESTOP_M] = bit
            k[fx.K_ESTOP_C] = bit if est["closed"] else 0
        self.period_us = 1000000 // self.hz
        # bound methods made once: the period calls them without allocating
        self._read = hal.read_counts
        self._write = hal.write_duty
        self._ticks = hal.ticks_us
        self._set_energized = hal.set_energized
        # what the period checks after the step (hal period_fn's ctl): [telemetry on, bridges energized, the
        # step's enabled word]. Telemetry off and the step still driving: the period makes no call but its own
        self._ctl = array("i", [0, 0, G_ENABLED])
        self.running = False
        self._ring = None
        self._ring_hdr = None
        self.values = {}
        self._configured = False
        hal.set_energized(False)
        hal.write_duty(0, 0)
        self._read(self.c)
        self.st[fx.W_PREV] = self.c[0]
        self.st[WS + fx.W_PREV] = self.c[1]
        self.configure(values)
        # the callable the hal's timer runs every period (tick() runs it once)
        self.run_period = self._make_period()

    # ---- the hot path ----

    def _make_period(self):
        """The callable the hal's timer runs every period, made once: the hal's own period function where it has
        one (hal period_fn: the I/O and the step in one viper call, rp2 on the chip), else _period (the hal's
        read_counts/write_duty around the step). Allocation-free.

        Every Python-level call counts on a microcontroller: on the emulated RP2040 a call is ~10 us, and the
        tick with its eight calls took 137 us of a 1 kHz period (docs/firmware.md, "Timing")."""
        make = getattr(self.hal, "period_fn", None)
        if make is not None and (fx.IO_T0, fx.IO_T1, fx.IO_DL, fx.IO_DR, fx.IO_IN) == (0, 1, 2, 3, 4):
            fn = make(fx.step, self.st, self.k, self.c, self.e, self.io, self._tail, self._ctl)
            if fn is not None:
                return fn
        return self._period

    def _period(self, _t=None):
        """One period through the hal's methods (every backend without period_fn)."""
        io = self.io
        io[IO_T0] = self._ticks()
        if self._inputs is not None:
            io[IO_IN] = self._inputs()
        self._read(self.c)
        if self._edge is not None:
            self._edge(self.e)
        fx.step(self.st, self.k, self.c, self.e, io)
        self._write(io[IO_DL], io[IO_DR])
        ctl = self._ctl
        if ctl[0] or (ctl[1] and self.st[G_ENABLED] == 0):
            self._tail()
        io[IO_T1] = self._ticks()

    def _tail(self):
        """What a period does only when it has to (ctl): cut the bridges in the period the step stopped driving
        (fault, deadman de-energize, disable), and append the telemetry record."""
        ctl = self._ctl
        if ctl[1] and self.st[G_ENABLED] == 0:
            ctl[1] = 0
            self._set_energized(False)
        if ctl[0]:
            fx.log(self.st, self._ring, self._ring_hdr)

    def tick(self):
        """One control period now (what the hal's timer runs, run_period)."""
        self.run_period(None)

    # ---- lifecycle ----

    def start(self):
        self.running = True
        self.hal.start_periodic(self.hz, self.run_period)

    def stop(self):
        self.hal.stop_periodic()
        self.running = False
        self._ctl[1] = 0
        self.hal.set_energized(False)
        self.hal.write_duty(0, 0)

    def _request(self, bit):
        """Ask the step for a state change at a period boundary and wait until it is done. -> served or not.

        Not served within ~100 periods means the control loop is not running (a hung timer): the request is
        withdrawn rather than left to fire whenever the loop comes back, and the supervisor is already
        withholding the watchdog feed."""
        st = self.st
        st[G_REQ] = bit
        if not self.running:
            self._read(self.c)
            fx.requests(st, self.c)
            return True
        for _ in range(100 + 100000 // self.hz):    # idle() is ~1 ms: >= 100 periods and >= 100 ms
            if st[G_REQ] == 0:
                return True
            self.hal.idle()
        st[G_REQ] = 0
        return False

    # ---- commands (slow path) ----

    def configure(self, values):
        """Apply parameter values (dict name -> SI value). Bumpless while running: the step switches to the new
        bank at a period boundary and moves the integrator by the jump of the other terms."""
        st = self.st
        if self.running:
            for _ in range(1000):
                if st[G_BANK] == st[G_BANK_REQ]:
                    break
                self.hal.idle()
        words = fixed_gains(values, self.hz, self.cpr)
        new = 1 - st[G_BANK]
        base = new * fx.KB
        k = self.k
        for i in range(fx.KB):
            k[base + i] = words[i]
        if not self._configured:
            st[G_BANK] = new            # the first configuration: nothing to be bumpless about
            self._configured = True
        st[G_BANK_REQ] = new
        edges = 1 if self._edge is not None and values.get("vel_edges", 1) else 0
        if edges and not k[fx.K_EDGE]:
            # edge timing (back) on: the first count from now on starts a new interval, none from before is trusted
            st[fx.W_IDLE] = st[WS + fx.W_IDLE] = 0x3FFFFFFF
        k[fx.K_EDGE] = edges
        k[fx.K_IRR_N] = irregular_score(values["enc_ms"], self.hz) if edges else 0
        move_words(k, values, self.hz, self.cpr)
        self.values = dict(values)

    def enable(self, on):
        """Energize (True) or not. Enabling zeroes commands, PID state, encoder reference and positions.
        Returns whether the outputs are energized (False when a fault is latched)."""
        if on:
            if self.st[G_FAULT] != 0:
                return False
            if not self._request(REQ_ENABLE):
                return False
            if self.st[G_ENABLED]:
                self._ctl[1] = 1
                self._set_energized(True)
            return self.st[G_ENABLED] == 1
        # cut the bridges first, then let the step drop its state
        self._ctl[1] = 0
        self._set_energized(False)
        self._request(REQ_DISABLE)
        return False

    def zero(self):
        self._request(REQ_ZERO)

    def clear_fault(self):
        """Clear a latched fault and the watchdog flag; returns the fault code that was cleared (0: none, or an
        e-stop whose circuit is still open: that one stays latched)."""
        code = self.st[G_FAULT]
        self._request(REQ_CLEAR)
        return code if self.st[G_FAULT] == 0 else 0

    def latch_fault(self, code):
        """A fault the slow path found (FAULT_BATTERY_LOW): the step latches it at the next period boundary and
        turns the outputs off there."""
        self.st[fx.G_XFAULT] = code

    def set_status_bits(self, bits):
        """Status bits the slow path owns (ST_BATTERY_LOW), ORed into every STATE from the next period on."""
        self.st[fx.G_XSTATUS] = bits

    def estop_open(self):
        """The e-stop input read open at the last period (False without an e-stop input)."""
        return self.st[fx.G_ESTOP] == 1

    def set_velocity(self, left, right):
        """New wheel setpoints in counts/s (from SET_VEL): scaled jointly to max_wheel_speed, staged for the step,
        which takes both at once and restarts the deadman. Ends the moves (cancelled) in the same period."""
        st = self.st
        if st[fx.M_TAIL] != st[fx.M_HEADN]:
            st[fx.M_CANCEL] = 1         # before the command: the engine must not stage over it
        kb = st[G_BANK_REQ] * fx.KB
        lim = self.k[kb + fx.K_SPMAX]
        q = 1 << fx.VQ
        ql, qr = joint_scale(left * q, right * q, lim)
        st[G_CMD_NEW] = 0               # the step must not take a half-written pair
        st[W_SPN] = int(ql)
        st[WS + W_SPN] = int(qr)
        st[G_CMD_NEW] = 1

    # ---- moves (the engine is in fixedstep.step(); mcu/moves.py plans the slot words) ----

    def move_free(self):
        """Queue slots free (0: a MOVE now is refused)."""
        st = self.st
        return MOVE_SLOTS - ((st[fx.M_TAIL] - st[fx.M_HEADN]) & fx.TMASK)

    def move_queue(self, words):
        """Queue one move: words = (id, axis, delta, vmax, acc, cm, cs, follower delta, timeout periods), moves.plan()
        with the id in front. The move before it continues into it at speed when both run the same axis the same
        way (its end speed becomes the lower of the two cruise speeds). Renews the lease. -> False: the queue is
        full."""
        st = self.st
        tail = st[fx.M_TAIL]
        n = (tail - st[fx.M_HEADN]) & fx.TMASK
        if n >= MOVE_SLOTS:
            return False
        mid, ax, delta, vmax, acc, cm, cs, fdelta, tmo = words
        o = fx.M_SLOTS + (tail & 3) * fx.SLS
        st[o + fx.S_ST] = 0
        st[o + fx.S_ID] = mid
        st[o + fx.S_AX] = ax
        st[o + fx.S_DELTA] = delta
        st[o + fx.S_VMAX] = vmax
        st[o + fx.S_ACC] = acc
        st[o + fx.S_VEND] = 0
        st[o + fx.S_CM] = cm
        st[o + fx.S_CS] = cs
        st[o + fx.S_FDELTA] = fdelta
        st[o + fx.S_TMO] = tmo
        st[o + fx.S_AGE] = 0
        if n > 0 and cm == 0:
            p = fx.M_SLOTS + ((tail - 1) & 3) * fx.SLS
            if (st[p + fx.S_ST] in (1, 2) and st[p + fx.S_AX] == ax and st[p + fx.S_CM] == 0
                    and (st[p + fx.S_DELTA] >= 0) == (delta >= 0)):
                ve = min(vmax, st[p + fx.S_VMAX])
                st[p + fx.S_VEND] = ve
                if st[p + fx.S_ST] == 2:
                    st[fx.M_AX + ax * fx.AXS + fx.A_VEND] = ve
        st[o + fx.S_ST] = 1
        st[fx.M_LEASE] = 0
        st[fx.M_TAIL] = (tail + 1) & fx.TMASK     # last: the engine sees a complete slot
        return True

    def move_lease(self):
        """The host is alive: the running moves go on for another move_lease_ms."""
        self.st[fx.M_LEASE] = 0

    def move_cancel(self):
        """End every move (cancelled) and command zero: the acceleration limit brakes the wheels to rest."""
        st = self.st
        if st[fx.M_TAIL] != st[fx.M_HEADN]:
            st[fx.M_CANCEL] = 1
            st[G_CMD_NEW] = 0
            st[W_SPN] = 0
            st[WS + W_SPN] = 0
            st[G_CMD_NEW] = 1

    def move_report(self):
        """(id of the oldest move not ended (0: none), moves not ended, ends so far, ((id, reason), ...) of the
        last four ends, oldest first, the oldest move's progress in per mille of its length)."""
        st = self.st
        head = st[fx.M_HEADN]
        active = (st[fx.M_TAIL] - head) & fx.TMASK
        o = fx.M_SLOTS + (head & 3) * fx.SLS
        mid = st[o + fx.S_ID] if active else 0
        progress = 0
        if active and st[o + fx.S_ST] == 3:
            progress = 1000
        elif active and st[o + fx.S_ST] == 2:
            a = fx.M_AX + st[o + fx.S_AX] * fx.AXS
            delta = st[o + fx.S_DELTA]
            left = st[a + fx.A_TGT] - st[a + fx.A_REF]
            if delta:
                progress = max(0, min(1000, 1000 - left * 1000 // delta))
        ne = st[fx.M_NENDS]
        ends = []
        for i in range(min(ne, 4), 0, -1):
            j = fx.M_ENDS + ((ne - i) & 3) * 2
            ends.append((st[j], st[j + 1]))
        return mid, active, ne, ends, progress

    def heading_rebase(self):
        """The heading sample restarts near zero (no move runs): the next queue takes its heading from there."""
        self.st[fx.M_HVALID] = 0

    def heading_sample(self, hg, he):
        """The board's heading (Q12 H counts, unwrapped) and the encoders' H at the same positions, for moves."""
        st = self.st
        st[fx.M_HNEW] = 0
        st[fx.M_HG] = hg
        st[fx.M_HE] = he
        st[fx.M_HNEW] = 1

    def set_watchdog_reset(self, code):
        """After a watchdog reset: latch FAULT_WATCHDOG and show WDT_RESET until CLEAR_FAULT."""
        self.st[G_WDT] = 1
        self.st[G_FAULT] = code
        self.st[G_STATUS] = 0x04 | 0x10

    def attach_ring(self, buf, hdr, ring=None):
        """Telemetry: the step appends records to a telemetry.Ring's buf/hdr (set_telemetry_div turns it on)."""
        self._ctl[0] = 0
        self.st[fx.G_TLM_DIV] = 0
        self._ring_hdr = hdr
        self._ring = buf

    def set_telemetry_div(self, div):
        """One record every div periods; 0: off."""
        self.st[fx.G_TLM_CNT] = 0
        self.st[fx.G_TLM_DIV] = div
        self._ctl[0] = 1 if div > 0 and self._ring is not None else 0

    # ---- readings (slow path) ----

    def fault(self):
        return self.st[G_FAULT]

    def ticks(self):
        return self.st[G_TICKS]

    def status(self):
        return self.st[G_STATUS]

    def enabled(self):
        return self.st[G_ENABLED] == 1

    def positions(self):
        return self.st[W_POS], self.st[WS + W_POS]

    def positions_into(self, buf):
        """Both positions into buf (array('i', 2)) without allocating (the sensor task's still detection)."""
        st = self.st
        buf[0] = st[W_POS]
        buf[1] = st[WS + W_POS]

    def speeds_into(self, buf):
        """Both velocity estimates, then both setpoints, Q8 counts/s, into buf (array('i', 4)) without allocating
        (the sensor task's gyro witness)."""
        st = self.st
        buf[0] = st[W_VEL]
        buf[1] = st[WS + W_VEL]
        buf[2] = st[fx.W_SP]
        buf[3] = st[WS + fx.W_SP]

    def velocities(self):
        """Board velocity estimates, counts/s (rounded)."""
        r = 1 << (fx.VQ - 1)
        return (self.st[W_VEL] + r) >> fx.VQ, (self.st[WS + W_VEL] + r) >> fx.VQ

    def state(self):
        """(p_left, p_right, v_left, v_right, status) as in STATE."""
        vl, vr = self.velocities()
        return self.st[W_POS], self.st[WS + W_POS], vl, vr, self.st[G_STATUS]

    def wheel(self, w):
        """One wheel's internals in SI-free units: setpoint and speed counts/s, output and integrator duty."""
        b = w * WS
        st = self.st
        return {"setpoint": st[b + fx.W_SP] / (1 << fx.VQ), "speed": st[b + W_VEL] / (1 << fx.VQ),
                "output": st[b + fx.W_OUT] / fx.DUTY_ONE,
                "integrator": st[b + fx.W_I] / (fx.DUTY_ONE << fx.IQ)}

    def stats(self):
        st = self.st
        return {"period_min_us": st[fx.G_PER_MIN], "period_max_us": st[fx.G_PER_MAX],
                "exec_max_us": st[fx.G_EXEC_MAX], "exec_avg_us": (st[fx.G_EXEC_AVG] + 128) >> 8,
                "overruns": st[fx.G_OVERRUNS], "deadman_trips": st[fx.G_TRIPS], "fault_code": st[G_FAULT],
                "periods": st[G_TICKS]}

    def reset_stats(self):
        st = self.st
        st[fx.G_NSTAT] = 0
        st[fx.G_OVERRUNS] = 0


def controller(hal, cfg, values):
    """The viper Controller, or FloatController (the same law on floats) where the port has no viper."""
    if fx is None:
        from . import control_float
        return control_float.FloatController(hal, cfg, values)
    return Controller(hal, cfg, values)
