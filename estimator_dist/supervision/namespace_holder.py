"""The first process of a local job's namespaces: what `sandbox.open_sandbox` runs.

  unshare [--user --map-root-user] --net --pid --fork --kill-child \\
      python -I -S .../estimator_dist/supervision/namespace_holder.py

It brings the loopback interface up (a new network namespace has it down), prints
"ready" on stdout, and waits until it is killed; as the namespaces' first process, its
end ends every process in them. It runs as root in the namespace, so it may set the
interface's flag. It imports only the standard library.
"""

import fcntl
import signal
import socket
import struct

# From <linux/sockios.h> and <net/if.h>: get and set an interface's flags (struct ifreq:
# its name, then the flags as a short); the flag that brings it up.
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
_IFREQ = "16sH"


def bring_up_loopback():
  """Sets the flag IFF_UP of the interface `lo` of this network namespace."""
  with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
    request = struct.pack(_IFREQ, b"lo", 0)
    flags = struct.unpack(_IFREQ, fcntl.ioctl(s, _SIOCGIFFLAGS, request))[1]
    fcntl.ioctl(s, _SIOCSIFFLAGS, struct.pack(_IFREQ, b"lo", flags | _IFF_UP))


def main():
  """Says "ready" once loopback is up, then waits for the signal that kills it."""
  bring_up_loopback()
  print("ready", flush=True)
  signal.pause()


if __name__ == "__main__":
  main()
