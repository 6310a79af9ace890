"""`kadmin brokers shutdown`: a one-shot controlled shutdown, fenced by the broker epoch (KIP-380).

The request carries the broker's epoch (the czxid of its registration). A controller that has
since seen the broker re-register answers STALE_BROKER_EPOCH, so a retried or delayed shutdown can
never drain a broker that has already restarted.

What an accepted request leaves behind: the controller puts the broker in its shutting-down set,
which only a new registration (a restart) clears. Until then the broker is taken out of every ISR it
follows and is never elected leader, even if it keeps running. So it is the first step of a stop,
never a way to "drain" a broker that stays up.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from kadmin import interrupts
from kadmin.cluster.kafka import ShutdownReply, error_name
from kadmin.domain.addresses import host_port
from kadmin.domain.text import plural
from kadmin.domain.znodes import parse_endpoint
from kadmin.errors import ClusterUnreachable, ConfigError, KadminError, NotFound, Unsupported
from kadmin.exit_codes import ExitCode
from kadmin.results import Problem, Progress, Result
from kadmin.services.partitions import (
    describe_keys,
    require_known_broker,
    stop_verdict,
    verdict_json,
    verdict_problems,
    verdict_summary,
)

NOT_CONTROLLER_CODES = {11, 41}  # STALE_CONTROLLER_EPOCH (what a ZK-mode non-controller says), NOT_CONTROLLER
STALE_BROKER_EPOCH = 77
BROKER_NOT_AVAILABLE = 8
CLUSTER_AUTHORIZATION_FAILED = 31
FIRST_EPOCH_VERSION = 2  # ControlledShutdown v2 (Kafka 2.2, KIP-380) added BrokerEpoch

SHUTTING_DOWN_NOTE = (
    "broker {id} stays in the controller's shutting-down set until it restarts (re-registers): it is out of "
    "every ISR it follows and will not be elected leader, so stop it now"
)


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
            return host_port(host, port)
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
    _refuse_kraft_controller(cluster)
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
        return Result(data=data, warnings=warnings, errors=relevant,
                      exit_code=ExitCode.OK if safe else ExitCode.UNSAFE, message=msg)
    if not force and verdict is not None and not verdict.safe:
        data["error"] = "UNSAFE"
        data["can_stop"] = verdict_json(verdict)
        blockers = [(b.topic, b.partition) for b in verdict.blocking + verdict.never]
        return Result(data=data, warnings=warnings, errors=relevant,
                      exit_code=ExitCode.UNSAFE,
                      message=f"refused: broker {broker_id} cannot stop safely: {verdict_summary(verdict)} "
                      f"({describe_keys(blockers)}); see `kadmin brokers can-stop {broker_id}`, or use --force")

    backoff = 0.2
    conn: Connection | None = None
    conn_key: tuple[int, str] | None = None
    data["shutting_down_until_restart"] = False
    data["epoch_fenced"] = None  # known once the controller answered: False for ControlledShutdown v0/v1
    try:
        while True:
            try:
                controller_id, endpoint = _controller_endpoint(cluster, security_protocol, listener)
                data["controller_id"] = controller_id
                if conn is None or conn_key != (controller_id, endpoint):
                    if conn is not None:
                        conn.close()
                        conn = None
                    conn = connect(endpoint, controller_id)
                    conn_key = (controller_id, endpoint)
            except ClusterUnreachable as e:
                # No controller now (absent between elections) or it cannot be reached: with --wait,
                # wait until /controller names one that answers; else this is the verdict.
                if not wait:
                    raise
                backoff = _wait_out(e, data, deadline, backoff, timeout, sleep, clock)
                continue
            data["attempts"] += 1
            # From the moment the request is sent the controller may act on it: a Ctrl-C is held back
            # until the outcome is reported (kadmin/interrupts.py), unless the controller refused.
            interrupts.arm()
            try:
                reply = conn.controlled_shutdown(broker_id, epoch)
            except ClusterUnreachable as e:
                interrupts.disarm()
                conn.close()
                conn, conn_key = None, None
                if not wait:  # one more try only if /controller already names another controller
                    moved = _controller_endpoint(cluster, security_protocol, listener)
                    if moved == (controller_id, endpoint) or clock() + backoff > deadline:
                        raise
                    sleep(backoff)
                    continue
                backoff = _wait_out(e, data, deadline, backoff, timeout, sleep, clock)
                continue
            data["remaining_partitions"] = [{"topic": t, "partition": p} for t, p in reply.remaining]
            data["epoch_fenced"] = reply.version >= FIRST_EPOCH_VERSION
            if reply.version < FIRST_EPOCH_VERSION:
                unfenced = (f"controller {controller_id} speaks ControlledShutdown v{reply.version} only (Kafka "
                            "before 2.2): the request carries no broker epoch, so epoch fencing does not apply "
                            "(a delayed or repeated request drains the broker even after it restarts)")
                if unfenced not in warnings:
                    warnings.append(unfenced)
            code = reply.error_code
            if code == 0:
                data["shutting_down_until_restart"] = True
            if code == 0 and not reply.remaining:
                data["error"] = None  # an earlier attempt's NOT_CONTROLLER is no error of the result
                return Result(data=data, warnings=warnings,
                              message=f"controller {controller_id} moved every leadership off broker {broker_id} "
                              f"(epoch {epoch}, ControlledShutdown v{reply.version}, "
                              f"{data['attempts']} attempt{'' if data['attempts'] == 1 else 's'}); "
                              + SHUTTING_DOWN_NOTE.format(id=broker_id))
            if code != 0:
                interrupts.disarm()  # refused: nothing was done, so a Ctrl-C that came meanwhile interrupts now
            if code in NOT_CONTROLLER_CODES:
                data["error"] = error_name(code)
                if clock() + backoff > deadline:
                    return Result(data=data, warnings=warnings,
                                  exit_code=ExitCode.REJECTED,
                                  message=f"no controller accepted the request within {timeout:g}s "
                                  f"(last: broker {controller_id} answered {error_name(code)})")
                sleep(backoff)
                backoff = min(backoff * 2, 2.0)
                continue  # re-read /controller and try the new one
            if code == STALE_BROKER_EPOCH:
                data["error"] = error_name(code)
                return Result(data=data, warnings=warnings, exit_code=ExitCode.REJECTED,
                              message=f"broker {broker_id} has re-registered since epoch {epoch}: the controller "
                              "refused a stale controlled shutdown")
            if code != 0:
                data["error"] = error_name(code)
                what = ("the controller says broker is not available" if code == BROKER_NOT_AVAILABLE
                        else f"the controller answered {error_name(code)}")
                if code == CLUSTER_AUTHORIZATION_FAILED:
                    what += " (ControlledShutdown needs the CLUSTER_ACTION permission on the cluster resource)"
                return Result(data=data, warnings=warnings, exit_code=ExitCode.REJECTED,
                              message=f"{what} (broker {broker_id}, epoch {epoch})")
            # Accepted, but the broker still leads some partitions.
            data["error"] = None
            keys = reply.remaining
            if not wait or interrupts.pending() or clock() + backoff > deadline:
                alone = _led_alone(cluster, broker_id, keys)
                data["isr_only_this_broker"] = [{"topic": t, "partition": p} for t, p in alone]
                return Result(data=data, warnings=warnings,
                              exit_code=ExitCode.CONDITION_NOT_MET,
                              message=f"broker {broker_id} still leads {plural(len(keys), 'partition')}: "
                              f"{describe_keys(keys)}"
                              + ("" if not wait or interrupts.pending() else f" after {timeout:g}s")
                              + (f"; {describe_keys(alone)} {'has' if len(alone) == 1 else 'have'} only broker "
                                 f"{broker_id} in the ISR, and the controller refuses to grow an ISR while it is "
                                 "shutting down: they move only after it restarts (or the controller changes)"
                                 if alone else "")
                              + "; " + SHUTTING_DOWN_NOTE.format(id=broker_id))
            sleep(backoff)
            backoff = min(backoff * 2, 2.0)
    finally:
        if conn is not None:
            conn.close()


def _led_alone(cluster: Any, broker_id: int, keys: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Which of `keys` have the broker as their whole ISR (per the state znodes). Kafka 3.9's controller
    refuses AlterPartition when the new ISR names a shutting-down broker, the leader itself included,
    so these cannot move until the broker re-registers. Best effort: [] when the read fails."""
    try:
        scan = cluster.scan_partitions(sorted({t for t, _ in keys}))
    except KadminError:
        return []
    wanted = set(keys)
    return sorted((p.topic, p.partition) for p in scan.partitions
                  if (p.topic, p.partition) in wanted and tuple(p.isr) == (broker_id,))


