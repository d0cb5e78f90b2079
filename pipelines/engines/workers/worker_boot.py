"""A Python SDK worker's boot, as Beam's container runs it on Flink, Spark and Dataflow
(``sdks/python/container/boot.go`` in Beam): for one worker a portable runner starts, ask the
provision service for the job's options and staged files, fetch them from the artifact service,
``pip install`` the staged packages (the ``--setup_file`` sdist, ``--extra_package`` wheels) into
this worker's own folder, and start the SDK harness with that folder first on its path (in a
fresh interpreter; where nothing was staged, as on the managed engines, in this process:
``run_harness_here``).

Beam's external worker pool (``apache_beam.runners.worker.worker_pool_main``) calls a boot
program with the container's flags when given ``--container_executable``; ``python -m
c4forge.pipelines.engines.workers.worker_pool`` does that with this module. The pipeline code a worker runs is then the
staged copy, not the checkout the job was submitted from: pickled functions, staging and worker
start-up are exercised as on a cluster (tests/test_portable.py).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from typing import Optional

from c4forge.pipelines.engines.workers import sdk_harness

INSTALLABLE = (".tar.gz", ".whl", ".zip")
ROOT_ENV = "C4FORGE_WORKER_ROOT"  # where workers make their folders (default: the temp folder)
PIN_ENV = "C4FORGE_PIN_WORKERS"  # a folder where workers claim a core each (unset: no pinning)


def pin_to_free_core(claims: str) -> Optional[int]:
    """Bind this process (and what it execs) to the first core of its affinity set that no
    other worker of the build claimed (a file ``core-N`` made with O_EXCL in ``claims``); the
    core, or None when every core is taken.

    Why: a managed engine on one machine runs one SDK worker per core beside the engine's own
    JVM, so there are more busy threads than cores, and the scheduler moves the workers between
    cores to balance them, each move a cold cache for what they were running. Measured with
    fastText's predict (two processes on 2 cores beside a third busy one): 18.3 CPU s alone,
    22.2-23.9 unpinned, 20.0-20.2 each bound to a core of its own."""
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    os.makedirs(claims, exist_ok=True)
    for core in cores:
        try:
            os.close(os.open(os.path.join(claims, f"core-{core}"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            continue
        os.sched_setaffinity(0, {core})
        return core
    return None


def _stub(module, name: str, endpoint: str, worker_id: str):
    import grpc  # lazy: gRPC, only in a booting worker: the warm process workers fork from imports this module and must hold no gRPC state (worker_fork.py)

    channel = grpc.insecure_channel(endpoint)
    return getattr(module, name)(channel), [("worker_id", worker_id)]


def provision_info(endpoint: str, worker_id: str):
    from apache_beam.portability.api import (  # lazy: Beam's gRPC stubs, only in a booting worker (see _stub)
        beam_provision_api_pb2,
        beam_provision_api_pb2_grpc,
    )

    stub, metadata = _stub(beam_provision_api_pb2_grpc, "ProvisionServiceStub", endpoint, worker_id)
    return stub.GetProvisionInfo(beam_provision_api_pb2.GetProvisionInfoRequest(),
                                 metadata=metadata).info


def fetch_artifacts(endpoint: str, worker_id: str, dependencies, folder: str) -> list[str]:
    """Write every staged file under its staged name; returns the paths (Beam's order)."""
    from apache_beam.portability import (
        common_urns,  # lazy: Beam's gRPC stubs, only in a booting worker (see _stub)
    )
    from apache_beam.portability.api import (  # lazy: Beam's gRPC stubs, only in a booting worker (see _stub)
        beam_artifact_api_pb2,
        beam_artifact_api_pb2_grpc,
        beam_runner_api_pb2,
    )

    stub, metadata = _stub(beam_artifact_api_pb2_grpc, "ArtifactRetrievalServiceStub", endpoint,
                           worker_id)
    staging_role = common_urns.artifact_roles.STAGING_TO.urn
    paths = []
    for dependency in dependencies:
        name = f"artifact-{len(paths)}"
        if dependency.role_urn == staging_role:
            payload = beam_runner_api_pb2.ArtifactStagingToRolePayload()
            payload.ParseFromString(dependency.role_payload)
            name = payload.staged_name
        path = os.path.join(folder, os.path.basename(name))
        request = beam_artifact_api_pb2.GetArtifactRequest(artifact=dependency)
        with open(path, "wb") as handle:
            for chunk in stub.GetArtifact(request, metadata=metadata):
                handle.write(chunk.data)
        paths.append(path)
    return paths


def install(paths: list[str], target: str) -> list[str]:
    """pip-install the staged packages (dependencies come from the worker image, as in Beam's
    container: ``--no-deps``; no build isolation: a cluster worker has no index to build from)."""
    packages = [p for p in paths if p.endswith(INSTALLABLE)]
    if packages:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                        "--no-build-isolation", "--disable-pip-version-check", "--target", target,
                        *packages], check=True, stdout=sys.stderr)
    return packages


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag in ("id", "logging_endpoint", "artifact_endpoint", "provision_endpoint",
                 "control_endpoint", "semi_persist_dir"):
        parser.add_argument(f"--{flag}", default="")
    args, _ = parser.parse_known_args(argv)
    from apache_beam.portability.api import (
        endpoints_pb2,  # lazy: Beam's gRPC stubs, only in a booting worker (see _stub)
    )
    from google.protobuf import json_format  # lazy: Beam's gRPC stubs, only in a booting worker (see _stub)

    info = provision_info(args.provision_endpoint, args.id)
    work = args.semi_persist_dir or tempfile.mkdtemp(prefix=f"c4forge-worker-{args.id}-",
                                                     dir=os.environ.get(ROOT_ENV) or None)
    staged = os.path.join(work, "staged")
    site = os.path.join(work, "site")
    os.makedirs(staged, exist_ok=True)
    artifact_endpoint = args.artifact_endpoint or info.artifact_endpoint.url
    paths = fetch_artifacts(artifact_endpoint, args.id, info.dependencies, staged)
    installed = install(paths, site)

    def descriptor(url: str) -> str:
        return str(endpoints_pb2.ApiServiceDescriptor(url=url))

    env = dict(os.environ)
    env.update({
        "WORKER_ID": args.id,
        "PIPELINE_OPTIONS": json_format.MessageToJson(info.pipeline_options),
        "SEMI_PERSISTENT_DIRECTORY": work,
        "LOGGING_API_SERVICE_DESCRIPTOR": descriptor(args.logging_endpoint
                                                     or info.logging_endpoint.url),
        "CONTROL_API_SERVICE_DESCRIPTOR": descriptor(args.control_endpoint
                                                     or info.control_endpoint.url),
        "RUNNER_CAPABILITIES": " ".join(info.runner_capabilities),
        # the staged packages shadow anything installed in the worker's environment
        "PYTHONPATH": os.pathsep.join([site] + [p for p in [env.get("PYTHONPATH")] if p]),
        "C4FORGE_STAGED": json.dumps([os.path.basename(p) for p in installed]),
    })
    if info.HasField("status_endpoint"):
        env["STATUS_API_SERVICE_DESCRIPTOR"] = descriptor(info.status_endpoint.url)
    if os.environ.get(PIN_ENV):
        pin_to_free_core(os.environ[PIN_ENV])
    os.chdir(work)  # nothing of the submitting checkout is importable from here
    # Beam's harness, its data messages capped (pipelines/engines/workers/sdk_harness.py says why)
    if installed:  # the staged packages must shadow this installation: a fresh interpreter
        os.execve(sys.executable, [sys.executable, "-m", "c4forge.pipelines.engines.workers.sdk_harness"], env)
    run_harness_here(env, work)
    return 0


def run_harness_here(env: dict, work: str) -> None:
    """The SDK harness in this process, where nothing was staged to install: this process has
    imported Beam already (its provision and artifact clients load the whole package), and a
    second interpreter would import it again, about 1 CPU s per worker and build. The path and
    environment are what the exec'd interpreter would have (``python -m`` started in ``work``)."""
    os.environ.clear()
    os.environ.update(env)
    sys.path[0] = work
    sdk_harness.main()


if __name__ == "__main__":
    sys.exit(main())
