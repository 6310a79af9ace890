"""`kadmin brokers shutdown`: seed 000's one-shot controlled shutdown, fenced by the broker epoch.

The request carries the broker's epoch (the czxid of its registration). A controller that has
since seen the broker re-register answers STALE_BROKER_EPOCH, so a retried or delayed shutdown can
never drain a broker that has already restarted.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from kadmin import interrupts
from kadmin.cluster.base import Problem, Progress
from kadmin.cluster.kafka import ShutdownReply, error_name
from kadmin.domain.znodes import parse_endpoint
from kadmin.errors import ClusterUnreachable, ConfigError, NotFound
from kadmin.exit_codes import ExitCode
from kadmin.services.partitions import (
    describe_keys,
    require_known_broker,
    stop_verdict,
    verdict_json,
    verdict_problems,
    verdict_summary,
)
from kadmin.services.result import Result

NOT_CONTROLLER_CODES = {11, 41}  # STALE_CONTROLLER_EPOCH (what a ZK-mode non-controller says), NOT_CONTROLLER
STALE_BROKER_EPOCH = 77
BROKER_NOT_AVAILABLE = 8


class Connection(Protocol):
    def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> ShutdownReply: ...

    def close(self) -> None: ...


Connect = Callable[[str, int], Connection]  # (host:port, controller id) -> connection


def kafka_connect(config: Mapping[str, Any], timeout: float) -> Connect:
    def connect(bootstrap: str, node_id: int) -> Connection:
        from kadmin.cluster.kafka import ControllerConnection

        return ControllerConnection(bootstrap, node_id, config, timeout)

    return connect


def pick_endpoint(endpoints: tuple[str, ...], protocol_map: Mapping[str, str], security_protocol: str,
                  listener: str | None) -> str:
    """The controller's endpoint for our listener (by name) or else for our security protocol."""
    for ep in endpoints:
        name, host, port = parse_endpoint(ep)
        if (listener and name == listener) or (not listener and protocol_map.get(name, name) == security_protocol):
            if host is None:
                raise ConfigError(f"the controller's {name} listener has no host: {ep}")
            return f"{host}:{port}"
    want = f"listener {listener}" if listener else f"{security_protocol} listener"
    raise ConfigError(f"the controller registers no {want} (it has {', '.join(endpoints) or 'no endpoints'}); "
                      "use --listener NAME or security.protocol in --command-config")