def _wait_out(error: ClusterUnreachable, data: dict[str, Any], deadline: float, backoff: float, timeout: float,
              sleep: Callable[[float], None], clock: Callable[[], float]) -> float:
    """--wait and the controller is gone: sleep and re-read /controller (a new one is elected once the
    dead one's ZooKeeper session expires), or give the verdict at the deadline. The next backoff."""
    if interrupts.pending() or clock() + backoff > deadline:
        raise ClusterUnreachable(f"{error.message}; no reachable controller within {timeout:g}s"
                                 + (f" ({data['attempts']} requests sent)" if data["attempts"] else ""))
    sleep(backoff)
    return min(backoff * 2, 2.0)


def _refuse_kraft_controller(cluster: Any) -> Any:
    """During a ZooKeeper to KRaft migration /controller names the active KRaft controller (KIP-866:
    kraftControllerEpoch >= 0; a ZooKeeper controller writes -1 or, before 3.4, nothing). A KRaft
    controller does not serve ZooKeeper-mode ControlledShutdown: say so, do not try to reach it.
    Returns /controller's content (None when absent or unreadable)."""
    if getattr(cluster, "mode", "") == "kraft":  # the CLI refuses first (exit 3); a caller of the service too
        from kadmin.errors import ConfigError

        raise ConfigError("brokers shutdown needs ZooKeeper mode (--zookeeper): KRaft has no client "
                          "ControlledShutdown (a KRaft broker shuts down through its own heartbeats to the "
                          "controller quorum); move its leaderships with `kadmin brokers drain ID`, then stop the "
                          "broker itself (SIGTERM runs Kafka's own controlled shutdown)", code="kraft_unsupported")
    controller, _ = cluster.controller()
    if controller is not None and controller.kraft_controller_epoch >= 0:
        raise Unsupported(
            f"/controller names KRaft controller {controller.broker_id} (kraftControllerEpoch "
            f"{controller.kraft_controller_epoch}): a ZooKeeper to KRaft migration is under way and a KRaft "
            "controller does not serve ControlledShutdown; stop the broker itself (SIGTERM) instead"
        )
    return controller


def _controller_endpoint(cluster: Any, security_protocol: str, listener: str | None) -> tuple[int, str]:
    controller = _refuse_kraft_controller(cluster)
    if controller is None:
        raise ClusterUnreachable("there is no active controller (/controller is absent)")
    broker, _ = cluster.get_broker(controller.broker_id)
    if broker is None or broker.registration is None:
        raise ClusterUnreachable(f"the controller, broker {controller.broker_id}, has no readable registration")
    reg = broker.registration
    return controller.broker_id, pick_endpoint(reg.endpoints, reg.listener_security_protocol_map,
                                               security_protocol, listener)

