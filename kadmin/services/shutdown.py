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

from kadmin import interrupts
from kadmin.cluster.base import (
    BrokerEpochs,
    ControllerLink,
    ControllerLinks,
    EpochsAndPartitions,
    Partitions,
    ShutdownReply,
    error_name,
)
from kadmin.domain.addresses import host_port
from kadmin.domain.models import Controller
from kadmin.domain.partitions import StopVerdict
from kadmin.domain.text import plural
from kadmin.domain.znodes import parse_endpoint
from kadmin.errors import ClusterUnreachable, ConfigError, KadminError, NotFound, Unsupported
from kadmin.exit_codes import ExitCode
from kadmin.payloads import Shutdown, ShutdownDryRun, ShutdownRefused, ShutdownRequest, ShutdownSent, TopicPartition
from kadmin.results import Problem, Progress, Result
from kadmin.services.partitions import (
    describe_keys,
    require_known_broker,
    stop_verdict,
    verdict_payload,
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
    cluster: EpochsAndPartitions,
    links: ControllerLinks,
    broker_id: int,
    *,
    epoch: int | None,
    wait: bool,
    timeout: float,
    dry_run: bool,
    force: bool,
    listener: str | None = None,
    progress: Progress | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    deadline: float | None = None,
) -> Result[Shutdown]:
    """`brokers shutdown`: check (can-stop, unless --force), then send ControlledShutdown to the active
    controller until it is accepted with nothing left, refused, or the deadline passes.

    `deadline` (on `clock`): the command's, the one its backend's connections keep (connecting included);
    default `timeout` from now. Every read and request below is bounded by the backend itself (--connect-timeout,
    never past that deadline), the check of /controller before anything else included."""
    deadline = clock() + timeout if deadline is None else deadline
    _refuse_kraft_controller(cluster)
    broker, _ = cluster.get_broker(broker_id)
    if epoch is None:
        if broker is None:
            raise NotFound(f"broker {broker_id} is not registered, so it has no epoch to send (give --epoch)")
        epoch = broker.epoch
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
        return _dry_run(cluster, links, listener, broker_id, epoch, warnings, relevant, verdict, force)
    if not force and verdict is not None and not verdict.safe:
        refused = ShutdownRefused(broker_id, epoch, controller_id=None, attempts=0, remaining_partitions=(),
                                  error="UNSAFE", can_stop=verdict_payload(verdict))
        blockers = [(b.topic, b.partition) for b in verdict.blocking + verdict.never]
        return Result(data=refused, warnings=warnings, errors=relevant,
                      exit_code=ExitCode.UNSAFE,
                      message=f"refused: broker {broker_id} cannot stop safely: {verdict_summary(verdict)} "
                      f"({describe_keys(blockers)}); see `kadmin brokers can-stop {broker_id}`, or use --force")
    sender = _Sender(cluster, links, listener, broker_id, epoch, wait, timeout, deadline, warnings, sleep, clock)
    try:
        return sender.run()
    finally:
        sender.disconnect()


def _dry_run(cluster: EpochsAndPartitions, links: ControllerLinks, listener: str | None, broker_id: int, epoch: int,
             warnings: list[str], relevant: list[Problem], verdict: StopVerdict | None,
             force: bool) -> Result[Shutdown]:
    """--dry-run: what would be sent, to which controller, and what can-stop says; nothing is sent."""
    controller_id, endpoint = _controller_endpoint(cluster, links.security_protocol, listener)
    request = ShutdownRequest(api_key=7, versions="highest of 1-3 the controller supports (v2+ carry the epoch)",
                              broker_id=broker_id, broker_epoch=epoch, controller=endpoint)
    data = ShutdownDryRun(broker_id, epoch, controller_id, attempts=0, remaining_partitions=(), error=None,
                          dry_run=True, request=request,
                          can_stop=None if verdict is None else verdict_payload(verdict))
    safe = verdict is None or verdict.safe or force
    msg = (f"would send ControlledShutdown(broker {broker_id}, epoch {epoch}) to controller {controller_id} "
           f"at {endpoint}; " + ("can-stop: safe" if verdict and verdict.safe else
                                 "can-stop: NOT safe" + ("" if safe else ", so it would refuse (--force)")))
    return Result(data=data, warnings=warnings, errors=relevant,
                  exit_code=ExitCode.OK if safe else ExitCode.UNSAFE, message=msg)


