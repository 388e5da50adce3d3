# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# The supervisor: the one place that feeds the hardware watchdog. The checks that must run every control period
# (deadman, stall, tracking error, over-speed) live in the viper step (fixedstep.py), not here: they must not
# depend on the slow loop being alive.
#
# A watchdog fed from a timer interrupt only proves that timers run, not that the firmware does. This supervisor
# feeds it only when every task made progress since the last feed: the control step (its period counter moved)
# and the link task (its pass counter moved). A hung control loop or a hung link task => no feed => the board
# resets and boots disabled with WDT_RESET set.


class Supervisor:
    """Feeds hal's watchdog when both progress marks moved since the last feed."""

    def __init__(self, hal, timeout_ms):
        self.hal = hal
        self.timeout_ms = timeout_ms
        self.started = False
        self.feeds = 0
        self.misses = 0             # checks that found a task without progress (no feed)
        self._ctrl = None
        self._link = None

    def start(self, ctrl_mark, link_mark):
        """Start the hardware watchdog (it cannot be stopped again) from the tasks' current marks."""
        self._ctrl = ctrl_mark
        self._link = link_mark
        self.hal.watchdog_start(self.timeout_ms)
        self.started = True

    def check(self, ctrl_mark, link_mark):
        """One supervisor pass: feed when the control step and the link both progressed. -> fed or not."""
        if not self.started:
            return False
        if ctrl_mark == self._ctrl or link_mark == self._link:
            # some task is stuck (or not yet run since the last feed): do not vouch for it
            self.misses += 1
            return False
        self._ctrl = ctrl_mark
        self._link = link_mark
        self.hal.watchdog_feed()
        self.feeds += 1
        return True
