"""One step on the cluster: every stage submitted as a Dask task pinned to its task's
worker, taking the futures of the stages it reads as arguments (so Dask moves those tensors
worker to worker), then waited for under a deadline while watching the workers.

Failures become TF's errors: a worker that leaves (or dies) -> UnavailableError naming the
task; a worker that lost its state -> AbortedError; the deadline -> DeadlineExceededError.
Errors raised by kernels on a worker (OpError) come back unchanged.
"""

import time
import uuid

import distributed

from graphops.distributed.task_holder import run_stage, select_outputs
from graphops.distributed.workers import worker_names
from graphops.registry.errors import (DeadlineExceededError, InternalError, OpError,
                                      UnavailableError)

POLL_SECONDS = 0.2          # how often a waiting step checks that its workers are alive
SCATTER_BYTES = 1 << 20     # feeds at least this large go straight to their worker


def submit(client, session_id, plan, addresses, feed_values):
    """(the futures of one step's stages in stage order, {stage: the future of its outputs
    the client fetches}). Where a stage also has outputs bound for other tasks, a task on
    its worker picks the fetched ones, so that only fetches travel to the client."""
    step = uuid.uuid4().hex[:12]
    scattered = {}
    futures, fetched = [], {}
    for index, stage in enumerate(plan.stages):
        address = addresses[stage.task]
        picks, args = _arguments(stage, futures, lambda i: _feed_value(
            client, scattered, feed_values, i, address))
        key = f"graphops-{stage.task.replace('/', '_')[1:]}-{plan.key}-s{index}-{step}"
        futures.append(client.submit(run_stage, session_id, stage.task, plan.key, index,
                                     step, picks, *args, key=key, workers=[address],
                                     allow_other_workers=False, pure=False))
        positions = plan.client_outputs.get(index)
        if positions is None:
            continue
        fetched[index] = futures[-1]
        if positions != list(range(len(stage.fetch_names))):
            fetched[index] = client.submit(select_outputs, futures[-1], positions,
                                           key=f"{key}-fetched", workers=[address],
                                           allow_other_workers=False, pure=False)
    return futures, fetched


def _arguments(stage, futures, feed):
    """(picks, args) of a stage's task (see task_holder.run_stage): each feed (`feed(i)`)
    and each earlier stage's future passed once, stages ordered before it included."""
    args, positions, picks = [], {}, []

    def position(key, make):
        if key not in positions:
            positions[key] = len(args)
            args.append(make())
        return positions[key]

    for source in stage.sources:
        if source[0] == "feed":
            picks.append((position(source, lambda: feed(source[1])), -1))
        else:
            picks.append((position(source[1], lambda: futures[source[1]]), source[2]))
    for earlier in stage.after:
        position(earlier, lambda: futures[earlier])
    return tuple(picks), args


def _feed_value(client, scattered, feed_values, index, address):
    """A feed as a task argument: small ones inline, large ones scattered to the worker."""
    value = feed_values[index]
    if getattr(value, "nbytes", 0) < SCATTER_BYTES:
        return value
    if (index, address) not in scattered:
        scattered[(index, address)] = client.scatter(value, workers=[address], hash=False)
    return scattered[(index, address)]


def wait(client, futures, tasks, addresses, deadline=None):
    """Waits for every future (one per entry of `tasks`); raises TF's error for the first
    failed one, a lost worker or a passed `deadline` (time.monotonic()), cancelling the
    rest."""
    _watched(client, futures, tasks, addresses, deadline,
             lambda budget: distributed.wait(futures, timeout=budget))
    for future, task in zip(futures, tasks):
        if future.status == "error":
            error = remote_error(future.exception(), task, addresses[task])
            client.cancel(futures)
            raise error
        if future.status == "cancelled":
            raise UnavailableError(f"{task} is unavailable: its step was cancelled "
                                   f"(worker {addresses[task]})")


def gather(client, futures, tasks, addresses, deadline=None):
    """The results of finished futures, watched as `wait` watches (a worker lost before
    its results reach the client is UnavailableError, not a hang)."""
    return [_watched(client, [future], [task], addresses, deadline,
                     lambda budget, future=future: future.result(timeout=budget))
            for future, task in zip(futures, tasks)]


def release(futures):
    """Lets Dask forget a finished step's results now, rather than when the last Python
    reference goes (a lingering result is one Dask would recompute after losing a worker)."""
    for future in futures:
        future.release()


def _watched(client, futures, tasks, addresses, deadline, attempt):
    """`attempt(seconds)` retried until it returns without timing out (Dask's
    TimeoutError); in between, a passed deadline or a lost worker cancels `futures` and
    raises."""
    while True:
        budget = POLL_SECONDS if deadline is None else min(
            POLL_SECONDS, max(deadline - time.monotonic(), 0.001))
        try:
            return attempt(budget)
        except distributed.TimeoutError:
            pass
        if deadline is not None and time.monotonic() >= deadline:
            unfinished = sorted({t for f, t in zip(futures, tasks) if not f.done()})
            client.cancel(futures)
            raise DeadlineExceededError(f"Timed out waiting for the step: the deadline passed "
                                        f"with {', '.join(unfinished)} still running")
        _check_workers(client, futures, tasks, addresses)


def _check_workers(client, futures, tasks, addresses):
    try:
        alive = worker_names(client)
    except OSError as e:                  # CommClosedError is an OSError
        client.cancel(futures)
        raise UnavailableError(f"The Dask scheduler cannot be reached: {e}") from None
    gone = sorted({t for t in tasks if addresses[t] not in alive})
    if gone:
        client.cancel(futures)
        raise UnavailableError(f"{gone[0]} is unavailable: its Dask worker "
                               f"{addresses[gone[0]]} left the cluster during the step")


def remote_error(exc, task, address):
    """The error a failed stage raises: a worker's OpError as is, else TF's code for it."""
    if isinstance(exc, OpError):
        return exc
    if isinstance(exc, (distributed.KilledWorker, OSError)):     # CommClosedError too
        return UnavailableError(f"{task} is unavailable: its Dask worker {address} failed "
                                f"running the step ({type(exc).__name__}: {exc})")
    return InternalError(f"{task} failed on Dask worker {address}: "
                         f"{type(exc).__name__}: {exc}")