class _Sender:
    """Send ControlledShutdown until an answer decides (`run`), following the controller as /controller moves:
    NOT_CONTROLLER and a lost controller are retried with backoff (up to 2 s) within the deadline."""

    def __init__(self, cluster: EpochsAndPartitions, links: ControllerLinks, listener: str | None, broker_id: int,
                 epoch: int, wait: bool, timeout: float, deadline: float, warnings: list[str],
                 sleep: Callable[[float], None], clock: Callable[[], float]) -> None:
        self.cluster, self.links, self.listener = cluster, links, listener
        self.broker_id, self.epoch, self.wait, self.timeout, self.deadline = broker_id, epoch, wait, timeout, deadline
        self.warnings = warnings
        self.sleep, self.clock = sleep, clock
        self.backoff = 0.2
        self.conn: ControllerLink | None = None
        self.conn_key: tuple[int, str] | None = None
        # what the result says, as the attempts go
        self.controller_id: int | None = None
        self.attempts = 0
        self.remaining: tuple[TopicPartition, ...] = ()
        self.error: str | None = None
        self.shutting_down = False
        self.epoch_fenced: bool | None = None  # known once the controller answered: False for ControlledShutdown v0/v1

    def payload(self, isr_only_this_broker: tuple[TopicPartition, ...] | None = None) -> ShutdownSent:
        return ShutdownSent(self.broker_id, self.epoch, self.controller_id, self.attempts, self.remaining, self.error,
                            shutting_down_until_restart=self.shutting_down, epoch_fenced=self.epoch_fenced,
                            isr_only_this_broker=isr_only_this_broker)

    def disconnect(self) -> None:
        if self.conn is not None:
            self.conn.close()
        self.conn, self.conn_key = None, None

    def _connect(self) -> tuple[int, str, ControllerLink]:
        controller_id, endpoint = _controller_endpoint(self.cluster, self.links.security_protocol, self.listener)
        self.controller_id = controller_id
        if self.conn is None or self.conn_key != (controller_id, endpoint):
            self.disconnect()
            self.conn = self.links.connect(endpoint, controller_id)
            self.conn_key = (controller_id, endpoint)
        return controller_id, endpoint, self.conn

    def _pause(self) -> None:
        self.sleep(self.backoff)
        self.backoff = min(self.backoff * 2, 2.0)

    def run(self) -> Result[Shutdown]:
        while True:
            try:
                controller_id, endpoint, conn = self._connect()
            except ClusterUnreachable as e:
                # No controller now (absent between elections) or it cannot be reached: with --wait,
                # wait until /controller names one that answers; else this is the verdict.
                if not self.wait:
                    raise
                self.backoff = _wait_out(e, self.attempts, self.deadline, self.backoff, self.timeout, self.sleep,
                                         self.clock)
                continue
            self.attempts += 1
            # From the moment the request is sent the controller may act on it: a Ctrl-C is held back
            # until the outcome is reported (kadmin/interrupts.py), unless the controller refused.
            interrupts.arm()
            try:
                reply = conn.controlled_shutdown(self.broker_id, self.epoch)
            except ClusterUnreachable as e:
                interrupts.disarm()
                self.disconnect()
                if not self.wait:  # one more try only if /controller already names another controller
                    moved = _controller_endpoint(self.cluster, self.links.security_protocol, self.listener)
                    if moved == (controller_id, endpoint) or self.clock() + self.backoff > self.deadline:
                        raise
                    self.sleep(self.backoff)
                    continue
                self.backoff = _wait_out(e, self.attempts, self.deadline, self.backoff, self.timeout, self.sleep,
                                         self.clock)
                continue
            result = self._judge(reply, controller_id)
            if result is not None:
                return result

    def _judge(self, reply: ShutdownReply, controller_id: int) -> Result[Shutdown] | None:
        """The result this reply decides, or None to send again (after the backoff)."""
        warnings, broker_id, epoch = self.warnings, self.broker_id, self.epoch
        self.remaining = tuple(TopicPartition(t, p) for t, p in reply.remaining)
        self.epoch_fenced = reply.version >= FIRST_EPOCH_VERSION
        if reply.version < FIRST_EPOCH_VERSION:
            unfenced = (f"controller {controller_id} speaks ControlledShutdown v{reply.version} only (Kafka "
                        "before 2.2): the request carries no broker epoch, so epoch fencing does not apply "
                        "(a delayed or repeated request drains the broker even after it restarts)")
            if unfenced not in warnings:
                warnings.append(unfenced)
        code = reply.error_code
        if code == 0:
            self.shutting_down = True
        if code == 0 and not reply.remaining:
            self.error = None  # an earlier attempt's NOT_CONTROLLER is no error of the result
            return Result(data=self.payload(), warnings=warnings,
                          message=f"controller {controller_id} moved every leadership off broker {broker_id} "
                          f"(epoch {epoch}, ControlledShutdown v{reply.version}, "
                          f"{self.attempts} attempt{'' if self.attempts == 1 else 's'}); "
                          + SHUTTING_DOWN_NOTE.format(id=broker_id))
        if code != 0:
            interrupts.disarm()  # refused: nothing was done, so a Ctrl-C that came meanwhile interrupts now
            return self._refused(code, controller_id)
        return self._still_leads(reply.remaining)

    def _refused(self, code: int, controller_id: int) -> Result[Shutdown] | None:
        broker_id, epoch = self.broker_id, self.epoch
        self.error = error_name(code)
        if code in NOT_CONTROLLER_CODES:
            if self.clock() + self.backoff > self.deadline:
                return Result(data=self.payload(), warnings=self.warnings,
                              exit_code=ExitCode.REJECTED,
                              message=f"no controller accepted the request within {self.timeout:g}s "
                              f"(last: broker {controller_id} answered {error_name(code)})")
            self._pause()
            return None  # re-read /controller and try the new one
        if code == STALE_BROKER_EPOCH:
            return Result(data=self.payload(), warnings=self.warnings, exit_code=ExitCode.REJECTED,
                          message=f"broker {broker_id} has re-registered since epoch {epoch}: the controller "
                          "refused a stale controlled shutdown")
        what = ("the controller says broker is not available" if code == BROKER_NOT_AVAILABLE
                else f"the controller answered {error_name(code)}")
        if code == CLUSTER_AUTHORIZATION_FAILED:
            what += " (ControlledShutdown needs the CLUSTER_ACTION permission on the cluster resource)"
        return Result(data=self.payload(), warnings=self.warnings, exit_code=ExitCode.REJECTED,
                      message=f"{what} (broker {broker_id}, epoch {epoch})")

    def _still_leads(self, keys: list[tuple[str, int]]) -> Result[Shutdown] | None:
        """Accepted, but the broker still leads some partitions: the verdict, or None to ask again (--wait)."""
        self.error = None
        broker_id, keys_wait = self.broker_id, self.wait
        if not keys_wait or interrupts.pending() or self.clock() + self.backoff > self.deadline:
            alone = _led_alone(self.cluster, broker_id, keys)
            data = self.payload(isr_only_this_broker=tuple(TopicPartition(t, p) for t, p in alone))
            return Result(data=data, warnings=self.warnings,
                          exit_code=ExitCode.CONDITION_NOT_MET,
                          message=f"broker {broker_id} still leads {plural(len(keys), 'partition')}: "
                          f"{describe_keys(keys)}"
                          + ("" if not keys_wait or interrupts.pending() else f" after {self.timeout:g}s")
                          + (f"; {describe_keys(alone)} {'has' if len(alone) == 1 else 'have'} only broker "
                             f"{broker_id} in the ISR, and the controller refuses to grow an ISR while it is "
                             "shutting down: they move only after it restarts (or the controller changes)"
                             if alone else "")
                          + "; " + SHUTTING_DOWN_NOTE.format(id=broker_id))
        self._pause()
        return None


