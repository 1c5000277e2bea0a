"""The Dask clusters a course names in its nbgrader_config.py, made into executors. `c.Lecture2Grader.clusters`:
a running scheduler, Slurm and the other batch systems through dask-jobqueue, Kubernetes through dask-kubernetes,
or a LocalCluster (docs/cluster.md)."""
from __future__ import annotations

import importlib
import sys
import threading
from pathlib import Path

from ..runtime import FIRST_WORKER_SECONDS, Runtime
from .dask import DaskExecutor

KINDS = {  # `kind` in a course's cluster settings -> the class that makes the cluster
    "slurm": "dask_jobqueue.SLURMCluster", "pbs": "dask_jobqueue.PBSCluster", "sge": "dask_jobqueue.SGECluster",
    "lsf": "dask_jobqueue.LSFCluster", "htcondor": "dask_jobqueue.HTCondorCluster",
    "kubernetes": "dask_kubernetes.operator.KubeCluster", "local": "distributed.LocalCluster",
}
EXTRAS = {"dask_jobqueue": "dask-jobqueue", "dask_kubernetes": "dask-kubernetes (the `kubernetes` extra: "
          "`.venv/bin/python -m pip install -e '.[kubernetes]'`)"}


def course_clusters(course: Path) -> dict[str, dict]:
    """`c.Lecture2Grader.clusters` of the course's nbgrader_config.py: name -> settings."""
    from traitlets.config.loader import PyFileConfigLoader

    path = course / "nbgrader_config.py"
    config = PyFileConfigLoader(path.name, path=str(course)).load_config()
    section = config.get("Lecture2Grader") or {}
    clusters = section.get("clusters") if hasattr(section, "get") else None
    return dict(clusters or {})


def _cluster_class(kind: str, dotted: str | None):
    dotted = dotted or KINDS.get(kind)
    if dotted is None:
        raise SystemExit(f"error: a cluster of kind {kind!r} is not known: kind is one of scheduler, "
                         f"{', '.join(KINDS)} (or give `class`: 'module.ClusterClass')")
    module, _, name = dotted.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError:
        top = module.split(".")[0]
        raise SystemExit(f"error: a {kind} cluster needs {EXTRAS.get(top, top)}, which is not installed in "
                         f"this environment ({sys.executable})") from None


def kubernetes_options(spec: dict) -> dict:
    """KubeCluster's options for a course's `kubernetes` cluster with a `worker_security_context`: the
    DaskCluster resource dask-kubernetes would make from the same options (its make_cluster_spec), with that
    securityContext on the worker container (bubblewrap makes namespaces there; cgroups need more)."""
    from dask_kubernetes.operator import make_cluster_spec

    options = dict(spec)
    context = options.pop("worker_security_context")
    made = {k: options.pop(k) for k in ("image", "n_workers", "resources", "env", "worker_command", "idle_timeout")
            if k in options}
    resource = make_cluster_spec(name=options.get("name") or "lecture2-grader", **made)
    return {**options, "custom_cluster_spec": with_worker_security(resource, context)}


def with_worker_security(resource: dict, context: dict) -> dict:
    """A DaskCluster resource (a dict, as dask-kubernetes makes it) whose worker containers get `context`."""
    for container in resource["spec"]["worker"]["spec"]["containers"]:
        container["securityContext"] = {**container.get("securityContext", {}), **context}
    return resource


def from_config(course: Path, name: str, runtime: Runtime, stop: threading.Event | None = None) -> DaskExecutor:
    """The executor for the cluster `name` of the course's configuration (docs/cluster.md). Its settings:
    `kind` (scheduler, slurm, kubernetes, local, ...; or `class`), `address` for a scheduler, `jobs` (batch
    jobs to submit) or `workers` (workers to scale to),
    `notebook_threads`, `first_worker_timeout` (seconds; DaskExecutor's), and every other key an option of the
    cluster class."""
    clusters = course_clusters(course)
    if name not in clusters:
        known = ", ".join(sorted(clusters)) or "none"
        raise SystemExit(f"error: no cluster named {name!r} in {course / 'nbgrader_config.py'} "
                         f"(c.Lecture2Grader.clusters names: {known}); see docs/cluster.md")
    spec = dict(clusters[name])
    kind = str(spec.pop("kind", "scheduler"))
    ours = {"first_worker_timeout": float(spec.pop("first_worker_timeout", FIRST_WORKER_SECONDS)),
            "notebook_threads": int(spec.pop("notebook_threads", 1)), "stop": stop}
    if kind == "scheduler":
        return DaskExecutor(runtime, str(spec["address"]), name=name, **ours)
    # A fixed size, not dask's adapt(): the executor keeps only two tasks a worker's slot on the scheduler (a
    # balanced class to the end), so adapt() would never see the class waiting and never grow.
    jobs, workers = spec.pop("jobs", None), spec.pop("workers", None)
    cls = _cluster_class(kind, spec.pop("class", None))
    if kind == "kubernetes" and "worker_security_context" in spec:
        spec = kubernetes_options(spec)
    cluster = cls(**spec)
    if jobs is not None:
        cluster.scale(jobs=int(jobs))
    elif workers is not None:
        cluster.scale(int(workers))
    return DaskExecutor(runtime, cluster=cluster, name=f"{name} ({kind})", **ours)
