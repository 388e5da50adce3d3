# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""ROS 2 type hashes (REP-2011, `RIHS01_<sha256>`), as Iron and later put them in endpoint USER_DATA.

rmw_cyclonedds_cpp (Iron+) writes `typehash=RIHS01_<64 hex>;` into the USER_DATA QoS of every reader and writer;
`ros2 topic info -v` shows it. The hash is SHA-256 over a JSON rendering of the type description: the type's
fields (name, field type id, array capacity, string bound, nested type name; no default values, no constants)
and, sorted by name, the descriptions of every type it refers to, directly or not.
"""
import dataclasses
import hashlib
import json
import typing

from cyclonedds.idl import types as idl

from . import msgs

# type_description_interfaces/msg/FieldType
FIELD_NESTED = 1
PRIMITIVE_IDS = {"int8": 2, "uint8": 3, "int16": 4, "uint16": 5, "int32": 6, "uint32": 7, "int64": 8, "uint64": 9,
                 "float32": 10, "float64": 11, "char": 13, "bool": 15, "byte": 16, "string": 17}
OFFSET_ARRAY = 48
OFFSET_BOUNDED_SEQUENCE = 96
OFFSET_UNBOUNDED_SEQUENCE = 144

# .msg `byte` fields: the IDL (octet) cannot tell them from uint8, the type description can
BYTE_FIELDS = {("diagnostic_msgs/msg/DiagnosticStatus", "level")}


def field_type(base: str | None, nested: str = "", kind: str = "single", capacity: int = 0) -> dict:
    """A FieldType: base primitive name (None for a nested type), kind single/array/sequence."""
    type_id = FIELD_NESTED if base is None else PRIMITIVE_IDS[base]
    type_id += {"single": 0, "array": OFFSET_ARRAY, "sequence": OFFSET_UNBOUNDED_SEQUENCE,
                "bounded_sequence": OFFSET_BOUNDED_SEQUENCE}[kind]
    return {"type_id": type_id, "capacity": capacity, "string_capacity": 0, "nested_type_name": nested}


def type_hash(ros_type: str, describe) -> str:
    """RIHS01 hash of ros_type; describe(ros_type) -> [(field name, FieldType dict)] for it and every nested type."""
    referenced: dict[str, None] = {}

    def collect(name):
        for _, ftype in describe(name):
            nested = ftype["nested_type_name"]
            if nested and nested not in referenced:
                referenced[nested] = None
                collect(nested)
    collect(ros_type)

    def description(name):
        fields = [{"name": n, "type": t} for n, t in describe(name)]
        return {"type_name": name, "fields": fields}
    doc = {"type_description": description(ros_type),
           "referenced_type_descriptions": [description(n) for n in sorted(referenced)]}
    text = json.dumps(doc, ensure_ascii=True, allow_nan=False, indent=None, separators=(", ", ": "),
                      sort_keys=False)
    return "RIHS01_" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _idl_field(ros_type: str, name: str, annotation) -> dict:
    if (ros_type, name) in BYTE_FIELDS:
        return field_type("byte")
    if annotation is str:
        return field_type("string")
    if annotation is bool:
        return field_type("bool")
    if isinstance(annotation, type) and issubclass(annotation, msgs.IdlStruct):
        return field_type(None, msgs.ros_type_name(annotation))
    holder = typing.get_args(annotation)[1] if typing.get_origin(annotation) is typing.Annotated else None
    if isinstance(holder, idl.array):
        inner = _idl_field(ros_type, name, holder.subtype)
        return dict(inner, type_id=inner["type_id"] + OFFSET_ARRAY, capacity=holder.length)
    if isinstance(holder, idl.sequence):
        inner = _idl_field(ros_type, name, holder.subtype)
        if holder.max_length:
            return dict(inner, type_id=inner["type_id"] + OFFSET_BOUNDED_SEQUENCE, capacity=holder.max_length)
        return dict(inner, type_id=inner["type_id"] + OFFSET_UNBOUNDED_SEQUENCE)
    for base in ("float64", "float32", "int32", "uint32", "uint8"):
        if annotation == getattr(idl, base):
            return field_type(base)
    raise ValueError(f"{ros_type}.{name}: no type-description mapping for {annotation!r}")


def describe_msgs(ros_type: str) -> list:
    """[(field, FieldType)] of one of the bridge's message types (viperdrive.ros2.msgs), from its IDL struct."""
    cls = msgs.TYPES_BY_ROS_NAME[ros_type]
    hints = typing.get_type_hints(cls, include_extras=True)
    return [(f.name, _idl_field(ros_type, f.name, hints[f.name])) for f in dataclasses.fields(cls)]


_cache: dict = {}


def hash_of(cls) -> str:
    """RIHS01 hash of a message class of viperdrive.ros2.msgs (cached)."""
    name = msgs.ros_type_name(cls)
    if name not in _cache:
        _cache[name] = type_hash(name, describe_msgs)
    return _cache[name]


def user_data(cls) -> bytes:
    """The endpoint USER_DATA rmw_cyclonedds_cpp (Iron+) sets: b'typehash=RIHS01_...;'."""
    return f"typehash={hash_of(cls)};".encode("ascii")
