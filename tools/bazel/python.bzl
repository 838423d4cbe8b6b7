"""A Python toolchain made of the project's virtual environment (make setup creates it)."""

def _venv_python_impl(rctx):
    python = rctx.os.environ.get("ESTIMATOR_DIST_PYTHON")
    if not python:
        python = "%s/.venv/bin/python" % rctx.path(Label("//:WORKSPACE")).dirname
    if not rctx.path(python).exists:
        fail("no Python at %s: run `make setup` first, or set ESTIMATOR_DIST_PYTHON" % python)
    rctx.file("BUILD", """
load("@bazel_tools//tools/python:toolchain.bzl", "py_runtime_pair")

py_runtime(
    name = "py3",
    interpreter_path = "{python}",
    python_version = "PY3",
    # Bazel's default, `#!/usr/bin/env python`, may not exist on a fresh machine.
    stub_shebang = "#!/usr/bin/env python3",
)

py_runtime_pair(name = "pair", py3_runtime = ":py3")

toolchain(
    name = "toolchain",
    toolchain = ":pair",
    toolchain_type = "@bazel_tools//tools/python:toolchain_type",
)
""".format(python = python))

venv_python = repository_rule(
    implementation = _venv_python_impl,
    environ = ["ESTIMATOR_DIST_PYTHON"],
    local = True,
)
