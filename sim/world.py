# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# The virtual board's world and its time (docs/virtual-board.md, "Board time"), on the MicroPython unix port.
#
# Board time is whole control periods: period k starts at k x period. Each period the world steps the plant by
# exactly one period and then runs the firmware's control step (when one is attached and not frozen), which reads
# the encoders the step produced and sets the duty the next step uses (the zero-order hold of a PWM peripheral).
# Periods are paced on absolute deadlines of the host's clock, so board time follows real time (times `speed`, the
# board's speed: 0.5 runs it at half of real time, a stand-in for a busy machine; 2 twice as fast where the CPU
# keeps up: VIPERDRIVE_SIM_SPEED, docs/virtual-board.md "The board's speed"); when the machine
# does not run the process, board time stops with it: it never jumps and never skips a period (a period more than
# one period late restarts the schedule from now). Between period starts, ticks_us() interpolates with the host's
# clock but never reaches the next period's start, so board time is monotonic and exact at every period.
#
# Everything in the firmware that keeps time reads it here (the sim backend's ticks_us/ticks_ms): the control
# period, the deadman, the watchdog, the link's byte pacing, the sensor schedule. A world is driven by the virtual
# board's main loop (run_due() between the firmware's slow-loop passes, idle() and sleep_us() for its waits: one
# thread, so the slow loop never falls behind the control period in board time), or by its own thread (REPL mode,
# where the REPL owns the main thread).
#
# The clock file (the host's viperdrive.boardtime.clockfile documents the layout) publishes board time every period and
# carries the host's grant back: while a link client that writes grants is connected, no period starts past the
# grant's time, so a host the machine stops does not see a deadman that its pause, not its code, tripped.
import _thread
import struct
import time

MAGIC = b"VDCK"
VERSION = 1
OFF_TIME = 8
OFF_LINK = 24
OFF_GRANT = 32
HOLD_POLL_US = 200          # while the grant holds the world: how often it looks again


