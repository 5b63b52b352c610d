"""mlport's pytest plugin: streams each test's result to mlport as it finishes.

Shipped inside the mlport binary and loaded with ``-p mlport_pytest`` from a private folder
(nothing is installed). Protocol (docs/protocol.md, "pytest stream", version 1): one JSON
object per line on the file descriptor that was pytest's stdout when the plugin was imported;
pytest's own output is moved to stderr. Messages, in order:

- ``{"v": 1, "type": "hello", "pytest": VERSION}``
- ``{"type": "collect_error", "nodeid": FILE, "message": LINE, "longrepr": TEXT}``
- ``{"type": "start", "nodeid": ID}`` before a test runs (the test in flight when pytest dies)
- ``{"type": "test", "test": {...}, "devices": [...]}`` after each test (and each failed attempt
  that pytest-rerunfailures runs again, outcome ``rerun``), the test object in
  pytest-json-report's shape (nodeid, outcome, setup/call/teardown with duration, outcome,
  crash, longrepr; metadata)
- ``{"type": "end", "exitstatus": N}``

``MLPORT_PYTEST_SKIP`` names a file of node ids (one a line) to deselect: ``mlport pytest
--resume`` passes the tests a run already has.
"""

import json
import os
import sys

import pytest

VERSION = 1

# The protocol keeps pytest's stdout; everything else written there goes to stderr.
_OUT = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8", errors="replace")
os.dup2(2, 1)
_STAGES = {}


def _send(msg):
    _OUT.write(json.dumps(msg, default=str) + "\n")
    _OUT.flush()


def _canonical(platform, index):
    platform = platform.lower()
    if platform == "cpu":
        return "cpu"
    if platform in ("gpu", "cuda", "rocm"):
        return "cuda:%d" % index
    if platform in ("tpu", "xla"):
        return "tpu:%d" % index
    if platform == "mps":
        return "mps"
    return "%s:%d" % (platform, index)


def _of_value(v, seen):
    """Adds the device of a tensor or array ``v`` (torch, jax, tensorflow, numpy) to ``seen``."""
    mod = type(v).__module__ or ""
    try:
        if mod.startswith("torch") and hasattr(v, "device") and hasattr(v.device, "type"):
            d = v.device
            seen.add(_canonical(d.type, d.index or 0))
        elif mod.startswith("jax") and hasattr(v, "devices"):
            for d in v.devices():
                seen.add(_canonical(d.platform, d.id))
        elif mod.startswith("tensorflow") and hasattr(v, "device"):
            name = v.device.lower()
            if "gpu:" in name:
                seen.add("cuda:" + name.rsplit("gpu:", 1)[1])
            elif "tpu:" in name:
                seen.add("tpu:" + name.rsplit("tpu:", 1)[1])
            elif name:
                seen.add("cpu")
        elif mod.startswith("numpy"):
            seen.add("cpu")
    except Exception:
        pass


def _devices(item):
    """The devices this test's tensors were on, as far as visible: the framework's default
    device, tensors among the test's arguments, torch's CUDA memory peak, JAX's live arrays."""
    seen = set()
    for v in (getattr(item, "funcargs", None) or {}).values():
        _of_value(v, seen)
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if hasattr(torch, "get_default_device"):
                d = torch.get_default_device()
                seen.add(_canonical(d.type, d.index or 0))
            if torch.cuda.is_initialized():
                for i in range(torch.cuda.device_count()):
                    if torch.cuda.max_memory_allocated(i) > 0:
                        seen.add("cuda:%d" % i)
                    torch.cuda.reset_peak_memory_stats(i)
        except Exception:
            pass
    jax = sys.modules.get("jax")
    if jax is not None:
        try:
            for a in jax.live_arrays():
                for d in a.devices():
                    seen.add(_canonical(d.platform, d.id))
        except Exception:
            pass
    tf = sys.modules.get("tensorflow")
    if tf is not None:
        try:
            if not tf.config.list_logical_devices("GPU"):
                seen.add("cpu")
        except Exception:
            pass
    if os.environ.get("MLPORT_FRAMEWORK") == "numpy" and "numpy" in sys.modules:
        seen.add("cpu")
    return sorted(seen)


