"""A real PostgreSQL server for a test: its own data directory, socket and port, started
as the `postgres` user (the server refuses root) and stopped when the test ends."""

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile

import pytest

from estimator_dist.supervision import local_cluster


def _binaries():
  found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
  return os.path.dirname(found[-1]) if found else None


@contextlib.contextmanager
def running():
  """Yields the SQLAlchemy URL of a new database on a new server."""
  bin_dir = _binaries()
  if os.geteuid() != 0 or bin_dir is None:
    pytest.skip("needs root and Debian's postgresql package (make setup installs it as root)")
  try:
    user = pwd.getpwnam("postgres")
  except KeyError:
    pytest.skip("the postgresql package's postgres user is missing")
  root = tempfile.mkdtemp(prefix="estimator_dist_pg_")
  os.chown(root, user.pw_uid, user.pw_gid)
  data, port = os.path.join(root, "data"), local_cluster.free_ports(1)[0]

  def as_postgres(program, *args):
    subprocess.run(["runuser", "-u", "postgres", "--", os.path.join(bin_dir, program), *args],
                   check=True, capture_output=True, timeout=120, cwd=root)

  try:
    as_postgres("initdb", "-D", data, "-A", "trust", "-U", "sweep", "--no-sync")
    as_postgres("pg_ctl", "-D", data, "-l", os.path.join(root, "server.log"), "-w", "-t", "60",
                "-o", f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off",
                "start")
    as_postgres("createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "sweep", "sweeps")
    yield f"postgresql+psycopg2://sweep@127.0.0.1:{port}/sweeps"
  finally:
    if os.path.exists(os.path.join(data, "postmaster.pid")):
      as_postgres("pg_ctl", "-D", data, "-m", "immediate", "-w", "stop")
    shutil.rmtree(root, ignore_errors=True)
