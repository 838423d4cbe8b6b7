"""Fixes Horovod 0.28.1's source so that Gloo uses HOROVOD_GLOO_IFACE across hosts.

Horovod 0.28.1 makes the Gloo context of every process set (the global one too, which
carries every all-reduce) on a device without an interface: Gloo then takes the address
the host's name resolves to, not the interface horovodrun's --network-interface names.
Where the name resolves to a loopback address (127.0.1.1 in many images), ranks on
other hosts are refused; where it resolves to another network, the all-reduce runs
there. The fix gives the process set's device the global context's interface.

Usage: python fix_horovod_gloo_iface.py HOROVOD_SOURCE_DIR
"""

import os
import sys

_FILE = os.path.join("horovod", "common", "gloo", "gloo_context.cc")
_BEFORE = """  attr device_attr;
  device_attr.iface = gloo_iface_;
  device_attr.ai_family = AF_UNSPEC;
  auto dev = CreateDevice(device_attr);

  global_ctx = global_context.ctx;
"""
_AFTER = """  gloo_iface_ = global_context.gloo_iface_;
  attr device_attr;
  device_attr.iface = gloo_iface_;
  device_attr.ai_family = AF_UNSPEC;
  auto dev = CreateDevice(device_attr);

  global_ctx = global_context.ctx;
"""


def main(source_dir):
  path = os.path.join(source_dir, _FILE)
  with open(path) as f:
    text = f.read()
  if _AFTER in text:
    return
  if text.count(_BEFORE) != 1:
    sys.exit(f"{path} is not Horovod 0.28.1's: the lines to fix are not there once")
  with open(path, "w") as f:
    f.write(text.replace(_BEFORE, _AFTER))


if __name__ == "__main__":
  main(sys.argv[1])