class World:
    def __init__(self, plant, hz, lock=None, clock_path=None, link_state=None, speed=1.0):
        self.plant = plant
        self.hz = hz
        self.period_us = 1000000 // hz
        self.speed = speed                  # board time per host time
        self.host_period_us = int(self.period_us / speed + 0.5)    # a period's length on the host's clock
        self.dt = 1.0 / hz
        self.lock = lock or _thread.allocate_lock()
        self.link_state = link_state        # the link server: .generation, .connected()
        self.t_us = 0                       # board time at the start of the current period
        self._anchor = (0, time.ticks_us())   # (board us, host ticks_us) of the current period's start: one object
        self._next = time.ticks_add(time.ticks_us(), self.host_period_us)   # host deadline of the next period
        self.fn = None                      # the firmware's control step (hal start_periodic)
        self.board = None                   # the hal Board whose duty the plant runs on
        self.line = None                    # the serial line (hal.sim.PacedLink): its due bytes leave before the
        #                                     clock file shows the time they were due by
        self.frozen = False                 # freeze_control fault: the world goes on, the firmware's step does not
        self._in_fn = False
        self._thread = False
        self._running = False
        # the clock file
        self._f = None
        self._tbuf = bytearray(16)
        self._lbuf = bytearray(8)
        self._gbuf = bytearray(32)
        self._gen = -1
        self._connected = False
        self._grant_gen = -1
        self._grant_us = 0
        if clock_path:
            self._f = open(clock_path, "r+b")
            hdr = bytearray(8)
            hdr[0:4] = MAGIC
            struct.pack_into("<I", hdr, 4, VERSION)
            self._f.seek(0)
            self._f.write(hdr)
            self._publish_time()
        # statistics (host time: how well the machine kept the schedule; board time has no lateness)
        self.periods = 0                    # periods the firmware's step ran
        self.plant_steps = 0
        self.overruns = 0                   # the schedule restarted: the machine did not run the world for a period
        self.holds = 0                      # times the host's grant held the world
        self.held_us = 0                    # host us the world waited for grants
        self.period_min_us = 0
        self.period_max_us = 0
        self.late_max_us = 0
        self.late_sum_us = 0
        self.step_max_us = 0
        self.plant_max_us = 0
        self._last_start = None

    # ---- board time ----

    def now_us(self):
        t, at = self._anchor
        el = time.ticks_diff(time.ticks_us(), at)
        if self.speed != 1.0:
            el = int(el * self.speed)
        if el < 0:
            el = 0
        elif el >= self.period_us:
            el = self.period_us - 1
        return t + el

    def ticks_us(self):
        return self.now_us()

    def ticks_ms(self):
        return self.now_us() // 1000

    # ---- the firmware's control step ----

    def attach(self, fn, board):
        self.board = board
        self.fn = fn

    def detach(self):
        """The firmware's step runs no more; returns once a step that was running has ended (REPL thread)."""
        self.fn = None
        for _ in range(500):
            if not self._in_fn:
                break
            time.sleep_ms(2)
        self.board = None

    # ---- lockstep ----

    def _publish_time(self):
        f = self._f
        if f is not None:
            struct.pack_into("<QQ", self._tbuf, 0, self.t_us, self.t_us)
            f.seek(OFF_TIME)
            f.write(self._tbuf)

    def _publish_link(self):
        ls = self.link_state
        if ls is None or self._f is None:
            return
        gen = ls.generation
        conn = ls.connected()
        if gen != self._gen or conn != self._connected:
            self._gen = gen
            self._connected = conn
            struct.pack_into("<II", self._lbuf, 0, gen & 0xFFFFFFFF, 1 if conn else 0)
            self._f.seek(OFF_LINK)
            self._f.write(self._lbuf)

    def granted(self, t_us):
        """May a period start at board time t_us? Yes unless the connected client's host granted less."""
        self._publish_link()
        if self._f is None or not self._connected:
            return True
        if self._grant_gen == self._gen and t_us <= self._grant_us:
            return True
        # the cached grant does not cover it: read the host's latest
        self._f.seek(OFF_GRANT)
        self._f.readinto(self._gbuf)
        g1, _, u1, g2, _, u2 = struct.unpack("<IIQIIQ", self._gbuf)
        if g1 == g2 and u1 == u2:
            self._grant_gen = g1
            self._grant_us = u1
        if self._grant_gen != self._gen:
            return True         # this client writes no grant (a serial terminal, a third-party tool): free time
        return t_us <= self._grant_us

    # ---- running ----

    def _period(self):
        start = time.ticks_us()
        late = time.ticks_diff(start, self._next)
        if late > self.late_max_us:
            self.late_max_us = late
        if late > 0:
            self.late_sum_us += late
        if self._last_start is not None:
            p = time.ticks_diff(start, self._last_start)
            if self.period_min_us == 0 or p < self.period_min_us:
                self.period_min_us = p
            if p > self.period_max_us:
                self.period_max_us = p
        self._last_start = start
        board = self.board
        dl = board.duty_l if board is not None else 0
        dr = board.duty_r if board is not None else 0
        # the physics first: the encoders the step reads next reflect the last period's duty
        with self.lock:
            self.plant.step(self.dt, dl, dr)
        self.plant_steps += 1
        t_plant = time.ticks_diff(time.ticks_us(), start)
        if t_plant > self.plant_max_us:
            self.plant_max_us = t_plant
        self.t_us += self.period_us
        # the period starts when the firmware's step can run (a timer IRQ after the physics): board time t_us now
        self._anchor = (self.t_us, time.ticks_us())
        # the bytes first, then the time: when the host reads board time T in the clock file, every byte the board
        # sent by T is in its socket, so a reply is never late only because the host looked between the two
        line = self.line
        if line is not None:
            line.pump()
        self._publish_time()
        fn = self.fn
        if fn is not None and not self.frozen:
            self._in_fn = True
            try:
                fn()
            finally:
                self._in_fn = False
            self.periods += 1
        used = time.ticks_diff(time.ticks_us(), start)
        if used > self.step_max_us:
            self.step_max_us = used

    def run_due(self, until_us=None):
        """Run every period whose host deadline has passed, unless the grant holds the world; with until_us, none
        that starts after that board time (a wait never runs the world past its own end). -> periods run."""
        n = 0
        now = time.ticks_us()
        while time.ticks_diff(now, self._next) >= 0:
            if until_us is not None and self.t_us + self.period_us > until_us:
                return n
            if not self.granted(self.t_us + self.period_us):
                return n
            self._period()
            n += 1
            self._next = time.ticks_add(self._next, self.host_period_us)
            now = time.ticks_us()
            if time.ticks_diff(now, self._next) > self.host_period_us:
                # more than a whole period behind: the machine did not run us (board time waited with it); restart
                # the schedule from now instead of a burst of catch-up periods with no slow loop between them
                self.overruns += 1
                self._next = time.ticks_add(now, self.host_period_us)
        return n

    def _hold(self):
        """The grant holds the world: wait a little, then restart the schedule from now when it lets go."""
        t0 = time.ticks_us()
        time.sleep_us(HOLD_POLL_US)
        self.held_us += time.ticks_diff(time.ticks_us(), t0)
        if self.granted(self.t_us + self.period_us):
            self.holds += 1
            self._next = time.ticks_us()
            return True
        return False

    def wait_us(self):
        """Host us until the next period is due (0: due now or held)."""
        w = time.ticks_diff(self._next, time.ticks_us())
        return w if w > 0 else 0

    def idle(self, link=None, max_us=1000):
        """The slow loop has nothing to do: move the line's bytes that are due, wait until the next period, the next
        byte on the line or input from the host (at most max_us), run what is due."""
        if self._thread:
            self._idle_threaded(link, max_us)
            return
        if link is not None:
            link.pump()
        if not self.granted(self.t_us + self.period_us):
            self._hold()
            return
        wait = self.wait_us()
        if link is not None:
            due = link.next_due_us()
            if due is not None and due < wait:
                wait = due
        if wait > max_us:
            wait = max_us
        if wait > 0:
            t = link.transport if link is not None else None
            if wait >= 1000 and t is not None and hasattr(t, "wait"):
                t.wait(wait // 1000)
            else:
                time.sleep_us(wait)
        self.run_due()
        if link is not None:
            link.pump()

    def _idle_threaded(self, link, max_us):
        if link is not None and hasattr(link, "wait"):
            link.pump()
            link.wait(max_us)
            link.pump()
        else:
            time.sleep_us(max_us)

    def sleep_us(self, us):
        """Let `us` of board time pass (a UART write waiting for room, a flush): the world runs meanwhile."""
        end = self.now_us() + us
        while self.now_us() < end:
            if self._thread:
                time.sleep_us(100)
                continue
            if self.run_due(end) == 0:
                if not self.granted(self.t_us + self.period_us):
                    self._hold()
                    continue
                left = int((end - self.now_us()) / self.speed)     # in host us
                w = self.wait_us()
                time.sleep_us(max(1, min(left, w if w > 0 else 1)))

    def start_thread(self):
        """REPL mode: the world runs in its own thread (the REPL owns the main one)."""
        self._thread = True
        self._running = True

        def loop():
            while self._running:
                w = self.wait_us()
                if w > 0:
                    time.sleep_us(w)
                if self.run_due() == 0 and not self.granted(self.t_us + self.period_us):
                    self._hold()

        _thread.start_new_thread(loop, ())

    def stats(self):
        n = max(1, self.plant_steps)
        return {"hz": self.hz, "speed": self.speed, "periods": self.periods, "plant_steps": self.plant_steps,
                "overruns": self.overruns,
                "period_min_us": self.period_min_us, "period_max_us": self.period_max_us,
                "late_max_us": self.late_max_us, "late_avg_us": self.late_sum_us // n,
                "step_max_us": self.step_max_us, "plant_max_us": self.plant_max_us, "frozen": self.frozen,
                "board_time_s": self.t_us / 1e6, "lockstep_holds": self.holds,
                "lockstep_held_ms": self.held_us // 1000}

    def reset_stats(self):
        self.period_min_us = self.period_max_us = self.late_max_us = self.late_sum_us = 0
        self.step_max_us = self.plant_max_us = self.overruns = 0