def shutdown(
    cluster: Any,
    broker_id: int,
    *,
    epoch: int | None,
    wait: bool,
    timeout: float,
    dry_run: bool,
    force: bool,
    connect: Connect,
    security_protocol: str = "PLAINTEXT",
    listener: str | None = None,
    progress: Progress | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Result:
    deadline = clock() + timeout
    broker, _ = cluster.get_broker(broker_id)
    if epoch is None:
        if broker is None:
            raise NotFound(f"broker {broker_id} is not registered, so it has no epoch to send (give --epoch)")
        epoch = broker.epoch
    data: dict[str, Any] = {
        "broker_id": broker_id,
        "broker_epoch": epoch,
        "controller_id": None,
        "attempts": 0,
        "remaining_partitions": [],
        "error": None,
    }
    warnings: list[str] = []
    if broker is not None and broker.epoch != epoch:
        warnings.append(f"broker {broker_id} is registered with epoch {broker.epoch}, not {epoch}")

    verdict = None
    relevant: list[Problem] = []
    if dry_run or not force or broker is None:
        verdict, scan = stop_verdict(cluster, broker_id, progress)
        if broker is None:  # not registered: a legitimate question only while assignments still name it
            require_known_broker(scan, broker_id)
        relevant, _ = verdict_problems(scan, broker_id)
        if force and not dry_run:
            warnings += [e.message for e in relevant]
            relevant = []
    if dry_run:
        controller_id, endpoint = _controller_endpoint(cluster, security_protocol, listener)
        data["controller_id"] = controller_id
        data["dry_run"] = True
        data["request"] = {"api_key": 7, "versions": "highest of 1-3 the controller supports (v2+ carry the epoch)",
                           "broker_id": broker_id, "broker_epoch": epoch, "controller": endpoint}
        data["can_stop"] = verdict_json(verdict) if verdict else None
        safe = verdict is None or verdict.safe or force
        msg = (f"would send ControlledShutdown(broker {broker_id}, epoch {epoch}) to controller {controller_id} "
               f"at {endpoint}; " + ("can-stop: safe" if verdict and verdict.safe else
                                     "can-stop: NOT safe" + ("" if safe else ", so it would refuse (--force)")))
        return Result(command="brokers shutdown", data=data, warnings=warnings, errors=relevant,
                      exit_code=ExitCode.OK if safe else ExitCode.UNSAFE, message=msg)
    if not force and verdict is not None and not verdict.safe:
        data["error"] = "UNSAFE"
        data["can_stop"] = verdict_json(verdict)
        blockers = [(b.topic, b.partition) for b in verdict.blocking + verdict.never]
        return Result(command="brokers shutdown", data=data, warnings=warnings, errors=relevant,
                      exit_code=ExitCode.UNSAFE,
                      message=f"refused: broker {broker_id} cannot stop safely: {verdict_summary(verdict)} "
                      f"({describe_keys(blockers)}); see `kadmin brokers can-stop {broker_id}`, or use --force")

    backoff = 0.2
    conn: Connection | None = None
    conn_key: tuple[int, str] | None = None
    try:
        while True:
            controller_id, endpoint = _controller_endpoint(cluster, security_protocol, listener)
            data["controller_id"] = controller_id
            if conn is None or conn_key != (controller_id, endpoint):
                if conn is not None:
                    conn.close()
                    conn = None
                conn = connect(endpoint, controller_id)
                conn_key = (controller_id, endpoint)
            data["attempts"] += 1
            # From the moment the request is sent the controller may act on it: a Ctrl-C is held back
            # until the outcome is reported (kadmin/interrupts.py), unless the controller refused.
            interrupts.arm()
            try:
                reply = conn.controlled_shutdown(broker_id, epoch)
            except ClusterUnreachable:
                interrupts.disarm()
                conn.close()
                conn, conn_key = None, None
                moved = _controller_endpoint(cluster, security_protocol, listener)
                if moved == (controller_id, endpoint) or clock() + backoff > deadline:
                    raise
                sleep(backoff)
                continue
            data["remaining_partitions"] = [{"topic": t, "partition": p} for t, p in reply.remaining]
            code = reply.error_code
            if code == 0 and not reply.remaining:
                data["error"] = None  # an earlier attempt's NOT_CONTROLLER is no error of the result
                return Result(command="brokers shutdown", data=data, warnings=warnings,
                              message=f"controller {controller_id} moved every leadership off broker {broker_id} "
                              f"(epoch {epoch}, ControlledShutdown v{reply.version}, {data['attempts']} attempts)")
            if code != 0:
                interrupts.disarm()  # refused: nothing was done, so a Ctrl-C that came meanwhile interrupts now
            if code in NOT_CONTROLLER_CODES:
                data["error"] = error_name(code)
                if clock() + backoff > deadline:
                    return Result(command="brokers shutdown", data=data, warnings=warnings,
                                  exit_code=ExitCode.REJECTED,
                                  message=f"no controller accepted the request within {timeout:g}s "
                                  f"(last: broker {controller_id} answered {error_name(code)})")
                sleep(backoff)
                backoff = min(backoff * 2, 2.0)
                continue  # re-read /controller and try the new one
            if code == STALE_BROKER_EPOCH:
                data["error"] = error_name(code)
                return Result(command="brokers shutdown", data=data, warnings=warnings, exit_code=ExitCode.REJECTED,
                              message=f"broker {broker_id} has re-registered since epoch {epoch}: the controller "
                              "refused a stale controlled shutdown")
            if code != 0:
                data["error"] = error_name(code)
                what = ("the controller says broker is not available" if code == BROKER_NOT_AVAILABLE
                        else f"the controller answered {error_name(code)}")
                return Result(command="brokers shutdown", data=data, warnings=warnings, exit_code=ExitCode.REJECTED,
                              message=f"{what} (broker {broker_id}, epoch {epoch})")
            # Accepted, but the broker still leads some partitions.
            data["error"] = None
            keys = reply.remaining
            if not wait or interrupts.pending() or clock() + backoff > deadline:
                return Result(command="brokers shutdown", data=data, warnings=warnings,
                              exit_code=ExitCode.CONDITION_NOT_MET,
                              message=f"broker {broker_id} still leads {len(keys)} partitions: {describe_keys(keys)}"
                              + ("" if not wait or interrupts.pending() else f" after {timeout:g}s"))
            sleep(backoff)
            backoff = min(backoff * 2, 2.0)
    finally:
        if conn is not None:
            conn.close()


def _controller_endpoint(cluster: Any, security_protocol: str, listener: str | None) -> tuple[int, str]:
    controller, _ = cluster.controller()
    if controller is None:
        raise ClusterUnreachable("there is no active controller (/controller is absent)")
    broker, _ = cluster.get_broker(controller.broker_id)
    if broker is None or broker.registration is None:
        raise ClusterUnreachable(f"the controller, broker {controller.broker_id}, has no readable registration")
    reg = broker.registration
    return controller.broker_id, pick_endpoint(reg.endpoints, reg.listener_security_protocol_map,
                                               security_protocol, listener)

