# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""Plain CDR (XCDR1, little-endian: what ROS 2 over Cyclone DDS sends) for the messages the bridge publishes every
cycle: nav_msgs/Odometry, tf2_msgs/TFMessage, sensor_msgs/JointState, Imu and BatteryState, and the once-a-second
diagnostic_msgs/DiagnosticArray (a hundred strings: several ms in the serializer), written with struct
in a few calls per message instead of cyclonedds' field-by-field Python serializer (207 us for one Odometry on a
desktop x86, about 10 us here: bench/bench_ros2_cpu.py, docs/ros2.md "CPU").

The bytes are the serializer's own, byte for byte (tests/test_ros2_cdr_fast.py compares them for random messages
of each type, and the bridge's tests read them back through DDS). write(writer, msg) is how the bridge uses it:
for that one write the message's serialize() answers with these bytes and the writer sends them as it would its
own; a type without an encoder, or a writer that asks for XCDR2, gets cyclonedds' serializer as before.

Alignment is relative to the payload (after the 4-byte encapsulation header), at most 8 bytes, as in XCDR1."""
from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from . import msgs

HEADER = b"\x00\x01\x00\x00"          # encapsulation: CDR, little-endian


class _Out:
    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray(HEADER)

    def align(self, n: int) -> None:
        pad = -(len(self.buf) - 4) % n
        if pad:
            self.buf += bytes(pad)

    def i32_u32(self, a: int, b: int) -> None:
        self.align(4)
        self.buf += struct.pack("<iI", a, b)

    def u32(self, v: int) -> None:
        self.align(4)
        self.buf += struct.pack("<I", v)

    def string(self, s: str) -> None:
        b = s.encode()
        self.align(4)
        self.buf += struct.pack("<I", len(b) + 1) + b + b"\0"

    def f64s(self, values) -> None:
        self.align(8)
        self.buf += struct.pack(f"<{len(values)}d", *values)

    def f32s(self, values) -> None:
        self.align(4)
        self.buf += struct.pack(f"<{len(values)}f", *values)

    def seq_f64(self, values) -> None:
        self.u32(len(values))
        if values:
            self.f64s(values)

    def seq_f32(self, values) -> None:
        self.u32(len(values))
        if values:
            self.f32s(values)

    def header(self, h: msgs.Header) -> None:
        self.i32_u32(h.stamp.sec, h.stamp.nanosec)
        self.string(h.frame_id)


def _odometry(m: msgs.Odometry) -> bytes:
    o = _Out()
    o.header(m.header)
    o.string(m.child_frame_id)
    p = m.pose.pose
    q = p.orientation
    t = m.twist.twist
    o.f64s((p.position.x, p.position.y, p.position.z, q.x, q.y, q.z, q.w, *m.pose.covariance,
            t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y, t.angular.z, *m.twist.covariance))
    return bytes(o.buf)


def _tf(m: msgs.TFMessage) -> bytes:
    o = _Out()
    o.u32(len(m.transforms))
    for ts in m.transforms:
        o.header(ts.header)
        o.string(ts.child_frame_id)
        tr, r = ts.transform.translation, ts.transform.rotation
        o.f64s((tr.x, tr.y, tr.z, r.x, r.y, r.z, r.w))
    return bytes(o.buf)


def _joint_state(m: msgs.JointState) -> bytes:
    o = _Out()
    o.header(m.header)
    o.u32(len(m.name))
    for n in m.name:
        o.string(n)
    o.seq_f64(m.position)
    o.seq_f64(m.velocity)
    o.seq_f64(m.effort)
    return bytes(o.buf)


def _imu(m: msgs.Imu) -> bytes:
    o = _Out()
    o.header(m.header)
    q, w, a = m.orientation, m.angular_velocity, m.linear_acceleration
    o.f64s((q.x, q.y, q.z, q.w, *m.orientation_covariance, w.x, w.y, w.z, *m.angular_velocity_covariance,
            a.x, a.y, a.z, *m.linear_acceleration_covariance))
    return bytes(o.buf)


def _battery(m: msgs.BatteryState) -> bytes:
    o = _Out()
    o.header(m.header)
    o.f32s((m.voltage, m.temperature, m.current, m.charge, m.capacity, m.design_capacity, m.percentage))
    o.buf += struct.pack("<BBB?", m.power_supply_status, m.power_supply_health, m.power_supply_technology,
                         m.present)
    o.seq_f32(m.cell_voltage)
    o.seq_f32(m.cell_temperature)
    o.string(m.location)
    o.string(m.serial_number)
    return bytes(o.buf)


def _diagnostics(m: msgs.DiagnosticArray) -> bytes:
    o = _Out()
    o.header(m.header)
    o.u32(len(m.status))
    for st in m.status:
        o.buf.append(st.level)      # uint8: 1-byte aligned
        o.string(st.name)
        o.string(st.message)
        o.string(st.hardware_id)
        o.u32(len(st.values))
        for kv in st.values:
            o.string(kv.key)
            o.string(kv.value)
    return bytes(o.buf)


ENCODERS: dict[type, Callable[[Any], bytes]] = {
    msgs.Odometry: _odometry, msgs.TFMessage: _tf, msgs.JointState: _joint_state, msgs.Imu: _imu,
    msgs.BatteryState: _battery, msgs.DiagnosticArray: _diagnostics,
}


def encode(msg) -> bytes:
    """The message's XCDR1 bytes by its fast encoder (KeyError for a type without one)."""
    return ENCODERS[type(msg)](msg)


def write(writer, msg) -> None:
    """writer.write(msg) with the fast encoder's bytes for a type that has one (cyclonedds' own serializer for
    XCDR2 and every other type). The message is left as it was (no attribute of it changed afterwards: it may be
    handed on, pickled to the filter's process, compared)."""
    enc = ENCODERS.get(type(msg))
    if enc is None:
        writer.write(msg)
        return
    own = type(msg).serialize

    def serialize(use_version_2: bool | None = None, **kw):
        if use_version_2 or kw:
            return own(msg, use_version_2=use_version_2, **kw)
        return enc(msg)
    msg.serialize = serialize       # what DataWriter.write calls, for this one write
    try:
        writer.write(msg)
    finally:
        del msg.serialize


__all__ = ["ENCODERS", "encode", "write", "HEADER"]
