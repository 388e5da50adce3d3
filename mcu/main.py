# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# Runs after boot.py. Link mode (the default): the control loop starts with the outputs de-energized and the
# board waits for the host's ENABLE. REPL mode instead when a file named `repl_mode` is on the board's
# filesystem or the board config's repl_pin is held at its active level at boot (docs/firmware.md, "Boot").
# app.main() returns after the host sent STOP_LINK (viperdrive flash): REPL mode from the next reset on.
# The firmware is the package lib/viperdrive/ (its modules import each other relatively): a module of yours in
# lib/ or at the root never shadows one of its modules, nor it one of yours.
from viperdrive import app

app.main()