def _stage(config, rep):
    out = {"duration": rep.duration, "outcome": rep.outcome}
    crash = getattr(getattr(rep, "longrepr", None), "reprcrash", None)
    if crash is not None:
        out["crash"] = {"path": str(crash.path), "lineno": crash.lineno, "message": crash.message}
    if rep.longrepr is not None:
        out["longrepr"] = str(rep.longrepr) if not isinstance(rep.longrepr, tuple) else list(rep.longrepr)
    return out


def _category(config, rep):
    res = config.hook.pytest_report_teststatus(report=rep, config=config)
    return res[0] if res else rep.outcome


def _emit(config, reports, devices):
    outcome = "passed"
    for rep in reports:
        cat = _category(config, rep)
        if cat and cat != "passed":
            outcome = cat
            break
    if outcome == "failed" and reports and reports[0].when != "call" and any(
        r.failed and r.when != "call" for r in reports
    ):
        outcome = "error"
    test = {"nodeid": reports[0].nodeid, "outcome": outcome}
    for rep in reports:
        test[rep.when] = _stage(config, rep)
    # pytest-json-report's ``json_metadata`` fixture, then pytest's ``record_property``.
    meta = dict(_METADATA.pop(reports[0].nodeid, None) or {})
    for key, value in getattr(reports[-1], "user_properties", None) or []:
        meta.setdefault(str(key), value)
    if meta:
        test["metadata"] = meta
    _send({"type": "test", "test": test, "devices": devices})


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    _send({"v": VERSION, "type": "hello", "pytest": pytest.__version__})


def pytest_collection_modifyitems(session, config, items):
    path = os.environ.get("MLPORT_PYTEST_SKIP")
    if path:
        with open(path, encoding="utf-8") as f:
            done = {line.rstrip("\n") for line in f if line.strip()}
        keep = [i for i in items if i.nodeid not in done]
        gone = [i for i in items if i.nodeid in done]
        if gone:
            config.hook.pytest_deselected(items=gone)
            items[:] = keep


def pytest_collectreport(report):
    if report.failed:
        crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
        text = str(report.longrepr)
        errors = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
        rest = [line.strip() for line in text.splitlines() if line.strip()]
        if crash is not None:
            message = crash.message
        elif errors:
            message = errors[-1]
        else:
            message = rest[-1] if rest else "collection failed"
        _send({"type": "collect_error", "nodeid": report.nodeid, "message": message, "longrepr": text})


def pytest_runtest_logstart(nodeid, location):
    _STAGES[nodeid] = []
    _send({"type": "start", "nodeid": nodeid})


def pytest_runtest_logreport(report):
    stages = _STAGES.setdefault(report.nodeid, [])
    if report.outcome == "rerun":
        # pytest-rerunfailures: a failed attempt that will run again, reported on its own.
        stages.append(report)
        _emit(_CONFIG[0], stages, [])
        _STAGES[report.nodeid] = []
        _RERAN.add(report.nodeid)
        return
    stages.append(report)


_CONFIG = []
_DEVICES = {}
_METADATA = {}
_RERAN = set()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    # Where pytest-json-report's ``json_metadata`` fixture writes, also without --json-report.
    if not hasattr(item, "_json_report_extra"):
        item._json_report_extra = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    yield
    # Here, before teardown, the test's arguments and arrays are still alive.
    _DEVICES[item.nodeid] = _devices(item)
    meta = getattr(item, "_json_report_extra", {}).get("metadata")
    if meta:
        _METADATA[item.nodeid] = dict(meta)


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session):
    _CONFIG.append(session.config)


def pytest_runtest_logfinish(nodeid, location):
    stages = _STAGES.pop(nodeid, [])
    if nodeid in _RERAN:
        # The teardown of an attempt that runs again: not a result of its own.
        _RERAN.discard(nodeid)
        if all(r.when == "teardown" for r in stages):
            return
    if not stages:
        return
    _emit(_CONFIG[0], stages, _DEVICES.pop(nodeid, []))


def pytest_sessionfinish(session, exitstatus):
    _send({"type": "end", "exitstatus": int(exitstatus)})
