# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""One unit per name (docs/host.md, "One unit per name"): a quantity a user types or reads carries its unit in its name.

- The CLI: an option name means one unit in every command that has it (`--rate` is rad/s wherever it appears;
  telemetry per second is `--hz`), read from each option's parser (cli.options.Number.unit).
- The public Python API: every public function's and method's parameters and every public dataclass's fields in
  host/viperdrive whose name says a quantity (speed, rate, accel, timeout, distance, angle, ...) end in a unit
  (`_m`, `_rad`, `_m_s`, `_rad_s`, `_m_s2`, `_s`, `_hz`, ...), or are ROS's own names (the files users write, the
  messages) or switches, listed below. Every name the 0.1.0 freeze renamed is in CHANGELOG.md.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import inspect
import pkgutil
import re

import pytest

import viperdrive
from viperdrive.cli import build_parser
from viperdrive.cli.options import Number

pytestmark = pytest.mark.unit

QUANTITY = re.compile(r"(^|_)(speed|rate|accel|acceleration|timeout|distance|angle|radius|period|delay|duration|"
                      r"velocity|heading|length|separation|deadline|interval|frequency|stamp|time)$")
UNIT = re.compile(r"_(m|rad|deg|m_s|rad_s|m_s2|rad_s2|s|ms|us|ns|hz|v|counts|mm|per_s)$")
UNIT_NAMES = {"seconds"}        # the name is the unit
NOT_QUANTITIES = {"wrap_angle", "use_sim_time"}    # switches (wrap the angle; ROS's sim time), not quantities

# Names kept as the files users write have them: robot-file keys (ros2_control's diff_drive_controller names) and
# robot_localization's ekf.yaml keys, and the fields of ROS messages. Their units are ROS's (REP-103), in the docs.
ROS_NAMES = {"wheel_separation", "wheel_radius", "left_radius", "right_radius", "max_rim_speed",
             "max_rim_acceleration", "cmd_vel_timeout", "update_rate", "publish_rate", "sensor_rate", "max_velocity",
             "max_acceleration", "frequency", "sensor_timeout", "history_length", "gravitational_acceleration",
             "gyro_variance_rate", "stamp", "velocity", "angular_velocity", "linear_acceleration"}
ROS_MESSAGE_MODULES = {"viperdrive.ros2.msgs"}


def unit_less(name: str) -> bool:
    """A name that says a quantity and not its unit."""
    return (bool(QUANTITY.search(name)) and not UNIT.search(name) and name not in UNIT_NAMES
            and name not in ROS_NAMES and name not in NOT_QUANTITIES)


def public_names(module) -> list[str]:
    """'module: Where(name)' for every unit-less quantity name in the module's public functions, public methods
    (and __init__) of its public classes, and its public dataclasses' fields."""
    found = []
    for name, obj in vars(module).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
            continue
        items: list[tuple[str, str]] = []
        if inspect.isclass(obj):
            if dataclasses.is_dataclass(obj):
                items += [(f"{name}.{f.name}", f.name) for f in dataclasses.fields(obj)]
            for mname, member in vars(obj).items():
                if (not mname.startswith("_") or mname == "__init__") and inspect.isfunction(member):
                    items += [(f"{name}.{mname}({p})", p) for p in inspect.signature(member).parameters]
        elif inspect.isfunction(obj):
            items += [(f"{name}({p})", p) for p in inspect.signature(obj).parameters]
        found += [f"{module.__name__}: {where}" for where, p in items if unit_less(p)]
    return sorted(set(found))


def host_modules():
    for info in pkgutil.walk_packages(viperdrive.__path__, "viperdrive."):
        parts = info.name.split(".")[1:]
        if any(p.startswith("_") for p in parts) or parts[0] in ("cli", "shared") or info.name in ROS_MESSAGE_MODULES:
            continue        # the CLI's options are checked below; shared/ is the wire (counts, the board's names)
        yield importlib.import_module(info.name)


def test_public_quantity_names_carry_their_unit():
    found = {n for m in host_modules() for n in public_names(m)}
    assert not found, "quantity names without their unit (give them one: distance_m, rate_rad_s, timeout_s, ...):\n" \
        + "\n".join(sorted(found))


def test_the_unit_check_flags_what_it_forbids_and_passes_what_it_allows():
    for bad in ("speed", "accel", "timeout", "rate", "turn_rate", "distance", "settling_time", "radius"):
        assert unit_less(bad), bad
    for good in ("speed_m_s", "accel_m_s2", "accel_rad_s2", "timeout_s", "rate_rad_s", "distance_m", "hz",
                 "settle_ms", "seconds", "wheel_radius", "angle_rad", "kind", "a"):
        assert not unit_less(good), good

    class Demo:
        def move(self, distance_m: float, speed: float, timeout_s: float) -> None: ...

    import types
    mod = types.ModuleType("viperdrive.demo_units")
    Demo.__module__ = mod.__name__
    mod.Demo = Demo
    assert public_names(mod) == ["viperdrive.demo_units: Demo.move(speed)"]


def cli_options(parser: argparse.ArgumentParser, path: str = "viperdrive"):
    """(command, option string, Number or None) for every option of every command, subcommands included."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from cli_options(sub, f"{path} {name}")
        else:
            for opt in action.option_strings:
                yield path, opt, action.type if isinstance(action.type, Number) else None


def test_every_cli_option_means_one_unit_in_every_command():
    units: dict[str, dict[str, list[str]]] = {}
    for command, opt, number in cli_options(build_parser()):
        if number is not None and number.unit:
            units.setdefault(opt, {}).setdefault(number.unit, []).append(command)
    mixed = {opt: by_unit for opt, by_unit in units.items() if len(by_unit) > 1}
    assert not mixed, "an option name with more than one unit: " + "; ".join(
        f"{opt}: " + ", ".join(f"{u} in {', '.join(cmds)}" for u, cmds in by_unit.items())
        for opt, by_unit in mixed.items())
    # the renames this rule asked for, and that they are what the CLI has now
    assert set(units["--rate"]) == {"rad/s"} and set(units["--hz"]) == {"Hz"}
    assert set(units["--accel"]) == {"m/s^2"} and set(units["--angular-accel"]) == {"rad/s^2"}
    assert set(units["--max-wheel-speed"]) == {"rad/s"} and set(units["--max-time-ratio"]) == {"chip s per wall s"}
