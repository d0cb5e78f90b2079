"""Beam's local job service (the portable job API that Flink's and Spark's job servers also
speak), running each job on as many SDK workers as the job asks for.

    python -m c4forge.pipelines.engines.workers.job_service --port 8099

Beam's own ``local_job_service_main`` runs every job on one SDK worker: its BeamJob builds an
FnApiRunner whose worker count is read from ``--direct_num_workers`` only on the in-process
path. This service is Beam's ``LocalJobServicer`` with a BeamJob that applies that option, so a
job submitted with ``--direct_num_workers N`` gets N external workers from the pool.
"""
from __future__ import annotations

import argparse
import sys

from apache_beam.options.pipeline_options import DirectOptions
from apache_beam.portability.api import beam_job_api_pb2
from apache_beam.runners.portability import local_job_service
from apache_beam.runners.portability.fn_api_runner import fn_runner

from c4forge.pipelines.engines.workers.worker_pool import serve_until_stopped


class ParallelBeamJob(local_job_service.BeamJob):
    """A BeamJob whose FnApiRunner starts ``--direct_num_workers`` SDK workers per environment."""

    def _invoke_runner(self):
        self.set_state(beam_job_api_pb2.JobState.RUNNING)
        options = self.pipeline_options()
        runner = fn_runner.FnApiRunner(provision_info=self._provision_info)
        # the attribute run_pipeline() sets from the same option (Beam 2.5x-2.77); the
        # portable test checks that the pool really starts this many workers
        runner._num_workers = max(1, int(options.view_as(DirectOptions).direct_num_workers or 1))
        return runner.run_via_runner_api(self._pipeline_proto, options)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8099, help="job API port (0: any free port)")
    parser.add_argument("--port-file", help="write the port here once listening")
    parser.add_argument("--staging-dir", help="where staged artifacts go (default: a temp folder)")
    args = parser.parse_args(argv)
    servicer = local_job_service.LocalJobServicer(args.staging_dir, beam_job_type=ParallelBeamJob)
    serve_until_stopped("job service", servicer.start_grpc_server(args.port), args.port_file)
    servicer.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
