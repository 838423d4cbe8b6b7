"""`estimator-dist sweep --dashboard`: optuna-dashboard over the sweep's study, while the
sweep runs and after it.

optuna-dashboard (the `sweep` extra installs it) serves the study's storage from a thread
of the sweep, on 127.0.0.1 only, at a free port or --dashboard_port; the sweep prints
its address as soon as the study exists. Once the sweep has ended, complete or failed
(its error said first), the program goes on serving until Ctrl-C or SIGTERM; a sweep
stopped by Ctrl-C closes it. Its API lists the study at
/api/studies and its trials at /api/studies/<id>.
"""

import signal
import socketserver
import sys
import threading
from wsgiref import simple_server

from estimator_dist import command_line
from estimator_dist.experiments import storage as storage_lib

HOST = "127.0.0.1"


class _Quiet(simple_server.WSGIRequestHandler):
  timeout = 30  # An idle connection (a browser's preconnect) is dropped, never waited on.

  def log_message(self, *args):  # One line per request would bury the sweep's own.
    pass


class _Server(socketserver.ThreadingMixIn, simple_server.WSGIServer):
  daemon_threads = True  # A request being served never holds the program.


class Dashboard:
  """optuna-dashboard over `storage` (an Optuna storage), served from a thread."""

  def __init__(self, storage, *, port=0):
    from estimator_dist import errors  # pylint: disable=g-import-not-at-top
    errors.check_installed("optuna_dashboard", "--dashboard")
    import optuna_dashboard  # pylint: disable=g-import-not-at-top
    try:
      self._server = simple_server.make_server(HOST, port, optuna_dashboard.wsgi(storage),
                                               server_class=_Server, handler_class=_Quiet)
    except OSError as e:
      raise errors.ConfigError(f"--dashboard_port={port}: {e.strerror}; give another port, "
                               f"or 0 for a free one.") from None
    self.url = f"http://{HOST}:{self._server.server_port}"
    threading.Thread(target=self._server.serve_forever, name="estimator_dist_dashboard",
                     daemon=True).start()

  def serve_until_stopped(self, out):
    """Serves until Ctrl-C or SIGTERM, then stops."""
    command_line.write(out, f"the dashboard at {self.url} serves until Ctrl-C",
                       command="sweep")
    stopped = threading.Event()
    previous = {s: signal.signal(s, lambda *_: stopped.set())
                for s in (signal.SIGINT, signal.SIGTERM)}  # Spark's SIGINT handler too.
    try:
      while not stopped.wait(0.5):
        pass
    finally:
      for s, handler in previous.items():
        signal.signal(s, handler)
      self.close()

  def close(self):
    self._server.shutdown()
    self._server.server_close()


def start(storage_url, *, port, out=sys.stdout):
  """The Dashboard of the study in `storage_url` (SweepOptions.storage_url), its address
  printed."""
  dashboard = Dashboard(storage_lib.open_storage(storage_url), port=port)
  command_line.write(out, f"dashboard at {dashboard.url} (optuna-dashboard)",
                     command="sweep")
  return dashboard
