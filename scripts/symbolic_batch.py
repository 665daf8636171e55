#!/usr/bin/env python3
"""A copy of an ONNX export whose input's and output's first dimension is symbolic ("N"), so both
runtimes take a batch larger than the export's fixed one (`torch.onnx.export` fixes a batch of 1).
The graph's recorded intermediate shapes are dropped; a graph that fixes the batch elsewhere (a
Reshape to a constant shape) still refuses a larger batch, in either runtime.

    python3 scripts/symbolic_batch.py MODEL.onnx OUT.onnx
"""
import sys

import onnx


def make_symbolic(source, destination):
    """Writes `source` with a symbolic batch to `destination`."""
    model = onnx.load(source)
    for value in (*model.graph.input[:1], *model.graph.output):
        value.type.tensor_type.shape.dim[0].dim_param = "N"
    del model.graph.value_info[:]
    onnx.save(model, destination)


if __name__ == "__main__":
    make_symbolic(sys.argv[1], sys.argv[2])
