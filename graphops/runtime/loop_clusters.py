"""Elementwise clusters in a TF1 loop run as straight-line code (frame_loops.LoopPlan): an
LSTM or GRU cell's gates in a lowered `tf.while_loop` or a frozen Keras recurrent layer.

The clusters are those a plan forms (elementwise_clusters, its finder and its rules),
found among the kernel steps of one side of the loop (its condition's, or its body's),
each run as one `steps.ClusterStep` in place of its members' steps. The finder walks the
whole frame in the graph's order, so that a path through a node without a step of its own
(an Identity sharing its input's slot, a NoOp ordering) still keeps two clusters apart;
then the side's steps are put in an order where each runs after the steps whose values it
reads or whose completion it waits for, and each cluster's readers after its step.
"""

import collections

from graphops.runtime import elementwise_clusters
from graphops.runtime.fusion import FUSED_DTYPES
from graphops.runtime.steps import ClusterStep


def clustered(plan, steps):
    """``steps`` (one side of LoopPlan ``plan``, in the graph's order) with each
    elementwise cluster of their nodes as one ClusterStep, in an order that keeps every
    dependency."""
    view = _SideView(plan, steps)
    clusters = elementwise_clusters.find_clusters(view)
    if not clusters:
        return steps
    order = elementwise_clusters.contracted_order(view.step_ops, clusters, view.waits_for)
    members = {op._id for cluster in clusters.values() for op in cluster.ops}
    result = []
    for op in order:
        if op._id in clusters:
            result.append(view.cluster_step(clusters[op._id]))
        elif op._id not in members:
            result.append(view.step_of[op._id])
    return result


class _SideView:
    """What ``elementwise_clusters.find_clusters`` reads of a plan (``fusion._Fusion``'s
    names: ``ops``, ``declared``, ``runs_here``, ``consumers``, ``readers``,
    ``controlling``, ``replaced``, ``position``) over a loop frame's nodes, those free to
    cluster being the one-output float nodes with a step on this side."""

    def __init__(self, plan, steps):
        self.plan = plan
        frame = sorted(plan.members)
        self.index = {plan.nodes[i].op._id: i for i in frame + plan.enters}
        self.ops = [plan.nodes[i].op for i in frame]
        self.position = {op._id: p for p, op in enumerate(self.ops)}
        self.step_of = {step.op._id: step for step in steps}
        self.step_ops = [step.op for step in steps]
        self.stepped = {self.index[step.op._id] for side in plan.steps for step in side}
        self.consumers = collections.defaultdict(list)
        for i in frame:
            for k, edges in enumerate(plan.nodes[i].consumers):
                op_id = plan.nodes[i].op._id
                self.consumers[(op_id, k)] += [plan.nodes[d].op for d, _ in edges]
        self.readers = collections.Counter(
            {key: len(readers) for key, readers in self.consumers.items()})
        self.controlling = {plan.nodes[i].op._id for i in frame
                            if plan.nodes[i].control_consumers}
        self.replaced = {}

    def declared(self, op, name):
        return getattr(self.plan.nodes[self.index[op._id]].kernel, name, None)

    def runs_here(self, op):
        return (op._id in self.step_of and len(op.outputs) == 1
                and op.outputs[0].dtype.np_dtype in FUSED_DTYPES)

    def waits_for(self, op):
        """The ops of this side's steps that op's step must follow: those it reads or
        waits for, directly or through nodes without a step (Identities, NoOps,
        constants); iteration-start values (Merges, Switches, Enters) and the other
        side's steps have run before any of them."""
        plan, found = self.plan, []
        seen, stack = set(), [self.index[op._id]]
        while stack:
            i = stack.pop()
            for s in [src for src, _ in plan.sources[i]] + list(plan.controls[i]):
                if s in seen:
                    continue
                seen.add(s)
                if plan.nodes[s].op._id in self.step_of:
                    found.append(plan.nodes[s].op)
                elif s in plan.side and s not in self.stepped:
                    stack.append(s)
        return found

    def cluster_step(self, cluster):
        """The step running ``cluster`` over the plan's slots."""
        plan, last = self.plan, self.plan.nodes[self.index[cluster.ops[-1]._id]]
        ins = [plan.slot[(self.index[t.op._id], t.value_index)] for t in cluster.inputs]
        outs = [(k, plan.slot[(self.index[cluster.ops[m]._id], 0)])
                for k, m in enumerate(cluster.outputs)]
        members = [(node.construction, node.kernel)
                   for node in (plan.nodes[self.index[op._id]] for op in cluster.ops)]
        return ClusterStep(cluster, members, last.construction, last.op, last.device, ins,
                           outs)
