"""The records of a TFRecord file (an event file), read without TensorFlow.

TensorFlow's documented format: each record is its length (uint64, little-endian), the
masked CRC-32C of the length, the data, the masked CRC-32C of the data (computed by
google-crc32c, in C). A record not yet whole (one being written) or one whose CRC does not
match ends the file for now, as TensorFlow's reader and TensorBoard's end it. TensorBoard's public EventFileLoader would
do the same but imports TensorFlow where it is installed (seconds, and TensorFlow's log
lines), which the launcher and the sweep runner never do.
"""

import struct

import google_crc32c

_LENGTH = struct.Struct("<Q")
_CRC = struct.Struct("<I")
_MASK_DELTA = 0xA282EAD8


def crc32c(data: bytes) -> int:
  """CRC-32C (Castagnoli), in C with the CPU's instruction where it has one."""
  return google_crc32c.value(data)


def masked_crc32c(data: bytes) -> int:
  """The CRC a TFRecord stores: rotated right by 15 bits, plus a constant."""
  crc = crc32c(data)
  return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def records(path):
  """The data of each whole record of the TFRecord file at `path`, in order."""
  with open(path, "rb") as f:
    while True:
      header = f.read(_LENGTH.size + _CRC.size)
      if len(header) < _LENGTH.size + _CRC.size:
        return
      length_bytes = header[:_LENGTH.size]
      if _CRC.unpack(header[_LENGTH.size:])[0] != masked_crc32c(length_bytes):
        return
      length, = _LENGTH.unpack(length_bytes)
      data, footer = f.read(length), f.read(_CRC.size)
      if len(data) < length or len(footer) < _CRC.size:
        return
      if _CRC.unpack(footer)[0] != masked_crc32c(data):
        return
      yield data


def record(data: bytes) -> bytes:
  """`data` framed as one TFRecord record."""
  length = _LENGTH.pack(len(data))
  return (length + _CRC.pack(masked_crc32c(length)) + data +
          _CRC.pack(masked_crc32c(data)))
