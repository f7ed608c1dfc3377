"""Large reviews answered in a worker process give the same answer as on the serving loop, with the cluster
questions answered from this process's view."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator

import orjson
import pytest

from tests.unit.admission.builders import NAMESPACE, make_job, review_body
from webhook.admission import answering
from webhook.admission.endpoints import ENDPOINTS
from webhook.admission.options import AdmissionOptions
from webhook.admission.view import StaticView
from webhook.api import constants as c
from webhook.jobs import naming
from webhook.reviewpool import TOO_MANY, ReviewPool

pytestmark = pytest.mark.timeout(60)

MUTATE_JOB = next(e for e in ENDPOINTS if e.path == "/mutate/batch/v1/jobs")
VALIDATE_JOB = next(e for e in ENDPOINTS if e.path == "/validate/batch/v1/jobs")
WORKLOAD = naming.job_workload_name(NAMESPACE, "pi")


@pytest.fixture
def view() -> StaticView:
    # The default LocalQueue exists: the mutation of a job without a queue reads the view to default it.
    return StaticView(local_queues={(NAMESPACE, c.DEFAULT_LOCAL_QUEUE)})


@pytest.fixture
async def pool(view: StaticView) -> AsyncIterator[ReviewPool]:
    workers = ReviewPool(options=AdmissionOptions(manage_jobs_without_queue_name=True), view=view, max_waiting=1)
    await workers.start()
    yield workers
    await workers.close()


def _big_job_review() -> bytes:
    job = make_job(queue=None)
    job["spec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": f"V{i}", "value": "x" * 100} for i in range(3000)
    ]
    return orjson.dumps(review_body(job))


async def test_the_worker_answers_as_the_loop_would_and_bounds_its_queue(pool: ReviewPool, view: StaticView) -> None:
    body = _big_job_review()
    assert len(body) > 128 * 1024
    options = AdmissionOptions(manage_jobs_without_queue_name=True)
    expected = answering.answer(MUTATE_JOB, body, view, options)
    got = await pool.answer(MUTATE_JOB, body)
    assert got == expected
    response = orjson.loads(got[1])["response"]
    assert response["allowed"] is True
    # The default queue is there only because the worker asked this process's view, over the pipe.
    assert f'queue-name":"{c.DEFAULT_LOCAL_QUEUE}"'.encode() in base64.b64decode(response["patch"])
    assert pool.answered == 1

    status, malformed = await pool.answer(MUTATE_JOB, b"[" * 200_000)
    assert status == 400
    assert "reason" in orjson.loads(malformed)

    # One judged at a time, one waiting (max_waiting=1): the others are refused at once, not queued.
    results = await asyncio.gather(*(pool.answer(MUTATE_JOB, body) for _ in range(4)))
    codes = sorted(status for status, _ in results)
    assert TOO_MANY in codes
    assert codes.count(200) >= 2


async def test_a_dead_worker_is_replaced(pool: ReviewPool) -> None:
    (process,) = pool.processes
    process.kill()
    process.join(5)
    status, _ = await pool.answer(MUTATE_JOB, _big_job_review())
    assert status == 503
    status, _ = await pool.answer(MUTATE_JOB, _big_job_review())
    assert status == 200


async def test_a_workload_the_worker_asks_for_crosses_the_pipe_as_its_view() -> None:
    # A running Job raised past its admission: the validation compares it with its Workload, asked of this
    # process's view (a WorkloadRecord, pickled to the worker), and refuses as the loop would.
    workload = {
        "metadata": {"name": WORKLOAD, "namespace": NAMESPACE},
        "spec": {"podSets": [{"name": "main", "count": 2, "template": {"spec": {"containers": []}}}]},
        "status": {
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [{"name": "main", "count": 2, "flavors": {"cpu": "f"}, "resourceUsage": {}}],
            }
        },
    }
    view = StaticView(admitted_workloads={(NAMESPACE, WORKLOAD)}, workloads={(NAMESPACE, WORKLOAD): workload})
    old, new = make_job(suspend=False, parallelism=2), make_job(suspend=False, parallelism=6)
    for job in (old, new):
        job["spec"]["template"]["spec"]["containers"][0]["env"] = [
            {"name": f"V{i}", "value": "x" * 100} for i in range(3000)
        ]
    body = orjson.dumps(review_body(new, operation="UPDATE", old=old))
    options = AdmissionOptions()
    workers = ReviewPool(options=options, view=view, max_waiting=1)
    await workers.start()
    try:
        got = await workers.answer(VALIDATE_JOB, body)
    finally:
        await workers.close()
    assert got == answering.answer(VALIDATE_JOB, body, view, options)
    response = orjson.loads(got[1])["response"]
    assert response["allowed"] is False
    assert "admitted for 2" in response["status"]["message"]