def _led_alone(cluster: Partitions, broker_id: int, keys: list[tuple[str, int]]) -> list[tuple[str, int]]:
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


def _wait_out(error: ClusterUnreachable, attempts: int, deadline: float, backoff: float, timeout: float,
              sleep: Callable[[float], None], clock: Callable[[], float]) -> float:
    """--wait and the controller is gone: sleep and re-read /controller (a new one is elected once the
    dead one's ZooKeeper session expires), or give the verdict at the deadline. The next backoff."""
    if interrupts.pending() or clock() + backoff > deadline:
        raise ClusterUnreachable(f"{error.message}; no reachable controller within {timeout:g}s"
                                 + (f" ({attempts} requests sent)" if attempts else ""))
    sleep(backoff)
    return min(backoff * 2, 2.0)


def _refuse_kraft_controller(cluster: BrokerEpochs) -> Controller | None:
    """During a ZooKeeper to KRaft migration /controller names the active KRaft controller (KIP-866:
    kraftControllerEpoch >= 0; a ZooKeeper controller writes -1 or, before 3.4, nothing). A KRaft
    controller does not serve ZooKeeper-mode ControlledShutdown: say so, do not try to reach it.
    Returns /controller's content (None when absent or unreadable)."""
    controller, _ = cluster.controller()
    if controller is not None and controller.kraft_controller_epoch >= 0:
        raise Unsupported(
            f"/controller names KRaft controller {controller.broker_id} (kraftControllerEpoch "
            f"{controller.kraft_controller_epoch}): a ZooKeeper to KRaft migration is under way and a KRaft "
            "controller does not serve ControlledShutdown; stop the broker itself (SIGTERM) instead"
        )
    return controller


def _controller_endpoint(cluster: BrokerEpochs, security_protocol: str, listener: str | None) -> tuple[int, str]:
    controller = _refuse_kraft_controller(cluster)
    if controller is None:
        raise ClusterUnreachable("there is no active controller (/controller is absent)")
    broker, _ = cluster.get_broker(controller.broker_id)
    if broker is None or broker.registration is None:
        raise ClusterUnreachable(f"the controller, broker {controller.broker_id}, has no readable registration")
    reg = broker.registration
    return controller.broker_id, pick_endpoint(reg.endpoints, reg.listener_security_protocol_map,
                                               security_protocol, listener)

