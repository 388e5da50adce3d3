# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# Minimal on purpose: nothing here may fail or wait. main.py decides between link mode and REPL mode.
# CircuitPython runs boot.py before USB starts: the link gets a USB serial port of its own (usb_cdc.data), and the
# console stays the REPL's. MicroPython has no usb_cdc and nothing to do here.
import sys

if sys.implementation.name == "circuitpython":
    try:
        import usb_cdc  # type: ignore[import-not-found]
        usb_cdc.enable(console=True, data=True)
    except Exception as e:      # boot_out.txt shows it; the link then says usb_cdc.data is off
        print("viperdrive boot.py: usb_cdc.enable failed:", e)
